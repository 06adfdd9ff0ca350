/*
 * booking.h - the money path of a booking, written once: begin -> charge -> confirm, or fail, or
 * refund. The HTTP handler (POST /v1/bookings) and reconciliation both call it, and render or
 * count the typed outcome it ends with.
 *
 * What it promises (docs/design.md "When the network splits", docs/durability.md):
 *   - Charge only what a failover cannot forget: with replicas configured
 *     (--redis-wait-replicas), book_begin is on a replica (WAIT) before the card is charged.
 *     A begin that is not is failed again at once (the hold HELD again) and nothing is
 *     charged: SEATD_BOOKING_REFUSED with SEATD_ENOTDURABLE (503 + Retry-After).
 *   - Say CONFIRMED only when it will stay CONFIRMED: a confirm not on a replica in time ends
 *     SEATD_BOOKING_PENDING (202 PENDING_PAYMENT); reconciliation settles it on whichever
 *     primary survives (the begin, durable, left the booking in {s}:pending there).
 *   - Every charge ends as a CONFIRMED booking or a refund: a confirm that finds the seats
 *     lost, the booking FAILED meanwhile, or no booking at all (lost with a primary) writes
 *     the refund owed down first (seatd_late_charge / seatd_book_lost) and then refunds the
 *     whole charge under "refund-<bookingId>", the one key every caller uses, so that the
 *     gateway refunds once however many workers settle the same booking. A confirm that
 *     fails for want of Redis leaves the booking PENDING_PAYMENT (on record): reconciliation
 *     finishes it, and the gateway's ledger (reconcile.h, the ledger walk) is the backstop.
 *   - The seat map cached by this worker is invalidated by the write that changed it.
 *
 * Every step is idempotent (the store's functions answer a repeat the same, the gateway
 * replays by key), so any number of callers may settle the same booking at once.
 *
 * Lifecycle: one operation per call, freed after its callback. Loop and threads: the worker's
 * loop; the context's store and payment client must outlive every operation (their close
 * fails what is in flight, which ends the operation with an error outcome).
 */
#ifndef SEATD_FLOWS_BOOKING_H
#define SEATD_FLOWS_BOOKING_H

#include <stdint.h>

#include "base/errors.h"

struct uv_loop_s;
struct seatd_store_s;
struct seatd_payment_s;
struct seatd_payment_result_s;
struct seatd_store_result_s;

/* What a flow works with; borrowed, must outlive every operation started with it. */
typedef struct seatd_booking_ctx_s {
    struct uv_loop_s *loop;          /* the worker's loop */
    struct seatd_store_s *store;     /* the Functions, typed */
    struct seatd_payment_s *payment; /* the card gateway */
    int64_t horizon_ms; /* the charge horizon: a booking the gateway has no charge for is failed
                           only once it began this long ago (reconcile.h) */
} seatd_booking_ctx_t;

/* How a booking's money path ended this time. */
typedef enum seatd_booking_outcome_e {
    SEATD_BOOKING_CONFIRMED,   /* CONFIRMED, and on a replica when replicas are configured */
    SEATD_BOOKING_PENDING,     /* still PENDING_PAYMENT, or a confirm not yet on a replica, or
                                  the charge's outcome unknown: reconciliation settles it */
    SEATD_BOOKING_DECLINED,    /* the card was declined: FAILED, the hold HELD again */
    SEATD_BOOKING_REFUNDED,    /* charged, but the seats or the booking were lost (or the
                                  booking had failed): the whole charge refunded, FAILED */
    SEATD_BOOKING_REFUND_OWED, /* as REFUNDED, but the refund is not confirmed yet: it is on
                                  record, and reconciliation asks again */
    SEATD_BOOKING_FAILED,      /* failed without a charge (none landed by the horizon) */
    SEATD_BOOKING_DEFERRED,    /* no charge yet, within the horizon: ask again later */
    SEATD_BOOKING_REPLAYED,    /* book_begin found the hold's booking already ('status') */
    SEATD_BOOKING_REFUSED,     /* nothing was charged by this call: 'err' says why */
    SEATD_BOOKING_CANCELLED,   /* cancelled, and the refund the policy gives back (if any) made */
} seatd_booking_outcome_t;

