/*
 * bookings.c - POST /v1/bookings, GET /v1/bookings/{id}, DELETE /v1/bookings/{id} and
 * POST /v1/tickets/verify: HTTP adapters over the booking flow (flows/booking.h).
 *
 * POST validates the body, claims the Idempotency-Key, reads the hold and prices its seats
 * from the show's tiers, counts one attempt against the buyer's decline cap, and hands the
 * booking to the flow: begin (on a replica before anything is charged) -> charge -> confirm
 * (on a replica before 201) | fail | refund. It renders the flow's outcome:
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
 * A request outlives its client: once the booking began, the flow runs to completion whether
 * or not anybody reads the answer.
 *
 * DELETE cancels through the flow too (seatd_booking_cancel: the show's refund policy,
 * computed in the script on Redis's clock, refunded under "cancel-<bookingId>"). GET carries a
 * signed ticket token and its QR code; POST /v1/tickets/verify checks one.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "flows/booking.h"
#include "domain/ticket.h"

#define CURRENCY "EUR"
#define BOOK_IDEM_TTL_MS (24LL * 3600 * 1000) /* a booking's Idempotency-Key is kept a day */
#define CTR_HOLD 1u /* book_begin counted an attempt in the hold's decline counter */
#define CTR_USER 2u /* an attempt is counted in the user's decline counter */

typedef struct {
    seatd_req_t *r;   /* NULL once nobody waits for the answer: the work goes on */
    seatd_app_t *app; /* borrowed */
    cJSON *body;      /* owned */
    char hold_id[SEATD_ID_MAX];
    char show_id[SEATD_ID_MAX];
    char booking_id[SEATD_ID_MAX];
    char method[65];   /* payment token, e.g. "tok_ok" */
    char owner[65];    /* the JWT sub: the booking's buyer, kept for after the client left */
    char idem[201];    /* the request's Idempotency-Key, "" when none */
    int idem_claimed;  /* 'idem' is claimed for this body (released if nothing begins) */
    int begin_sent;    /* book_begin was sent: a booking may have begun */
    int begin_refused; /* ... and the script refused it (a 4xx): nothing began */
    char *seat_csv;    /* owned: the hold's seats */
    cJSON *tiers;      /* owned: the show's price tiers */
    long long amount;  /* minor units */
    char decline[64];
    char hold_ctr[SEATD_KEY_MAX]; /* the per-hold decline counter (book_begin takes it) */
    char user_ctr[SEATD_KEY_MAX]; /* the per-user decline counter */
    unsigned ctrs;                /* CTR_*: the counters holding one attempt of this request */
    int64_t retry_after_ms;       /* when a capped attempt may be made again */
} book_op_t;

static void idem_fingerprint(const book_op_t *op, char *out, size_t size);

static void on_idem_released(const seatd_store_result_t *res, void *data)
{
    (void)data;
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "a refused booking's idempotency key not released",
                  "\"error\":\"%s\"", seatd_err_name(res->err));
}

/* A booking request refused before book_begin was sent (the hold was not found, not the
 * buyer's, not HELD, a cap, ...) or refused by book_begin itself did nothing, and records
 * nothing: its key's claim is taken back, so that a retry with a corrected body is not a 422
 * for a day. A book_begin whose answer was lost may have begun: that claim stays. */
