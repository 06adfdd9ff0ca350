/*
 * queue.c - the waiting room of a queued show (issue 15): POST /v1/shows/{id}/queue and
 * GET /v1/queue/{ticket}.
 *
 * Every decision is lua/queue.lua's, atomic in the show's slot: the place (one per user; the
 * random order of early joiners), the admissions (by what is left to sell), sold-out. The
 * worker only signs the admission of a user the function answered ADMITTED (admission.h),
 * with the deadline the function set, so the token and Redis agree on when it ends.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/admission.h"
#include "app.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "domain/keys.h"
#include "base/metrics.h"

/* The answer for a place: the user's state, position and, once admitted, the admission. */
static cJSON *queue_to_json(seatd_req_t *r, const char *show_id, const seatd_queue_result_t *q)
{
    const seatd_config_t *cfg = seatd__app(r)->cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "ticket", q->ticket);
    cJSON_AddStringToObject(o, "showId", show_id);
    cJSON_AddStringToObject(o, "state", q->state);
    cJSON_AddNumberToObject(o, "position", (double)q->position);
    if (q->number > 0)
        cJSON_AddNumberToObject(o, "number", (double)q->number);
    cJSON_AddNumberToObject(o, "admittedThrough", (double)q->admitted_through);
    cJSON_AddStringToObject(o, "queueState", q->queue_state);
    seatd__json_add_time(o, "opensAt", q->opens_at_ms);
    cJSON_AddNumberToObject(o, "waiting", (double)q->waiting);
    cJSON_AddNumberToObject(o, "available", (double)q->available);
    double rate = q->rate[0] ? strtod(q->rate, NULL) : 0;
    if (q->user_state == SEATD_QUEUE_ST_WAITING && rate > 0)
        cJSON_AddNumberToObject(o, "estimatedWaitSeconds",
                                (double)(long long)((double)q->position / rate + 0.5));
    if (q->user_state == SEATD_QUEUE_ST_ADMITTED) {
        unsigned char key[SEATD_ADMISSION_KEY_LEN];
        seatd_admission_key(cfg->jwt_secret, cfg->jwt_secret_len, key);
        char *adm = seatd_admission_sign(key, show_id, seatd__sub(r), q->expires_at_ms);
        if (adm)
            cJSON_AddStringToObject(o, "admission", adm);
        free(adm);
        seatd__json_add_time(o, "expiresAt", q->expires_at_ms);
    }
    return o;
}

static void on_joined(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/queue/%s", res->queue.ticket);
    seatd_req_add_header(r, "Location", loc);
    seatd_metrics_inc(res->queue.joined ? SEATD_METRIC_QUEUE_JOINED : SEATD_METRIC_QUEUE_REJOINED);
    seatd_metrics_add(SEATD_METRIC_QUEUE_ADMITTED, res->queue.admitted);
    seatd_req_finish_json(r, res->queue.joined ? 201 : 200,
                          queue_to_json(r, seatd_req_param(r, "id"), &res->queue));
}

int seatd_handle_queue_join(seatd_req_t *r)
{
    const char *show_id = seatd_req_param(r, "id");
    if (!seatd_keys_valid_show_id(show_id))
        return SEATD_ENOSHOW;
    char ticket[SEATD_ID_MAX];
    int rc = seatd_keys_new_id(ticket, show_id, 'q');
    if (rc < 0)
        return rc;
    rc = seatd_store_queue_join(seatd__app(r)->store, show_id, ticket, seatd__sub(r), on_joined, r);
    return seatd__step_begin(&r, rc);
}

static void on_status(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    char show[SEATD_ID_MAX];
    if (seatd_keys_parse_id(res->queue.ticket, 'q', show) < 0)
        snprintf(show, sizeof(show), "0");
    seatd_metrics_add(SEATD_METRIC_QUEUE_ADMITTED, res->queue.admitted);
    /* A place changes by the second: never cached. */
    seatd_req_add_header(r, "Cache-Control", "no-store");
    seatd_req_finish_json(r, 200, queue_to_json(r, show, &res->queue));
}

int seatd_handle_queue_get(seatd_req_t *r)
{
    return seatd__start_on_id(r, "ticket", 'q', seatd__sub(r), seatd_store_queue_status, on_status);
}