/* The end of a flow; everything borrowed until the callback returns. */
typedef struct seatd_booking_end_s {
    seatd_booking_outcome_t outcome;
    int err;                                /* REFUSED: the reason (SEATD_E*); otherwise 0 */
    const struct seatd_store_result_s *res; /* REFUSED by the store: its result (detail, words,
                                               a RATELIMIT's ms); REPLAYED: the booking;
                                               CONFIRMED: the booking as confirmed, whole
                                               (res->booking), so that it is answered
                                               without reading it again; NULL otherwise */
    const char *booking_id;                 /* "" when none began */
    const char *decline_code;               /* DECLINED: the gateway's code; else "" */
    int64_t version;                        /* CONFIRMED: the seat map version that shows it */
    int64_t amount;       /* what the booking is charged (minor units); REFUSED: unknown (0) */
    const char *seat_ids; /* its seats, comma-joined; REFUSED: "" */
    const char *members;  /* a group payment's show bookings as book_begin answered them
                             (store.h seatd_payment_member_t's text); "" for one show's */
    int keep_attempt;     /* 1: the card was declined or its answer is unknown (a decline cap keeps
                             the attempt); 0: approved or never charged (give it back) */
} seatd_booking_end_t;

/* Runs exactly once per operation started (return 0), never before the call returned. */
typedef void (*seatd_booking_cb)(const seatd_booking_end_t *end, void *data);

/* A booking to begin and pay; all borrowed for the call (copied). */
typedef struct seatd_booking_pay_args_s {
    const char *hold_id;
    const char *owner;          /* the buyer (JWT sub) */
    const char *booking_id;     /* fresh, from seatd_keys_new_id() */
    const char *seat_ids;       /* the hold's seats, comma-joined (charge metadata), or NULL:
                                   book_begin's (the usual case) */
    int64_t amount;             /* minor units; 0 confirms at once without a charge;
                                   SEATD_BOOK_PRICE_IN_STORE (the usual case): book_begin
                                   prices the hold's seats, so the caller reads neither the
                                   hold nor the show (a show without its seat tiers in Redis
                                   gets them from its layout first, once) */
    const char *currency;       /* e.g. "EUR" */
    const char *payment_method; /* the card token */
    int64_t payment_window_ms;  /* seats stay held this long while the payment runs */
    int64_t decline_cap;        /* > 0: the hold's decline cap (store.h seatd_book_args_t) */
    int64_t decline_window_ms;
} seatd_booking_pay_args_t;

/*
 * Begins booking 'a' (book_begin, durable), files it in the buyer's index, charges the card
 * with the booking id as the idempotency key and the buyer, hold and seats as metadata, and
 * settles the answer (seatd_booking_settle). REFUSED when nothing began (the store's refusal
 * in 'res': NOTFOUND, EXPIRED, STATE, SALES_CLOSED, RATELIMIT; or SEATD_ENOTDURABLE: the
 * begin did not reach a replica and was failed again, nothing charged); REPLAYED when the hold
 * has a booking already (nothing charged by this call). Returns 0 and 'cb' runs once, or an
 * error and it never runs.
 */
SEATD_MUSTCHECK int seatd_booking_pay(const seatd_booking_ctx_t *ctx,
                                      const seatd_booking_pay_args_t *a, seatd_booking_cb cb,
                                      void *data);

/* What is known of a charge's booking besides its id (the charge's metadata); may be "". */
typedef struct seatd_booking_meta_s {
    const char *owner;
    const char *hold_id;
    const char *seat_ids;
    const char *currency;
} seatd_booking_meta_t;