static void idem_release_if_nothing_began(book_op_t *op)
{
    if (!op->idem_claimed || (op->begin_sent && !op->begin_refused))
        return;
    char fingerprint[SEATD_ID_MAX + 80];
    idem_fingerprint(op, fingerprint, sizeof(fingerprint));
    if (seatd_store_idem_release(op->app->store, op->owner, "book", op->idem, fingerprint,
                                 on_idem_released, NULL) < 0)
        on_idem_released(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
}

static void book_op_free(void *ctx)
{
    book_op_t *op = ctx;
    idem_release_if_nothing_began(op);
    cJSON_Delete(op->body);
    cJSON_Delete(op->tiers);
    free(op->seat_csv);
    free(op);
}

/* ---------------------------------------------------------------------------------------
 * Steps. A request outlives its client: once book_begin made the booking, payment, confirm,
 * refund and fail run to completion whether or not anybody is left to read the answer (the
 * server logs and counts such a request as 499 client_gone). Every asynchronous step holds
 * the request while it runs, through common.h's seatd__step_begin() / seatd__step_end() on
 * op->r (NULL once nobody waits), and every answer goes through op->r being set.
 * --------------------------------------------------------------------------------------- */

/* The step started with return code 'rc': on failure answers (if anybody waits) and frees
 * 'op'; otherwise holds the request until the step's callback. */
static void step_started(book_op_t *op, int rc)
{
    if (seatd__step_begin(&op->r, rc) < 0) {
        if (op->r)
            seatd_req_finish_problem(op->r, rc, NULL, NULL);
        book_op_free(op);
    }
}

/* At the end of a step before any money moved: 1 (and 'op' freed) if nobody waits, or if the
 * store failed (then the failure was answered). */
static int step_gone_or_failed(book_op_t *op, const seatd_store_result_t *res)
{
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        book_op_free(op);
        return 1;
    }
    if (res->err) {
        seatd__reply_store_error(op->r, res);
        book_op_free(op);
        return 1;
    }
    return 0;
}

/* Answers 'err' if anybody waits, and frees 'op'. 'extra' is taken. */
static void answer_problem(book_op_t *op, int err, const char *detail, cJSON *extra)
{
    if (op->r)
        seatd_req_finish_problem(op->r, err, detail, extra);
    else
        cJSON_Delete(extra);
    book_op_free(op);
}

/* ------------------------------------------------- decline caps (card testing, issue 9) */

static void on_counter_given(const seatd_store_result_t *res, void *data)
{
    (void)data;
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "decline counter not given back; it expires", "\"err\":%d",
                  res->err);
}

/* Gives back the attempts this request counted (it was approved, or never charged). */
static void counters_give(book_op_t *op)
{
    if ((op->ctrs & CTR_HOLD) &&
        seatd_store_attempt(op->app->store, op->hold_ctr, 0, 0, 0, on_counter_given, NULL) < 0)
        on_counter_given(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
    if ((op->ctrs & CTR_USER) && seatd_store_attempt_nowait(op->app->store, op->user_ctr, 0, 0, 0,
                                                            on_counter_given, NULL) < 0)
        on_counter_given(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
    op->ctrs = 0;
}

static cJSON *booking_to_json(const seatd_config_t *cfg, const seatd_store_result_t *res)
{
    const seatd_booking_result_t *b = &res->booking;
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *name, *value;
    } strings[] = {{"bookingId", b->booking_id}, {"status", b->status},
                   {"holdId", b->hold_id},       {"showId", b->show_id},
                   {"currency", b->currency},    {"paymentRef", b->payment_ref},
                   {"reason", b->reason},        {"refundStatus", b->refund_status}};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (strings[i].value[0])
            cJSON_AddStringToObject(o, strings[i].name, strings[i].value);
    seatd__json_add_csv_array(o, "seatIds", b->seat_ids);
    cJSON_AddNumberToObject(o, "amount", (double)b->amount);
    const struct {
        const char *name;
        int64_t ms;
    } times[] = {{"createdAt", b->created_at_ms},
                 {"confirmedAt", b->confirmed_at_ms},
                 {"failedAt", b->failed_at_ms},
                 {"cancelledAt", b->cancelled_at_ms},
                 {"startsAt", b->starts_at_ms}};
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
        if (times[i].ms)
            seatd__json_add_time(o, times[i].name, times[i].ms);
    if (b->has_version) /* the seat map's ?minVersion= that shows this change */
        cJSON_AddNumberToObject(o, "version", (double)b->version);
    if (b->has_refund)
        cJSON_AddNumberToObject(o, "refund", (double)b->refund);
    const char *bid = b->booking_id;
    if (cfg && strcmp(b->status, "CONFIRMED") == 0 && bid[0]) {
        /* The ticket: a token signed with the ticket key, and its QR code. */
        unsigned char key[SEATD_TICKET_KEY_LEN];
        seatd_ticket_key(cfg->jwt_secret, cfg->jwt_secret_len, key);
        char *token = seatd_ticket_sign(key, bid, b->seat_ids);
        char *svg = token ? seatd_ticket_qr_svg(token) : NULL;
        if (token)
            cJSON_AddStringToObject(o, "ticketToken", token);
        if (svg)
            cJSON_AddStringToObject(o, "qr", svg);
        free(token);
        free(svg);
    }
    return o;
}

/* Answers with the booking as the store has it now (after confirm, fail or a replay). */
static void on_booking_final(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    seatd_req_t *r = op->r;
    const char *status = res->booking.status;
    const char *reason = res->booking.reason;
    cJSON *o = booking_to_json(op->app->cfg, res);
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/bookings/%s", op->booking_id);
    if (strcmp(status, "CONFIRMED") == 0) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 201, o);
    } else if (strcmp(status, "PENDING_PAYMENT") == 0) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 202, o);
    } else if (strcmp(status, "FAILED") == 0 && reason[0]) {
        /* The answer the first request gave: seats lost (410) or a decline (402). */
        cJSON_Delete(o);
        cJSON *extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
        if (strncmp(reason, "seats_lost", 10) == 0) {
            seatd_req_finish_problem(r, SEATD_EEXPIRED,
                                     "the hold expired before the payment completed; the "
                                     "charge was refunded",
                                     extra);
        } else {
            cJSON_AddStringToObject(extra, "holdId", op->hold_id);
            cJSON_AddStringToObject(extra, "declineCode", reason);
            seatd_req_finish_problem(r, SEATD_EDECLINED, "the card was declined", extra);
        }
    } else {
        cJSON_Delete(o);
        seatd_req_finish_problem(r, SEATD_ESTATE, "the booking did not complete", NULL);
    }
    book_op_free(op);
}

