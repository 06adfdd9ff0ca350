/*
 * bookings.c - POST /v1/bookings (book_begin -> charge -> book_confirm | book_fail) and
 * GET /v1/bookings/{id}.
 *
 * The money step sits between two Redis functions and never inside one: book_begin moves the
 * hold to PENDING_PAYMENT (one booking per hold) and extends its seats over the payment
 * window; the gateway is charged with the booking id as the idempotency key; book_confirm
 * turns the seats BOOKED only if every seat key still names the hold. A decline returns the
 * hold to HELD; a gateway that does not answer leaves the booking PENDING_PAYMENT (202) for
 * reconciliation to settle by the same idempotency key.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "config.h"
#include "handlers.h"
#include "http_request.h"
#include "json.h"
#include "keys.h"
#include "layout.h"
#include "log.h"
#include "mem.h"
#include "metrics.h"
#include "payment.h"

#define CURRENCY "EUR"

typedef struct {
    seatd_req_t *r;
    cJSON *body;                 /* owned */
    char hold_id[SEATD_ID_MAX];
    char show_id[SEATD_ID_MAX];
    char booking_id[SEATD_ID_MAX];
    char method[65];             /* payment token, e.g. "tok_ok" */
    char *seat_csv;              /* owned: the hold's seats */
    cJSON *tiers;                /* owned: the show's price tiers */
    long long amount;            /* minor units */
    char charge_id[64];
    char decline[64];
} book_op_t;

static void book_op_free(void *ctx)
{
    book_op_t *op = ctx;
    cJSON_Delete(op->body);
    cJSON_Delete(op->tiers);
    free(op->seat_csv);
    free(op);
}

static cJSON *booking_to_json(const seatd_store_result_t *res)
{
    cJSON *o = cJSON_CreateObject();
    static const char *strings[] = {"bookingId", "status", "holdId", "showId", "currency",
                                    "paymentRef", "reason"};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        const char *v = seatd_store_get(res, strings[i], NULL);
        if (v && v[0])
            cJSON_AddStringToObject(o, strings[i], v);
    }
    seatd__json_add_csv_array(o, "seatIds", seatd_store_get(res, "seatIds", NULL));
    cJSON_AddNumberToObject(o, "amount", (double)seatd_store_get_int(res, "amount", 0));
    int64_t t = seatd_store_get_int(res, "createdAt", 0);
    if (t)
        seatd__json_add_time(o, "createdAt", t);
    t = seatd_store_get_int(res, "confirmedAt", 0);
    if (t)
        seatd__json_add_time(o, "confirmedAt", t);
    return o;
}

/* Answers with the booking as the store has it now (after confirm, fail or a replay). */
static void on_booking_final(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    if (res->err) {
        seatd__reply_store_error(r, res);
        book_op_free(op);
        return;
    }
    const char *status = seatd_store_get(res, "status", NULL);
    cJSON *o = booking_to_json(res);
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/bookings/%s", op->booking_id);
    if (status && strcmp(status, "CONFIRMED") == 0) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 201, o);
    } else if (status && strcmp(status, "PENDING_PAYMENT") == 0) {
        seatd_req_add_header(r, "Location", loc);
        seatd_req_finish_json(r, 202, o);
    } else {
        cJSON_Delete(o);
        seatd_req_finish_problem(r, SEATD_ESTATE, "the booking did not complete", NULL);
    }
    book_op_free(op);
}

static void answer_with_booking(book_op_t *op)
{
    seatd_req_t *r = op->r;
    int rc = seatd_store_booking_get(seatd__app(r)->store, op->booking_id, NULL, on_booking_final,
                                     op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
        return;
    }
    seatd_req_hold(r);
}

/* After book_fail following a decline: 402 with the decline code; the hold is HELD again. */
static void on_failed_after_decline(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    cJSON *extra = cJSON_CreateObject();
    cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
    cJSON_AddStringToObject(extra, "holdId", op->hold_id);
    cJSON_AddStringToObject(extra, "declineCode", op->decline);
    char msg[160];
    snprintf(msg, sizeof(msg), "the card was declined (%s); the seats stay held, try another card",
             op->decline);
    seatd_metrics_inc(SEATD_METRIC_BOOKING_DECLINED);
    seatd_req_finish_problem(r, SEATD_EDECLINED, msg, extra);
    book_op_free(op);
}

