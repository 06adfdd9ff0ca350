/*
 * seatmap.c - GET /v1/shows/{id}/availability (the bitmap projection) and
 * GET /v1/shows/{id}/seats (the same status as a JSON object per seat id).
 *
 * Both answer from this worker's seat-map cache (seatmap.h) when it is fresh and at least at
 * the client's ?minVersion=, else from one atomic Redis read (seatd_seatmap) that refills it.
 * ETag = the version; If-None-Match answers 304. Cache-Control allows a shared cache to serve
 * an answer for 1 s and 1 s more while it refreshes it: nginx keeps that micro-cache in front
 * (nginx/seatd.conf.in), tells browsers no-cache, and lets a ?minVersion= request bypass and
 * refresh it. The bound is SEATD_SEATMAP_SHARED_CACHE below; docs/api.md, "The seat status
 * and how fresh it is".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "common.h"
#include "handlers.h"
#include "http/http_request.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "domain/seatmap.h"
#include "store/store.h"

/* How long a shared cache (nginx) may serve one answer: the staleness bound of plain reads. */
#define SEATD_SEATMAP_SHARED_CACHE "public, max-age=1, stale-while-revalidate=1"

typedef enum { MAP_AVAILABILITY, MAP_STATUS } map_kind_t;

typedef struct {
    seatd__op_t base; /* the request, and map_op_free */
    map_kind_t kind;
    long long min_version;
    int64_t issued_at_ms; /* when the Redis read was sent (seatd_seatmap_put) */
} map_op_t;

static void map_op_free(seatd__op_t *op)
{
    free(op);
}

/* True when the If-None-Match header lists 'etag' ("<version>" in quotes), strong or weak
 * (W/ before it: the weak comparison RFC 9110 13.1.2 asks for), or is "*". */
static int etag_matches(const char *inm, const char *etag)
{
    if (inm == NULL)
        return 0;
    if (strcmp(inm, "*") == 0)
        return 1;
    size_t elen = strlen(etag);
    for (const char *p = inm; (p = strstr(p, etag)) != NULL; p += elen) {
        char after = p[elen];
        if (after == '\0' || after == ',' || after == ' ')
            return 1;
    }
    return 0;
}

/* True when the Accept-Encoding header 'ae' takes gzip: a "gzip" (or "x-gzip") coding not
 * weighted q=0 (RFC 9110 12.5.3). */
static int takes_gzip(const char *ae)
{
    if (ae == NULL)
        return 0;
    for (const char *p = ae; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *name = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - name);
        int gzip = (n == 4 && strncasecmp(name, "gzip", 4) == 0) ||
                   (n == 6 && strncasecmp(name, "x-gzip", 6) == 0);
        double q = 1;
        const char *end = strchr(p, ',');
        const char *qp = strstr(p, "q=");
        if (qp && (end == NULL || qp < end))
            q = strtod(qp + 2, NULL);
        if (gzip && q > 0)
            return 1;
        p = end ? end : p + strlen(p);
    }
    return 0;
}

/* Answers 'op' from entry 'm' ('l': the show's layout, MAP_STATUS only) and frees 'op'. */
static void answer(map_op_t *op, seatd_seatmap_t *m, const seatd_layout_t *l)
{
    seatd_req_t *r = op->base.r;
    /* The status document is ~18 bytes a seat: compressed here once per version for a client
     * (nginx: always) that takes gzip, rather than by nginx on every hit. */
    size_t len = 0;
    const char *body = NULL;
    if (op->kind == MAP_STATUS && takes_gzip(seatd_req_header(r, "accept-encoding")))
        body = seatd_seatmap_status_gzip(m, l, &len);
    /* ETag = the version. The gzip body is another representation of the same document, so
     * its tag is the weak one (RFC 9110 8.8.1: a strong tag names one byte sequence); the
     * weak comparison of If-None-Match matches either form. */
    char etag[32];
    snprintf(etag, sizeof(etag), "%s\"%lld\"", body ? "W/" : "", m->version);
    seatd_req_add_header(r, "ETag", etag);
    seatd_req_add_header(r, "Cache-Control", SEATD_SEATMAP_SHARED_CACHE);
    if (op->kind == MAP_STATUS)
        seatd_req_add_header(r, "Vary", "Accept-Encoding"); /* gzip or not, above */
    if (etag_matches(seatd_req_header(r, "if-none-match"), etag + (body ? 2 : 0))) {
        seatd_metrics_inc(SEATD_METRIC_SEATMAP_304);
        seatd_req_finish(r, 304, NULL, NULL, 0);
    } else {
        if (body)
            seatd_req_add_header(r, "Content-Encoding", "gzip");
        else if (op->kind == MAP_STATUS)
            body = seatd_seatmap_status(m, l, &len);
        else
            body = seatd_seatmap_availability(m, &len);
        seatd_metrics_inc(SEATD_METRIC_SEATMAP_200);
        seatd_req_finish(r, 200, "application/json", body, len);
    }
    seatd__op_free(&op->base);
}

