/*
 * bookings.c - POST /v1/bookings: an HTTP adapter over the booking flow (flows/booking.h), up
 * to the flow; the flow's outcome is answered in bookings_outcome.c, GET and DELETE
 * /v1/bookings/{id} and POST /v1/tickets/verify are in bookings_render.c
 * (bookings_internal.h).
 *
 * POST validates the body, claims the Idempotency-Key, counts one attempt against the buyer's
 * decline cap, and hands the booking to the flow: begin (which prices the hold's seats in
 * Redis, on a replica before anything is charged) -> charge -> confirm (on a replica before
 * 201; its answer is the booking the 201 carries) | fail | refund. At most 5 awaited Redis
 * calls (test_api_booking_calls): the key's claim, the buyer's counter, begin, the buyer's
 * index, confirm. It renders the flow's outcome:
 *   CONFIRMED 201 with the ticket · PENDING / REFUND_OWED 202 PENDING_PAYMENT with Location
 *   (reconciliation settles it) · DECLINED 402 (the hold HELD again) · REFUNDED 410 (charged,
 *   the seats lost, the charge refunded) · REFUSED: the store's refusal (404, 409, 410, 429),
 *   or 503 + Retry-After when the begin did not reach a replica (nothing charged).
 * The money path itself is not here: reconciliation settles through the same flow.
 *
 * A retried POST (same hold) while the first one's payment is in flight does not answer 409:
 * it waits for up to the payment timeout + 1 s (seatd_booking_wait_settled, reads the booking
 * every 100 ms) and then answers what the first request answered (201 CONFIRMED, 402
 * declined, 410 seats lost and refunded, or 202 still PENDING_PAYMENT with Location). One hold
 * has one live booking, so the retry can never start a second charge.
 *
 * One attempt is counted against the decline caps of the user (seatd_attempt, before
 * book_begin) and of the hold (by book_begin itself, only when it begins a booking: retries of
 * one booking sent at once are one attempt, not card testing); 429 with Retry-After over a
 * cap, before anything is recorded or the gateway is called. An attempt is given back when
 * the charge is approved or never made.
 *
 * A group hold's id ("<first>-m…", POST /v1/groups/{id}/holds) books every show's hold with one
 * payment (issue 30): the answer is the payment, a booking of the first show with "bookings"
 * (one per show, each its own ticket) and the sum as "amount"; its outcomes are a single
 * booking's (flows/booking.h).
 *
 * A request outlives its client: once the booking began, the flow runs to completion whether
 * or not anybody reads the answer.
 */
#include "handlers/bookings_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "flows/booking.h"

#define BOOK_IDEM_TTL_MS (24LL * 3600 * 1000) /* a booking's Idempotency-Key is kept a day */

/* A booking request refused before book_begin was sent (the hold was not found, not the
 * buyer's, not HELD, a cap, ...) or refused by book_begin itself did nothing, and records
 * nothing: its key's claim is taken back, so that a retry with a corrected body is not a 422
 * for a day. A book_begin whose answer was lost may have begun: that claim stays. */
static void idem_release_if_nothing_began(book_op_t *op)
{
    if (!op->idem_claimed || (op->begin_sent && !op->begin_refused))
        return;
    char fingerprint[SEATD_ID_MAX + 80];
    bookings__idem_fingerprint(op, fingerprint, sizeof(fingerprint));
    static const char what[] = "a refused booking's idempotency key released";
    seatd_store_forget(seatd_store_idem_release(op->app->store, op->owner, "book", op->idem,
                                                fingerprint, seatd_store_forgotten, (void *)what),
                       what);
}

/* The context's free function (seatd__op_t): frees the whole book_op_t. */
static void book_op_free(seatd__op_t *base)
{
    book_op_t *op = (book_op_t *)base;
    idem_release_if_nothing_began(op);
    cJSON_Delete(op->body);
    free(op);
}

/* ---------------------------------------------------------------------------------------
 * Steps. A request outlives its client: once book_begin made the booking, payment, confirm,
 * refund and fail run to completion whether or not anybody is left to read the answer (the
 * server logs and counts such a request as 499 client_gone). Every asynchronous step holds
 * the request while it runs, through common.h's multi-step idiom on op->base (seatd__op_t:
 * op->base.r is NULL once nobody waits), and every answer goes through op->base.r being set.
 * --------------------------------------------------------------------------------------- */