static void wait_for_outcome(book_op_t *op);

/* The work is done: answers with the booking if anybody waits. */
static void answer_with_booking(book_op_t *op)
{
    if (op->r == NULL) {
        book_op_free(op);
        return;
    }
    int rc = seatd_store_booking_get(op->app->store, op->booking_id, NULL, on_booking_final, op);
    step_started(op, rc);
}

/* ---------------------------------------------------------------- a retry waits (see top) */

/* The retry waits only while its client does (the first request does the work). */
static int still_waiting(void *data)
{
    book_op_t *op = data;
    return !seatd_req_is_detached(op->r);
}

/* The wait itself is the flow's (seatd_booking_wait_settled): it ends in on_booking_final()
 * with the booking as it settled, or as it still is after the payment timeout + 1 s. */
static void wait_for_outcome(book_op_t *op)
{
    seatd_app_t *app = op->app;
    step_started(op, seatd_booking_wait_settled(app->loop, app->store, op->booking_id,
                                                (uint64_t)app->cfg->payment_timeout_ms + 1000,
                                                still_waiting, on_booking_final, op));
}

/* The fingerprint an Idempotency-Key is claimed with: the hold and the card. */
static void idem_fingerprint(const book_op_t *op, char *out, size_t size)
{
    snprintf(out, size, "%s %s", op->hold_id, op->method);
}

/* 402 with the decline code; the hold is HELD again. */
static void answer_decline(book_op_t *op)
{
    cJSON *extra = cJSON_CreateObject();
    cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
    cJSON_AddStringToObject(extra, "holdId", op->hold_id);
    cJSON_AddStringToObject(extra, "declineCode", op->decline);
    char msg[160];
    snprintf(msg, sizeof(msg), "the card was declined (%s); the seats stay held, try another card",
             op->decline);
    answer_problem(op, SEATD_EDECLINED, msg, extra);
}

static void on_decline_settled(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->r);
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "declined booking not recorded under its key",
                  "\"booking\":\"%s\",\"error\":\"%s\"", op->booking_id, seatd_err_name(res->err));
    answer_decline(op);
}

/* A decline: a request with an Idempotency-Key records the declined booking under it first
 * (whether or not its client still waits), so that a replay answers this 402 instead of
 * trying the card again. */
static void answer_declined(book_op_t *op)
{
    if (op->idem[0]) {
        char fingerprint[SEATD_ID_MAX + 80];
        idem_fingerprint(op, fingerprint, sizeof(fingerprint));
        int rc = seatd_store_idem_settle(op->app->store, op->owner, "book", op->idem, fingerprint,
                                         op->booking_id, on_decline_settled, op);
        if (seatd__step_begin(&op->r, rc) == 0)
            return;
    }
    answer_decline(op);
}

