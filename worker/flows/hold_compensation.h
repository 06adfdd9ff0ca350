/*
 * hold_compensation.h - a hold answered 5xx is released once Redis answers again.
 *
 * A hold answered with a 5xx may still have been applied (the command reached a hung Redis
 * and ran when it woke up, or the connection broke after Redis ran it). The worker generated
 * the hold id, so the hold handler files {hold id, owner, idempotency key} here and, once
 * Redis answers again, the hold is released if it exists, then its idempotency record is
 * deleted so that a retry with the same key gets a fresh answer instead of a replay of the
 * released hold. A hold that a retry with the same key was answered (a replay marks it
 * claimed), or that is paying or booked by then, is kept: the buyer has it.
 *
 * One queue per worker process (see hold_compensation.c for its bounds and backoff).
 * Loop and threads: the worker's loop; 'app' must outlive the queue's last entry (a draining
 * worker drops what is queued, and the holds end at their TTL).
 */
#ifndef SEATD_FLOWS_HOLD_COMPENSATION_H
#define SEATD_FLOWS_HOLD_COMPENSATION_H

struct seatd_app_s;

/* Files hold 'hold_id' of show 'show_id', made for 'owner' with idempotency key 'idem' (NULL:
 * none), answered 5xx. Every argument is copied. */
void seatd_hold_compensate(struct seatd_app_s *app, const char *show_id, const char *hold_id,
                           const char *owner, const char *idem);

#endif