/* After book_fail following lost seats (confirm said EXPIRED) and a refund. */
static void on_failed_after_loss(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    cJSON *extra = cJSON_CreateObject();
    cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
    seatd_metrics_inc(SEATD_METRIC_BOOKING_LOST);
    seatd_req_finish_problem(r, SEATD_EEXPIRED,
                             "the hold expired before the payment completed; the charge was "
                             "refunded",
                             extra);
    book_op_free(op);
}

static void fail_booking(book_op_t *op, const char *reason, seatd_store_cb cb)
{
    seatd_req_t *r = op->r;
    int rc = seatd_store_book_fail(seatd__app(r)->store, op->booking_id, reason, cb, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
        return;
    }
    seatd_req_hold(r);
}

static void on_refund(const seatd_payment_result_t *res, void *data)
{
    book_op_t *op = data;
    if (res->outcome != SEATD_PAY_APPROVED)
        seatd_log(SEATD_LOG_ERROR, NULL, "refund failed; reconciliation must retry",
                  "\"booking\":\"%s\",\"charge\":\"%s\"", op->booking_id, op->charge_id);
    if (seatd_req_release(op->r)) {
        /* Nobody waits; the booking stays PENDING and reconciliation settles it. */
        book_op_free(op);
        return;
    }
    fail_booking(op, "seats_lost_refunded", on_failed_after_loss);
}

static void on_confirm(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (res->err == SEATD_EEXPIRED) {
        /* Charged, but the seats were lost: give the money back (idempotent by key). */
        char key[SEATD_ID_MAX + 8];
        snprintf(key, sizeof(key), "refund-%s", op->booking_id);
        if (seatd_req_release(r)) {
            /* Nobody waits; reconciliation refunds PENDING bookings by the same key. */
            book_op_free(op);
            return;
        }
        int rc = seatd_payment_refund(seatd__app(r)->payment, key, op->charge_id, op->amount,
                                      "seats_lost", on_refund, op);
        if (rc < 0) {
            fail_booking(op, "seats_lost_refund_pending", on_failed_after_loss);
            return;
        }
        seatd_req_hold(r);
        return;
    }
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    if (res->err) {
        seatd_metrics_inc(SEATD_METRIC_BOOKING_ERROR);
        seatd__reply_store_error(r, res);
        book_op_free(op);
        return;
    }
    seatd_metrics_inc(SEATD_METRIC_BOOKING_CONFIRMED);
    answer_with_booking(op);
}

static void on_charge(const seatd_payment_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        /* The client left; the booking stays PENDING_PAYMENT and reconciliation settles it
         * with the gateway by the same idempotency key. */
        book_op_free(op);
        return;
    }
    seatd_store_t *store = seatd__app(r)->store;
    int rc = 0;
    switch (res->outcome) {
    case SEATD_PAY_APPROVED:
        snprintf(op->charge_id, sizeof(op->charge_id), "%s", res->charge_id);
        rc = seatd_store_book_confirm(store, op->booking_id, op->charge_id, on_confirm, op);
        break;
    case SEATD_PAY_DECLINED:
        snprintf(op->decline, sizeof(op->decline), "%s", res->code[0] ? res->code : "declined");
        fail_booking(op, op->decline, on_failed_after_decline);
        return;
    default:
        /* Unknown: the charge may or may not have happened. Leave it PENDING, answer 202. */
        seatd_metrics_inc(SEATD_METRIC_BOOKING_PENDING);
        answer_with_booking(op);
        return;
    }
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
        return;
    }
    seatd_req_hold(r);
}

static void on_begin(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    if (res->err) {
        seatd_metrics_inc(SEATD_METRIC_BOOKING_ERROR);
        seatd__reply_store_error(r, res);
        book_op_free(op);
        return;
    }
    const char *bid = seatd_store_get(res, "bookingId", NULL);
    snprintf(op->booking_id, sizeof(op->booking_id), "%s", bid ? bid : "");
    op->amount = seatd_store_get_int(res, "amount", op->amount);
    if (seatd_store_get_int(res, "replayed", 0) == 1) {
        const char *status = seatd_store_get(res, "status", NULL);
        if (status && strcmp(status, "PENDING_PAYMENT") == 0) {
            cJSON *extra = cJSON_CreateObject();
            cJSON_AddStringToObject(extra, "bookingId", op->booking_id);
            seatd_req_add_header(r, "Retry-After", "1");
            seatd_req_finish_problem(r, SEATD_EINFLIGHT,
                                     "a payment for this hold is in progress", extra);
            book_op_free(op);
            return;
        }
        answer_with_booking(op);
        return;
    }
    char desc[160];
    snprintf(desc, sizeof(desc), "seatd show %s seats %.80s", op->show_id, op->seat_csv);
    int rc = seatd_payment_charge(seatd__app(r)->payment, op->booking_id, op->amount, CURRENCY,
                                  op->method, desc, on_charge, op);
    if (rc < 0) {
        /* The booking is PENDING and nothing was charged; let the buyer retry later. */
        answer_with_booking(op);
        return;
    }
    seatd_req_hold(r);
}

