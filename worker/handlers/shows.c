/*
 * shows.c - the catalogue, show creation (admin) and the frozen layout.
 *
 * The layout never changes, so it is an immutable resource; the seat status that changes is
 * served by seatmap.c.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "base/buf.h"
#include "common.h"
#include "domain/areas.h"
#include "domain/channels.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "domain/refund_policy.h"
#include "domain/seats.h"
#include "base/timefmt.h"

#define SHOWS_PAGE_MAX 100
#define TITLE_MAX 200
#define TIERS_MAX 16

/* ---------------------------------------------------------------------------------------
 * Rendering a show from its meta fields
 * --------------------------------------------------------------------------------------- */

static void queue_render(cJSON *o);

/* The show's optional fields, kept as JSON ('extra': the queue, "orphanRule": "block", ...),
 * into 'o' where it has no member of that name; "orphanRule" is "off" when not kept. The 201
 * of a creation and every later read show the same fields. */
static void add_extra(cJSON *o, const char *extra)
{
    cJSON *x = extra ? cJSON_Parse(extra) : NULL;
    if (x) {
        cJSON *item = NULL;
        cJSON_ArrayForEach(item, x)
        {
            if (item->string && !cJSON_HasObjectItem(o, item->string))
                cJSON_AddItemToObject(o, item->string, cJSON_Duplicate(item, 1));
        }
        cJSON_Delete(x);
    }
    if (!cJSON_HasObjectItem(o, "orphanRule")) /* issue 13: "block" is kept in extra */
        cJSON_AddStringToObject(o, "orphanRule", "off");
    queue_render(o);
}

/* The members a show's document starts with, the 201 of its creation and every read alike:
 * 'sales_close_ms' is when sales close (the show's cutoff, else its start), 'tiers_json' the
 * price tiers as kept. */
static cJSON *show_head_json(const char *id, const char *title, int64_t starts_at_ms,
                             int64_t sales_close_ms, int64_t hold_ttl_ms, const char *tiers_json,
                             int64_t seat_count)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "title", title);
    seatd__json_add_time(o, "startsAt", starts_at_ms);
    seatd__json_add_time(o, "salesCloseAt", sales_close_ms);
    cJSON_AddNumberToObject(o, "holdTtlSeconds", (double)(hold_ttl_ms / 1000));
    cJSON *t = cJSON_Parse(tiers_json);
    cJSON_AddItemToObject(o, "priceTiers", t ? t : cJSON_CreateObject());
    cJSON_AddNumberToObject(o, "seatCount", (double)seat_count);
    return o;
}

static cJSON *show_to_json(const seatd_store_result_t *res)
{
    const seatd_show_result_t *s = &res->show;
    /* (an extra's copy of the sales cutoff is not shown) */
    cJSON *o = show_head_json(s->show_id, s->title, s->starts_at_ms,
                              s->has_sales_close_at ? s->sales_close_at_ms : s->starts_at_ms,
                              s->hold_ttl_ms, s->price_tiers, s->seat_count);
    add_extra(o, s->extra[0] ? s->extra : NULL);
    char path[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/layout", s->show_id);
    cJSON *links = cJSON_AddObjectToObject(o, "links");
    cJSON_AddStringToObject(links, "layout", path);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats", s->show_id);
    cJSON_AddStringToObject(links, "seats", path);
    return o;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/shows?page=&size=
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_req_t *r;
    long page, size, total;
    size_t n, pending, failed;
    int gone;      /* a release said the request no longer wants an answer */
    cJSON **items; /* one slot per listed id, in catalogue order */
} list_op_t;

typedef struct {
    list_op_t *op;
    size_t slot;
} list_item_t;

static void list_finish(list_op_t *op)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *items = cJSON_AddArrayToObject(root, "items");
    for (size_t i = 0; i < op->n; i++)
        if (op->items[i])
            cJSON_AddItemToArray(items, op->items[i]);
    cJSON_AddNumberToObject(root, "page", (double)op->page);
    cJSON_AddNumberToObject(root, "size", (double)op->size);
    cJSON_AddNumberToObject(root, "total", (double)op->total);
    seatd_req_finish_json(op->r, 200, root);
}

