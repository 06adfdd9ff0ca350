/*
 * bookings_outcome.c - the booking flow's outcome, answered: 201 with the booking and its
 * ticket, 202 PENDING_PAYMENT with Location, 402 declined (recorded under the request's
 * Idempotency-Key first), 410 seats lost and refunded, 429 over a decline cap, the store's
 * refusal; and a retry that arrives while the first request's payment is in flight, which
 * waits for that outcome. See bookings.c for the flow, bookings_internal.h.
 */
#include "handlers/bookings_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "base/log.h"
#include "base/metrics.h"

/* Answers with booking 'res' (the store's, after confirm, fail or a replay) and frees 'op'. */
static void answer_booking(book_op_t *op, const seatd_store_result_t *res)
{
    seatd_req_t *r = op->base.r;
    if (r == NULL) {
        seatd__op_free(&op->base);
        return;
    }
    const char *reason = res->booking.reason;
    cJSON *o = bookings__booking_to_json(op->app->cfg, res);
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/bookings/%s", op->booking_id);
    seatd_booking_state_t state = res->booking.state;
    if (state == SEATD_BOOKING_ST_CONFIRMED) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 201, o);
    } else if (state == SEATD_BOOKING_ST_PENDING_PAYMENT) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 202, o);
    } else if (state == SEATD_BOOKING_ST_FAILED && reason[0]) {
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
    seatd__op_free(&op->base);
}

/* Answers with the booking as the store has it now. */
static void on_booking_final(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    if (seatd__op_gone_or_failed(&op->base, res))
        return;
    answer_booking(op, res);
}

static void wait_for_outcome(book_op_t *op);

/* The work is done: answers with the booking if anybody waits. */
void bookings__answer_with_booking(book_op_t *op)
{
    if (op->base.r == NULL) {
        seatd__op_free(&op->base);
        return;
    }
    int rc = seatd_store_booking_get(op->app->store, op->booking_id, NULL, on_booking_final, op);
    seatd__op_started(&op->base, rc);
}

/* ---------------------------------------------------------------- a retry waits (see top) */

/* The retry waits only while its client does (the first request does the work). */
static int still_waiting(void *data)
{
    book_op_t *op = data;
    return !seatd_req_is_detached(op->base.r);
}

/* The wait itself is the flow's (seatd_booking_wait_settled): it ends in on_booking_final()
 * with the booking as it settled, or as it still is after the payment timeout + 1 s. */
static void wait_for_outcome(book_op_t *op)
{
    seatd_app_t *app = op->app;
    seatd__op_started(&op->base,
                      seatd_booking_wait_settled(app->loop, app->store, op->booking_id,
                                                 (uint64_t)app->cfg->payment_timeout_ms + 1000,
                                                 still_waiting, on_booking_final, op));
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
    seatd__op_answer_problem(&op->base, SEATD_EDECLINED, msg, extra);
}

static void on_decline_settled(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->base.r);
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
        bookings__idem_fingerprint(op, fingerprint, sizeof(fingerprint));
        int rc = seatd_store_idem_settle(op->app->store, op->owner, "book", op->idem, fingerprint,
                                         op->booking_id, on_decline_settled, op);
        if (seatd__step_begin(&op->base.r, rc) == 0)
            return;
    }
    answer_decline(op);
}

/* 202 PENDING_PAYMENT with Location: the outcome is not final (the gateway did not answer, or
 * the confirm is not on a replica yet); reconciliation settles it, and GET /v1/bookings/{id}
 * tells. Answered from what this request knows: the booking as Redis has it now may say
 * CONFIRMED on a primary that a failover can still take back. */