/* Price of the hold's seats from the show's tiers, computed when the booking starts and then
 * stored on the booking as the amount charged. */
static void begin_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    book_op_t *op = ctx;
    seatd_app_t *app = seatd__app(r);
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
    seatd_book_args_t a = {
        .hold_id = op->hold_id,
        .owner = seatd__sub(r),
        .booking_id = op->booking_id,
        .amount = amount,
        .currency = CURRENCY,
        .payment_method = op->method,
        .payment_window_ms = app->cfg->payment_window_ms,
    };
    int rc = seatd_store_book_begin(app->store, &a, on_begin, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
        return;
    }
    seatd_req_hold(r);
}

static void on_show_for_booking(const seatd_store_result_t *res, void *data)
{
    book_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    if (res->err) {
        seatd__reply_store_error(r, res);
        book_op_free(op);
        return;
    }
    const char *tiers = seatd_store_get(res, "priceTiers", NULL);
    op->tiers = tiers ? cJSON_Parse(tiers) : NULL;
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
    if (seatd_req_release(r)) {
        book_op_free(op);
        return;
    }
    if (res->err) {
        seatd__reply_store_error(r, res);
        book_op_free(op);
        return;
    }
    const char *seats = seatd_store_get(res, "seatIds", NULL);
    op->seat_csv = seatd_strdup(seats ? seats : "");
    int rc = seatd_store_show_get(seatd__app(r)->store, op->show_id, on_show_for_booking, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        book_op_free(op);
        return;
    }
    seatd_req_hold(r);
}

int seatd_handle_bookings_create(seatd_req_t *r)
{
    book_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    const char *hold_id = NULL, *method = NULL, *body_idem = NULL, *idem = NULL;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0 ||
        seatd_json_get_string_or_reply(r, op->body, "holdId", SEATD_ID_MAX - 1, 1, &hold_id) < 0 ||
        seatd_json_get_string_or_reply(r, op->body, "paymentMethod", 64, 1, &method) < 0 ||
        seatd_json_get_string_or_reply(r, op->body, "idempotencyKey", 200, 0, &body_idem) < 0 ||
        seatd__idempotency_key_or_reply(r, body_idem, &idem) < 0) {
        book_op_free(op);
        return 0;
    }
    for (const char *p = method; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
            seatd_req_finish_problem(r, SEATD_EINVAL,
                                     "'paymentMethod' is a payment token like tok_ok "
                                     "([a-z0-9_]{1,64})",
                                     NULL);
            book_op_free(op);
            return 0;
        }
    }
    /* One booking per hold is the idempotency of this route: a retry with the same hold
     * finds the booking book_begin already made. The key is validated and logged only. */
    if (seatd_keys_parse_id(hold_id, 'h', op->show_id) < 0) {
        book_op_free(op);
        return SEATD_ENOTFOUND;
    }
    snprintf(op->hold_id, sizeof(op->hold_id), "%s", hold_id);
    snprintf(op->method, sizeof(op->method), "%s", method);
    int rc = seatd_store_hold_get(seatd__app(r)->store, op->hold_id, seatd__sub(r),
                                  on_hold_for_booking, op);
    if (rc < 0) {
        book_op_free(op);
        return rc;
    }
    seatd_req_hold(r);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/bookings/{id}
 * --------------------------------------------------------------------------------------- */

static void on_booking_get(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd_req_release(r))
        return;
    if (res->err) {
        seatd__reply_store_error(r, res);
        return;
    }
    seatd_req_finish_json(r, 200, booking_to_json(res));
}

int seatd_handle_bookings_get(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    char show[SEATD_ID_MAX];
    if (id == NULL || seatd_keys_parse_id(id, 'b', show) < 0)
        return SEATD_ENOTFOUND;
    int rc = seatd_store_booking_get(seatd__app(r)->store, id, seatd__sub(r), on_booking_get, r);
    if (rc < 0)
        return rc;
    seatd_req_hold(r);
    return 0;
}
