/*
 * admin.c - operator routes (role admin), for seatctl: any user's hold or booking by id.
 *
 *   GET    /v1/admin/holds/{id}        the hold record, whoever owns it
 *   DELETE /v1/admin/holds/{id}        release it for its owner (seatd_release as the owner)
 *   GET    /v1/admin/bookings/{id}     the booking record, whoever owns it
 *   DELETE /v1/admin/bookings/{id}     cancel it by the show's refund policy (seatd_cancel with
 *                                      any owner); a refund due is left to reconciliation (it
 *                                      refunds under the same key "cancel-<bookingId>" as the
 *                                      owner's cancel would), which the store hints at once
 *   POST   /v1/admin/shows/{id}/reap   run seatd_reap on the show now (what the sweeper does)
 *
 * Records are answered as the store reads them: every field present, times ("…At",
 * "heldUntil") as ISO 8601, amounts and versions as numbers, seat lists as arrays.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "handlers.h"
#include "http/http_request.h"
#include "domain/keys.h"
#include "domain/seatmap.h"

#define REAP_MAX 10000 /* holds per call: seatd_reap's own bound */

static int all_digits(const char *s)
{
    return s[0] && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 18;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Every non-empty field of 'res' as a JSON object (see the top). */
static cJSON *record_to_json(const seatd_store_result_t *res)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; i < res->nfields; i++) {
        const char *name = res->names[i], *v = res->values[i];
        if (v == NULL || v[0] == '\0' || strlen(v) != res->lens[i])
            continue;
        if (strcmp(name, "seatIds") == 0)
            seatd__json_add_csv_array(o, name, v);
        else if ((ends_with(name, "At") || strcmp(name, "heldUntil") == 0) && all_digits(v))
            seatd__json_add_time(o, name, strtoll(v, NULL, 10));
        else if ((strcmp(name, "amount") == 0 || strcmp(name, "refund") == 0 ||
                  strcmp(name, "refundPercent") == 0 || strcmp(name, "version") == 0) &&
                 all_digits(v))
            cJSON_AddNumberToObject(o, name, (double)strtoll(v, NULL, 10));
        else
            cJSON_AddStringToObject(o, name, v);
    }
    return o;
}

/* The second step of a route on its {id} (already checked by seatd__start_on_id): starts
 * 'call' on it as 'owner' (NULL: whoever owns it), answered in 'cb'; a step not started is
 * answered with its code. */
static void then_on_id(seatd_req_t *r, const char *owner, seatd__id_op_fn call, seatd_store_cb cb)
{
    seatd__step_begin_or_answer(r,
                                call(seatd__app(r)->store, seatd_req_param(r, "id"), owner, cb, r));
}

/* ---------------------------------------------------------------------------------------
 * Holds
 * --------------------------------------------------------------------------------------- */

static void on_record(const seatd_store_result_t *res, void *data)
{
    seatd__answer_result(data, res, 200, record_to_json);
}

int seatd_handle_admin_holds_get(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'h', NULL, seatd_store_hold_get, on_record);
}

static void on_admin_release(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd__seatmap_changed_by_id(r, 'h', res->hold.version);
    seatd_req_finish_json(r, 200, record_to_json(res));
}

/* The hold is read first for its owner, then released as that owner. */
static void on_hold_owner(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    const char *owner = res->hold.owner;
    then_on_id(r, owner ? owner : "", seatd_store_release, on_admin_release);
}

int seatd_handle_admin_holds_release(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'h', NULL, seatd_store_hold_get, on_hold_owner);
}

/* ---------------------------------------------------------------------------------------
 * Bookings
 * --------------------------------------------------------------------------------------- */

int seatd_handle_admin_bookings_get(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'b', NULL, seatd_store_booking_get, on_record);
}

/* Cancelled: the booking as it reads now (refundStatus "pending" until reconciliation has
 * the gateway's confirmation). */
static void on_admin_cancelled(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    /* A refund owed was hinted to reconciliation by the store (hints.h). */
    if (res->booking.has_version)
        seatd__seatmap_changed_by_id(r, 'b', res->booking.version);
    then_on_id(r, NULL, seatd_store_booking_get, on_record);
}

int seatd_handle_admin_bookings_cancel(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'b', NULL, seatd_store_cancel_by_policy, on_admin_cancelled);
}

/* ---------------------------------------------------------------------------------------
 * Reaping
 * --------------------------------------------------------------------------------------- */

static void on_reaped(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    const char *show = seatd_req_param(r, "id");
    int64_t reaped = res->reap.reaped;
    if (reaped > 0)
        seatd_seatmap_invalidate(show, res->reap.version);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "showId", show);
    cJSON_AddNumberToObject(o, "reaped", (double)reaped);
    cJSON_AddNumberToObject(o, "due", (double)res->reap.due);
    cJSON_AddNumberToObject(o, "version", (double)res->reap.version);
    int64_t next = res->reap.next ? strtoll(res->reap.next, NULL, 10) : 0;
    if (next > 0)
        seatd__json_add_time(o, "nextDeadline", next);
    seatd_req_finish_json(r, 200, o);
}

int seatd_handle_admin_shows_reap(seatd_req_t *r)
{
    const char *show = seatd_req_param(r, "id");
    if (!seatd_keys_valid_show_id(show))
        return SEATD_ENOSHOW;
    return seatd__step_begin(&r,
                             seatd_store_reap(seatd__app(r)->store, show, REAP_MAX, on_reaped, r));
}