/* 202 PENDING_PAYMENT with Location: the outcome is not final (the gateway did not answer, or
 * the confirm is not on a replica yet); reconciliation settles it, and GET /v1/bookings/{id}
 * tells. Answered from what this request knows: the booking as Redis has it now may say
 * CONFIRMED on a primary that a failover can still take back. */
static void answer_pending(book_op_t *op)
{
    if (op->r) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bookingId", op->booking_id);
        cJSON_AddStringToObject(o, "status", "PENDING_PAYMENT");
        cJSON_AddStringToObject(o, "holdId", op->hold_id);
        cJSON_AddStringToObject(o, "showId", op->show_id);
        seatd__json_add_csv_array(o, "seatIds", op->seat_csv ? op->seat_csv : "");
        cJSON_AddNumberToObject(o, "amount", (double)op->amount);
        cJSON_AddStringToObject(o, "currency", CURRENCY);
        char loc[96];
        snprintf(loc, sizeof(loc), "/v1/bookings/%s", op->booking_id);
        seatd_req_add_header(op->r, "Location", loc);
        seatd_req_finish_json(op->r, 202, o);
    }
    book_op_free(op);
}

/* 429 with Retry-After: the decline cap of the hold or of the user is reached; nothing was
 * recorded and the gateway was not called. */
static void answer_capped(book_op_t *op, const char *which)
{
    counters_give(op);
    long long secs = (op->retry_after_ms + 999) / 1000;
    char ra[24], msg[160];
    snprintf(ra, sizeof(ra), "%lld", secs > 0 ? secs : 1);
    snprintf(msg, sizeof(msg), "too many declined payments for this %s; try again in %s s", which,
             ra);
    if (op->r)
        seatd_req_add_header(op->r, "Retry-After", ra);
    answer_problem(op, SEATD_ERATELIMIT, msg, NULL);
}

/* Nothing was charged by this request: the begin was refused, or did not reach a replica. */
static void answer_refused(book_op_t *op, const seatd_booking_end_t *end)
{
    if (end->err == SEATD_ERATELIMIT && end->res) { /* the hold's decline cap: nothing began */
        op->retry_after_ms = strtoll(end->res->detail, NULL, 10);
        answer_capped(op, "hold");
        return;
    }
    seatd_metrics_inc(seatd_metrics_booking_outcome(end->err));
    if (op->r && end->res) {
        seatd__reply_store_error(op->r, end->res);
        book_op_free(op);
        return;
    }
    answer_problem(op, end->err,
                   end->err == SEATD_ENOTDURABLE
                       ? "the booking could not be stored on a replica in time (the store may be "
                         "failing over); nothing was charged and the seats stay held: retry"
                       : NULL,
                   NULL);
}

