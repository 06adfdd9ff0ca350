/*
 * common.h - helpers shared by the handlers (internal to worker/handlers/).
 *
 * - Store errors become problem+json answers in one place (CONFLICT carries
 *   "conflictingSeats", the rest the error table's status and type).
 * - Layouts are immutable, so each worker caches them (layout.h); seatd__with_layout() answers
 *   from the cache or fetches the layout once and continues.
 * - Operation contexts: each async step carries a small heap context with the request; the
 *   request is held for the duration of every step (http_request.h rule 19), always through
 *   seatd__step_begin() / seatd__step_end().
 * - Multi-step operations (h2o's "super" struct): a context that goes through several steps
 *   starts with a seatd__op_t, the request pointer and the context's free function, so that
 *   one set of helpers starts a step, ends one, answers and frees for every such context:
 *
 *     typedef struct { seatd__op_t base; ...the op's own fields... } x_op_t;
 *     seatd__op_init(&op->base, r, x_op_free);              (x_op_free frees the x_op_t)
 *     seatd__op_started(&op->base, seatd_store_x(..., on_x, op));
 *     static void on_x(const seatd_store_result_t *res, void *data) {
 *         x_op_t *op = data;
 *         if (seatd__op_gone_or_failed(&op->base, res)) return;   (answered and freed)
 *         ...next step, or answer op->base.r and seatd__op_free(&op->base)...
 *     }
 *
 *   A step whose callback is not a store result (a flow's outcome) ends with
 *   seatd__step_end(&op->base.r) as any other step does.
 */
#ifndef SEATD_HANDLERS_COMMON_H
#define SEATD_HANDLERS_COMMON_H

#include <stdint.h>

#include "domain/areas.h"
#include "http/principal.h"
#include "store/store.h"

typedef struct seatd_req_s seatd_req_t;
struct seatd_app_s;
struct seatd_layout_s;

/* The app context of 'r'. */
struct seatd_app_s *seatd__app(seatd_req_t *r);
/* The authenticated user id of 'r' (AUTH routes only). Borrowed. */
const char *seatd__sub(seatd_req_t *r);

/* Answers 'r' with the problem for a failed store result (res->err != 0). The detail is
 * written from validated words only (seat ids, statuses, numbers): a script's or Redis's
 * own text may name keys or internals, so it is logged (debug; warn for 5xx), never sent. */
void seatd__reply_store_error(seatd_req_t *r, const seatd_store_result_t *res);
/* The same, with "showId": 'show' (NULL: none) in the problem (a group hold's refusal). */
void seatd__reply_store_error_in(seatd_req_t *r, const seatd_store_result_t *res, const char *show);

/* Answers 'r' 404 not-found for a body's "holdId" ('hold_id', borrowed) that names no hold of
 * the caller's: the detail names the hold when 'hold_id' is a valid hold id (then the problem
 * carries "holdId" too), else says what a hold id looks like (never echoing other text). */
void seatd__reply_no_hold(seatd_req_t *r, const char *hold_id);

/*
 * The one idiom for an asynchronous step of a request (a store call, a payment, a layout
 * read: an operation whose callback runs later). '*rp' is the step's request pointer, which
 * is NULL once nobody waits for the answer (a booking's payment goes on without its client).
 *
 *   rc = seatd__step_begin(&op->r, seatd_store_x(..., on_x, op));
 *       'rc' is what starting the operation returned; when 0 the request (if any) is held
 *       until the callback. Returns 'rc': < 0 means the callback never runs, nothing was
 *       answered, and the caller still owns its context.
 *   static void on_x(...) { if (seatd__step_end(&op->r)) { ...nobody waits... } ... }
 *       First thing in the callback: releases the request; returns 1 and sets '*rp' to NULL
 *       if nobody waits for the answer any more (the client left, or it was answered), else
 *       0 ('*rp' is alive and still owes its one answer).
 */
int seatd__step_begin(seatd_req_t **rp, int rc);
int seatd__step_end(seatd_req_t **rp);
/* seatd__step_end() for a one-step store call whose context is the request itself, then the
 * store's failure: 1 when there is nothing more to do (the client left, or the store failed
 * and that was answered), 0 when the handler should answer the success. */