/*
 * Settles booking 'booking_id' by what the gateway said of its charge ('paid': a charge's
 * answer, a lookup by the booking id, or a listed charge; borrowed, copied):
 *   APPROVED (not refunded) -> book_confirm: CONFIRMED; PENDING when not durable or Redis
 *     failed; seats lost (EXPIRED) or booking FAILED -> the refund written down, then made:
 *     REFUNDED (or REFUND_OWED); no such booking -> seatd_book_lost with 'meta' (may be NULL),
 *     then the refund: REFUNDED (or REFUND_OWED);
 *   APPROVED and refunded whole already -> the refund recorded: REFUNDED;
 *   DECLINED -> book_fail: DECLINED;  NOT_FOUND -> book_fail past the horizon: FAILED, or
 *   DEFERRED within it;  UNKNOWN -> PENDING.
 * Return codes and callback rule of seatd_booking_pay().
 */
SEATD_MUSTCHECK int seatd_booking_settle(const seatd_booking_ctx_t *ctx, const char *booking_id,
                                         const struct seatd_payment_result_s *paid,
                                         const seatd_booking_meta_t *meta, seatd_booking_cb cb,
                                         void *data);

/*
 * Refunds the whole charge 'charge_id' ('amount' minor units) of FAILED booking 'booking_id',
 * whose refund is on record (a late charge, a lost booking), under "refund-<bookingId>", and
 * records it: REFUNDED, or REFUND_OWED when the gateway did not confirm. Return codes and
 * callback rule of seatd_booking_pay().
 */
SEATD_MUSTCHECK int seatd_booking_refund_owed(const seatd_booking_ctx_t *ctx,
                                              const char *booking_id, const char *charge_id,
                                              int64_t amount, seatd_booking_cb cb, void *data);

/*
 * Cancels booking 'booking_id' for 'owner' (NULL: any; borrowed) by the show's refund policy
 * (seatd_cancel: CONFIRMED -> CANCELLED, its seats free again, the refund computed in the
 * script from the amount charged and the time left, on Redis's clock), then refunds what the
 * policy gives back under "cancel-<bookingId>" and records it. CANCELLED when nothing more is
 * owed; REFUND_OWED when the refund is on record but not confirmed by the gateway
 * (reconciliation retries it); REFUSED with the store's answer ('res': NOTFOUND, STATE).
 * Cancelling again answers the same and refunds nothing more (the gateway replays the key).
 * Return codes and callback rule of seatd_booking_pay().
 */
SEATD_MUSTCHECK int seatd_booking_cancel(const seatd_booking_ctx_t *ctx, const char *booking_id,
                                         const char *owner, seatd_booking_cb cb, void *data);

/* The refund of a cancelled booking that is on record but not confirmed ('amount' of charge
 * 'charge_id', under "cancel-<bookingId>"): made and recorded. CANCELLED or REFUND_OWED.
 * Return codes and callback rule of seatd_booking_pay(). */
SEATD_MUSTCHECK int seatd_booking_refund_cancel(const seatd_booking_ctx_t *ctx,
                                                const char *booking_id, const char *charge_id,
                                                int64_t amount, seatd_booking_cb cb, void *data);

/*
 * Waits for the payment of booking 'booking_id' (borrowed) to settle, for a retried
 * POST /v1/bookings that found the first request's payment in flight: reads the booking
 * (seatd_store_booking_get, any owner) every SEATD_BOOKING_WAIT_POLL_MS until it is no
 * longer PENDING_PAYMENT or 'wait_ms' have passed, then runs 'cb' once with the
 * last read. 'wanted' (may be NULL) is asked before each read: 0 ends the wait at once, with
 * a result whose err is SEATD_EUNAVAILABLE. Returns 0 (then 'cb' runs exactly once, on a
 * later loop turn) or an error (then it never runs).
 */
#define SEATD_BOOKING_WAIT_POLL_MS 100
SEATD_MUSTCHECK int
seatd_booking_wait_settled(struct uv_loop_s *loop, struct seatd_store_s *store,
                           const char *booking_id, uint64_t wait_ms, int (*wanted)(void *data),
                           void (*cb)(const struct seatd_store_result_s *res, void *data),
                           void *data);

/* The outcome's name ("confirmed", "pending", …), for logs. */
const char *seatd_booking_outcome_name(seatd_booking_outcome_t o);

#endif