/* The booking flow (flows/booking.h) ended: answer by its outcome. */
static void on_paid(const seatd_booking_end_t *end, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->r); /* a client that left changes nothing: the flow has finished */
    snprintf(op->booking_id, sizeof(op->booking_id), "%s", end->booking_id);
    int began = end->outcome != SEATD_BOOKING_REFUSED && end->outcome != SEATD_BOOKING_REPLAYED;
    /* A begin counted one attempt in the hold's counter (one not durable too: it ran). */
    if (began || end->err == SEATD_ENOTDURABLE)
        op->ctrs |= CTR_HOLD;
    op->begin_refused = !began && end->outcome == SEATD_BOOKING_REFUSED &&
                        (end->err == SEATD_ENOTDURABLE || seatd_err_http_status(end->err) < 500);
    if (end->keep_attempt)
        op->ctrs = 0; /* declined or unknown: the attempt stays counted until its window ends */
    else if (end->err != SEATD_ERATELIMIT)
        counters_give(op); /* approved, or never charged */
    switch (end->outcome) {
    case SEATD_BOOKING_CONFIRMED:
        seatd_metrics_inc(SEATD_METRIC_BOOKING_CONFIRMED);
        answer_with_booking(op);
        return;
    case SEATD_BOOKING_DECLINED:
        seatd_metrics_inc(SEATD_METRIC_BOOKING_DECLINED);
        snprintf(op->decline, sizeof(op->decline), "%s", end->decline_code);
        answer_declined(op);
        return;
    case SEATD_BOOKING_REFUNDED: {
        seatd_metrics_inc(SEATD_METRIC_BOOKING_LOST);
        cJSON *extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
        answer_problem(op, SEATD_EEXPIRED,
                       "the hold expired before the payment completed; the charge was refunded",
                       extra);
        return;
    }
    case SEATD_BOOKING_REPLAYED:
        if (op->r && strcmp(end->status, "PENDING_PAYMENT") == 0) {
            /* A retry during the first request's payment: wait for its outcome. */
            wait_for_outcome(op);
            return;
        }
        answer_with_booking(op);
        return;
    case SEATD_BOOKING_REFUSED:
        answer_refused(op, end);
        return;
    default: /* PENDING, REFUND_OWED: reconciliation finishes it */
        seatd_metrics_inc(SEATD_METRIC_BOOKING_PENDING);
        answer_pending(op);
        return;
    }
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
        .seat_ids = op->seat_csv,
        .amount = op->amount,
        .currency = CURRENCY,
        .payment_method = op->method,
        .payment_window_ms = cfg->payment_window_ms,
        .decline_cap = cfg->decline_cap_per_hold,
        .decline_window_ms = cfg->decline_window_ms,
    };
    int rc = seatd_booking_pay(op->app->booking, &a, on_paid, op);
    op->begin_sent = rc >= 0;
    if (rc < 0)
        counters_give(op);
    step_started(op, rc);
}

static void on_user_counter(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->r);
    if (op->r && (res->err == SEATD_EUNAVAILABLE || res->err == SEATD_ETIMEOUT)) {
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
    if (op->r == NULL || res->err) { /* every attempt taken is given back, nothing began */
        if (!res->err && res->attempt.ok)
            op->ctrs |= CTR_USER;
        counters_give(op);
        if (op->r)
            seatd__reply_store_error(op->r, res);
        book_op_free(op);
        return;
    }
    if (!res->attempt.ok) {
        op->retry_after_ms = res->attempt.retry_after_ms;
        answer_capped(op, "user");
        return;
    }
    op->ctrs |= CTR_USER;
    begin_booking(op);
}

/* Counts one attempt against the user's decline cap, then begins the booking, which counts
 * one against the hold's when it begins one (not on a replay). An attempt is given back when
 * the charge is approved or never made, so the counters hold declines (and answers unknown)
 * plus attempts in flight, and a request over a cap never reaches the gateway. */
static void guard_then_begin(book_op_t *op)
{
    const seatd_config_t *cfg = op->app->cfg;
    char suffix[SEATD_ID_MAX + 16];
    snprintf(suffix, sizeof(suffix), "declines:%s", op->hold_id);
    int rc = seatd_keys_show(op->hold_ctr, op->show_id, suffix);
    if (rc == 0 && snprintf(op->user_ctr, sizeof(op->user_ctr), "seatd:declines:%s",
                            seatd__sub(op->r)) >= (int)sizeof(op->user_ctr))
        rc = SEATD_EBADID;
    if (rc == 0)
        rc = seatd_store_attempt_nowait(op->app->store, op->user_ctr, 1, cfg->decline_cap_per_user,
                                        cfg->decline_window_ms, on_user_counter, op);
    step_started(op, rc);
}

/* Price of the hold's seats from the show's tiers, computed when the booking starts and then
 * stored on the booking as the amount charged. */
static void begin_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    book_op_t *op = ctx;
    long long amount = 0;
    const char *p = op->seat_csv;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char id[32];
        snprintf(id, sizeof(id), "%.*s", (int)(len < 31 ? len : 31), p);
        long idx = seatd_layout_find(l, id);
        const cJSON *price =
            idx >= 0 ? cJSON_GetObjectItemCaseSensitive(op->tiers, seatd_layout_seat(l, idx)->tier)
                     : NULL;
        if (!cJSON_IsNumber(price)) {
            seatd_req_finish_problem(r, SEATD_EINTERNAL, "a seat has no price", NULL);
            book_op_free(op);
            return;
        }
        amount += (long long)cJSON_GetNumberValue(price);
        p += len;
        if (*p == ',')
            p++;
    }
    op->amount = amount;
    if (seatd_keys_new_id(op->booking_id, op->show_id, 'b') < 0) {
        seatd_req_finish_problem(r, SEATD_EINTERNAL, NULL, NULL);
        book_op_free(op);
        return;
    }
    guard_then_begin(op);
}

