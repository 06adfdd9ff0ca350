/* bookings.c - the store's booking operations (lua/book_*.lua, lua/cancel.lua,
 * lua/payment_guard.lua, lua/sweep.lua, lua/reap.lua, lua/ratelimit.lua); see store.h. */
#include "store/store_internal.h"
#include "store/functions.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/best.h"
#include "base/buf.h"
#include "base/fmt.h"
#include "store/hints.h"
#include "store/hold_batch.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/seats.h"

/* ---------------------------------------------------------------------- bookings */

int seatd_store_book_begin(seatd_store_t *st, const seatd_book_args_t *a, seatd_store_cb cb,
                           void *data)
{
    char key[SEATD_KEY_MAX], show_h[SEATD_ID_MAX], show_b[SEATD_ID_MAX], amount[24], win[24];
    char cap[24] = "", cap_win[24] = "";
    if ((seatd_keys_parse_id(a->hold_id, 'h', show_h) < 0 &&
         seatd_keys_parse_id(a->hold_id, 'm', show_h) < 0) || /* a group hold: one payment */
        seatd_keys_parse_id(a->booking_id, 'b', show_b) < 0 ||
        strcmp(show_h, show_b) != 0 || !seatd_keys_valid_sub(a->owner))
        return SEATD_EBADID;
    if (a->amount < SEATD_BOOK_PRICE_IN_STORE || a->payment_window_ms <= 0 ||
        (a->decline_cap > 0 && a->decline_window_ms <= 0))
        return SEATD_EINVAL;
    int rc = seatd_keys_show(key, show_h, "meta");
    if (rc < 0)
        return rc;
    if (a->amount == SEATD_BOOK_PRICE_IN_STORE)
        amount[0] = '\0'; /* book_begin.lua prices the hold's seats itself */
    else
        snprintf(amount, sizeof(amount), "%" PRId64, a->amount);
    snprintf(win, sizeof(win), "%" PRId64, a->payment_window_ms);
    if (a->decline_cap > 0) {
        snprintf(cap, sizeof(cap), "%" PRId64, a->decline_cap);
        snprintf(cap_win, sizeof(cap_win), "%" PRId64, a->decline_window_ms);
    }
    const char *args[9] = {a->hold_id,
                           a->owner,
                           a->booking_id,
                           amount,
                           a->currency ? a->currency : "",
                           a->payment_method ? a->payment_method : "",
                           win,
                           cap,
                           cap_win};
    store_op_t *op = store__op_hint(store__op_new(st, KIND_BOOKING, cb, data),
                                    HINT_DUE | HINT_PENDING, a->booking_id, 'b');
    return store__fcall(op, SEATD_FN_BOOK_BEGIN, key, a->decline_cap > 0 ? 9 : 7, args, NULL,
                        store__on_reply);
}

/* FCALL 'fn' on booking 'booking_id' ('key' its show's meta key), answered as a booking that
 * files 'hints' (0: none). */
static int booking_call(seatd_store_t *st, const char *fn, unsigned hints, const char *key,
                        const char *booking_id, int nargs, const char **args, seatd_store_cb cb,
                        void *data)
{
    store_op_t *op =
        store__op_hint(store__op_new(st, KIND_BOOKING, cb, data), hints, booking_id, 'b');
    return store__fcall(op, fn, key, nargs, args, NULL, store__on_reply);
}

/* book_confirm, book_fail: (booking id, text). */
static int booking_text_call(seatd_store_t *st, const char *fn, unsigned hints,
                             const char *booking_id, const char *text, seatd_store_cb cb,
                             void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = store__meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    const char *args[2] = {booking_id, text ? text : ""};
    return booking_call(st, fn, hints, key, booking_id, 2, args, cb, data);
}

int seatd_store_book_confirm(seatd_store_t *st, const char *booking_id, const char *payment_ref,
                             seatd_store_cb cb, void *data)
{
    return booking_text_call(st, SEATD_FN_BOOK_CONFIRM, 0, booking_id, payment_ref, cb, data);
}

int seatd_store_book_fail(seatd_store_t *st, const char *booking_id, const char *reason,
                          seatd_store_cb cb, void *data)
{
    return booking_text_call(st, SEATD_FN_BOOK_FAIL, HINT_DUE, booking_id, reason, cb, data);
}

