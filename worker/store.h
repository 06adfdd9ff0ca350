/*
 * store.h - typed seat operations: one function per Lua function of the seatd library.
 *
 * Handlers and tests call these and never build KEYS/ARGV. Each call validates its arguments
 * (ids against keys.h's grammar) before anything is queued, builds the keys with keys.c and
 * decodes the reply into a seatd_store_result_t.
 *
 * Result shape: every seatd function answers a flat array of name/value pairs on success
 * ("holdId", "42-h…", "expiresAt", "1764…", …) and a Redis error reply "<WORD> detail…" on
 * failure, where WORD is a Lua word of SEATD_ERRNO_MAP. The result exposes both: 'err' (0 or
 * the SEATD_E* code) with the detail split into words (e.g. the conflicting seat ids), or the
 * fields, read by name with seatd_store_get(). Values are binary-safe (bitmaps are values).
 *
 * Callback contract (STYLE rule 18): a call that returns 0 runs 'cb' exactly once, with a
 * result borrowed until 'cb' returns; a call that returns an error never runs 'cb'.
 *
 * Loop and threads: those of the rds client behind 'scripts'.
 */
#ifndef SEATD_STORE_H
#define SEATD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "scripts.h"

typedef struct seatd_store_s seatd_store_t;

typedef struct seatd_store_result_s {
    int err;             /* 0, or a negative SEATD_E* code */
    const char *detail;  /* the error text after the word ("" if none); borrowed */
    size_t nwords;       /* detail split on spaces, e.g. the conflicting seat ids */
    const char **words;  /* borrowed */
    size_t nfields;      /* success: name/value pairs */
    const char **names;  /* borrowed */
    const char **values; /* borrowed, NUL-terminated, may contain NULs (see 'lens') */
    const size_t *lens;  /* byte length of each value */
} seatd_store_result_t;

typedef void (*seatd_store_cb)(const seatd_store_result_t *res, void *data);

/* Returns the value of field 'name' or NULL; borrowed like 'res'. 'len' may be NULL. */
const char *seatd_store_get(const seatd_store_result_t *res, const char *name, size_t *len);
/* Returns the field parsed as an integer, or 'dflt' if missing or not a number. */
int64_t seatd_store_get_int(const seatd_store_result_t *res, const char *name, int64_t dflt);

/* Returns an owned store over 'scripts' (borrowed; must outlive it). */
seatd_store_t *seatd_store_new(seatd_scripts_t *scripts);
void seatd_store_free(seatd_store_t *st);

/* ---------------------------------------------------------------------------------------
 * Operations. String arguments are borrowed for the call only. Unless noted, ids must match
 * keys.h's grammar or the call returns SEATD_EBADID synchronously.
 * ------------------------------------------------------------------------------------- */

/*
 * create_show: writes a show once: the shared layout (seatd:layout:<digest>, stored once per
 * distinct layout, see keys.h), then meta naming it (layoutHash, seatCount), version 0, and
 * adds it to the catalogue; on success the parsed layout is cached (layout.h). 'show_id' is
 * chosen by the caller (seatd_store_next_show_id). 'layout_json' is the layout document
 * {"showId":…,"seats":[{id,row,number,tier,x,y},…]} in index order (parsed and stored in
 * canonical form); 'seat_ids' lists the same ids in index order (else EINVAL).
 * Synchronous errors also include those of seatd_layout_from_json (EBADSEAT, EDUPSEAT, …).
 * Fields: showId, version. Errors: EXISTS, INTERNAL (a stored layout under that digest with
 * other content).
 */
typedef struct seatd_show_args_s {
    const char *show_id;
    const char *title;
    int64_t starts_at_ms; /* epoch ms */
    int64_t hold_ttl_ms;
    const char *price_tiers_json; /* {"standard":1200,…} */
    const char *layout_json;
    const char *const *seat_ids; /* in index order */
    size_t nseats;
    const char *extra_json; /* optional meta extras (screen, refund policy), may be NULL */
} seatd_show_args_t;
SEATD_MUSTCHECK int seatd_store_create_show(seatd_store_t *st, const seatd_show_args_t *a,
                                            seatd_store_cb cb, void *data);

/* INCR of the show id sequence. Fields: showId. */
SEATD_MUSTCHECK int seatd_store_next_show_id(seatd_store_t *st, seatd_store_cb cb, void *data);

/* A show's meta. Fields: showId, title, startsAt (ms), holdTtlMs, priceTiers (JSON),
 * seatCount, version, createdAt, extra, layoutHash. Errors: NOSHOW. */
SEATD_MUSTCHECK int seatd_store_show_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb,
                                         void *data);

/* The frozen layout document {"showId":…,"seats":[…]}, rendered from the shared layout the
 * show names (two reads: meta, then the layout, checked against its SHA-256).
 * Fields: layout (JSON), layoutHash. Errors: NOSHOW, INTERNAL (layout missing or altered). */
SEATD_MUSTCHECK int seatd_store_layout_get(seatd_store_t *st, const char *show_id,
                                           seatd_store_cb cb, void *data);