static void on_show_for_booking(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (step_gone_or_failed(op, res))
        return;
    op->tiers = cJSON_Parse(res->show.price_tiers);
    if (!cJSON_IsObject(op->tiers)) {
        seatd_req_finish_problem(r, SEATD_EINTERNAL, "the show has no price tiers", NULL);
        book_op_free(op);
        return;
    }
    int rc = seatd__with_layout(r, op->show_id, begin_with_layout, book_op_free, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
    }
}

static void on_hold_for_booking(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (res->err == SEATD_ENOTFOUND) { /* name the hold the body gave */
        seatd__step_end(&op->r);
        if (op->r)
            seatd__reply_no_hold(op->r, op->hold_id);
        book_op_free(op);
        return;
    }
    if (step_gone_or_failed(op, res))
        return;
    op->seat_csv = seatd_strdup(res->hold.seat_ids);
    int rc = seatd_store_show_get(seatd__app(r)->store, op->show_id, on_show_for_booking, op);
    step_started(op, rc);
}

/* The request's idempotency key is claimed: a replay or a new key goes on to the hold. A
 * shard of the user's that cannot be reached does not stop the booking (one booking per hold
 * still holds); the same key with another body is 422, and nothing was done. */
static void on_book_key_claimed(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        book_op_free(op);
        return;
    }
    if (res->err == SEATD_EIDEMMISMATCH) {
        seatd__reply_store_error(op->r, res);
        book_op_free(op);
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
        answer_with_booking(op);
        return;
    }
    step_started(
        op, seatd_store_hold_get(op->app->store, op->hold_id, op->owner, on_hold_for_booking, op));
}

int seatd_handle_bookings_create(seatd_req_t *r)
{
    book_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->app = seatd__app(r);
    snprintf(op->owner, sizeof(op->owner), "%s", seatd__sub(r));
    const char *hold_id = NULL, *method = NULL, *body_idem = NULL, *idem = NULL;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0) {
        book_op_free(op);
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
        book_op_free(op);
        return 0;
    }
    if (seatd_keys_parse_id(hold_id, 'h', op->show_id) < 0) {
        seatd__reply_no_hold(r, hold_id);
        book_op_free(op);
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
        idem_fingerprint(op, fingerprint, sizeof(fingerprint));
        rc = seatd_store_idem_claim(op->app->store, op->owner, "book", idem, fingerprint,
                                    BOOK_IDEM_TTL_MS, on_book_key_claimed, op);
    } else {
        rc = seatd_store_hold_get(op->app->store, op->hold_id, op->owner, on_hold_for_booking, op);
    }
    rc = seatd__step_begin(&op->r, rc);
    if (rc < 0)
        book_op_free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/bookings/{id}
 * --------------------------------------------------------------------------------------- */

static void on_booking_get(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd_req_finish_json(r, 200, booking_to_json(seatd__app(r)->cfg, res));
}

int seatd_handle_bookings_get(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    char show[SEATD_ID_MAX];
    if (id == NULL || seatd_keys_parse_id(id, 'b', show) < 0)
        return SEATD_ENOTFOUND;
    int rc = seatd_store_booking_get(seatd__app(r)->store, id, seatd__sub(r), on_booking_get, r);
    return seatd__step_begin(&r, rc);
}

/* ---------------------------------------------------------------------------------------
 * DELETE /v1/bookings/{id}: cancel by the show's refund policy, refund once.
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_req_t *r;   /* NULL once nobody waits: the refund goes on (see top) */
    seatd_app_t *app; /* borrowed */
    char booking_id[SEATD_ID_MAX];
} cancel_op_t;

static void on_cancel_answer(const seatd_store_result_t *res, void *data)
{
    cancel_op_t *op = data;
    seatd__step_end(&op->r);
    seatd_req_t *r = op->r;
    free(op);
    if (r == NULL)
        return;
    if (res->err) {
        seatd__reply_store_error(r, res);
        return;
    }
    seatd_req_finish_json(r, 200, booking_to_json(seatd__app(r)->cfg, res));
}

