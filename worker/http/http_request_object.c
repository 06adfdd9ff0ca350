/*
 * http_request_object.c - the request object: its allocation (recycled through a per-thread
 * pool), the accessors handlers read it with, the glue the server sets it up with, and the
 * count of asynchronous operations that decides when a detached request is freed (STYLE
 * rule 19). See http_request.h.
 */
#include "http/http_request_internal.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/mem.h"

/* ----------------------------------------------------------------------------------------
 * Request object
 * ---------------------------------------------------------------------------------------- */

/*
 * Finished requests are recycled, with the allocations of their buffers: a request object is
 * a few kilobytes and a hold request grew five buffers, so allocating them afresh cost a
 * worker ~10 % of its CPU in malloc (and its consolidations). The pool is per thread (every
 * request lives on its loop's thread), bounded in objects and in the buffer size it keeps.
 * Sanitizer builds allocate every request afresh, so a use after free is still caught.
 */
#if defined(__SANITIZE_ADDRESS__)
#define REQ_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REQ_POOL 0
#endif
#endif
#ifndef REQ_POOL
#define REQ_POOL 1
#endif
#define REQ_POOL_MAX 256        /* idle request objects kept per thread */
#define REQ_POOL_KEEP_BUF 16384 /* a larger buffer is freed, not kept */

#if REQ_POOL
static _Thread_local seatd_req_t *req_pool[REQ_POOL_MAX];
static _Thread_local size_t req_pool_len;

static void keep_buf(seatd_buf_t *b)
{
    if (b->cap > REQ_POOL_KEEP_BUF)
        seatd_buf_free(b);
    else
        seatd_buf_reset(b);
}

#endif

seatd_req_t *req__new(void)
{
    seatd_req_t *r;
#if REQ_POOL
    if (req_pool_len > 0) {
        r = req_pool[--req_pool_len];
        /* Everything but the kept buffers starts as calloc would give it. */
        seatd_buf_t url = r->url, hdrbuf = r->hdrbuf, body = r->body,
                    resp_headers = r->resp_headers, response = r->response;
        memset(r, 0, offsetof(seatd_req_t, hdrs));
        memset((char *)r + offsetof(seatd_req_t, nhdrs), 0,
               sizeof(*r) - offsetof(seatd_req_t, nhdrs));
        r->url = url;
        r->hdrbuf = hdrbuf;
        r->body = body;
        r->resp_headers = resp_headers;
        r->response = response;
        r->owned = 1;
        return r;
    }
#endif
    r = seatd_calloc(1, sizeof(*r));
    r->owned = 1;
    return r;
}

void seatd_req_free(seatd_req_t *r)
{
    if (r == NULL)
        return;
    free(r->raw_path);
    free(r->path);
    free(r->query);
    for (strnode_t *n = r->strings, *next; n; n = next) {
        next = n->next;
        free(n);
    }
#if REQ_POOL
    if (req_pool_len < REQ_POOL_MAX) {
        keep_buf(&r->url);
        keep_buf(&r->hdrbuf);
        keep_buf(&r->body);
        keep_buf(&r->resp_headers);
        keep_buf(&r->response);
        req_pool[req_pool_len++] = r;
        return;
    }
#endif
    seatd_buf_free(&r->url);
    seatd_buf_free(&r->hdrbuf);
    seatd_buf_free(&r->body);
    seatd_buf_free(&r->resp_headers);
    seatd_buf_free(&r->response);
    free(r);
}

const char *seatd_req_method(const seatd_req_t *r)
{
    return r->method;
}

const char *seatd_req_path(const seatd_req_t *r)
{
    return r->path ? r->path : "";
}

const char *seatd_req_target(const seatd_req_t *r)
{
    return r->url.data ? r->url.data : "";
}

const char *seatd__req_raw_path(const seatd_req_t *r)
{
    return r->raw_path ? r->raw_path : "";
}

