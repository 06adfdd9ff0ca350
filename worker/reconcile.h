/*
 * reconcile.h - settles bookings a worker left PENDING_PAYMENT (it died, the gateway did not
 * answer), refunds a cancellation never confirmed by the gateway, and refunds a charge that
 * landed after its booking had failed.
 *
 * Every worker runs one. It is safe to run many at once because every step is idempotent:
 * the gateway is asked by idempotency key (the booking id), confirming or failing a booking
 * twice answers the same, and refunds carry their own idempotency keys ("refund-<bookingId>"
 * for seats lost after a charge, "cancel-<bookingId>" for a cancellation), so two
 * reconcilers settling the same booking charge nothing and refund once. No lease is needed.
 *
 * Finding work: each show keeps {s:<id>}:pending (bookingId -> start ms, written by
 * book_begin, left by confirm/fail), {s:<id>}:refunds (cancelled bookings whose refund is
 * not confirmed, and late charges whose refund is not recorded) and {s:<id>}:failed
 * (bookingId -> start ms: bookings failed while their charge may still land, see below). The
 * store adds the show to the hint zset seatd:pending_shows:{hN} (its bucket by slot range,
 * keys.h; score = the number of hints, ZINCRBY) after a booking begins or a cancellation leaves
 * a refund owed (hints.h: a second, cross-slot write, so not from inside the script). Every tick
 * reads the hint set (every bucket) and asks each show for its due entries
 * (seatd_store_pending_due: pending for at least 'min_age_ms' on Redis's clock; failed and
 * begun at least the horizon ago); a show with nothing left (in any of the three sets) is
 * dropped from the hint set only if no worker re-hinted it meanwhile. Every 'rescan_every' ticks a
 * page of the catalogue seatd:shows is checked too: the safety net for a worker that died between
 * book_begin and its hint.
 *
 * A due booking: lookup by key -> APPROVED: book_confirm; if the seats were lost, refund the
 * whole charge and book_fail "seats_lost_refunded" with the amount; DECLINED: book_fail with
 * the failure code; NOT_FOUND (not charged yet): nothing before the charge horizon (a charge
 * request still on its way can land until then), after it book_fail "payment_not_completed";
 * UNKNOWN (no answer, or the charge still processing): try again next tick. The horizon
 * (--charge-horizon-ms, default payment timeout + 30 s) is when the worker's own charge
 * request has surely ended (it is abandoned at the payment timeout) plus a margin for a
 * gateway still processing it. A charge that lands for a booking already FAILED (the
 * worker's own answer, or a lookup whose confirm says FAILED) is refunded whole under
 * "refund-<bookingId>": seatd_late_charge writes the refund down first and puts the booking
 * in {s}:refunds, which this reconciler retries until the refund is recorded.
 *
 * Late charges nobody saw: a booking failed before the charge horizon without a known charge
 * (a decline, or a worker that failed it while a charge request was still on its way, and
 * then died) moves from {s}:pending to {s}:failed. Once the horizon has passed since it began
 * (no charge can land any more), the gateway is asked by the booking id: APPROVED -> the late
 * charge is recorded and refunded as above; NOT_FOUND or DECLINED -> seatd_late_clear ends
 * the watch; UNKNOWN -> next tick. A booking failed past the horizon (book_fail_after) or with
 * its refund recorded is not watched.
 *
 * Loop and threads: the worker's loop. Lifecycle: new -> close; close stops the timer and
 * the object frees itself when its last operation's callback has run (those fire with
 * shutdown errors when the payment client and Redis close after it).
 */
#ifndef SEATD_RECONCILE_H
#define SEATD_RECONCILE_H

#include <stdint.h>

#include "errors.h"
#include "store.h" /* seatd_store_cb */

struct uv_loop_s;
struct seatd_rds_s;
struct seatd_store_s;
struct seatd_payment_s;

typedef struct seatd_reconcile_s seatd_reconcile_t;

typedef struct seatd_reconcile_opts_s {
    int64_t interval_ms; /* tick period (> 0) */
    int64_t min_age_ms;  /* a booking is due after this long PENDING_PAYMENT (>= 0) */
    int rescan_every;    /* ticks between catalogue pages (>= 1) */
    int64_t horizon_ms;  /* the charge horizon: a booking the gateway does not know is failed
                            only once it began this long ago, and a failed booking's charge is
                            looked for once it began this long ago (>= 0) */
} seatd_reconcile_opts_t;

/* Returns an owned reconciler whose timer runs on 'loop'. All pointers are borrowed and must
 * outlive it (until its last callback). */
seatd_reconcile_t *seatd_reconcile_new(struct uv_loop_s *loop, struct seatd_rds_s *rds,
                                       struct seatd_store_s *store, struct seatd_payment_s *payment,
                                       const seatd_reconcile_opts_t *opts);

/* Stops ticking; frees 'rc' once nothing is in flight. NULL is a no-op. */
void seatd_reconcile_close(seatd_reconcile_t *rc);

/* Number of bookings settled (confirmed, failed or refunded) so far, for tests and logs. */
unsigned long seatd_reconcile_settled(const seatd_reconcile_t *rc);

/* Number of lookups that found no charge yet and left the booking pending because it was
 * within the charge horizon, for tests and logs. */
unsigned long seatd_reconcile_deferred(const seatd_reconcile_t *rc);

/*
 * Waits for the payment of booking 'booking_id' (borrowed) to settle, for a retried
 * POST /v1/bookings that found the first request's payment in flight: reads the booking
 * (seatd_store_booking_get, any owner) every SEATD_RECONCILE_WAIT_POLL_MS until it is no
 * longer PENDING_PAYMENT or the loop time passes 'until_ms', then runs 'cb' once with the
 * last read. 'wanted' (may be NULL) is asked before each read: 0 ends the wait at once, with
 * a result whose err is SEATD_EUNAVAILABLE. Returns 0 (then 'cb' runs exactly once, on a
 * later loop turn) or an error (then it never runs). Independent of any reconciler object.
 */
#define SEATD_RECONCILE_WAIT_POLL_MS 100
SEATD_MUSTCHECK int seatd_reconcile_wait_settled(struct uv_loop_s *loop,
                                                 struct seatd_store_s *store,
                                                 const char *booking_id, uint64_t until_ms,
                                                 int (*wanted)(void *data), seatd_store_cb cb,
                                                 void *data);

/* Fire-and-forget: ZINCRBY seatd:pending_shows:{hN} 1 'show_id' (the score counts hints); the
 * same as seatd_hints_pending(), which the store calls after the operations that need it. */
void seatd_reconcile_hint(struct seatd_rds_s *rds, const char *show_id);

#endif