static void list_op_free(list_op_t *op, int drop_items)
{
    if (drop_items)
        for (size_t i = 0; i < op->n; i++)
            cJSON_Delete(op->items[i]);
    free(op->items);
    free(op);
}

static void on_list_item(const seatd_store_result_t *res, void *data)
{
    list_item_t *it = data;
    list_op_t *op = it->op;
    size_t slot = it->slot;
    free(it);
    /* Every get holds the request once, so every callback releases once; after a release
     * that reports the client gone, 'r' is only ever passed to further releases. */
    seatd_req_t *r = op->r;
    if (seatd__step_end(&r))
        op->gone = 1;
    if (!op->gone) {
        if (res->err == 0)
            op->items[slot] = show_to_json(res);
        else if (res->err != SEATD_ENOSHOW)
            op->failed++;
    }
    if (--op->pending > 0)
        return;
    if (op->gone) {
        list_op_free(op, 1);
        return;
    }
    if (op->failed) {
        seatd_req_finish_problem(op->r, SEATD_EUNAVAILABLE, NULL, NULL);
        list_op_free(op, 1);
        return;
    }
    list_finish(op);
    list_op_free(op, 0);
}

static void on_list(const seatd_store_result_t *res, void *data)
{
    list_op_t *op = data;
    seatd_req_t *r = op->r;
    if (seatd__step_end(&r)) {
        list_op_free(op, 1);
        return;
    }
    if (res->err) {
        seatd__reply_store_error(r, res);
        list_op_free(op, 1);
        return;
    }
    op->total = (long)res->page.total;
    size_t nids = res->page.nids;
    op->items = seatd_calloc(nids ? nids : 1, sizeof(cJSON *));
    op->n = nids;
    if (nids == 0) {
        list_finish(op);
        list_op_free(op, 0);
        return;
    }
    seatd_app_t *app = seatd__app(r);
    size_t slot = 0;
    /* Count every get as pending before issuing any, so no callback sees zero early. */
    op->pending = nids;
    for (size_t i = 0; i < nids; i++) {
        list_item_t *it = seatd_malloc(sizeof(*it));
        it->op = op;
        it->slot = slot++;
        if (seatd__step_begin(
                &r, seatd_store_show_get(app->store, res->page.ids[i], on_list_item, it)) < 0) {
            free(it);
            op->failed++;
            op->pending--;
        }
    }
    if (op->pending == 0) {
        seatd_req_finish_problem(r, SEATD_EUNAVAILABLE, NULL, NULL);
        list_op_free(op, 1);
    }
}

static int query_long(seatd_req_t *r, const char *name, long dflt, long min, long max, long *out)
{
    const char *v = seatd_req_query(r, name);
    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (v[0] == '\0' || *end != '\0' || n < min || n > max) {
        char msg[96];
        snprintf(msg, sizeof(msg), "query parameter '%s' must be an integer in [%ld, %ld]", name,
                 min, max);
        seatd_req_finish_problem(r, SEATD_EINVAL, msg, NULL);
        return SEATD_EINVAL;
    }
    *out = n;
    return 0;
}