const char *seatd_req_query(const seatd_req_t *r, const char *name)
{
    if (r->query == NULL || name == NULL)
        return NULL;
    size_t want = strlen(name);
    const char *p = r->query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len;
        char *key = req__pct_decode(p, klen, 1);
        int hit = key && strlen(key) == want && memcmp(key, name, want) == 0;
        free(key);
        if (hit) {
            const char *v = eq ? eq + 1 : p + len;
            size_t vlen = eq ? len - klen - 1 : 0;
            char *val = req__pct_decode(v, vlen, 1);
            if (val == NULL)
                return NULL;
            size_t n = strlen(val);
            strnode_t *node = seatd_malloc(sizeof(*node) + n + 1);
            memcpy(node->s, val, n + 1);
            free(val);
            /* The list is const-cast: handing out a borrowed string is logically const. */
            seatd_req_t *mr = (seatd_req_t *)r;
            node->next = mr->strings;
            mr->strings = node;
            return node->s;
        }
        if (amp == NULL)
            break;
        p = amp + 1;
    }
    return NULL;
}

const char *seatd_req_header(const seatd_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->nhdrs; i++)
        if (strcasecmp(r->hdrbuf.data + r->hdrs[i].name_off, name) == 0)
            return r->hdrbuf.data + r->hdrs[i].val_off;
    return NULL;
}

const char *seatd_req_body(const seatd_req_t *r, size_t *len)
{
    if (len)
        *len = r->body.len;
    return r->body.data ? r->body.data : "";
}

const char *seatd_req_param(const seatd_req_t *r, const char *name)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return r->params[i].value;
    return NULL;
}

const char *seatd_req_id(const seatd_req_t *r)
{
    return r->id;
}

const seatd_route_t *seatd_req_route(const seatd_req_t *r)
{
    return r->route;
}

const seatd_principal_t *seatd_req_principal(const seatd_req_t *r)
{
    return r->has_principal ? &r->principal : NULL;
}

void *seatd_req_app(const seatd_req_t *r)
{
    return r->app;
}

int seatd_req_http_minor(const seatd_req_t *r)
{
    return r->http_major > 1 || r->http_minor >= 1 ? 1 : 0; /* HTTP/1.2 counts as 1.1 */
}

/* ----------------------------------------------------------------------------------------
 * Server glue
 * ---------------------------------------------------------------------------------------- */

void seatd__req_set_finish_cb(seatd_req_t *r, seatd_req_finish_cb cb, void *data)
{
    r->finish_cb = cb;
    r->finish_data = data;
}

void seatd__req_set_app(seatd_req_t *r, void *app)
{
    r->app = app;
}

void seatd__req_set_route(seatd_req_t *r, const seatd_route_match_t *m)
{
    r->route = m->route;
    r->nparams = m->nparams;
    memcpy(r->params, m->params, sizeof(r->params));
}

void seatd__req_set_principal(seatd_req_t *r, const seatd_principal_t *p)
{
    r->principal = *p;
    r->has_principal = 1;
}

void seatd__req_set_close(seatd_req_t *r)
{
    r->force_close = 1;
}

int seatd__req_wants_close(const seatd_req_t *r)
{
    return r->force_close || !r->keep_alive;
}

seatd_buf_t *seatd__req_response(seatd_req_t *r)
{
    return &r->response;
}

int seatd__req_status(const seatd_req_t *r)
{
    return r->status;
}

int seatd__req_disown(seatd_req_t *r)
{
    assert(r->owned);
    r->owned = 0;
    if (!r->finished)
        r->detached = 1;
    if (r->pending == 0) {
        seatd_req_free(r);
        return 1;
    }
    return 0;
}

/* ----------------------------------------------------------------------------------------
 * Asynchronous operations
 * ---------------------------------------------------------------------------------------- */

void seatd_req_hold(seatd_req_t *r)
{
    r->pending++;
}

int seatd_req_release(seatd_req_t *r)
{
    assert(r->pending > 0);
    r->pending--;
    if (!r->owned) {
        if (r->pending == 0)
            seatd_req_free(r);
        return 1;
    }
    return r->finished || r->detached;
}

int seatd_req_is_detached(const seatd_req_t *r)
{
    return r->detached;
}

int seatd_req_is_finished(const seatd_req_t *r)
{
    return r->finished && !r->detached;
}