/* ------------------------------------------------- decline caps (card testing, issue 9) */

/* Gives back the attempts this request counted (it was approved, or never charged). */
void bookings__counters_give(book_op_t *op)
{
    static const char what[] = "decline counter given back (else it expires)";
    if (op->ctrs & CTR_HOLD)
        seatd_store_forget(seatd_store_attempt(op->app->store, op->hold_ctr, 0, 0, 0,
                                               seatd_store_forgotten, (void *)what),
                           what);
    if (op->ctrs & CTR_USER)
        seatd_store_forget(seatd_store_attempt_nowait(op->app->store, op->user_ctr, 0, 0, 0,
                                                      seatd_store_forgotten, (void *)what),
                           what);
    op->ctrs = 0;
}

/* The fingerprint an Idempotency-Key is claimed with: the hold and the card. */
void bookings__idem_fingerprint(const book_op_t *op, char *out, size_t size)
{
    snprintf(out, size, "%s %s", op->hold_id, op->method);
}

/* Begins, charges and settles the booking: the flow, once, for this route and reconciliation
 * alike. */
static void begin_booking(book_op_t *op)
{
    const seatd_config_t *cfg = op->app->cfg;
    seatd_booking_pay_args_t a = {
        .hold_id = op->hold_id,
        .owner = op->owner,
        .booking_id = op->booking_id,
        .seat_ids = NULL, /* book_begin's */
        .amount = SEATD_BOOK_PRICE_IN_STORE,
        .currency = CURRENCY,
        .payment_method = op->method,
        .payment_window_ms = cfg->payment_window_ms,
        .decline_cap = cfg->decline_cap_per_hold,
        .decline_window_ms = cfg->decline_window_ms,
    };
    int rc = seatd_booking_pay(op->app->booking, &a, bookings__on_paid, op);
    op->begin_sent = rc >= 0;
    if (rc < 0)
        bookings__counters_give(op);
    seatd__op_started(&op->base, rc);
}

static void on_user_counter(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->base.r);
    if (op->base.r && (res->err == SEATD_EUNAVAILABLE || res->err == SEATD_ETIMEOUT)) {
        /* The per-user counter lives on its own shard, which cannot be reached (failing over):
         * the booking goes on under the per-hold cap alone (in the show's slot) rather than
         * fail on a healthy shard. If the take ran, its count expires with the window. */
        seatd_metrics_inc(SEATD_METRIC_DECLINE_CAP_UNCHECKED);
        seatd_log(SEATD_LOG_WARN, NULL,
                  "per-user decline cap not checked: its shard is unreachable", "\"error\":\"%s\"",
                  seatd_err_name(res->err));
        begin_booking(op);
        return;
    }
    if (op->base.r == NULL || res->err) { /* every attempt taken is given back, nothing began */
        if (!res->err && res->attempt.ok)
            op->ctrs |= CTR_USER;
        bookings__counters_give(op);
        if (op->base.r)
            seatd__reply_store_error(op->base.r, res);
        seatd__op_free(&op->base);
        return;
    }
    if (!res->attempt.ok) {
        op->retry_after_ms = res->attempt.retry_after_ms;
        bookings__answer_capped(op, "user");
        return;
    }
    op->ctrs |= CTR_USER;
    begin_booking(op);
}

/* Counts one attempt against the user's decline cap, then begins the booking under a fresh
 * id, which counts one against the hold's when it begins one (not on a replay). An attempt
 * is given back when the charge is approved or never made, so the counters hold declines
 * (and answers unknown) plus attempts in flight, and a request over a cap never reaches the
 * gateway. Returns what starting the count returned (the request is not held yet). */
static int start_booking(book_op_t *op)
{
    const seatd_config_t *cfg = op->app->cfg;
    char suffix[SEATD_ID_MAX + 16];
    snprintf(suffix, sizeof(suffix), "declines:%s", op->hold_id);
    int rc = seatd_keys_show(op->hold_ctr, op->show_id, suffix);
    if (rc == 0 && snprintf(op->user_ctr, sizeof(op->user_ctr), "seatd:declines:%s", op->owner) >=
                       (int)sizeof(op->user_ctr))
        rc = SEATD_EBADID;
    if (rc == 0)
        rc = seatd_keys_new_id(op->booking_id, op->show_id, 'b');
    if (rc == 0)
        rc = seatd_store_attempt_nowait(op->app->store, op->user_ctr, 1, cfg->decline_cap_per_user,
                                        cfg->decline_window_ms, on_user_counter, op);
    return rc;
}