int seatd_handle_shows_list(seatd_req_t *r)
{
    long page, size;
    if (query_long(r, "page", 1, 1, 100000, &page) < 0 ||
        query_long(r, "size", 20, 1, SHOWS_PAGE_MAX, &size) < 0)
        return 0;
    list_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->page = page;
    op->size = size;
    int rc = seatd_store_list_shows(seatd__app(r)->store, (page - 1) * size, size, on_list, op);
    if (seatd__step_begin(&r, rc) < 0)
        free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/shows/{id}
 * --------------------------------------------------------------------------------------- */

static void on_show(const seatd_store_result_t *res, void *data)
{
    seatd__answer_result(data, res, 200, show_to_json);
}

int seatd_handle_shows_get(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    if (!seatd_keys_valid_show_id(id))
        return SEATD_ENOSHOW;
    int rc = seatd_store_show_get(seatd__app(r)->store, id, on_show, r);
    return seatd__step_begin(&r, rc);
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/shows (admin)
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_req_t *r;
    cJSON *body;            /* owned: the parsed request */
    seatd_layout_t *layout; /* owned until cached */
    char *tiers_json;       /* owned */
    char *extra_json;       /* owned, may be NULL */
    char *channels_json;    /* owned, may be NULL: the channels as the store takes them */
    const char *title;      /* borrowed from 'body' */
    int64_t starts_at_ms;
    int64_t hold_ttl_ms;
    int64_t sales_close_ms; /* 0: sales close at starts_at_ms */
    int with_slot;          /* "groupWith": the hash slot the id must have; -1: any id */
    int id_tries;           /* ids claimed for that slot so far */
    char show_id[SEATD_ID_MAX];
} create_op_t;

static void create_op_free(create_op_t *op)
{
    cJSON_Delete(op->body);
    seatd_layout_free(op->layout);
    free(op->tiers_json);
    free(op->extra_json);
    free(op->channels_json);
    free(op);
}

/* The context of a creation step whose request still waits and whose store call succeeded;
 * else NULL, the failure answered (when anyone waits) and the context freed. */
static create_op_t *create_step_ok(void *data, const seatd_store_result_t *res)
{
    create_op_t *op = data;
    if (seatd__done(op->r, res)) {
        create_op_free(op);
        return NULL;
    }
    return op;
}

static void on_created(const seatd_store_result_t *res, void *data)
{
    create_op_t *op = create_step_ok(data, res);
    if (op == NULL)
        return;
    seatd_req_t *r = op->r;
    cJSON *o =
        show_head_json(op->show_id, op->title, op->starts_at_ms,
                       op->sales_close_ms ? op->sales_close_ms : op->starts_at_ms, op->hold_ttl_ms,
                       op->tiers_json, (int64_t)seatd_layout_count(op->layout));
    cJSON_AddNumberToObject(o, "version", 0);
    add_extra(o, op->extra_json);
    char loc[64];
    snprintf(loc, sizeof(loc), "/v1/shows/%s", op->show_id);
    seatd_req_add_header(r, "Location", loc);
    seatd_layout_cache_put(op->show_id, op->layout);
    op->layout = NULL;
    seatd_req_finish_json(r, 201, o);
    create_op_free(op);
}

static void on_show_id(const seatd_store_result_t *res, void *data)
{
    create_op_t *op = data;
    if (res->err == SEATD_EEXISTS && op->with_slot >= 0 && op->id_tries < 5) {
        /* another show took an id above the one chosen: choose again above it */
        if (seatd__step_end(&op->r)) {
            create_op_free(op);
            return;
        }
        seatd_req_t *r = op->r;
        if (seatd__step_begin(&r, seatd_store_next_show_id(seatd__app(r)->store, on_show_id, op)) <
            0) {
            seatd_req_finish_problem(r, SEATD_EUNAVAILABLE, NULL, NULL);
            create_op_free(op);
        }
        return;
    }
    op = create_step_ok(data, res);
    if (op == NULL)
        return;
    seatd_req_t *r = op->r;
    const char *id = res->show.show_id;
    if (id == NULL || !seatd_keys_valid_show_id(id)) {
        seatd_req_finish_problem(r, SEATD_EPROTO, "bad show id from the store", NULL);
        create_op_free(op);
        return;
    }
    if (op->with_slot >= 0 && seatd_keys_show_slot(id) != (unsigned)op->with_slot) {
        /* "groupWith": the next id above this one in that show's slot (issue 30) */
        long long want =
            seatd_keys_show_id_in_slot(strtoll(id, NULL, 10) + 1, (unsigned)op->with_slot);
        op->id_tries++;
        if (seatd__step_begin(
                &r, seatd_store_claim_show_id(seatd__app(r)->store, want, on_show_id, op)) < 0) {
            seatd_req_finish_problem(r, SEATD_EUNAVAILABLE, NULL, NULL);
            create_op_free(op);
        }
        return;
    }
    snprintf(op->show_id, sizeof(op->show_id), "%s", id);
    size_t n = seatd_layout_count(op->layout);
    const char **ids = seatd_calloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        ids[i] = seatd_layout_seat(op->layout, i)->id;
    char *layout_json = seatd_layout_to_json(op->layout, op->show_id);
    seatd_show_args_t a = {
        .show_id = op->show_id,
        .title = op->title,
        .starts_at_ms = op->starts_at_ms,
        .hold_ttl_ms = op->hold_ttl_ms,
        .price_tiers_json = op->tiers_json,
        .layout_json = layout_json,
        .seat_ids = ids,
        .nseats = n,
        .extra_json = op->extra_json,
        .channels_json = op->channels_json,
    };
    int rc =
        seatd__step_begin(&r, seatd_store_create_show(seatd__app(r)->store, &a, on_created, op));
    free(layout_json);
    free(ids);
    if (rc < 0) {
        seatd_req_finish_problem(r, rc, NULL, NULL);
        create_op_free(op);
    }
}

static int valid_tier_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Validates "priceTiers": 1..16 tiers, names [A-Za-z0-9_-]{1,32}, integer minor units.
 * Records a failure in 'v'; returns 0 or SEATD_EINVAL. */
static int price_tiers_check(seatd_json_check_t *v, const cJSON *tiers)
{
    if (!cJSON_IsObject(tiers))
        return seatd_json_check_fail(v, SEATD_EINVAL, "priceTiers",
                                     tiers ? "must be an object of tier -> price" : "required",
                                     "'priceTiers' must be an object of tier -> price");
    int n = 0;
    const cJSON *t = NULL;
    cJSON_ArrayForEach(t, tiers)
    {
        n++;
        double val = cJSON_GetNumberValue(t);
        if (!valid_tier_name(t->string) || !cJSON_IsNumber(t) || val < 0 || val > 1e7 ||
            val != (double)(long long)val)
            return seatd_json_check_fail(
                v, SEATD_EINVAL, "priceTiers",
                "each tier needs a name of [A-Za-z0-9_-]{1,32} and an integer price in minor "
                "units (0..10000000)",
                "each price tier needs a name of [A-Za-z0-9_-]{1,32} and an integer price in "
                "minor units (0..10000000)");
    }
    if (n < 1 || n > TIERS_MAX)
        return seatd_json_check_fail(v, SEATD_EINVAL, "priceTiers", "must have 1 to 16 tiers",
                                     "'priceTiers' must have 1 to 16 tiers");
    return 0;
}

/* The waiting room of a queued show (issue 15, lua/queue.lua): "queue":{"opensAt":"…Z",
 * "maxShoppers"?,"admissionSeconds"?,"seatsPerShopper"?}, bounded; opensAt before sales close
 * ('close_ms'). Records failures in 'v'; on success returns the object kept in the show's
 * extras ({"opensAt":ms,…}, all numbers), else NULL. */
#define QUEUE_MAX_SHOPPERS_DEFAULT 500
#define QUEUE_ADMISSION_S_DEFAULT 120
#define QUEUE_SEATS_PER_SHOPPER_DEFAULT 2

static long long queue_int(seatd_json_check_t *v, const cJSON *q, const char *name,
                           const char *path, long long min, long long max, long long dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(q, name);
    if (x == NULL)
        return dflt;
    if (!cJSON_IsNumber(x) || x->valuedouble < (double)min || x->valuedouble > (double)max ||
        x->valuedouble != (double)(long long)x->valuedouble) {
        char why[96];
        snprintf(why, sizeof(why), "must be an integer from %lld to %lld", min, max);
        seatd_json_check_fail(v, SEATD_EINVAL, path, why, NULL);
        return -1;
    }
    return (long long)x->valuedouble;
}

static cJSON *queue_check(seatd_json_check_t *v, const cJSON *q, int64_t close_ms)
{
    if (!cJSON_IsObject(q)) {
        seatd_json_check_fail(v, SEATD_EINVAL, "queue",
                              "must be {\"opensAt\":\"…Z\",\"maxShoppers\"?,"
                              "\"admissionSeconds\"?,\"seatsPerShopper\"?}",
                              NULL);
        return NULL;
    }
    const cJSON *opens = cJSON_GetObjectItemCaseSensitive(q, "opensAt");
    int64_t opens_ms = 0;
    int ok = 1;
    if (!cJSON_IsString(opens) || strlen(opens->valuestring) > 40 ||
        seatd_time_parse(opens->valuestring, &opens_ms) < 0 || opens_ms <= 0) {
        seatd_json_check_fail(v, SEATD_EINVAL, "queue.opensAt",
                              "required: an RFC 3339 UTC time like 2030-12-02T10:00:00Z", NULL);
        ok = 0;
    } else if (close_ms > 0 && opens_ms >= close_ms) {
        seatd_json_check_fail(v, SEATD_EINVAL, "queue.opensAt", "must be before sales close", NULL);
        ok = 0;
    }
    long long max =
        queue_int(v, q, "maxShoppers", "queue.maxShoppers", 1, 1000000, QUEUE_MAX_SHOPPERS_DEFAULT);
    long long adm = queue_int(v, q, "admissionSeconds", "queue.admissionSeconds", 10, 3600,
                              QUEUE_ADMISSION_S_DEFAULT);
    long long seats = queue_int(v, q, "seatsPerShopper", "queue.seatsPerShopper", 1,
                                SEATD_SEATS_MAX_PER_HOLD, QUEUE_SEATS_PER_SHOPPER_DEFAULT);
    if (!ok || max < 0 || adm < 0 || seats < 0)
        return NULL;
    cJSON *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(out, "opensAt", (double)opens_ms);
    cJSON_AddNumberToObject(out, "maxShoppers", (double)max);
    cJSON_AddNumberToObject(out, "admissionSeconds", (double)adm);
    cJSON_AddNumberToObject(out, "seatsPerShopper", (double)seats);
    return out;
}

/* The extras' "queue" for an answer: opensAt (ms) as an RFC 3339 time. Takes nothing;
 * changes 'o''s member "queue" in place. */
static void queue_render(cJSON *o)
{
    cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "queue");
    cJSON *opens = cJSON_GetObjectItemCaseSensitive(q, "opensAt");
    if (!cJSON_IsNumber(opens))
        return;
    int64_t ms = (int64_t)opens->valuedouble;
    cJSON_DeleteItemFromObjectCaseSensitive(q, "opensAt");
    seatd__json_add_time(q, "opensAt", ms);
}

