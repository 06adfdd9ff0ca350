/*
 * holds.c - POST /v1/shows/{id}/holds, GET and DELETE /v1/holds/{id}.
 *
 * The worker only normalises (seats.c: grammar, duplicates, order, bounds, layout) and then
 * makes one call: the decision itself is the hold function inside Redis, all-or-nothing.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/admission.h"
#include "domain/areas.h"
#include "app.h"
#include "domain/best.h"
#include "common.h"
#include "domain/config.h"
#include "base/fmt.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "http/principal.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/timefmt.h"
#include "flows/hold_compensation.h"
#include "domain/seatmap.h"
#include "domain/seats.h"

/* Seat ids accepted into the normaliser: more than any hold allows, so that "too many" gets
 * its own error rather than a generic shape error; the body limit bounds it anyway. */
#define SEAT_IDS_PARSE_MAX (10 * SEATD_SEATS_MAX_PER_HOLD)

typedef struct {
    seatd_req_t *r;
    seatd_app_t *app; /* borrowed */
    cJSON *body;      /* owned; 'ids' and 'idem' point into it */
    const char **ids; /* owned array of borrowed strings */
    size_t nids;
    const char *idem;    /* borrowed: header or body; may be NULL */
    char idem_copy[160]; /* the header value outlives nothing, so keep a copy */
    char show_id[SEATD_ID_MAX];
    char hold_id[SEATD_ID_MAX]; /* the id sent to Redis, for the compensation of a 5xx; once
                                 * answered, the hold's (a replay's is the first request's) */
    char owner[65];             /* the JWT sub */
    int best;                   /* best available: "best" instead of "seatIds" */
    long long best_count;       /* seats asked for */
    const char *best_tier;      /* borrowed from 'body'; NULL: any tier */
    int best_accessible;        /* a wheelchair space with its companions */
    int best_retried;           /* NO_BLOCK on a seat map read before the hold: read again once */
    int64_t map_issued_at_ms;   /* when the seat map read was sent */
    cJSON *answer;              /* owned: the 201's body while the index entry is written */
    int admitted;               /* a verified Seatd-Admission came with the request */
    char areas[SEATD_AREAS_TEXT_MAX]; /* places in standing areas, "FLOOR:2,…" ("" for none) */
} hold_op_t;

/* The request text of seatd_hold_sell for 'mode' with this op's places (common.h). */
static const char *hold_request(seatd_req_t *r, const hold_op_t *op, const char *mode, char *out,
                                size_t cap)
{
    return seatd__hold_request(r, mode, op->areas, out, cap);
}

static void hold_op_free(void *ctx)
{
    hold_op_t *op = ctx;
    cJSON_Delete(op->answer);
    cJSON_Delete(op->body);
    free(op->ids);
    free(op);
}

static cJSON *hold_to_json(const seatd_store_result_t *res)
{
    return seatd__json_hold(&res->hold, "HELD"); /* a fresh hold's answer has no status */
}

static void best_start(seatd_req_t *r, hold_op_t *op);

/* The 201 of a made hold, once its entry in the buyer's index (GET /v1/me/holds) is written or
 * has failed. The write never waits for an unreachable shard (seatd_store_me_add fails at once
 * on a cluster whose shard of the buyer's keys, {u:<sub>}, is failing over), so a hold on a
 * healthy shard never waits for, or fails with, a dead one; a failure is logged and counted and
 * the hold is acknowledged without its entry (GET /v1/holds/{id} still answers it; it lives
 * minutes). When the write succeeds, a list read after the 201 sees the hold. */
static void on_hold_indexed(const seatd_store_result_t *res, void *data)
{
    hold_op_t *op = data;
    if (res->err) {
        seatd_metrics_inc(SEATD_METRIC_HOLD_INDEX_ERROR);
        seatd_log(SEATD_LOG_WARN, NULL, "hold not filed in the buyer's index", "\"error\":\"%s\"",
                  seatd_err_name(res->err));
    }
    if (seatd__step_end(&op->r) == 0) {
        seatd_req_finish_json(op->r, 201, op->answer);
        op->answer = NULL;
    }
    hold_op_free(op);
}