/* The request's idempotency key is claimed: a replay or a new key goes on to the hold. A
 * shard of the user's that cannot be reached does not stop the booking (one booking per hold
 * still holds); the same key with another body is 422, and nothing was done. */
static void on_book_key_claimed(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->base.r);
    if (op->base.r == NULL) {
        seatd__op_free(&op->base);
        return;
    }
    if (res->err == SEATD_EIDEMMISMATCH) {
        seatd__reply_store_error(op->base.r, res);
        seatd__op_free(&op->base);
        return;
    }
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "booking's idempotency key not checked", "\"error\":\"%s\"",
                  seatd_err_name(res->err));
    else
        op->idem_claimed = 1;
    char show[SEATD_ID_MAX];
    const char *first = res->err ? "" : res->account.outcome;
    if (first[0] && seatd_keys_parse_id(first, 'b', show) == 0 && strcmp(show, op->show_id) == 0) {
        /* A replay of a request whose card was declined: that booking's answer, again. */
        op->idem_claimed = 0; /* settled: the record stays */
        snprintf(op->booking_id, sizeof(op->booking_id), "%s", first);
        bookings__answer_with_booking(op);
        return;
    }
    seatd__op_started(&op->base, start_booking(op));
}

int seatd_handle_bookings_create(seatd_req_t *r)
{
    book_op_t *op = seatd_calloc(1, sizeof(*op));
    seatd__op_init(&op->base, r, book_op_free);
    op->app = seatd__app(r);
    snprintf(op->owner, sizeof(op->owner), "%s", seatd__sub(r));
    const char *hold_id = NULL, *method = NULL, *body_idem = NULL, *idem = NULL;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0) {
        seatd__op_free(&op->base);
        return 0;
    }
    /* Every bad field is named at once (invalidParams). */
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, op->body, "holdId", SEATD_ID_MAX - 1, 1, &hold_id);
    seatd_json_check_string(&v, op->body, "paymentMethod", 64, 1, &method);
    for (const char *p = method; p && *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
            seatd_json_check_fail(&v, SEATD_EINVAL, "paymentMethod",
                                  "must be a payment token like tok_ok ([a-z0-9_]{1,64})",
                                  "'paymentMethod' is a payment token like tok_ok "
                                  "([a-z0-9_]{1,64})");
            break;
        }
    }
    seatd_json_check_string(&v, op->body, "idempotencyKey", 200, 0, &body_idem);
    if (!seatd_json_check_failed(&v, "idempotencyKey"))
        seatd__idempotency_key_check(&v, r, body_idem, &idem);
    if (seatd_json_check_done_or_reply(&v, r) < 0) {
        seatd__op_free(&op->base);
        return 0;
    }
    if (seatd_keys_parse_id(hold_id, 'h', op->show_id) < 0 &&
        seatd_keys_parse_id(hold_id, 'm', op->show_id) < 0) { /* a group hold: one payment */
        seatd__reply_no_hold(r, hold_id);
        seatd__op_free(&op->base);
        return 0;
    }
    snprintf(op->hold_id, sizeof(op->hold_id), "%s", hold_id);
    snprintf(op->method, sizeof(op->method), "%s", method);
    /* One booking per hold is the idempotency of this route: a retry with the same hold finds
     * the booking book_begin already made. A key, when sent, is claimed for this body first,
     * so that the same key with another hold or card is 422 (IETF draft), not a second
     * purchase. */
    int rc;
    if (idem) {
        char fingerprint[SEATD_ID_MAX + 80];
        snprintf(op->idem, sizeof(op->idem), "%s", idem);
        bookings__idem_fingerprint(op, fingerprint, sizeof(fingerprint));
        rc = seatd_store_idem_claim(op->app->store, op->owner, "book", idem, fingerprint,
                                    BOOK_IDEM_TTL_MS, on_book_key_claimed, op);
    } else {
        rc = start_booking(op);
    }
    rc = seatd__step_begin(&op->base.r, rc);
    if (rc < 0)
        seatd__op_free(&op->base);
    return rc;
}