/* The cancellation flow ended: answer with the booking as it is now (refundStatus says
 * "pending" until the gateway confirms the refund). */
static void on_cancel_done(const seatd_booking_end_t *end, void *data)
{
    cancel_op_t *op = data;
    seatd__step_end(&op->r); /* the refund is recorded whether or not anybody waits */
    seatd_req_t *r = op->r;
    if (r == NULL || end->outcome == SEATD_BOOKING_REFUSED) {
        if (r && end->res)
            seatd__reply_store_error(r, end->res);
        else if (r)
            seatd_req_finish_problem(r, end->err, NULL, NULL);
        free(op);
        return;
    }
    int rc = seatd_store_booking_get(op->app->store, op->booking_id, NULL, on_cancel_answer, op);
    if (seatd__step_begin(&op->r, rc) < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        free(op);
    }
}

int seatd_handle_bookings_cancel(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    char show[SEATD_ID_MAX];
    if (id == NULL || seatd_keys_parse_id(id, 'b', show) < 0)
        return SEATD_ENOTFOUND;
    cancel_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->app = seatd__app(r);
    snprintf(op->booking_id, sizeof(op->booking_id), "%s", id);
    int rc = seatd__step_begin(&op->r, seatd_booking_cancel(op->app->booking, op->booking_id,
                                                            seatd__sub(r), on_cancel_done, op));
    if (rc < 0)
        free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/tickets/verify {"token":…}: signature, then the booking's current state.
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_req_t *r;
    seatd_ticket_t t;
} verify_op_t;

static cJSON *verify_answer(int valid, const char *reason, const seatd_ticket_t *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "valid", valid);
    cJSON_AddStringToObject(o, "reason", reason);
    if (t && t->booking_id[0]) {
        cJSON_AddStringToObject(o, "bookingId", t->booking_id);
        cJSON_AddStringToObject(o, "showId", t->show_id);
        seatd__json_add_csv_array(o, "seatIds", t->seats);
    }
    return o;
}

static void on_verify_booking(const seatd_store_result_t *res, void *data)
{
    verify_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd__step_end(&r)) {
        free(op);
        return;
    }
    const char *status = res->booking.status;
    const char *seats = res->booking.seat_ids;
    if (res->err == SEATD_ENOTFOUND) {
        seatd_req_finish_json(r, 200, verify_answer(0, "unknown_booking", &op->t));
    } else if (res->err) {
        seatd__reply_store_error(r, res);
    } else if (strcmp(status, "CONFIRMED") == 0 && strcmp(seats, op->t.seats) == 0) {
        seatd_req_finish_json(r, 200, verify_answer(1, "confirmed", &op->t));
    } else if (strcmp(status, "CANCELLED") == 0) {
        seatd_req_finish_json(r, 200, verify_answer(0, "cancelled", &op->t));
    } else {
        seatd_req_finish_json(r, 200, verify_answer(0, "not_confirmed", &op->t));
    }
    free(op);
}

int seatd_handle_tickets_verify(seatd_req_t *r)
{
    cJSON *body = NULL;
    const char *token = NULL;
    if (seatd_json_parse_body_or_reply(r, &body) < 0 ||
        seatd_json_get_string_or_reply(r, body, "token", SEATD_TICKET_MAX - 1, 1, &token) < 0) {
        cJSON_Delete(body);
        return 0;
    }
    const seatd_config_t *cfg = seatd__app(r)->cfg;
    unsigned char key[SEATD_TICKET_KEY_LEN];
    seatd_ticket_key(cfg->jwt_secret, cfg->jwt_secret_len, key);
    verify_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    int ok = seatd_ticket_verify(key, token, &op->t) == 0;
    cJSON_Delete(body);
    if (!ok) {
        free(op);
        seatd_req_finish_json(r, 200, verify_answer(0, "invalid_signature", NULL));
        return 0;
    }
    int rc =
        seatd__step_begin(&op->r, seatd_store_booking_get(seatd__app(r)->store, op->t.booking_id,
                                                          NULL, on_verify_booking, op));
    if (rc < 0)
        free(op);
    return rc;
}
