/*
 * groups.c - event groups (issue 30): POST /v1/groups (admin), GET /v1/groups/{id}, and
 * POST /v1/groups/{id}/holds: the same seats (and places) held in every show of the group, or
 * in the shows asked for, all or nothing, in one Function call (lua/groups.lua). A group hold
 * is released whole by DELETE /v1/holds/{id} (holds.c); each show's hold in it is an ordinary
 * hold, booked and cancelled by that show's rules.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "base/mem.h"
#include "common.h"
#include "domain/areas.h"
#include "domain/config.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "domain/seatmap.h"
#include "domain/seats.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "http/principal.h"

#define GROUP_SHOWS_MAX 20
#define TITLE_MAX 200

static cJSON *group_json(const seatd_group_result_t *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", g->group_id);
    cJSON_AddStringToObject(o, "title", g->title);
    seatd__json_add_csv_array(o, "showIds", g->show_ids);
    if (g->created_at_ms)
        seatd__json_add_time(o, "createdAt", g->created_at_ms);
    return o;
}

/* Whether 'ids' ('n' show ids) may be grouped: on a Redis Cluster they must share the first's
 * hash slot (a show is created "groupWith" the first to get there); on one node any may. */
static int same_slot(const seatd_app_t *app, const char *const *ids, size_t n)
{
    if (!app->cfg->redis_cluster && !app->cfg->redis_cluster_nodes[0])
        return 1;
    for (size_t i = 1; i < n; i++)
        if (seatd_keys_show_slot(ids[i]) != seatd_keys_show_slot(ids[0]))
            return 0;
    return 1;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/groups, GET /v1/groups/{id}
 * --------------------------------------------------------------------------------------- */

static void on_group(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    int created = strcmp(seatd_req_method(r), "POST") == 0;
    if (created) {
        char loc[96];
        snprintf(loc, sizeof(loc), "/v1/groups/%s", res->group.group_id);
        seatd_req_add_header(r, "Location", loc);
    }
    seatd_req_finish_json(r, created ? 201 : 200, group_json(&res->group));
}

int seatd_handle_groups_create(seatd_req_t *r)
{
    cJSON *body = NULL;
    if (seatd_json_parse_body_or_reply(r, &body) < 0)
        return 0;
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const char *title = NULL, **ids = NULL;
    size_t n = 0;
    seatd_json_check_text(&v, body, "title", TITLE_MAX, 4 * TITLE_MAX, 1, &title);
    seatd_json_check_string_array(&v, body, "showIds", GROUP_SHOWS_MAX, SEATD_ID_MAX, &ids, &n);
    if (!seatd_json_check_failed(&v, "showIds")) {
        int ok = n >= 2;
        for (size_t i = 0; i < n && ok; i++) {
            ok = seatd_keys_valid_show_id(ids[i]);
            for (size_t j = 0; j < i && ok; j++)
                ok = strcmp(ids[i], ids[j]) != 0;
        }
        if (!ok)
            seatd_json_check_fail(&v, SEATD_EINVAL, "showIds",
                                  "must be 2 to 20 show ids, each once", NULL);
        else if (!same_slot(seatd__app(r), ids, n))
            seatd_json_check_fail(&v, SEATD_EINVAL, "showIds",
                                  "on this Redis Cluster a group's shows must share a hash slot: "
                                  "create them with \"groupWith\" naming the first",
                                  NULL);
    }
    char gid[SEATD_ID_MAX];
    int rc = 0;
    if (seatd_json_check_done_or_reply(&v, r) < 0)
        goto out;
    rc = seatd_keys_new_id(gid, ids[0], 'g');
    if (rc == 0)
        rc = seatd__step_begin(
            &r, seatd_store_group_create(seatd__app(r)->store, gid, title, ids, n, on_group, r));
out:
    free(ids);
    cJSON_Delete(body);
    return rc;
}

int seatd_handle_groups_get(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    if (seatd_keys_parse_id(id, 'g', NULL) < 0)
        return SEATD_ENOTFOUND;
    return seatd__step_begin(&r, seatd_store_group_get(seatd__app(r)->store, id, on_group, r));
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/groups/{id}/holds
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd__op_t base;
    cJSON *body;      /* owned */
    const char **ids; /* owned array of borrowed seat ids (from 'body') */
    size_t nids;
    char **shows; /* owned: the shows to hold in */
    size_t nshows, next_layout;
    char group_id[SEATD_ID_MAX];
    char areas[SEATD_AREAS_TEXT_MAX];
    char idem[201]; /* the request's idempotency key (body or header), "" for none */
} ghold_op_t;

static void ghold_free(seatd__op_t *base)
{
    ghold_op_t *op = (ghold_op_t *)base;
    for (size_t i = 0; i < op->nshows; i++)
        free(op->shows[i]);
    free(op->shows);
    free(op->ids);
    cJSON_Delete(op->body);
    free(op);
}

static void ghold_free_ctx(void *ctx)
{
    ghold_free(ctx);
}

/* "CONFLICT show=44 C7 C8" -> 409 seat-conflict with {"conflicts":{"44":["C7","C8"]}}; any other
 * refusal as the show's own, with "showId". */
static void reply_group_refusal(seatd_req_t *r, const seatd_store_result_t *res)
{
    const char *show =
        res->nwords > 0 && strncmp(res->words[0], "show=", 5) == 0 ? res->words[0] + 5 : NULL;
    if (show == NULL || !seatd_keys_valid_show_id(show)) {
        seatd__reply_store_error(r, res);
        return;
    }
    if (res->err == SEATD_ECONFLICT) {
        cJSON *extra = cJSON_CreateObject();
        cJSON *seats = cJSON_CreateArray();
        for (size_t i = 1; i < res->nwords; i++)
            if (seatd_keys_valid_seat_id(res->words[i]))
                cJSON_AddItemToArray(seats, cJSON_CreateString(res->words[i]));
        cJSON_AddItemToObject(cJSON_AddObjectToObject(extra, "conflicts"), show,
                              cJSON_Duplicate(seats, 1));
        cJSON_AddItemToObject(extra, "conflictingSeats", seats);
        cJSON_AddStringToObject(extra, "showId", show);
        char msg[96];
        snprintf(msg, sizeof(msg), "seats are taken in show %s: nothing was held in any show",
                 show);
        seatd_req_finish_problem(r, SEATD_ECONFLICT, msg, extra);
        return;
    }
    seatd__reply_store_error(r, res); /* the show's own refusal, named (common.c) */
}

static void on_group_hold(const seatd_store_result_t *res, void *data)
{
    ghold_op_t *op = data;
    if (seatd__step_end(&op->base.r)) {
        ghold_free(&op->base);
        return;
    }
    seatd_req_t *r = op->base.r;
    if (res->err) {
        reply_group_refusal(r, res);
        ghold_free(&op->base);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "holdId", res->group.hold_id);
    cJSON_AddStringToObject(o, "groupId", res->group.group_id);
    cJSON *holds = cJSON_AddArrayToObject(o, "holds");
    int64_t first_expiry = 0;
    for (size_t i = 0; i < res->group.nholds; i++) {
        seatd_group_show_hold_t held;
        if (seatd_store_group_show_hold(res->group.holds[i], &held) < 0)
            continue; /* (the script's own format: not seen) */
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "showId", held.show_id);
        cJSON_AddStringToObject(h, "holdId", held.hold_id);
        seatd__json_add_csv_array(h, "seatIds", held.seat_ids);
        cJSON *areas = seatd_areas_places_json(held.areas);
        if (areas)
            cJSON_AddItemToObject(h, "areas", areas);
        seatd__json_add_time(h, "expiresAt", held.expires_at_ms);
        cJSON_AddNumberToObject(h, "version", (double)held.version);
        cJSON_AddItemToArray(holds, h);
        seatd_seatmap_invalidate(held.show_id, held.version);
        if (first_expiry == 0 || held.expires_at_ms < first_expiry)
            first_expiry = held.expires_at_ms;
    }
    seatd__json_add_time(o, "expiresAt", first_expiry);
    char loc[96];
    snprintf(loc, sizeof(loc), "/v1/holds/%s", res->group.hold_id);
    seatd_req_add_header(r, "Location", loc);
    if (res->group.replayed)
        seatd_req_add_header(r, "Idempotent-Replayed", "true");
    seatd_req_finish_json(r, 201, o);
    ghold_free(&op->base);
}