static void on_hold(const seatd_store_result_t *res, void *data)
{
    hold_op_t *op = data;
    seatd_req_t *r = op->r;
    if (res->err && seatd_err_http_status(res->err) >= 500)
        if (op->hold_id[0]) /* before 'r' may go */
            seatd_hold_compensate(seatd__app(r), op->show_id, op->hold_id, seatd__sub(r), op->idem);
    if (seatd__step_end(&r)) {
        hold_op_free(op);
        return;
    }
    if (res->err == SEATD_ENOBLOCK && op->best && !op->best_retried) {
        /* The candidates came from a seat map up to SEATD_SEATMAP_FRESH_MS old: under
         * contention they may all be gone while other seats are free. One more try, on a
         * fresh read. */
        op->best_retried = 1;
        best_start(r, op);
        return;
    }
    if (res->err) {
        seatd_metrics_inc(seatd_metrics_hold_outcome(res->err));
        seatd__reply_store_error(r, res);
        hold_op_free(op);
        return;
    }
    seatd_seatmap_invalidate(op->show_id, res->hold.version);
    cJSON *o = hold_to_json(res);
    cJSON_AddNumberToObject(o, "version", (double)res->hold.version);
    if (op->best)
        cJSON_AddBoolToObject(o, "split", res->hold.split);
    seatd_metrics_inc(res->hold.replayed ? SEATD_METRIC_HOLD_REPLAYED : SEATD_METRIC_HOLD_CREATED);
    char loc[96];
    seatd_fmt_cat(loc, sizeof(loc), "/v1/holds/", res->hold.hold_id);
    seatd_req_add_header(r, "Location", loc);
    if (res->hold.replayed)
        seatd_req_add_header(r, "Idempotent-Replayed", "true");
    op->answer = o;
    op->r = r;
    int rc = seatd__index_hold(r, res->hold.hold_id, on_hold_indexed, op);
    if (seatd__step_begin(&op->r, rc) < 0) {
        /* not even queued (the client's Redis queue is full): answer without the entry */
        seatd_metrics_inc(SEATD_METRIC_HOLD_INDEX_ERROR);
        if (op->r) {
            seatd_req_finish_json(op->r, 201, op->answer);
            op->answer = NULL;
        }
        hold_op_free(op);
    }
}

/* Sends the hold 'a' of 'op' to the store, answered in on_hold(); one that cannot be sent is
 * answered here, and 'op' freed. */
static void send_hold(seatd_req_t *r, hold_op_t *op, const seatd_hold_args_t *a)
{
    int rc = seatd__step_begin(&r, seatd_store_hold(seatd__app(r)->store, a, on_hold, op));
    if (rc < 0) {
        seatd_metrics_inc(SEATD_METRIC_HOLD_ERROR);
        seatd_req_finish_problem(r, rc, NULL, NULL);
        hold_op_free(op);
    }
}

static void hold_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    hold_op_t *op = ctx;
    seatd_app_t *app = seatd__app(r);
    const char **sorted = seatd_calloc(op->nids ? op->nids : 1, sizeof(char *));
    const char *bad = NULL;
    /* places alone ({"areas":{…}} without seatIds) name no seat */
    int rc = op->nids == 0 && op->areas[0]
                 ? 0
                 : seatd_seats_normalise(op->ids, op->nids, (size_t)app->cfg->max_seats_per_hold, l,
                                         sorted, &bad);
    if (rc < 0) {
        char msg[128];
        if (rc == SEATD_ETOOMANY)
            snprintf(msg, sizeof(msg), "at most %lld seats per hold", app->cfg->max_seats_per_hold);
        else if (rc == SEATD_EEMPTY)
            snprintf(msg, sizeof(msg), "'seatIds' must name at least one seat");
        else if (rc == SEATD_EUNKNOWNSEAT)
            snprintf(msg, sizeof(msg), "seat %.20s is not in this show", bad ? bad : "?");
        else if (rc == SEATD_EDUPSEAT)
            snprintf(msg, sizeof(msg), "seat %.20s is named twice", bad ? bad : "?");
        else
            snprintf(msg, sizeof(msg), "seat ids are 1-16 characters of [A-Za-z0-9_-]");
        seatd_metrics_inc(SEATD_METRIC_HOLD_REJECTED);
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, rc, "seatIds", msg, msg);
        rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 naming seatIds */
        free(sorted);
        hold_op_free(op);
        return;
    }
    /* The runs of the seats, for the script's orphan check. Alternatives to a refusal are
     * proposed from the bitmaps the script answers it with (store.c, best.h). */
    seatd_best_list_t cands = {0};
    if (op->nids > 0)
        seatd_best_named(l, sorted, op->nids, &cands);
    char request[16 + SEATD__HOLD_REQUEST_EXTRA];
    seatd_hold_args_t a = {
        .show_id = op->show_id,
        .hold_id = op->hold_id,
        .owner = seatd__sub(r),
        .seat_ids = sorted,
        .nseats = op->nids,
        .idem_key = op->idem,
        .ttl_ms = 0,
        .max_per_user = (int)app->cfg->max_seats_per_user,
        .request = hold_request(r, op, "named", request, sizeof(request)),
        .cands = (const char *const *)cands.items,
        .ncands = cands.n,
        .admitted = op->admitted,
    };
    send_hold(r, op, &a);
    seatd_best_list_free(&cands);
    free(sorted);
}