static void on_read(const seatd_store_result_t *res, void *data)
{
    map_op_t *op = data;
    if (seatd__op_gone_or_failed(&op->base, res))
        return;
    seatd_req_t *r = op->base.r;
    const char *id = seatd_req_param(r, "id");
    const seatd_seatmap_result_t *s = &res->seatmap;
    seatd_seatmap_t *m = seatd__seatmap_keep(seatd__app(r), id, s, op->issued_at_ms);
    const seatd_layout_t *l = NULL;
    if (op->kind == MAP_STATUS && (l = seatd_layout_cache_get(id)) == NULL) {
        /* Evicted by other shows' layouts while Redis answered: rare, and honest to say. */
        seatd_req_finish_problem(r, SEATD_EOVERLOAD, "too many shows read at once, retry", NULL);
        seatd__op_free(&op->base);
        return;
    }
    answer(op, m, l);
}

/* Answers from the cache when it can, else reads Redis. Frees 'op' either way. */
static void serve(map_op_t *op, const seatd_layout_t *l)
{
    seatd_req_t *r = op->base.r;
    const char *id = seatd_req_param(r, "id");
    seatd_seatmap_t *m = seatd_seatmap_get(id, op->min_version);
    if (m) {
        answer(op, m, l);
        return;
    }
    seatd_metrics_inc(SEATD_METRIC_SEATMAP_REDIS_READ);
    op->issued_at_ms = seatd_seatmap_now_ms();
    seatd__op_started(&op->base, seatd_store_seatmap(seatd__app(r)->store, id, on_read, op));
}

static void status_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    (void)r;
    serve(ctx, l);
}

/* A new op for 'r', or NULL when the request was answered (bad id or minVersion). */
static map_op_t *map_op_or_reply(seatd_req_t *r, map_kind_t kind, int *rc)
{
    *rc = 0;
    if (!seatd_keys_valid_show_id(seatd_req_param(r, "id"))) {
        *rc = SEATD_ENOSHOW;
        return NULL;
    }
    long long min_version = 0;
    const char *v = seatd_req_query(r, "minVersion");
    if (v) {
        char *end = NULL;
        min_version = strtoll(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end != '\0' || min_version < 0 || strlen(v) > 18) {
            seatd_req_finish_problem(r, SEATD_EINVAL,
                                     "query parameter 'minVersion' must be a non-negative integer "
                                     "(the version of your own hold, release or booking)",
                                     NULL);
            return NULL;
        }
    }
    map_op_t *op = seatd_calloc(1, sizeof(*op));
    seatd__op_init(&op->base, r, map_op_free);
    op->kind = kind;
    op->min_version = min_version;
    return op;
}

int seatd_handle_shows_availability(seatd_req_t *r)
{
    int rc;
    map_op_t *op = map_op_or_reply(r, MAP_AVAILABILITY, &rc);
    if (op)
        serve(op, NULL);
    return rc;
}

int seatd_handle_shows_seats(seatd_req_t *r)
{
    int rc;
    map_op_t *op = map_op_or_reply(r, MAP_STATUS, &rc);
    if (op == NULL)
        return rc;
    rc = seatd__with_layout(r, seatd_req_param(r, "id"), status_with_layout, free, op);
    if (rc < 0)
        seatd__op_free(&op->base);
    return rc;
}