/* Records that 'name' ('at_ms') is in the past, when it is not after 'now_ms': a show that
 * has started, or whose sales have closed, could never sell a seat (issue 32: it was created,
 * never listed, and every hold was 409 sales-closed). The worker's clock decides here; the
 * scripts' sales-closed check keeps Redis's. */
static void future_check(seatd_json_check_t *v, const char *name, int64_t at_ms, int64_t now_ms,
                         const char *must)
{
    if (at_ms > now_ms)
        return;
    char at[SEATD_TIME_STR_MAX], now[SEATD_TIME_STR_MAX], detail[200];
    seatd_time_format(at_ms, at);
    seatd_time_format(now_ms, now);
    snprintf(detail, sizeof(detail), "'%s' is in the past (%s, now %s): %s", name, at, now, must);
    seatd_json_check_fail(v, SEATD_EINVAL, name, "is in the past: must be a future time", detail);
}

int seatd_handle_shows_create(seatd_req_t *r)
{
    seatd_app_t *app = seatd__app(r);
    create_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0)
        goto replied;
    /* Every field is checked and every bad one named at once (invalidParams). */
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const char *starts = NULL, *close = NULL, *screen = NULL;
    long long ttl_s = 0;
    int64_t close_ms = 0;
    seatd_json_check_text(&v, op->body, "title", TITLE_MAX, 4 * TITLE_MAX, 1, &op->title);
    const int64_t now_ms = seatd_time_now_ms();
    seatd_json_check_string(&v, op->body, "startsAt", 40, 1, &starts);
    if (starts && seatd_time_parse(starts, &op->starts_at_ms) < 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "startsAt",
                              "must be an RFC 3339 UTC time like 2030-12-02T20:00:00Z",
                              "'startsAt' must be an RFC 3339 UTC time like 2030-12-02T20:00:00Z");
    else if (starts)
        future_check(&v, "startsAt", op->starts_at_ms, now_ms, "a show must start in the future");
    seatd_json_check_int(&v, op->body, "holdTtlSeconds", 1, 86400, 0, &ttl_s);
    /* Sales close at startsAt, or at this earlier instant (hold.lua, book_begin.lua). */
    seatd_json_check_string(&v, op->body, "salesCloseAt", 40, 0, &close);
    if (close && (seatd_time_parse(close, &close_ms) < 0 || close_ms <= 0))
        seatd_json_check_fail(&v, SEATD_EINVAL, "salesCloseAt",
                              "must be an RFC 3339 UTC time like 2030-12-02T19:30:00Z", NULL);
    else if (close && starts && !seatd_json_check_failed(&v, "startsAt") &&
             close_ms > op->starts_at_ms)
        seatd_json_check_fail(&v, SEATD_EINVAL, "salesCloseAt", "must not be after startsAt", NULL);
    else if (close)
        future_check(&v, "salesCloseAt", close_ms, now_ms, "sales must close in the future");
    const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(op->body, "priceTiers");
    int tiers_ok = price_tiers_check(&v, tiers) == 0;
    const cJSON *seats = cJSON_GetObjectItemCaseSensitive(op->body, "seats");
    char why[160];
    int rc = seatd_layout_from_json(seats, tiers_ok ? tiers : NULL, &op->layout, why, sizeof(why));
    if (rc < 0)
        seatd_json_check_fail(&v, rc, "seats", seats ? why : "required", why);
    seatd_json_check_text(&v, op->body, "screen", 100, 400, 0, &screen);
    const cJSON *policy = cJSON_GetObjectItemCaseSensitive(op->body, "refundPolicy");
    if (policy && !seatd_refund_policy_valid(policy)) /* issue 5: cancellation refunds */
        seatd_json_check_fail(&v, SEATD_EINVAL, "refundPolicy",
                              "must be [{\"beforeSeconds\":s,\"percent\":p},…] (1-10 tiers, "
                              "percent 0-100, each beforeSeconds once)",
                              SEATD_REFUND_POLICY_HELP);
    /* Issue 13: "block" refuses holds that strand a single seat (lua/hold.lua). */
    const char *orphan = NULL;
    seatd_json_check_string(&v, op->body, "orphanRule", 8, 0, &orphan);
    if (orphan && strcmp(orphan, "off") != 0 && strcmp(orphan, "block") != 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "orphanRule", "must be \"off\" or \"block\"", NULL);
    /* Issue 30: standing areas beside the seats, sold by count in the same hold. */
    const cJSON *areas = cJSON_GetObjectItemCaseSensitive(op->body, "areas");
    int areas_ok = 1;
    if (areas && !cJSON_IsNull(areas) &&
        (areas_ok = seatd_areas_check(areas, tiers_ok ? tiers : NULL, why, sizeof(why)) == 0) == 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "areas", why, why);
    /* Issue 30: seats and places kept for sales channels, applied with the show. */
    const cJSON *channels = cJSON_GetObjectItemCaseSensitive(op->body, "channels");
    if (channels && !cJSON_IsNull(channels) && op->layout && areas_ok) {
        cJSON *none = cJSON_CreateArray(); /* a show without areas keeps no places */
        if (seatd_channels_check(channels, op->layout, cJSON_IsArray(areas) ? areas : none,
                                 &op->channels_json, why, sizeof(why)) < 0)
            seatd_json_check_fail(&v, SEATD_EINVAL, "channels", why, why);
        cJSON_Delete(none);
    }
    /* Issue 30: a show to be grouped with another gets an id in that show's hash slot, so
     * that a group of them is decided in one Function call on a Redis Cluster too. */
    const char *group_with = NULL;
    op->with_slot = -1;
    seatd_json_check_string(&v, op->body, "groupWith", SEATD_ID_MAX, 0, &group_with);
    if (group_with && !seatd_keys_valid_show_id(group_with))
        seatd_json_check_fail(&v, SEATD_EINVAL, "groupWith", "must be a show id", NULL);
    else if (group_with)
        op->with_slot = (int)seatd_keys_show_slot(group_with);
    const cJSON *queue_in = cJSON_GetObjectItemCaseSensitive(op->body, "queue");
    cJSON *queue = NULL;
    if (queue_in != NULL && !cJSON_IsNull(queue_in))
        queue = queue_check(&v, queue_in, close_ms ? close_ms : op->starts_at_ms);
    if (seatd_json_check_done_or_reply(&v, r) < 0) {
        cJSON_Delete(queue);
        goto replied;
    }
    op->hold_ttl_ms = ttl_s ? ttl_s * 1000 : app->cfg->hold_ttl_ms;
    op->tiers_json = cJSON_PrintUnformatted(tiers);
    /* Optional descriptive extras kept on the show as they are; salesCloseAt (epoch ms) is
     * also copied into the show's meta by create_show.lua, where the scripts read it. */
    cJSON *extra = cJSON_CreateObject();
    if (screen)
        cJSON_AddStringToObject(extra, "screen", screen);
    if (policy)
        cJSON_AddItemToObject(extra, "refundPolicy", cJSON_Duplicate(policy, 1));
    if (orphan && strcmp(orphan, "block") == 0)
        cJSON_AddStringToObject(extra, "orphanRule", "block");
    if (close) {
        cJSON_AddNumberToObject(extra, "salesCloseAt", (double)close_ms);
        op->sales_close_ms = close_ms;
    }
    if (areas && !cJSON_IsNull(areas)) /* copied into the show's meta by create_show.lua */
        cJSON_AddItemToObject(extra, "areas", cJSON_Duplicate(areas, 1));
    if (queue) /* issue 15: also copied into the show's meta by create_show.lua */
        cJSON_AddItemToObject(extra, "queue", queue);
    op->extra_json = cJSON_PrintUnformatted(extra);
    cJSON_Delete(extra);

    rc = seatd__step_begin(&r, seatd_store_next_show_id(app->store, on_show_id, op));
    if (rc < 0)
        create_op_free(op);
    return rc;
replied:
    create_op_free(op);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/shows/{id}/layout
 * --------------------------------------------------------------------------------------- */

static void layout_reply(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    char *text = seatd_layout_to_json(l, seatd_req_param(r, "id"));
    /* Frozen at creation: cacheable for ever. */
    seatd_req_add_header(r, "Cache-Control", "public, max-age=31536000, immutable");
    seatd_req_finish(r, 200, "application/json", text, strlen(text));
    free(text);
}

int seatd_handle_shows_layout(seatd_req_t *r)
{
    return seatd__with_layout(r, seatd_req_param(r, "id"), layout_reply, NULL, NULL);
}