/* ---------------------------------------------------------------------------------------
 * Best available: a seat map read (a hint: which seats not to propose), the candidates from
 * the layout (best.h), one seatd_hold_sell that takes the first that fits.
 * --------------------------------------------------------------------------------------- */

/* A tier no seat of the layout has: 409 no-block-available when it is one of the show's
 * price tiers (a tier may be priced before any seat is given it), else 400. */
static void on_show_for_tier(const seatd_store_result_t *res, void *data)
{
    hold_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd__done(r, res)) {
        hold_op_free(op);
        return;
    }
    cJSON *tiers = cJSON_Parse(res->show.price_tiers);
    int priced = cJSON_GetObjectItemCaseSensitive(tiers, op->best_tier) != NULL;
    cJSON_Delete(tiers);
    seatd_metrics_inc(SEATD_METRIC_HOLD_REJECTED);
    if (priced) {
        char msg[96];
        snprintf(msg, sizeof(msg), "no seat of this show is in tier %s", op->best_tier);
        seatd_req_finish_problem(r, SEATD_ENOBLOCK, msg, NULL);
    } else {
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, SEATD_EINVAL, "best.tier", "is not a tier of this show",
                              "'best.tier' is not a tier of this show");
        int rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 naming best.tier */
        (void)rc;
    }
    hold_op_free(op);
}

static void best_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    hold_op_t *op = ctx;
    seatd_app_t *app = seatd__app(r);
    seatd_seatmap_t *m = seatd_seatmap_get(op->show_id, 0);
    seatd_best_hint_t hint = {0};
    unsigned char *taken = NULL; /* held, or kept for a sales channel (issue 30) */
    if (m != NULL && m->blocked != NULL) {
        size_t len = m->held_len > m->blocked_len ? m->held_len : m->blocked_len;
        taken = seatd_calloc(len + 1, 1);
        for (size_t i = 0; i < len; i++)
            taken[i] = (unsigned char)((i < m->held_len ? m->held[i] : 0) |
                                       (i < m->blocked_len ? m->blocked[i] : 0));
        hint = (seatd_best_hint_t){taken, m->booked, len, m->booked_len};
    } else if (m != NULL) {
        hint = (seatd_best_hint_t){m->held, m->booked, m->held_len, m->booked_len};
    }
    seatd_best_list_t cands = {0};
    int rc = seatd_best_candidates(l, (size_t)op->best_count, op->best_tier, op->best_accessible,
                                   m ? &hint : NULL, &cands);
    free(taken);
    if (rc < 0) { /* no seat has the tier asked */
        op->r = r;
        rc = seatd__step_begin(&op->r,
                               seatd_store_show_get(app->store, op->show_id, on_show_for_tier, op));
        if (rc < 0) {
            seatd_req_finish_problem(r, rc, NULL, NULL);
            hold_op_free(op);
        }
        return;
    }
    char mode[64], request[64 + SEATD__HOLD_REQUEST_EXTRA];
    snprintf(mode, sizeof(mode), "best:%lld:%s:%d", op->best_count,
             op->best_tier ? op->best_tier : "-", op->best_accessible);
    seatd_hold_args_t a = {
        .show_id = op->show_id,
        .hold_id = op->hold_id,
        .owner = seatd__sub(r),
        .idem_key = op->idem,
        .max_per_user = (int)app->cfg->max_seats_per_user,
        .request = hold_request(r, op, mode, request, sizeof(request)),
        .cands = (const char *const *)cands.items,
        .ncands = cands.n,
        .admitted = op->admitted,
    };
    send_hold(r, op, &a);
    seatd_best_list_free(&cands);
}