int seatd__done(seatd_req_t *r, const seatd_store_result_t *res);

/* seatd__step_begin() for a step whose failure to start nobody else answers (a handler that
 * answers its own 400s and returns 0, or a callback starting its request's next step): when
 * nothing was started (rc < 0) answers 'r' with problem 'rc' at once. */
void seatd__step_begin_or_answer(seatd_req_t *r, int rc);

/* Renders a store success as an answer's JSON body (a cJSON tree, owned by the caller). */
struct cJSON;
typedef struct cJSON *(*seatd__render_fn)(const seatd_store_result_t *res);
/* The whole callback of a one-step store call whose context is the request ('data') and whose
 * success is answered as it reads: seatd__done(), then 'status' with the body 'render(res)'
 * (no body when 'render' is NULL). One place for every route that answers a record as read. */
void seatd__answer_result(void *data, const seatd_store_result_t *res, int status,
                          seatd__render_fn render);

/* The route's parameter 'name' when it is an id of 'kind' ('h' a hold, 'b' a booking, 'q' a
 * queue ticket), its show written to 'show' (SEATD_ID_MAX; NULL: not wanted); else NULL. */
const char *seatd__id_param(seatd_req_t *r, const char *name, char kind, char *show);
/* This worker changed the hold or booking that the route's {id} names (an id of 'kind'), and
 * Redis answered with its show's seat-map 'version': forgets the show's cached map
 * (seatd_seatmap_invalidate) so that nothing older is served. */
void seatd__seatmap_changed_by_id(seatd_req_t *r, char kind, long long version);
/* A store operation on one hold, booking or ticket 'id' as 'owner' (NULL: whoever owns it),
 * with store.h's contract. */
typedef int (*seatd__id_op_fn)(seatd_store_t *st, const char *id, const char *owner,
                               seatd_store_cb cb, void *data);
/* The opening of every route that acts on one id of 'kind' named by route parameter 'name'
 * (seatd__id_param; else 404 not-found): starts 'call' on it as 'owner' with the request as
 * the context, answered in 'cb'. Returns what the handler returns. */
int seatd__start_on_id(seatd_req_t *r, const char *name, char kind, const char *owner,
                       seatd__id_op_fn call, seatd_store_cb cb);

/* The head of every multi-step operation context (see the top of this file). */
typedef struct seatd__op_s seatd__op_t;
/* Frees the whole context whose head is 'op' (and whatever it owns). */
typedef void (*seatd__op_free_fn)(seatd__op_t *op);
struct seatd__op_s {
    seatd_req_t *r;            /* the request; NULL once nobody waits for the answer */
    seatd__op_free_fn free_op; /* frees the context this is the head of */
};

/* Sets up head 'op' of a context for request 'r' (borrowed: held per step), freed by
 * 'free_op'. */
void seatd__op_init(seatd__op_t *op, seatd_req_t *r, seatd__op_free_fn free_op);
/* Frees the context of 'op' through its free function. */
void seatd__op_free(seatd__op_t *op);
/* A step of 'op' was started and returned 'rc' (seatd__step_begin() on op->r): on 0 the
 * request (if any) is held until the step's callback; on < 0 the callback never runs, so
 * the problem 'rc' is answered (if anybody waits) and the context is freed. Returns 'rc'. */
int seatd__op_started(seatd__op_t *op, int rc);
/* First thing in a store step's callback (seatd__step_end() on op->r): returns 1, with the
 * context freed, when nobody waits any more, or when the store failed ('res->err', then
 * answered with seatd__reply_store_error); 0 when op->r waits and the step succeeded. */
int seatd__op_gone_or_failed(seatd__op_t *op, const seatd_store_result_t *res);
/* Answers problem 'err' with 'detail' (borrowed, may be NULL) and 'extra' (cJSON *, taken,
 * may be NULL) if anybody waits, and frees the context of 'op'. */
void seatd__op_answer_problem(seatd__op_t *op, int err, const char *detail, void *extra);