/* booking_get and cancel by policy: (booking id, owner[, mode]); 'mode' may be NULL. */
static int booking_owner_call(seatd_store_t *st, const char *fn, unsigned hints,
                              const char *booking_id, const char *owner, const char *mode,
                              seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = store__meta_of_owned_id(key, booking_id, 'b', owner);
    if (rc < 0)
        return rc;
    const char *args[3] = {booking_id, owner ? owner : "", mode};
    return booking_call(st, fn, hints, key, booking_id, mode ? 3 : 2, args, cb, data);
}

int seatd_store_booking_get(seatd_store_t *st, const char *booking_id, const char *owner,
                            seatd_store_cb cb, void *data)
{
    return booking_owner_call(st, SEATD_FN_BOOKING_GET, 0, booking_id, owner, NULL, cb, data);
}

/* The meta key of a booking that is ended with a refund of 'refund' (>= 0) and the refund as
 * text in 'amount'; 'owner' as in store__meta_of_owned_id(). */
static int refund_call_args(char *key, char amount[24], const char *booking_id, const char *owner,
                            int64_t refund)
{
    int rc = store__meta_of_owned_id(key, booking_id, 'b', owner);
    if (rc < 0)
        return rc;
    if (refund < 0)
        return SEATD_EINVAL;
    snprintf(amount, 24, "%" PRId64, refund);
    return 0;
}

int seatd_store_cancel(seatd_store_t *st, const char *booking_id, const char *owner, int64_t refund,
                       seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = refund_call_args(key, amount, booking_id, owner, refund);
    if (rc < 0)
        return rc;
    const char *args[3] = {booking_id, owner ? owner : "", amount};
    return booking_call(st, SEATD_FN_CANCEL, 0, key, booking_id, 3, args, cb, data);
}

int seatd_store_book_fail_refunded(seatd_store_t *st, const char *booking_id, const char *reason,
                                   int64_t refund, const char *refund_ref, seatd_store_cb cb,
                                   void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = refund_call_args(key, amount, booking_id, NULL, refund);
    if (rc < 0)
        return rc;
    const char *args[4] = {booking_id, reason ? reason : "", amount, refund_ref ? refund_ref : ""};
    return booking_call(st, SEATD_FN_BOOK_FAIL, HINT_DUE, key, booking_id, 4, args, cb, data);
}

int seatd_store_cancel_by_policy(seatd_store_t *st, const char *booking_id, const char *owner,
                                 seatd_store_cb cb, void *data)
{
    return booking_owner_call(st, SEATD_FN_CANCEL, HINT_REFUND, booking_id, owner, "policy", cb,
                              data);
}

int seatd_store_refund_done(seatd_store_t *st, const char *booking_id, const char *refund_ref,
                            seatd_store_cb cb, void *data)
{
    return booking_text_call(st, SEATD_FN_REFUND_DONE, 0, booking_id, refund_ref, cb, data);
}

int seatd_store_bookings_status(seatd_store_t *st, const char *show_id, size_t n,
                                const char *const *booking_ids, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (n < 1 || n > SEATD_STORE_STATUSES_MAX || booking_ids == NULL)
        return SEATD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (seatd_keys_parse_id(booking_ids[i], 'b', show) < 0 || strcmp(show, show_id) != 0)
            return SEATD_EBADID;
    return store__fcall(store__op_new(st, KIND_STATUSES, cb, data), SEATD_FN_BOOKINGS_STATUS, key,
                        (int)n, (const char **)booking_ids, NULL, store__on_reply);
}

int seatd_store_pending_due(seatd_store_t *st, const char *show_id, int64_t min_age_ms,
                            int64_t horizon_ms, int max, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], age[24], n[24], horizon[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (min_age_ms < 0 || max < 1 || max > 1000)
        return SEATD_EINVAL;
    snprintf(age, sizeof(age), "%" PRId64, min_age_ms);
    snprintf(n, sizeof(n), "%d", max);
    snprintf(horizon, sizeof(horizon), "%" PRId64, horizon_ms);
    const char *args[3] = {age, n, horizon};
    return store__fcall(store__op_new(st, KIND_PENDING, cb, data), SEATD_FN_PENDING_DUE, key,
                        horizon_ms >= 0 ? 3 : 2, args, NULL, store__on_reply);
}

