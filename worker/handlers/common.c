/* common.c - shared handler helpers; see common.h. */
#include "common.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "auth.h"
#include "http_request.h"
#include "keys.h"
#include "layout.h"
#include "mem.h"
#include "metrics.h"
#include "timefmt.h"

seatd_app_t *seatd__app(seatd_req_t *r)
{
    return seatd_req_app(r);
}

const char *seatd__sub(seatd_req_t *r)
{
    const seatd_principal_t *p = seatd_req_principal(r);
    return p ? p->sub : "";
}

void seatd__reply_store_error(seatd_req_t *r, const seatd_store_result_t *res)
{
    cJSON *extra = NULL;
    const char *detail = res->detail && res->detail[0] ? res->detail : NULL;
    char msg[160];
    if (res->err == SEATD_ECONFLICT) {
        extra = cJSON_CreateObject();
        cJSON *seats = cJSON_AddArrayToObject(extra, "conflictingSeats");
        for (size_t i = 0; i < res->nwords; i++)
            cJSON_AddItemToArray(seats, cJSON_CreateString(res->words[i]));
        if (res->nwords == 1)
            snprintf(msg, sizeof(msg), "seat %s was just taken", res->words[0]);
        else
            snprintf(msg, sizeof(msg), "%zu of the seats asked for were just taken", res->nwords);
        detail = msg;
    } else if (res->err == SEATD_EUNKNOWNSEAT && res->nwords > 0) {
        snprintf(msg, sizeof(msg), "seat %s is not in this show", res->words[0]);
        detail = msg;
    }
    seatd_req_finish_problem(r, res->err, detail, extra);
}

int seatd__started(seatd_req_t *r, int rc)
{
    if (rc < 0)
        return rc;
    seatd_req_hold(r);
    return 0;
}