/* Catalogue page by start time: ids of shows [offset, offset+count). Fields: total, then
 * "id" repeated once per show, in order. */
SEATD_MUSTCHECK int seatd_store_list_shows(seatd_store_t *st, long offset, long count,
                                           seatd_store_cb cb, void *data);

/* Seat status projection, read atomically: Fields: version, seatCount, held (bitmap bytes),
 * booked (bitmap bytes). Bit i (MSB-first, as SETBIT numbers them) is seat index i.
 * Errors: NOSHOW. */
SEATD_MUSTCHECK int seatd_store_seatmap(seatd_store_t *st, const char *show_id, seatd_store_cb cb,
                                        void *data);

/*
 * hold: all-or-nothing over 'seat_ids' (already normalised by seats.c: valid, unique,
 * sorted). Each seat goes to the script with its bit index, taken from the show's layout in
 * layout.h's cache (read from Redis and cached first when missing), and the layout's digest,
 * which the script checks against the show's layoutHash before any write.
 * Fields: holdId, showId, expiresAt (epoch ms, Redis clock), version, seatIds
 * (comma-joined), replayed ("1" when answered from the idempotency record).
 * Errors: CONFLICT <seat…>, UNKNOWN_SEAT <seat>, NOSHOW, LIMIT, IDEM_MISMATCH, EMPTY, TOOMANY,
 * INVAL (this process's cached layout is not the show's), INTERNAL (shared layout missing
 * or altered).
 */
typedef struct seatd_hold_args_s {
    const char *show_id;
    const char *hold_id;         /* fresh id from seatd_keys_new_id(); used unless replayed */
    const char *owner;           /* the JWT sub */
    const char *const *seat_ids; /* normalised */
    size_t nseats;
    const char *idem_key; /* may be NULL */
    int64_t ttl_ms;       /* 0: the show's holdTtlMs */
    int max_per_user;     /* seats per user per show, held + booked */
} seatd_hold_args_t;
SEATD_MUSTCHECK int seatd_store_hold(seatd_store_t *st, const seatd_hold_args_t *a,
                                     seatd_store_cb cb, void *data);
/* Per-user hold rate limit: with 'per_window' > 0 every seatd_store_hold() first counts one
 * request of its owner in a fixed window of 'window_ms' (the Redis key
 * "seatd:rate:hold:<sub>", function seatd_rate_hit) and answers RATELIMIT (429) past it.
 * 0 turns it off (the default). */
void seatd_store_set_hold_rate(seatd_store_t *st, long long per_window, long long window_ms);

/* A hold, as its owner sees it ('owner' NULL: any owner, for operators). Fields: holdId,
 * showId, owner, seatIds, status, expiresAt, createdAt, bookingId (may be "").
 * Errors: NOTFOUND (missing or another owner's). */
SEATD_MUSTCHECK int seatd_store_hold_get(seatd_store_t *st, const char *hold_id, const char *owner,
                                         seatd_store_cb cb, void *data);

/* release: HELD -> RELEASED, seats AVAILABLE ('owner' must be the hold's; NULL never matches).
 * Fields: holdId, status, version.
 * Errors: NOTFOUND, STATE (paying or booked), EXPIRED. Releasing twice answers the same. */
SEATD_MUSTCHECK int seatd_store_release(seatd_store_t *st, const char *hold_id, const char *owner,
                                        seatd_store_cb cb, void *data);
/* As release, unless a client has already been answered this hold by an idempotent replay
 * (the hold is "claimed"): then STATE CLAIMED and nothing changes. The compensation of a hold
 * answered 5xx uses it, so a buyer whose retry got the hold keeps it. */
SEATD_MUSTCHECK int seatd_store_release_unclaimed(seatd_store_t *st, const char *hold_id,
                                                  const char *owner, seatd_store_cb cb, void *data);

/* book_begin: HELD -> PENDING_PAYMENT; one live booking per hold (a repeat answers the same
 * booking with replayed=1); seat keys extended to cover 'payment_window_ms'.
 * Fields: bookingId, holdId, showId, status, amount, seatIds, replayed.
 * Errors: NOTFOUND, EXPIRED, STATE. */
typedef struct seatd_book_args_s {
    const char *hold_id;
    const char *owner;
    const char *booking_id;     /* fresh id from seatd_keys_new_id() */
    int64_t amount;             /* minor units, computed from the tiers by the caller */
    const char *currency;       /* e.g. "EUR" */
    const char *payment_method; /* e.g. "tok_ok" */
    int64_t payment_window_ms;
} seatd_book_args_t;
SEATD_MUSTCHECK int seatd_store_book_begin(seatd_store_t *st, const seatd_book_args_t *a,
                                           seatd_store_cb cb, void *data);

/* book_confirm: seats HELD -> BOOKED iff every seat key still names the hold; booking
 * CONFIRMED; one event on the show's bookings stream. Confirming twice answers the same.
 * Fields: bookingId, status, version. Errors: NOTFOUND, EXPIRED (seats lost), STATE. */