static void on_best_map(const seatd_store_result_t *res, void *data)
{
    hold_op_t *op = data;
    if (seatd__step_end(&op->r)) {
        hold_op_free(op);
        return;
    }
    /* A failed read only means no hint: the hold itself answers for the store. */
    if (!res->err) {
        (void)seatd__seatmap_keep(op->app, op->show_id, &res->seatmap, op->map_issued_at_ms);
    }
    seatd_req_t *r = op->r;
    int rc = seatd__with_layout(r, op->show_id, best_with_layout, hold_op_free, op);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        hold_op_free(op);
    }
}

/* Reads the seat map unless this worker has a fresh one (and this is the first try). */
static void best_start(seatd_req_t *r, hold_op_t *op)
{
    if (!op->best_retried && seatd_seatmap_get(op->show_id, 0) != NULL) {
        int rc = seatd__with_layout(r, op->show_id, best_with_layout, hold_op_free, op);
        if (rc < 0) {
            seatd_req_finish_problem(r, rc, NULL, NULL);
            hold_op_free(op);
        }
        return;
    }
    op->r = r;
    op->map_issued_at_ms = seatd_seatmap_now_ms();
    int rc = seatd__step_begin(&op->r,
                               seatd_store_seatmap(op->app->store, op->show_id, on_best_map, op));
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        hold_op_free(op);
    }
}

/* Tier names: [A-Za-z0-9_-]{1,32}, as shows.c checks the price tiers. */
static int valid_tier(const char *t)
{
    size_t n = strlen(t);
    return n >= 1 && n <= 32 &&
           strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-") == n;
}

/* Checks the "best" member ('best', borrowed) into 'op', recording failures in 'v'. */
static void best_check(seatd_json_check_t *v, seatd_req_t *r, hold_op_t *op, const cJSON *best)
{
    seatd_app_t *app = seatd__app(r);
    op->best = 1;
    if (!cJSON_IsObject(best)) {
        seatd_json_check_fail(v, SEATD_EINVAL, "best",
                              "must be {\"count\":n,\"tier\"?,\"accessible\"?}", NULL);
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(op->body, "seatIds") != NULL)
        seatd_json_check_fail(v, SEATD_EINVAL, "best", "give either seatIds or best, not both",
                              "give either 'seatIds' or 'best', not both");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(best, "count");
    long long max = app->cfg->max_seats_per_hold;
    if (!cJSON_IsNumber(count) || count->valuedouble < 1 || count->valuedouble > (double)max ||
        count->valuedouble != (double)(long long)count->valuedouble) {
        char why[96];
        snprintf(why, sizeof(why), "must be an integer from 1 to %lld", max);
        seatd_json_check_fail(v, SEATD_EINVAL, "best.count", why, NULL);
    } else {
        op->best_count = (long long)count->valuedouble;
    }
    const cJSON *tier = cJSON_GetObjectItemCaseSensitive(best, "tier");
    if (tier != NULL && (!cJSON_IsString(tier) || !valid_tier(tier->valuestring)))
        seatd_json_check_fail(v, SEATD_EINVAL, "best.tier", "must be a tier name", NULL);
    else if (tier != NULL)
        op->best_tier = tier->valuestring;
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(best, "accessible");
    if (acc != NULL && !cJSON_IsBool(acc))
        seatd_json_check_fail(v, SEATD_EINVAL, "best.accessible", "must be true or false", NULL);
    op->best_accessible = cJSON_IsTrue(acc);
}

/* The waiting room (issue 15): an admission in the Seatd-Admission header counts when it is
 * ours, for this show and user, and not expired (admission.h). One that does not (another
 * show's, a lapsed one) counts as none: the hold function decides, and only a queued show
 * refuses a hold without an admission (403 queue-required); a show without a queue ignores
 * the header. Returns 1 when the request was admitted, else 0. */
static int admission_check(seatd_req_t *r, const char *show_id)
{
    const char *token = seatd_req_header(r, "seatd-admission");
    if (token == NULL)
        return 0;
    const seatd_config_t *cfg = seatd__app(r)->cfg;
    unsigned char key[SEATD_ADMISSION_KEY_LEN];
    seatd_admission_key(cfg->jwt_secret, cfg->jwt_secret_len, key);
    return seatd_admission_verify(key, token, show_id, seatd__sub(r), seatd_time_now_ms()) == 0;
}