int seatd__done(seatd_req_t *r, const seatd_store_result_t *res)
{
    if (seatd_req_release(r))
        return 1;
    if (res->err) {
        seatd__reply_store_error(r, res);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Layouts
 * --------------------------------------------------------------------------------------- */

/*
 * A cold worker (just started, or a show it has not served yet) may get hundreds of requests
 * for one show before its layout arrives: they wait on one fetch per show instead of each
 * reading the ~160 KB layout (one Redis read per show, many waiters).
 */
typedef struct layout_waiter_s {
    seatd_req_t *r;
    seatd__layout_cont cont;
    void (*fail)(void *ctx);
    void *ctx;
    struct layout_waiter_s *next;
} layout_waiter_t;

typedef struct layout_fetch_s {
    char show_id[SEATD_ID_MAX];
    layout_waiter_t *waiters; /* newest first */
    struct layout_fetch_s *next;
} layout_fetch_t;

static layout_fetch_t *fetches; /* in flight */

static layout_fetch_t *fetch_find(const char *show_id)
{
    for (layout_fetch_t *f = fetches; f; f = f->next)
        if (strcmp(f->show_id, show_id) == 0)
            return f;
    return NULL;
}

static void fetch_unlink(layout_fetch_t *f)
{
    layout_fetch_t **pp = &fetches;
    while (*pp != f)
        pp = &(*pp)->next;
    *pp = f->next;
}

/* The parsed layout of a seatd_store_layout_get() answer, or NULL. */
static seatd_layout_t *layout_from_result(const seatd_store_result_t *res)
{
    const char *text = seatd_store_get(res, "layout", NULL);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    seatd_layout_t *l = NULL;
    char why[128];
    if (doc && seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l,
                                      why, sizeof(why)) < 0)
        l = NULL;
    cJSON_Delete(doc);
    return l;
}

static void on_layout(const seatd_store_result_t *res, void *data)
{
    layout_fetch_t *f = data;
    fetch_unlink(f); /* before any continuation runs: a new request starts a new fetch */
    seatd_layout_t *l = res->err ? NULL : layout_from_result(res);
    if (l)
        seatd_layout_cache_put(f->show_id, l);
    /* Oldest waiter first: the list was built newest first. */
    layout_waiter_t *rev = NULL;
    for (layout_waiter_t *w = f->waiters, *next; w; w = next) {
        next = w->next;
        w->next = rev;
        rev = w;
    }
    for (layout_waiter_t *w = rev, *next; w; w = next) {
        next = w->next;
        const seatd_layout_t *cached = l ? seatd_layout_cache_get(f->show_id) : NULL;
        if (seatd_req_release(w->r)) {
            if (w->fail)
                w->fail(w->ctx);
        } else if (res->err) {
            seatd__reply_store_error(w->r, res);
            if (w->fail)
                w->fail(w->ctx);
        } else if (cached == NULL) {
            seatd_req_finish_problem(w->r, l ? SEATD_EOVERLOAD : SEATD_EINTERNAL,
                                     l ? "too many shows read at once, retry"
                                       : "the stored layout is unreadable",
                                     NULL);
            if (w->fail)
                w->fail(w->ctx);
        } else {
            w->cont(w->r, cached, w->ctx);
        }
        free(w);
    }
    free(f);
}

int seatd__with_layout(seatd_req_t *r, const char *show_id, seatd__layout_cont cont,
                       void (*fail)(void *ctx), void *ctx)
{
    if (!seatd_keys_valid_show_id(show_id))
        return SEATD_ENOSHOW;
    const seatd_layout_t *l = seatd_layout_cache_get(show_id);
    if (l) {
        cont(r, l, ctx);
        return 0;
    }
    layout_fetch_t *f = fetch_find(show_id);
    if (f == NULL) {
        f = seatd_calloc(1, sizeof(*f));
        snprintf(f->show_id, sizeof(f->show_id), "%s", show_id);
        f->next = fetches; /* listed first: the answer may come before the call returns */
        fetches = f;
        int rc = seatd_store_layout_get(seatd__app(r)->store, show_id, on_layout, f);
        if (rc < 0) {
            fetch_unlink(f);
            free(f);
            return rc;
        }
        seatd_metrics_inc(SEATD_METRIC_LAYOUT_FETCH);
    } else {
        seatd_metrics_inc(SEATD_METRIC_LAYOUT_COALESCED);
    }
    layout_waiter_t *w = seatd_calloc(1, sizeof(*w));
    *w = (layout_waiter_t){.r = r, .cont = cont, .fail = fail, .ctx = ctx, .next = f->waiters};
    f->waiters = w;
    seatd_req_hold(r);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * JSON bits
 * --------------------------------------------------------------------------------------- */

void seatd__json_add_time(void *obj, const char *name, int64_t ms)
{
    char ts[SEATD_TIME_STR_MAX];
    seatd_time_format(ms, ts);
    cJSON_AddStringToObject(obj, name, ts);
}

void seatd__json_add_csv_array(void *obj, const char *name, const char *csv)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, name);
    if (csv == NULL || csv[0] == '\0')
        return;
    const char *p = csv;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = seatd_strndup(p, len);
        cJSON_AddItemToArray(arr, cJSON_CreateString(item));
        free(item);
        p += len;
        if (*p == ',')
            p++;
    }
}

int seatd__idempotency_key_or_reply(seatd_req_t *r, const char *body_key, const char **out)
{
    const char *hdr = seatd_req_header(r, "idempotency-key");
    /* The IETF draft sends the key as a quoted string; accept it bare as well. */
    static __thread char unquoted[160];
    if (hdr && hdr[0] == '"') {
        size_t len = strlen(hdr);
        if (len >= 2 && hdr[len - 1] == '"' && len - 2 < sizeof(unquoted)) {
            memcpy(unquoted, hdr + 1, len - 2);
            unquoted[len - 2] = '\0';
            hdr = unquoted;
        }
    }
    if (hdr && body_key && strcmp(hdr, body_key) != 0) {
        seatd_req_finish_problem(r, SEATD_EINVAL,
                                 "Idempotency-Key header and idempotencyKey field differ", NULL);
        return SEATD_EINVAL;
    }
    const char *key = hdr ? hdr : body_key;
    if (key && !seatd_keys_valid_idem_key(key)) {
        seatd_req_finish_problem(r, SEATD_EINVAL,
                                 "idempotency keys are 1-128 characters of [A-Za-z0-9_.-]", NULL);
        return SEATD_EINVAL;
    }
    *out = key;
    return 0;
}