/* Files 'id' in the per-user index of its buyer (accounts_me.c), a store call with store.h's
 * contract that never waits for an unreachable shard (seatd_store_me_add). A hold is filed
 * right after it is made, a booking right after it began (never for a refused or replayed
 * request), each waited for before going on, so that the buyer reads their own writes; a
 * failure is logged and counted, and the hold or booking goes on without its entry
 * (seatd-notify files confirmed bookings from the outbox). An id already filed keeps its
 * place. */
int seatd__index_hold(seatd_req_t *r, const char *hold_id, seatd_store_cb cb, void *data);
int seatd__index_booking(struct seatd_app_s *app, const char *owner, const char *booking_id,
                         seatd_store_cb cb, void *data);

/* Continuation after a layout lookup: 'l' is borrowed for the call (cache-owned). */
/* Keeps seat-map read 's' of 'show_id', sent at 'issued_at_ms' (seatd_seatmap_now_ms()), in
 * this worker's cache (seatd_seatmap_put) and returns the entry to answer from. When the put
 * found that Redis lost writes (it answered a version older than one this worker knew, to a
 * read sent after it knew it), the version is moved past the lost ones
 * (seatd_store_version_floor, not waited for), so that no client holding a lost version's map
 * takes a new one of the same number for it. */
struct seatd_seatmap_s *seatd__seatmap_keep(struct seatd_app_s *app, const char *show_id,
                                            const seatd_seatmap_result_t *s, int64_t issued_at_ms);

typedef void (*seatd__layout_cont)(seatd_req_t *r, const struct seatd_layout_s *l, void *ctx);
/*
 * Calls 'cont(r, layout, ctx)' with the layout of 'show_id' — at once when cached, else after
 * fetching it. On failure (unknown show, Redis down) answers 'r' itself and calls 'fail(ctx)'
 * (may be NULL) so the caller can free 'ctx'. Returns 0, or a negative code when nothing was
 * started (nothing answered: the caller still owns 'ctx' and returns the code).
 */
int seatd__with_layout(seatd_req_t *r, const char *show_id, seatd__layout_cont cont,
                       void (*fail)(void *ctx), void *ctx);

/* The request text of the hold Functions (lua/hold.lua, seatd_hold_sell's ARGV[7]): 'mode'
 * ("named", "best:…"), then the places 'areas' (a places text, domain/areas.h; "" for none)
 * and the token's sales channels (issue 30) after ";", when there are any. Returns 'mode' or
 * 'out' ('cap' bytes: strlen(mode) + 1 + SEATD__HOLD_REQUEST_EXTRA fit). */
#define SEATD__HOLD_REQUEST_EXTRA (SEATD_AREAS_TEXT_MAX + SEATD_PRINCIPAL_CHANNELS_MAX * 33 + 2)
const char *seatd__hold_request(seatd_req_t *r, const char *mode, const char *areas, char *out,
                                size_t cap);

/* Adds "expiresAt"-style ISO member 'name' for epoch ms 'ms' to object 'obj' (cJSON *). */
void seatd__json_add_time(void *obj, const char *name, int64_t ms);
/* Adds a JSON array of strings from a comma-joined list 'csv' as member 'name' of 'obj'. */
void seatd__json_add_csv_array(void *obj, const char *name, const char *csv);
/* A hold as the API shows it (holdId, showId, seatIds, status, expiresAt, and createdAt and
 * bookingId when known); an empty status is shown as 'status_if_empty' when not NULL. 'h' is
 * borrowed; returns an owned cJSON object (cJSON *), freed with cJSON_Delete() or taken by a
 * tree. */
void *seatd__json_hold(const seatd_hold_result_t *h, const char *status_if_empty);

/* The idempotency key of 'r': the Idempotency-Key header or the body's field 'body_key'
 * (string, may be NULL); '*out' is NULL when none was given. A malformed key, or a header and
 * a field that differ, is recorded in 'v' (field "Idempotency-Key" or "idempotencyKey") and
 * '*out' is NULL then. '*out' may point into a per-thread buffer that the next call
 * overwrites: copy it to keep it. */
struct seatd_json_check_s;
int seatd__idempotency_key_check(struct seatd_json_check_s *v, seatd_req_t *r, const char *body_key,
                                 const char **out);

#endif