static void ghold_next_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx);

/* Every show's layout is cached (each fetched in turn): the call itself. */
static void ghold_send(seatd_req_t *r, ghold_op_t *op)
{
    seatd_app_t *app = seatd__app(r);
    seatd_group_leg_t *legs = seatd_calloc(op->nshows, sizeof(*legs));
    const char **sorted = seatd_calloc(op->nids ? op->nids : 1, sizeof(*sorted));
    const char *bad = NULL;
    int rc = 0;
    for (size_t i = 0; i < op->nshows && rc == 0; i++) {
        legs[i].show_id = op->shows[i];
        legs[i].layout = seatd_layout_cache_get(op->shows[i]);
        if (legs[i].layout == NULL)
            rc = SEATD_EUNAVAILABLE; /* evicted meanwhile: retry */
    }
    if (rc == 0 && op->nids > 0) /* normalised against the first show: the grammar and order */
        rc = seatd_seats_normalise(op->ids, op->nids, (size_t)app->cfg->max_seats_per_hold, NULL,
                                   sorted, &bad);
    char hold_id[SEATD_ID_MAX], first[SEATD_ID_MAX], request_text[16 + SEATD__HOLD_REQUEST_EXTRA];
    const char *request =
        seatd__hold_request(r, "named", op->areas, request_text, sizeof(request_text));
    /* The group hold lives in the group's slot, its first show's (a subset may leave it out) */
    if (rc == 0 && seatd_keys_parse_id(op->group_id, 'g', first) < 0)
        rc = SEATD_EINVAL;
    if (rc == 0)
        rc = seatd_keys_new_id(hold_id, first, 'm');
    if (rc == 0) {
        seatd_group_hold_args_t a = {
            .group_id = op->group_id,
            .hold_id = hold_id,
            .owner = seatd__sub(r),
            .max_per_user = (int)app->cfg->max_seats_per_user,
            .request = request,
            .legs = legs,
            .nlegs = op->nshows,
            .seat_ids = sorted,
            .nseats = op->nids,
            .idem_key = op->idem[0] ? op->idem : NULL,
        };
        op->base.r = r;
        rc =
            seatd__op_started(&op->base, seatd_store_group_hold(app->store, &a, on_group_hold, op));
        op = NULL; /* answered by on_group_hold, or by seatd__op_started */
    }
    if (rc < 0 && op != NULL) {
        char msg[96];
        snprintf(msg, sizeof(msg), "seat %.20s is not a valid or unique seat id", bad ? bad : "?");
        seatd_req_finish_problem(r, rc, bad ? msg : NULL, NULL);
        ghold_free(&op->base);
    }
    free(sorted);
    free(legs);
}