int seatd_store_hint_clear(seatd_store_t *st, const char *show_id, const char *score,
                           seatd_store_cb cb, void *data)
{
    if (!seatd_keys_valid_show_id(show_id) || score == NULL)
        return SEATD_EBADID;
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_PENDING_SHOWS, show_id) < 0)
        return SEATD_EBADID;
    const char *args[2] = {show_id, score};
    return store__fcall(store__op_new(st, KIND_REMOVED, cb, data), SEATD_FN_HINT_CLEAR, key, 2,
                        args, NULL, store__on_reply);
}

int seatd_store_reap(seatd_store_t *st, const char *show_id, int max, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], n[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (max < 1 || max > 10000)
        return SEATD_EINVAL;
    snprintf(n, sizeof(n), "%d", max);
    const char *args[1] = {n};
    return store__fcall(store__op_new(st, KIND_REAP, cb, data), SEATD_FN_REAP, key, 1, args, NULL,
                        store__on_reply);
}

/* ------------------------------------------------------------------ payment guards */

int seatd_store_book_fail_after(seatd_store_t *st, const char *booking_id, const char *reason,
                                int64_t min_age_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], age[24];
    int rc = store__meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (min_age_ms < 0)
        return SEATD_EINVAL;
    snprintf(age, sizeof(age), "%" PRId64, min_age_ms);
    const char *args[5] = {booking_id, reason ? reason : "", "", "", age};
    return booking_call(st, SEATD_FN_BOOK_FAIL, HINT_DUE, key, booking_id, 5, args, cb, data);
}

int seatd_store_late_charge(seatd_store_t *st, const char *booking_id, const char *charge_id,
                            seatd_store_cb cb, void *data)
{
    return booking_text_call(st, SEATD_FN_LATE_CHARGE, 0, booking_id, charge_id, cb, data);
}

int seatd_store_book_lost(seatd_store_t *st, const seatd_book_lost_args_t *a, seatd_store_cb cb,
                          void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    if (a == NULL || a->charge_id == NULL || a->charge_id[0] == '\0' || a->amount < 1)
        return SEATD_EINVAL;
    int rc = store__meta_of_id(key, a->booking_id, 'b');
    if (rc < 0)
        return rc;
    snprintf(amount, sizeof(amount), "%" PRId64, a->amount);
    const char *args[7] = {a->booking_id,
                           a->charge_id,
                           amount,
                           a->currency ? a->currency : "",
                           a->owner ? a->owner : "",
                           a->hold_id ? a->hold_id : "",
                           a->seat_ids ? a->seat_ids : ""};
    /* Hinted like a refund owed: reconciliation retries it from {s}:refunds. */
    return booking_call(st, SEATD_FN_BOOK_LOST, HINT_PENDING, key, a->booking_id, 7, args, cb,
                        data);
}

int seatd_store_late_clear(seatd_store_t *st, const char *booking_id, seatd_store_cb cb, void *data)
{
    return booking_text_call(st, SEATD_FN_LATE_CLEAR, 0, booking_id, NULL, cb, data);
}

static int attempt_call(seatd_store_t *st, unsigned flags, const char *key, int take, int64_t cap,
                        int64_t window_ms, seatd_store_cb cb, void *data)
{
    char c[24], w[24];
    if (key == NULL || key[0] == '\0' || (take && (cap < 1 || window_ms < 1)))
        return SEATD_EINVAL;
    snprintf(c, sizeof(c), "%" PRId64, cap);
    snprintf(w, sizeof(w), "%" PRId64, window_ms);
    const char *args[3] = {take ? "take" : "give", c, w};
    const char *keys[1] = {key};
    store_op_t *op = store__op_new(st, KIND_ATTEMPT, cb, data);
    int rc = seatd_scripts_fcall_ex(st->scripts, SEATD_FN_ATTEMPT, flags, 1, keys, take ? 3 : 1,
                                    args, NULL, store__on_reply, op);
    if (rc < 0)
        store__op_free(op);
    return rc;
}

int seatd_store_attempt(seatd_store_t *st, const char *key, int take, int64_t cap,
                        int64_t window_ms, seatd_store_cb cb, void *data)
{
    return attempt_call(st, 0, key, take, cap, window_ms, cb, data);
}

int seatd_store_attempt_nowait(seatd_store_t *st, const char *key, int take, int64_t cap,
                               int64_t window_ms, seatd_store_cb cb, void *data)
{
    return attempt_call(st, SEATD_RDS_NO_WAIT, key, take, cap, window_ms, cb, data);
}