SEATD_MUSTCHECK int seatd_store_book_confirm(seatd_store_t *st, const char *booking_id,
                                             const char *payment_ref, seatd_store_cb cb,
                                             void *data);

/* book_fail: booking FAILED (with 'reason'), hold back to HELD until its original deadline.
 * Fields: bookingId, status. Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_book_fail(seatd_store_t *st, const char *booking_id,
                                          const char *reason, seatd_store_cb cb, void *data);

/* A booking, as its owner sees it ('owner' NULL: any owner, for internal use).
 * Fields: bookingId, showId, holdId, owner, seatIds, amount, currency, status, paymentRef,
 * createdAt, confirmedAt, reason. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_booking_get(seatd_store_t *st, const char *booking_id,
                                            const char *owner, seatd_store_cb cb, void *data);

/* cancel: CONFIRMED -> CANCELLED, booked seats AVAILABLE, 'refund' recorded, one stream
 * event. Cancelling twice answers the same. Fields: bookingId, status, refund, version.
 * Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_cancel(seatd_store_t *st, const char *booking_id, const char *owner,
                                       int64_t refund, seatd_store_cb cb, void *data);

/* ---------------------------------------------------------------------------------------
 * Payment failures: reconciliation, refunds, cancellation by policy (issue 5).
 * ------------------------------------------------------------------------------------- */

/* book_fail that also records a refund already made at the gateway ('refund' minor units,
 * 'refund_ref' its reference, may be NULL): booking FAILED with 'reason', refundStatus
 * "succeeded". Fields and errors of seatd_store_book_fail(). */
SEATD_MUSTCHECK int seatd_store_book_fail_refunded(seatd_store_t *st, const char *booking_id,
                                                   const char *reason, int64_t refund,
                                                   const char *refund_ref, seatd_store_cb cb,
                                                   void *data);

/* cancel with the refund computed inside the script from the amount charged, the show's
 * tiered refund policy and the time left before the show on Redis's clock. Fields: bookingId,
 * status, refund, version, paymentRef, refundStatus ("pending", "succeeded", "none").
 * Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_cancel_by_policy(seatd_store_t *st, const char *booking_id,
                                                 const char *owner, seatd_store_cb cb, void *data);

/* The gateway confirmed a cancelled booking's refund. Fields: bookingId, refundStatus.
 * Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_refund_done(seatd_store_t *st, const char *booking_id,
                                            const char *refund_ref, seatd_store_cb cb, void *data);

/* What reconciliation must settle in show 'show_id': bookings PENDING_PAYMENT for at least
 * 'min_age_ms' (Redis clock) and cancelled bookings whose refund is unconfirmed, at most
 * 'max' of each. Fields: remaining (all entries, due or not), then "booking" and "refund"
 * repeated once per due id. */
SEATD_MUSTCHECK int seatd_store_pending_due(seatd_store_t *st, const char *show_id,
                                            int64_t min_age_ms, int max, seatd_store_cb cb,
                                            void *data);

/* Removes 'show_id' from the hint zset SEATD_KEY_PENDING_SHOWS if its score is still
 * 'score' (text as read). Fields: removed ("0"/"1"). */
SEATD_MUSTCHECK int seatd_store_hint_clear(seatd_store_t *st, const char *show_id,
                                           const char *score, seatd_store_cb cb, void *data);

/* reap: releases up to 'max' due holds of one show. Fields: reaped, version. */
SEATD_MUSTCHECK int seatd_store_reap(seatd_store_t *st, const char *show_id, int max,
                                     seatd_store_cb cb, void *data);

/* ---------------------------------------------------------------------------------------
 * Payment guards (issue 9): late charges, the charge horizon, capped declines.
 * ------------------------------------------------------------------------------------- */

/* book_fail "reason" only if the booking began at least 'min_age_ms' ago (Redis clock); a
 * younger PENDING_PAYMENT booking is answered unchanged (status PENDING_PAYMENT). Fields and
 * errors of seatd_store_book_fail(). */
SEATD_MUSTCHECK int seatd_store_book_fail_after(seatd_store_t *st, const char *booking_id,
                                                const char *reason, int64_t min_age_ms,
                                                seatd_store_cb cb, void *data);

/* seatd_late_charge: a FAILED booking was charged ('charge_id'): the refund it is owed is
 * recorded (refundStatus "pending", {s}:refunds) before it is asked for. Fields: bookingId,
 * status, refundStatus. Errors: NOTFOUND, STATE (not FAILED). */
SEATD_MUSTCHECK int seatd_store_late_charge(seatd_store_t *st, const char *booking_id,
                                            const char *charge_id, seatd_store_cb cb, void *data);

/* seatd_attempt on counter 'key' (borrowed; a key of one slot): 'take' one within 'cap' per
 * 'window_ms', or give one back ('take' 0; 'cap' and 'window_ms' unused). Fields: ok ("1",
 * or "0": over the cap, nothing counted), count, retryAfterMs. */
SEATD_MUSTCHECK int seatd_store_attempt(seatd_store_t *st, const char *key, int take, int64_t cap,
                                        int64_t window_ms, seatd_store_cb cb, void *data);

#endif
