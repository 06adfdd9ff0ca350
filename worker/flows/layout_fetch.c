/* layout_fetch.c - one Redis read per show for its layout, many waiters; see layout_fetch.h. */
#include "flows/layout_fetch.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/metrics.h"
#include "domain/keys.h"
#include "domain/layout.h"

typedef struct waiter_s {
    seatd_layout_fetch_cb cb;
    void *data;
    struct waiter_s *next;
} waiter_t;

typedef struct fetch_s {
    char show_id[SEATD_ID_MAX];
    waiter_t *waiters; /* newest first */
    struct fetch_s *next;
} fetch_t;

static fetch_t *fetches; /* in flight, this worker's */

static fetch_t *fetch_find(const char *show_id)
{
    for (fetch_t *f = fetches; f; f = f->next)
        if (strcmp(f->show_id, show_id) == 0)
            return f;
    return NULL;
}

static void fetch_unlink(fetch_t *f)
{
    fetch_t **pp = &fetches;
    while (*pp != f)
        pp = &(*pp)->next;
    *pp = f->next;
}

/* The parsed layout of a seatd_store_layout_get() answer, or NULL. */
static seatd_layout_t *layout_from_result(const seatd_store_result_t *res)
{
    cJSON *doc = cJSON_Parse(res->show.layout);
    seatd_layout_t *l = NULL;
    char why[128];
    if (doc && seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l, why,
                                      sizeof(why)) < 0)
        l = NULL;
    cJSON_Delete(doc);
    return l;
}

static void on_layout(const seatd_store_result_t *res, void *data)
{
    fetch_t *f = data;
    fetch_unlink(f); /* before any waiter runs: a new request starts a new fetch */
    seatd_layout_t *l = res->err ? NULL : layout_from_result(res);
    if (l)
        seatd_layout_cache_put(f->show_id, l);
    /* Oldest waiter first: the list was built newest first. */
    waiter_t *rev = NULL;
    for (waiter_t *w = f->waiters, *next; w; w = next) {
        next = w->next;
        w->next = rev;
        rev = w;
    }
    for (waiter_t *w = rev, *next; w; w = next) {
        next = w->next;
        /* Read again for each waiter: one of them may have filled the cache meanwhile. */
        const seatd_layout_t *cached = l ? seatd_layout_cache_get(f->show_id) : NULL;
        int why = res->err || cached ? 0 : l ? SEATD_EOVERLOAD : SEATD_EINTERNAL;
        w->cb(res, cached, why, w->data);
        free(w);
    }
    free(f);
}

int seatd_layout_fetch(seatd_store_t *store, const char *show_id, seatd_layout_fetch_cb cb,
                       void *data)
{
    if (!seatd_keys_valid_show_id(show_id))
        return SEATD_ENOSHOW;
    fetch_t *f = fetch_find(show_id);
    if (f == NULL) {
        f = seatd_calloc(1, sizeof(*f));
        snprintf(f->show_id, sizeof(f->show_id), "%s", show_id);
        f->next = fetches; /* listed first: the answer may come before the call returns */
        fetches = f;
        int rc = seatd_store_layout_get(store, show_id, on_layout, f);
        if (rc < 0) {
            fetch_unlink(f);
            free(f);
            return rc;
        }
        seatd_metrics_inc(SEATD_METRIC_LAYOUT_FETCH);
    } else {
        seatd_metrics_inc(SEATD_METRIC_LAYOUT_COALESCED);
    }
    waiter_t *w = seatd_calloc(1, sizeof(*w));
    *w = (waiter_t){.cb = cb, .data = data, .next = f->waiters};
    f->waiters = w;
    return 0;
}