int seatd_handle_holds_create(seatd_req_t *r)
{
    const char *show_id = seatd_req_param(r, "id");
    if (!seatd_keys_valid_show_id(show_id))
        return SEATD_ENOSHOW;
    int admitted = admission_check(r, show_id);
    hold_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->app = seatd__app(r);
    op->admitted = admitted;
    seatd_fmt_copy(op->show_id, sizeof(op->show_id), show_id);
    const char *body_idem = NULL;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0) {
        hold_op_free(op);
        return 0;
    }
    /* Every bad field is named at once (invalidParams). */
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(op->body, "best");
    /* Issue 30: places in standing areas, with the seats or alone. */
    const cJSON *areas = cJSON_GetObjectItemCaseSensitive(op->body, "areas");
    if (areas != NULL) {
        char why[128];
        long long places = 0;
        if (seatd_areas_request(areas, op->app->cfg->max_seats_per_hold, op->areas, &places, why,
                                sizeof(why)) < 0)
            seatd_json_check_fail(&v, SEATD_EINVAL, "areas", why, why);
    }
    if (best != NULL)
        best_check(&v, r, op, best);
    else if (areas == NULL || cJSON_GetObjectItemCaseSensitive(op->body, "seatIds") != NULL)
        seatd_json_check_string_array(&v, op->body, "seatIds", SEAT_IDS_PARSE_MAX, 64, &op->ids,
                                      &op->nids);
    seatd_json_check_string(&v, op->body, "idempotencyKey", 200, 0, &body_idem);
    if (!seatd_json_check_failed(&v, "idempotencyKey"))
        seatd__idempotency_key_check(&v, r, body_idem, &op->idem);
    if (seatd_json_check_done_or_reply(&v, r) < 0) {
        hold_op_free(op);
        return 0;
    }
    if (op->idem) {
        seatd_fmt_copy(op->idem_copy, sizeof(op->idem_copy), op->idem);
        op->idem = op->idem_copy;
    }
    seatd_fmt_copy(op->owner, sizeof(op->owner), seatd__sub(r));
    int rc = seatd_keys_new_id(op->hold_id, op->show_id, 'h');
    if (rc == 0 && op->best) {
        best_start(r, op);
        return 0;
    }
    if (rc == 0)
        rc = seatd__with_layout(r, op->show_id, hold_with_layout, hold_op_free, op);
    if (rc < 0)
        hold_op_free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/holds/{id}, DELETE /v1/holds/{id}
 * --------------------------------------------------------------------------------------- */

static void on_hold_get(const seatd_store_result_t *res, void *data)
{
    seatd__answer_result(data, res, 200, hold_to_json);
}

int seatd_handle_holds_get(seatd_req_t *r)
{
    return seatd__start_on_id(r, "id", 'h', seatd__sub(r), seatd_store_hold_get, on_hold_get);
}

static void on_release(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd_metrics_inc(SEATD_METRIC_HOLD_RELEASED);
    seatd__seatmap_changed_by_id(r, 'h', res->hold.version);
    /* Out of the buyer's list of live holds (not waited for: GET /v1/me/holds removes what is
     * left behind, released or expired, on its own). */
    const char *ids[1] = {seatd_req_param(r, "id")};
    static const char what[] = "released hold removed from the buyer's index";
    if (ids[0])
        seatd_store_forget(seatd_store_me_remove(seatd__app(r)->store, seatd__sub(r), "holds", ids,
                                                 1, seatd_store_forgotten, (void *)what),
                           what);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "holdId", res->hold.hold_id);
    cJSON_AddStringToObject(o, "status", res->hold.status[0] ? res->hold.status : "RELEASED");
    cJSON_AddNumberToObject(o, "version", (double)res->hold.version);
    seatd_req_finish_json(r, 200, o);
}

/* A group hold (issue 30): every show's hold in it still HELD, released. */
static void on_group_released(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd_metrics_inc(SEATD_METRIC_HOLD_RELEASED);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "holdId", seatd_req_param(r, "id"));
    cJSON_AddStringToObject(o, "status", "RELEASED");
    cJSON_AddNumberToObject(o, "released", (double)res->group.released);
    seatd_req_finish_json(r, 200, o);
}

int seatd_handle_holds_delete(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    if (seatd_keys_parse_id(id, 'm', NULL) == 0)
        return seatd__step_begin(&r,
                                 seatd_store_group_release(seatd__app(r)->store, id, seatd__sub(r),
                                                           on_group_released, r));
    return seatd__start_on_id(r, "id", 'h', seatd__sub(r), seatd_store_release, on_release);
}
