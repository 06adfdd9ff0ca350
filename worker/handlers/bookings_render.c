/*
 * bookings_render.c - a booking as the buyer sees it (its fields, and for a confirmed
 * booking a signed ticket token and its QR code), and the routes that answer with it: GET
 * /v1/bookings/{id}, DELETE /v1/bookings/{id} and POST /v1/tickets/verify.
 *
 * DELETE cancels through the flow too (seatd_booking_cancel: the show's refund policy,
 * computed in the script on Redis's clock, refunded under "cancel-<bookingId>"). GET carries a
 * signed ticket token and its QR code; POST /v1/tickets/verify checks one.
 */
#include "handlers/bookings_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "handlers.h"
#include "http/json_reply.h"
#include "base/fmt.h"
#include "domain/areas.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "domain/ticket.h"

/* A group payment's bookings (store.h seatd_payment_member_t), one object per show. */
void bookings__add_members(cJSON *o, const char *members)
{
    cJSON *list = cJSON_AddArrayToObject(o, "bookings");
    seatd_payment_member_t m;
    for (size_t at = 0; seatd_store_payment_member(members, &at, &m);) {
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "bookingId", m.booking_id);
        cJSON_AddStringToObject(it, "showId", m.show_id);
        cJSON_AddStringToObject(it, "status", m.status);
        seatd__json_add_csv_array(it, "seatIds", m.seat_ids);
        cJSON *areas = seatd_areas_places_json(m.areas);
        if (areas)
            cJSON_AddItemToObject(it, "areas", areas);
        cJSON_AddNumberToObject(it, "amount", (double)m.amount);
        if (m.version > 0)
            cJSON_AddNumberToObject(it, "version", (double)m.version);
        cJSON_AddItemToArray(list, it);
    }
}

cJSON *bookings__booking_to_json(const seatd_config_t *cfg, const seatd_store_result_t *res)
{
    const seatd_booking_result_t *b = &res->booking;
    cJSON *o = cJSON_CreateObject();
    const struct {
        const char *name, *value;
    } strings[] = {{"bookingId", b->booking_id}, {"status", b->status},
                   {"holdId", b->hold_id},       {"showId", b->show_id},
                   {"currency", b->currency},    {"paymentRef", b->payment_ref},
                   {"reason", b->reason},        {"refundStatus", b->refund_status},
                   {"paidWith", b->paid_by}};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (strings[i].value[0])
            cJSON_AddStringToObject(o, strings[i].name, strings[i].value);
    seatd__json_add_csv_array(o, "seatIds", b->seat_ids);
    cJSON *areas = seatd_areas_places_json(b->areas);
    if (areas) /* places in standing areas (issue 30): the ticket names them */
        cJSON_AddItemToObject(o, "areas", areas);
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
    int payment = b->members && b->members[0];
    if (payment) /* a group hold's one payment: its tickets are its bookings' */
        bookings__add_members(o, b->members);
    const char *bid = b->booking_id;
    if (cfg && b->state == SEATD_BOOKING_ST_CONFIRMED && bid[0] && !payment) {
        /* The ticket: a token signed with the ticket key, and its QR code. */
        unsigned char key[SEATD_TICKET_KEY_LEN];
        seatd_ticket_key(cfg->jwt_secret, cfg->jwt_secret_len, key);
        char items[SEATD_TICKET_MAX];
        seatd_ticket_items(b->seat_ids, b->areas, items, sizeof(items));
        char *token = seatd_ticket_sign(key, bid, items);
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

/* ---------------------------------------------------------------------------------------
 * GET /v1/bookings/{id}
 * --------------------------------------------------------------------------------------- */

static void on_booking_get(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd_req_finish_json(r, 200, bookings__booking_to_json(seatd__app(r)->cfg, res));
}

int seatd_handle_bookings_get(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'b', seatd__sub(r), seatd_store_booking_get, on_booking_get);
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
    seatd_req_finish_json(r, 200, bookings__booking_to_json(seatd__app(r)->cfg, res));
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
        /* the items: seat ids, and places as "<area>:<count>" (ticket.h) */
        cJSON *seats = cJSON_AddArrayToObject(o, "seatIds");
        cJSON *areas = NULL;
        char items[SEATD_TICKET_MAX];
        seatd_fmt_copy(items, sizeof(items), t->seats);
        for (char *save = NULL, *it = strtok_r(items, ",", &save); it;
             it = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(it, ':');
            if (colon == NULL) {
                cJSON_AddItemToArray(seats, cJSON_CreateString(it));
                continue;
            }
            *colon = '\0';
            if (areas == NULL)
                areas = cJSON_AddObjectToObject(o, "areas");
            cJSON_AddNumberToObject(areas, it, strtod(colon + 1, NULL));
        }
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
    char seats[SEATD_TICKET_MAX];
    seatd_ticket_items(res->booking.seat_ids ? res->booking.seat_ids : "", res->booking.areas,
                       seats, sizeof(seats));
    if (res->err == SEATD_ENOTFOUND) {
        seatd_req_finish_json(r, 200, verify_answer(0, "unknown_booking", &op->t));
    } else if (res->err) {
        seatd__reply_store_error(r, res);
    } else if (res->booking.state == SEATD_BOOKING_ST_CONFIRMED &&
               strcmp(seats, op->t.seats) == 0) {
        seatd_req_finish_json(r, 200, verify_answer(1, "confirmed", &op->t));
    } else if (res->booking.state == SEATD_BOOKING_ST_CANCELLED) {
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