/* Fetches the layouts one by one (most are cached), then sends. */
static void ghold_next_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    (void)l;
    ghold_op_t *op = ctx;
    if (op->next_layout == op->nshows) {
        ghold_send(r, op);
        return;
    }
    const char *show = op->shows[op->next_layout++];
    int rc = seatd__with_layout(r, show, ghold_next_layout, ghold_free_ctx, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        ghold_free(&op->base);
    }
}

static void ghold_add_show(ghold_op_t *op, const char *show)
{
    op->shows = seatd_realloc(op->shows, (op->nshows + 1) * sizeof(*op->shows));
    op->shows[op->nshows++] = seatd_strdup(show);
}

static void ghold_with_shows(seatd_req_t *r, ghold_op_t *op, const char *csv)
{
    char *copy = seatd_strdup(csv);
    for (char *save = NULL, *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save))
        ghold_add_show(op, s);
    free(copy);
    ghold_next_layout(r, NULL, op);
}

static void on_group_for_hold(const seatd_store_result_t *res, void *data)
{
    ghold_op_t *op = data;
    if (seatd__op_gone_or_failed(&op->base, res))
        return;
    seatd_req_t *r = op->base.r;
    ghold_with_shows(r, op, res->group.show_ids);
}

int seatd_handle_groups_hold(seatd_req_t *r)
{
    const char *gid = seatd_req_param(r, "id");
    if (seatd_keys_parse_id(gid, 'g', NULL) < 0)
        return SEATD_ENOTFOUND;
    ghold_op_t *op = seatd_calloc(1, sizeof(*op));
    seatd__op_init(&op->base, r, ghold_free);
    snprintf(op->group_id, sizeof(op->group_id), "%s", gid);
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0) {
        ghold_free(&op->base);
        return 0;
    }
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const cJSON *areas = cJSON_GetObjectItemCaseSensitive(op->body, "areas");
    if (areas != NULL) {
        char why[128];
        long long places = 0;
        if (seatd_areas_request(areas, seatd__app(r)->cfg->max_seats_per_hold, op->areas, &places,
                                why, sizeof(why)) < 0)
            seatd_json_check_fail(&v, SEATD_EINVAL, "areas", why, why);
    }
    if (areas == NULL || cJSON_GetObjectItemCaseSensitive(op->body, "seatIds") != NULL)
        seatd_json_check_string_array(&v, op->body, "seatIds", SEATD_SEATS_MAX_PER_HOLD, 64,
                                      &op->ids, &op->nids);
    if (op->nids == 0 && !op->areas[0] && !seatd_json_check_failed(&v, "seatIds"))
        seatd_json_check_fail(&v, SEATD_EEMPTY, "seatIds", "name at least one seat or place", NULL);
    const char *body_idem = NULL, *idem = NULL;
    seatd_json_check_string(&v, op->body, "idempotencyKey", 200, 0, &body_idem);
    if (!seatd_json_check_failed(&v, "idempotencyKey"))
        seatd__idempotency_key_check(&v, r, body_idem, &idem);
    if (idem)
        snprintf(op->idem, sizeof(op->idem), "%s", idem);
    const char **shows = NULL;
    size_t nshows = 0;
    const cJSON *subset = cJSON_GetObjectItemCaseSensitive(op->body, "showIds");
    if (subset != NULL) {
        seatd_json_check_string_array(&v, op->body, "showIds", GROUP_SHOWS_MAX, SEATD_ID_MAX,
                                      &shows, &nshows);
        int ok = nshows >= 1;
        for (size_t i = 0; i < nshows && ok; i++) {
            ok = seatd_keys_valid_show_id(shows[i]);
            for (size_t j = 0; j < i && ok; j++)
                ok = strcmp(shows[i], shows[j]) != 0;
        }
        if (!ok && !seatd_json_check_failed(&v, "showIds"))
            seatd_json_check_fail(&v, SEATD_EINVAL, "showIds",
                                  "must be 1 to 20 show ids of the group, each once", NULL);
    }
    if (seatd_json_check_done_or_reply(&v, r) < 0) {
        free(shows);
        ghold_free(&op->base);
        return 0;
    }
    if (subset != NULL) {
        for (size_t i = 0; i < nshows; i++)
            ghold_add_show(op, shows[i]);
        free(shows);
        ghold_next_layout(r, NULL, op);
        return 0;
    }
    /* every show of the group: read it first */
    seatd__op_started(&op->base,
                      seatd_store_group_get(seatd__app(r)->store, gid, on_group_for_hold, op));
    return 0;
}
