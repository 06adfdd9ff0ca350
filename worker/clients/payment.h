/*
 * payment.h - the card gateway client: charge, look up by idempotency key, refund.
 *
 * One seatd_payment_t per worker loop. It drives libcurl's multi interface from the libuv loop
 * (one uv_poll_t per socket curl opens, one uv_timer_t for curl's timeouts), so a payment
 * never blocks the loop and runs alongside Redis and HTTP work. Requests are JSON over HTTP to
 * the gateway's /v1/charges and /v1/refunds (deploy/gateway/README.md). Every request carries an
 * Idempotency-Key; for a booking's charge that key is the booking id, so a retry, a replay or
 * reconciliation can never charge twice.
 *
 * Lifecycle: seatd_payment_new() -> any number of charge / lookup / refund calls ->
 * seatd_payment_close(). Close is asynchronous: callbacks of requests still in flight fire
 * once with SEATD_PAY_UNKNOWN (code "shutdown") from the loop, and the object is freed in its
 * last handle's close callback, after which uv_loop_close() can succeed.
 *
 * Outcomes: APPROVED and DECLINED are definitive answers from the gateway. UNKNOWN means
 * the charge (or refund) may or may not have happened. Timeouts, network errors, 5xx
 * answers and idempotency conflicts all give UNKNOWN, and the caller must find out with
 * seatd_payment_lookup() before it gives the seats back.
 *
 * Single-threaded: every call and callback runs on the loop given to seatd_payment_new().
 * This module knows nothing about shows or bookings. It never logs a card token beyond the
 * token's name, and it logs no request bodies.
 */
#ifndef SEATD_PAYMENT_H
#define SEATD_PAYMENT_H

#include <stddef.h>

#include "base/errors.h"

struct uv_loop_s;

typedef struct seatd_payment_s seatd_payment_t;

enum seatd_pay_outcome_e {
    SEATD_PAY_APPROVED,  /* the charge / refund succeeded (lookup: the charge succeeded) */
    SEATD_PAY_DECLINED,  /* definitively not done: a card decline (402), or the gateway refused
                            the request (400, e.g. an over-refund); 'code' says why */
    SEATD_PAY_UNKNOWN,   /* timeout, 5xx, network, 409/422, shutdown: it may or may not have
                            happened; ask with seatd_payment_lookup() */
    SEATD_PAY_NOT_FOUND, /* lookup: no charge under that key; refund: no such charge */
};

#define SEATD_PAY_KEY_MAX 129   /* idempotency key: ^[A-Za-z0-9_.:-]{1,128}$, NUL included */
#define SEATD_PAY_SOURCE_MAX 65 /* card token name: ^[a-z0-9_]{1,64}$, NUL included */
#define SEATD_PAY_TEXT_MAX 256  /* longest description / reason, in bytes */
#define SEATD_PAY_AMOUNT_MAX 1000000000LL /* largest amount in minor units */
#define SEATD_PAY_MAX_INFLIGHT 1024       /* requests in flight per client; more is EOVERLOAD */

#define SEATD_PAY_LIST_MAX 100 /* charges on one page of seatd_payment_list() */

/* One charge of a listing (seatd_payment_list); strings borrowed until the callback returns. */
typedef struct seatd_payment_charge_s {
    const char *id;       /* "ch_..." */
    const char *key;      /* the idempotency key it was made under (a booking id for seatd) */
    const char *currency; /* "EUR" */
    int succeeded;        /* 1: the charge succeeded; 0: it failed */
    long long amount;     /* charged, minor units */
    long long refunded;   /* refunded so far */
    long long created_ms; /* when the gateway made it (Unix ms) */
    const void *_meta;    /* private: its metadata (seatd_payment_charge_meta) */
} seatd_payment_charge_t;

typedef struct seatd_payment_page_s {
    size_t n;                              /* charges on this page */
    const seatd_payment_charge_t *charges; /* oldest first */
    int has_more;                          /* more charges after the last one */
} seatd_payment_page_t;

typedef struct seatd_payment_result_s {
    int outcome;        /* seatd_pay_outcome_e */
    int http_status;    /* 0 when no response */
    char charge_id[64]; /* "ch_..." when known */
    char code[64];      /* decline code, e.g. "card_declined"; or error text */
    long long amount;   /* charged / refunded amount when known */
    long long refunded; /* total refunded on the charge (lookup; refund: after this refund) */
    const seatd_payment_page_t *page; /* list (APPROVED): the page; NULL otherwise */
} seatd_payment_result_t;

/* 'res' is borrowed until the callback returns; 'data' is the caller's. */
typedef void (*seatd_payment_cb)(const seatd_payment_result_t *res, void *data);

/*
 * Creates a client for the gateway at 'base_url' (borrowed; "http://host:port", no trailing
 * path needed) on 'loop' (borrowed; it must outlive the client). Each request gives up after
 * 'timeout_ms' (1..600000) milliseconds, connection included, and then reports UNKNOWN.
 * Returns owned (released with seatd_payment_close()), or NULL if an argument is invalid or
 * libcurl cannot be set up.
 */