static void answer_pending(book_op_t *op, const seatd_booking_end_t *end)
{
    if (op->base.r) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bookingId", op->booking_id);
        cJSON_AddStringToObject(o, "status", "PENDING_PAYMENT");
        cJSON_AddStringToObject(o, "holdId", op->hold_id);
        cJSON_AddStringToObject(o, "showId", op->show_id);
        seatd__json_add_csv_array(o, "seatIds", end->seat_ids);
        cJSON_AddNumberToObject(o, "amount", (double)end->amount);
        cJSON_AddStringToObject(o, "currency", CURRENCY);
        if (end->members && end->members[0]) /* a group payment: each show's booking */
            bookings__add_members(o, end->members);
        char loc[96];
        snprintf(loc, sizeof(loc), "/v1/bookings/%s", op->booking_id);
        seatd_req_add_header(op->base.r, "Location", loc);
        seatd_req_finish_json(op->base.r, 202, o);
    }
    seatd__op_free(&op->base);
}

/* 429 with Retry-After: the decline cap of the hold or of the user is reached; nothing was
 * recorded and the gateway was not called. */
void bookings__answer_capped(book_op_t *op, const char *which)
{
    bookings__counters_give(op);
    long long secs = (op->retry_after_ms + 999) / 1000;
    char ra[24], msg[160];
    snprintf(ra, sizeof(ra), "%lld", secs > 0 ? secs : 1);
    snprintf(msg, sizeof(msg), "too many declined payments for this %s; try again in %s s", which,
             ra);
    if (op->base.r)
        seatd_req_add_header(op->base.r, "Retry-After", ra);
    seatd__op_answer_problem(&op->base, SEATD_ERATELIMIT, msg, NULL);
}

/* Nothing was charged by this request: the begin was refused, or did not reach a replica. */
static void answer_refused(book_op_t *op, const seatd_booking_end_t *end)
{
    if (end->err == SEATD_ERATELIMIT && end->res) { /* the hold's decline cap: nothing began */
        op->retry_after_ms = strtoll(end->res->detail, NULL, 10);
        bookings__answer_capped(op, "hold");
        return;
    }
    seatd_metrics_inc(seatd_metrics_booking_outcome(end->err));
    if (op->base.r && end->err == SEATD_ENOTFOUND) { /* name the hold the body gave */
        seatd__reply_no_hold(op->base.r, op->hold_id);
        seatd__op_free(&op->base);
        return;
    }
    if (op->base.r && end->res) {
        seatd__reply_store_error(op->base.r, end->res);
        seatd__op_free(&op->base);
        return;
    }
    seatd__op_answer_problem(
        &op->base, end->err,
        end->err == SEATD_ENOTDURABLE
            ? "the booking could not be stored on a replica in time (the store may be "
              "failing over); nothing was charged and the seats stay held: retry"
            : NULL,
        NULL);
}

/* The booking flow (flows/booking.h) ended: answer by its outcome. */
void bookings__on_paid(const seatd_booking_end_t *end, void *data)
{
    book_op_t *op = data;
    seatd__step_end(&op->base.r); /* a client that left changes nothing: the flow has finished */
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
        bookings__counters_give(op); /* approved, or never charged */
    switch (end->outcome) {
    case SEATD_BOOKING_CONFIRMED:
        seatd_metrics_inc(SEATD_METRIC_BOOKING_CONFIRMED);
        if (end->res) /* the confirm's answer is the whole booking: no read again */
            answer_booking(op, end->res);
        else
            bookings__answer_with_booking(op);
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
        seatd__op_answer_problem(
            &op->base, SEATD_EEXPIRED,
            "the hold expired before the payment completed; the charge was refunded", extra);
        return;
    }
    case SEATD_BOOKING_REPLAYED:
        if (op->base.r && end->res && end->res->booking.state == SEATD_BOOKING_ST_PENDING_PAYMENT) {
            /* A retry during the first request's payment: wait for its outcome. */
            wait_for_outcome(op);
            return;
        }
        bookings__answer_with_booking(op);
        return;
    case SEATD_BOOKING_REFUSED:
        answer_refused(op, end);
        return;
    default: /* PENDING, REFUND_OWED: reconciliation finishes it */
        seatd_metrics_inc(SEATD_METRIC_BOOKING_PENDING);
        answer_pending(op, end);
        return;
    }
}
