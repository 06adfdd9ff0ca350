/*
 * reconcile.h - finishes what the request path could not: bookings a worker left
 * PENDING_PAYMENT (it died, the gateway did not answer, a confirm did not reach a replica),
 * refunds not confirmed by the gateway, charges that landed after their booking failed, and -
 * the backstop - every charge in the gateway's ledger whose booking is missing or was never
 * CONFIRMED (a booking lost with a Redis primary).
 *
 * Reconciliation looks things up; the booking flow (flows/booking.h) settles them. It holds no
 * copy of the settlement: a due booking is looked up by its idempotency key (the booking id)
 * and the gateway's answer goes to seatd_booking_settle(), the same call the request path
 * makes after its own charge; a refund on record goes to seatd_booking_refund_owed().
 *
 * Every worker runs one. It is safe to run many at once because every step is idempotent:
 * the gateway is asked by idempotency key, confirming or failing a booking twice answers the
 * same, and refunds carry their own keys ("refund-<bookingId>" for a charge not confirmed,
 * "cancel-<bookingId>" for a cancellation), so two reconcilers settling the same booking charge
 * nothing and refund once. No lease is needed.
 *
 * Finding work in Redis: each show keeps {s:<id>}:pending (bookingId -> start ms, written by
 * book_begin, left by confirm/fail), {s:<id>}:refunds (cancelled bookings whose refund is not
 * confirmed, late charges and lost bookings whose refund is not recorded) and {s:<id>}:failed
 * (bookings failed while their charge may still land). The store adds the show to the hint
 * zset seatd:pending_shows:{hN} (hints.h) after a booking begins or a refund is left owed.
 * Every tick reads the hint set (every bucket) and asks each show for its due entries
 * (seatd_store_pending_due); a show with nothing left is dropped from the hint set only if no
 * worker re-hinted it meanwhile. Every 'rescan_every' ticks a page of the catalogue
 * seatd:shows is checked too (a worker that died between book_begin and its hint).
 *   - a due booking: lookup -> the flow (APPROVED: confirm, or refund if the seats were lost;
 *     DECLINED: fail; NOT_FOUND: fail once the charge horizon has passed; UNKNOWN: next tick);
 *   - a refund owed: a late charge or a lost booking -> seatd_booking_refund_owed(); a
 *     cancellation -> its refund under "cancel-<bookingId>", then recorded;
 *   - {s}:failed past the charge horizon: lookup -> APPROVED: the flow (its confirm finds the
 *     booking FAILED: the refund is written down, then made); NOT_FOUND or DECLINED:
 *     seatd_late_clear ends the watch; UNKNOWN: next tick.
 * The charge horizon (--charge-horizon-ms, default payment timeout + 30 s) is when the
 * worker's own charge request has surely ended plus a margin for a gateway still processing.
 *
 * Finding work in the gateway's ledger (the ledger walk, every 'ledger_interval_ms'): Redis's
 * own sets cannot name a booking that was lost with its primary, but the gateway still has its
 * charge. The walk pages through the gateway's charges (seatd_payment_list) from a cursor kept
 * in Redis (SEATD_KEY_LEDGER_CURSOR: the last charge with nothing owed on it), oldest first, by
 * one worker per period (the first to take SEATD_KEY_LEDGER_LEASE, SET NX PX the period). A
 * succeeded charge not refunded whole, at least 'ledger_grace_ms' old, whose booking is missing,
 * PENDING_PAYMENT or FAILED goes through the flow as the gateway lists it: confirmed if its
 * seats are still held for it, else refunded whole - a missing booking is first written down
 * FAILED with the refund owed (seatd_book_lost, with the buyer from the charge's metadata), so
 * that GET /v1/bookings/{id} shows its buyer the refund instead of 404. Each such refund is
 * logged (WARN) and counted (seatd_ledger_charges_total{outcome="refunded"}). The cursor moves
 * past a charge only once nothing is owed on it; the walk stops at the first charge younger
 * than the grace period (the request path may still be settling it).
 *
 * Loop and threads: the worker's loop. Lifecycle: new -> close; close stops the timers and
 * the object frees itself when its last operation's callback has run (those fire with
 * shutdown errors when the payment client and Redis close after it).
 */
#ifndef SEATD_RECONCILE_H
#define SEATD_RECONCILE_H

#include <stdint.h>

#include "base/errors.h"

struct uv_loop_s;
struct seatd_rds_s;
struct seatd_store_s;
struct seatd_payment_s;

typedef struct seatd_reconcile_s seatd_reconcile_t;

typedef struct seatd_reconcile_opts_s {
    int64_t interval_ms;        /* tick period (> 0) */
    int64_t min_age_ms;         /* a booking is due after this long PENDING_PAYMENT (>= 0) */
    int rescan_every;           /* ticks between catalogue pages (>= 1) */
    int64_t horizon_ms;         /* the charge horizon: a booking the gateway does not know is failed
                                   only once it began this long ago, and a failed booking's charge is
                                   looked for once it began this long ago (>= 0) */
    int64_t ledger_interval_ms; /* the ledger walk's period; 0: no walk */
    int64_t ledger_grace_ms;    /* a charge is settled by the walk once this old; 0: the
                                   charge horizon */
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

/* Starts one walk of the gateway's ledger now (unless one is under way), as the timer does
 * but without taking the period's lease (one walker per period across workers); for tests. */
void seatd_reconcile_walk_ledger(seatd_reconcile_t *rc);

/* 1 while a walk of the ledger is under way. */
int seatd_reconcile_walking(const seatd_reconcile_t *rc);

/* Number of charges the ledger walk refunded so far, for tests and logs. */
unsigned long seatd_reconcile_ledger_refunds(const seatd_reconcile_t *rc);

/* Fire-and-forget: ZINCRBY seatd:pending_shows:{hN} 1 'show_id' (the score counts hints); the
 * same as seatd_hints_pending(), which the store calls after the operations that need it. */
void seatd_reconcile_hint(struct seatd_rds_s *rds, const char *show_id);

#endif