seatd_payment_t *seatd_payment_new(struct uv_loop_s *loop, const char *base_url, int timeout_ms);

/*
 * Charges 'amount' minor units (1..SEATD_PAY_AMOUNT_MAX) of 'currency' (3 upper-case letters)
 * to 'source' (a token name, ^[a-z0-9_]{1,64}$) under 'idem_key' (^[A-Za-z0-9_.:-]{1,128}$,
 * the booking id). 'description' may be NULL (at most SEATD_PAY_TEXT_MAX bytes). All strings
 * are borrowed (copied before return).
 * APPROVED carries charge_id and amount; DECLINED carries code ("card_declined",
 * "insufficient_funds", ...) and charge_id; UNKNOWN carries code (curl error text or the
 * gateway's error code) and http_status.
 * Returns 0 and 'cb' fires exactly once, never before this call returns; or SEATD_EINVAL
 * (bad argument), SEATD_ESHUTDOWN (closing), SEATD_EOVERLOAD (too many in flight) or
 * SEATD_EINTERNAL (libcurl refused), and then 'cb' never fires and 'data' stays the caller's.
 */
SEATD_MUSTCHECK int seatd_payment_charge(seatd_payment_t *p, const char *idem_key, long long amount,
                                         const char *currency, const char *source,
                                         const char *description, seatd_payment_cb cb, void *data);

/*
 * seatd_payment_charge() with metadata: 'meta' (may be NULL) is name/value pairs ending in
 * NULL ({"owner","alice","holdId","42-h1",NULL}), at most 8, names of letters only (not
 * "idempotencyKey", which every charge carries), values of at most SEATD_PAY_TEXT_MAX bytes;
 * the gateway keeps them with the charge and lists them (seatd_payment_list), so that a charge
 * whose booking was lost can still be told to its buyer. Borrowed. Return codes and the
 * callback rule are those of seatd_payment_charge().
 */
SEATD_MUSTCHECK int seatd_payment_charge_ex(seatd_payment_t *p, const char *idem_key,
                                            long long amount, const char *currency,
                                            const char *source, const char *description,
                                            const char *const *meta, seatd_payment_cb cb,
                                            void *data);

/*
 * Lists the gateway's charges made after charge 'starting_after' ("ch_…"; NULL or "" for the
 * first one), oldest first, at most 'limit' (1..SEATD_PAY_LIST_MAX): the ledger a reconciler
 * walks with a cursor. APPROVED carries 'page' (borrowed until the callback returns); UNKNOWN
 * when the gateway did not answer; DECLINED when it refused (an unknown cursor).
 * Return codes and the callback rule are those of seatd_payment_charge().
 */
SEATD_MUSTCHECK int seatd_payment_list(seatd_payment_t *p, const char *starting_after, int limit,
                                       seatd_payment_cb cb, void *data);

/* The value of metadata 'name' (borrowed) of a listed charge 'c', or "" when it has none.
 * Borrowed like the charge. */
const char *seatd_payment_charge_meta(const seatd_payment_charge_t *c, const char *name);

/*
 * Asks the gateway for the charge made under 'idem_key' (borrowed): APPROVED (the charge
 * succeeded; charge_id, amount and refunded are set), DECLINED (the charge failed; code is
 * the failure code), NOT_FOUND (no charge was ever made under this key) or UNKNOWN (no
 * answer, or 409 while the gateway is still processing the charge: ask again later).
 * Return codes and the callback rule are those of seatd_payment_charge().
 */
SEATD_MUSTCHECK int seatd_payment_lookup(seatd_payment_t *p, const char *idem_key,
                                         seatd_payment_cb cb, void *data);

/*
 * Refunds 'amount' minor units of charge 'charge_id' ("ch_" then 1-60 letters or digits), or
 * all that is left of it when 'amount' is 0, under 'idem_key' (one refund per key; a replay
 * answers the first result). 'reason' may be NULL. All strings are borrowed.
 * APPROVED: the refund succeeded (amount = refunded now, refunded = total on the charge);
 * DECLINED: refused (code "amount_too_large", "charge_already_refunded",
 * "charge_not_refundable"); NOT_FOUND: no such charge; UNKNOWN: as for a charge.
 * Return codes and the callback rule are those of seatd_payment_charge().
 */
SEATD_MUSTCHECK int seatd_payment_refund(seatd_payment_t *p, const char *idem_key,
                                         const char *charge_id, long long amount,
                                         const char *reason, seatd_payment_cb cb, void *data);

/* Requests sent and not yet answered (charges, lookups and refunds), for /metrics; 0 for a
 * NULL 'p'. */
int seatd_payment_inflight(const seatd_payment_t *p);

/*
 * Starts the asynchronous teardown of 'p' (taken). Requests in flight are abandoned, and their
 * callbacks fire once with UNKNOWN (code "shutdown") from the loop, in the last close callback.
 * 'p' is freed just after those callbacks. New calls made after close return SEATD_ESHUTDOWN.
 * It is safe to call from inside a payment callback. A NULL 'p', or a second close, does
 * nothing.
 */
void seatd_payment_close(seatd_payment_t *p);

#endif
