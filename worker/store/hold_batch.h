/*
 * hold_batch.h - the holds of one show sent to Redis together.
 *
 * When a show opens, most hold requests are refused, and each refusal was a Redis call of its
 * own: the call's fixed cost (its arguments and reply crossing into Lua and back, the show's
 * meta fields, Redis's clock, the reaping of due holds) was most of Redis's time per hold. A
 * worker now collects the seatd_hold_sell calls that arrive for a show within one turn of its
 * loop and sends them as one seatd_hold_batch (lua/hold.lua), which decides each in turn
 * exactly as its own call would; each caller gets the reply element its own call would have
 * got, through its own callback. Nothing waits for a batch to fill: a batch goes early in the
 * loop's next turn, before it polls (a uv_idle handle), or at once when it holds 'max' —
 * unless 'in_flight' batches of its show are on their way already: then it goes as soon as
 * one comes back, with the holds that arrived meanwhile (group commit). An idle Redis gets a
 * hold at once; a busy one gets fewer, larger calls, each of which pays the call's fixed cost
 * once for all its holds, instead of a queue of calls of one hold each.
 *
 * A batch is retried on a lost connection only when each of its holds has an idempotency key
 * (scripts.c), as each hold alone would be. One loop, no locks.
 */
#ifndef SEATD_HOLD_BATCH_H
#define SEATD_HOLD_BATCH_H

#include <stddef.h>

#include "clients/rds.h"
#include "store/scripts.h"

struct uv_loop_s;
typedef struct seatd_hold_batch_s seatd_hold_batch_t;

/* A batcher sending through 'scripts' (borrowed), at most 'max' holds (2..SEATD_HOLD_BATCH_MAX)
 * per call, at most 'in_flight' calls of one show at once but for full ones (0: no limit).
 * Owned: seatd_hold_batch_free(). */
seatd_hold_batch_t *seatd_hold_batch_new(struct uv_loop_s *loop, seatd_scripts_t *scripts,
                                         unsigned max, unsigned in_flight);

/*
 * Queues one seatd_hold_sell call: 'meta_key' ({s:<id>}:meta), 'qadmit_key' ({s:<id>}:qadmit
 * when the worker verified the request's admission, else NULL) and its 'argc' arguments (all
 * borrowed, copied). 'cb' runs exactly once with the call's own reply, or with an error for
 * the whole batch (its Redis call failed, or the batcher was freed). Returns 0.
 */
int seatd_hold_batch_add(seatd_hold_batch_t *b, const char *meta_key, const char *qadmit_key,
                         int argc, const char *const *argv, seatd_rds_reply_cb cb, void *data);

/* While the callbacks of a batch's reply run: the element the batch answers for all its
 * requests, {"booked", <bitmap>, "held", <bitmap>} when one was refused (a refusal in a batch
 * carries no bitmaps of its own); else NULL. Borrowed, valid during the callback. */
const struct redisReply *seatd_hold_batch_shared(void);

/* Answers what is still queued with SEATD_ESHUTDOWN and frees 'b' (its handle is closed on
 * the loop's next turn; its memory goes when the last batch on its way comes back or fails). */
void seatd_hold_batch_free(seatd_hold_batch_t *b);

#endif
