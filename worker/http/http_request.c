/* http_request.c - request parsing (http-parser 2.9.4), accessors, responses; see
 * http_request.h. This is the only module that includes <http_parser.h>. */
#include "http/http_request.h"
#include "http/auth.h"
#include "base/fmt.h"
#include "base/mem.h"
#include "http/router.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <http_parser.h>
#include <openssl/rand.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define PROBLEM_BASE "https://seatd.dev/problems/"

typedef struct {
    size_t name_off; /* offset of the NUL-terminated, lower-cased name in 'hdrbuf' */
    size_t val_off;  /* offset of the NUL-terminated, trimmed value in 'hdrbuf' */
    size_t name_len; /* bytes of the name */
    size_t val_len;  /* bytes of the value as received (before trimming) */
} hdr_t;

/* An owned string handed out by seatd_req_query(), freed with the request. */
typedef struct strnode_s {
    struct strnode_s *next; /* next node or NULL */
    char s[];               /* NUL-terminated */
} strnode_t;

struct seatd_req_s {
    /* The request as parsed. */
    char method[16];                   /* "GET", … */
    unsigned short http_major;         /* 1 */
    unsigned short http_minor;         /* 0 or 1 */
    int keep_alive;                    /* http_should_keep_alive() after the headers */
    seatd_buf_t url;                   /* the raw request target */
    char *raw_path;                    /* owned; the path of 'url', still encoded */
    char *path;                        /* owned; 'raw_path' percent-decoded */
    char *query;                       /* owned; the raw query string or NULL */
    seatd_buf_t hdrbuf;                /* header names and values, NUL-separated */
    hdr_t hdrs[SEATD_REQ_MAX_HEADERS]; /* offsets into 'hdrbuf' */
    size_t nhdrs;                      /* used entries of 'hdrs' */
    seatd_buf_t body;                  /* the de-chunked body */
    char id[SEATD_REQ_ID_MAX + 1];     /* the request id */
    strnode_t *strings;                /* decoded query values handed out */

    /* Routing and auth. */
    const seatd_route_t *route;                         /* borrowed from the route table */
    size_t nparams;                                     /* used entries of 'params' */
    seatd_route_param_t params[SEATD_ROUTE_MAX_PARAMS]; /* decoded path parameters */
    seatd_principal_t principal;                        /* valid when 'has_principal' */
    int has_principal;                                  /* 1 once auth succeeded */
    void *app;                                          /* the application context */

    /* The response. */
    seatd_buf_t resp_headers; /* "Name: value\r\n" lines added by the handler */
    seatd_buf_t response;     /* the rendered response, taken by the server */
    int status;               /* the answered status, 0 before finish */
    int force_close;          /* the server asked for Connection: close */

    /* Lifecycle (STYLE rule 19). */
    unsigned pending;              /* operations in flight */
    unsigned finished : 1;         /* a finish ran */
    unsigned detached : 1;         /* the client went away before the finish */
    unsigned owned : 1;            /* the connection (or parser caller) still owns it */
    seatd_req_finish_cb finish_cb; /* the server's hook, or NULL */
    void *finish_data;             /* passed to 'finish_cb' */
};

struct seatd_req_parser_s {
    http_parser hp;         /* the http-parser state; hp.data points back here */
    seatd_req_limits_t lim; /* effective limits */
    seatd_req_t *cur;       /* the request being built (owned) or NULL */
    int err;                /* sticky error set by a callback, or 0 */
    int last_was_value;     /* header callbacks: the previous element was a value */
    int in_message;         /* a message has begun and is not complete */
    int headers_done;       /* the current message's headers are complete */
    int complete;           /* on_message_complete ran for 'cur' */
    size_t body_max;        /* the body limit of the current message (see large bodies) */
    size_t header_bytes;    /* raw bytes fed while the headers were incomplete */
    int continue_pending;   /* the client sent Expect: 100-continue and waits */
};

/* ----------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes 'len' bytes of 'in' into an owned string; '+' becomes a space when
 * 'plus'. Returns NULL on a malformed escape or a decoded NUL. */
static char *pct_decode(const char *in, size_t len, int plus)
{
    char *out = seatd_malloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)in[i];
        if (c == '%') {
            if (i + 2 >= len) {
                free(out);
                return NULL;
            }
            int hi = hexval((unsigned char)in[i + 1]), lo = hexval((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0) {
                free(out);
                return NULL;
            }
            c = hi * 16 + lo;
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (c == 0) {
            free(out);
            return NULL;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return out;
}

/* RFC 9110 token characters. */
static int is_tchar(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int valid_req_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > SEATD_REQ_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/*
 * A fresh request id: 16 hex digits from OpenSSL's generator, drawn 4 KiB (512 ids) at a
 * time. Unpredictable, so an id tells a client nothing about the traffic (a counter would).
 * Most requests get theirs here: nginx passes only a client's own X-Request-Id and logs the
 * one the worker answers with, because its $request_id cost a RAND_bytes() per request, and
 * with it a getpid() (OpenSSL's fork check), one in six of nginx's system calls per proxied
 * request. A per-process counter remains the fallback should the generator fail.
 */
static void generate_id(char *out)
{
    static unsigned char pool[4096];
    static size_t used = sizeof(pool);
    static uint32_t prefix;
    static uint32_t counter;
    static const char hex[] = "0123456789abcdef";
    if (used + 8 > sizeof(pool) && RAND_bytes(pool, (int)sizeof(pool)) == 1)
        used = 0;
    if (used + 8 <= sizeof(pool)) {
        for (int i = 0; i < 8; i++) {
            out[2 * i] = hex[pool[used + i] >> 4];
            out[2 * i + 1] = hex[pool[used + i] & 15];
        }
        out[16] = '\0';
        used += 8;
        return;
    }
    if (prefix == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        prefix = (uint32_t)((uint32_t)getpid() * 2654435761u) ^ (uint32_t)ts.tv_nsec ^
                 (uint32_t)ts.tv_sec;
        prefix |= 1;
    }
    snprintf(out, SEATD_REQ_ID_MAX + 1, "%08x%08x", prefix, ++counter);
}

static const char *reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

/* Statuses that never carry a body (RFC 9110 6.4.1); they get no Content-Length either. */
static int bodyless(int status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

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

static seatd_req_t *req_new(void)
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
        char *key = pct_decode(p, klen, 1);
        int hit = key && strlen(key) == want && memcmp(key, name, want) == 0;
        free(key);
        if (hit) {
            const char *v = eq ? eq + 1 : p + len;
            size_t vlen = eq ? len - klen - 1 : 0;
            char *val = pct_decode(v, vlen, 1);
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

/* ----------------------------------------------------------------------------------------
 * Responses
 * ---------------------------------------------------------------------------------------- */

/* Appends 's' with CR and LF replaced by spaces (no header injection from handler data). */
static void put_header_text(seatd_buf_t *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        char c = (*p == '\r' || *p == '\n') ? ' ' : *p;
        seatd_buf_append(b, &c, 1);
    }
}

void seatd_req_add_header(seatd_req_t *r, const char *name, const char *value)
{
    put_header_text(&r->resp_headers, name);
    seatd_buf_puts(&r->resp_headers, ": ");
    put_header_text(&r->resp_headers, value);
    seatd_buf_puts(&r->resp_headers, "\r\n");
}

static void render(seatd_req_t *r, int status, const char *content_type, const char *body,
                   size_t len)
{
    seatd_buf_t *b = &r->response;
    seatd_buf_reset(b);
    int head = strcmp(r->method, "HEAD") == 0;
    /* Written piece by piece, not printf'd: every answer goes through here. */
    seatd_buf_puts(b, "HTTP/1.1 ");
    seatd_buf_put_uint(b, (unsigned)status);
    seatd_buf_puts(b, " ");
    seatd_buf_puts(b, reason(status));
    seatd_buf_puts(b, "\r\n");
    if (!bodyless(status)) {
        if (content_type) {
            seatd_buf_puts(b, "Content-Type: ");
            seatd_buf_puts(b, content_type);
            seatd_buf_puts(b, "\r\n");
        }
        seatd_buf_puts(b, "Content-Length: ");
        seatd_buf_put_uint(b, len);
        seatd_buf_puts(b, "\r\n");
    }
    if (seatd__req_wants_close(r))
        seatd_buf_puts(b, "Connection: close\r\n");
    else if (r->http_major == 1 && r->http_minor == 0)
        seatd_buf_puts(b, "Connection: keep-alive\r\n");
    seatd_buf_puts(b, "X-Request-Id: ");
    seatd_buf_puts(b, r->id);
    seatd_buf_puts(b, "\r\n");
    if (r->resp_headers.len)
        seatd_buf_append(b, r->resp_headers.data, r->resp_headers.len);
    seatd_buf_puts(b, "\r\n");
    if (!head && !bodyless(status) && len)
        seatd_buf_append(b, body, len);
}

void seatd_req_finish(seatd_req_t *r, int status, const char *content_type, const char *body,
                      size_t len)
{
    if (r->detached)
        return; /* the client went away: nobody to answer */
    assert(!r->finished && "a request was finished twice");
    if (status < 100 || status > 599)
        status = 500;
    r->finished = 1;
    r->status = status;
    render(r, status, content_type, body, len);
    if (r->finish_cb)
        r->finish_cb(r, r->finish_data); /* may free 'r' */
}

void seatd_req_finish_json(seatd_req_t *r, int status, cJSON *root)
{
    if (root == NULL) {
        seatd_req_finish(r, status, NULL, NULL, 0);
        return;
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL) { /* only on allocation failure, which aborts first; kept for safety */
        seatd_req_finish(r, 500, NULL, NULL, 0);
        return;
    }
    seatd_req_finish(r, status, "application/json", text, strlen(text));
    free(text);
}

/* Whether 'name' is a standard member of a problem document or an earlier member of 'extra'
 * than 'it': such an extra member is left out, never overriding. */
static int problem_member_taken(const cJSON *extra, const cJSON *it)
{
    static const char *const standard[] = {"type", "title", "status", "detail", "instance"};
    for (size_t i = 0; i < sizeof(standard) / sizeof(standard[0]); i++)
        if (strcmp(it->string, standard[i]) == 0)
            return 1;
    for (const cJSON *e = extra->child; e && e != it; e = e->next)
        if (e->string && strcmp(e->string, it->string) == 0)
            return 1;
    return 0;
}

/* Writes the RFC 9457 document of 'err' into 'b': the standard members by hand (a 409 is
 * the most frequent answer of an on-sale: no tree, no number formatting), then the members of
 * 'extra' (a cJSON object or NULL; borrowed). */
static void problem_text(seatd_buf_t *b, int err, const char *detail, const char *instance,
                         const cJSON *extra, const char *members)
{
    seatd_buf_puts(b, "{\"type\":\"" PROBLEM_BASE);
    seatd_buf_puts(b, seatd_err_type(err));
    seatd_buf_puts(b, "\"");
    seatd_buf_json_member(b, "title", seatd_err_message(err));
    seatd_buf_puts(b, ",\"status\":");
    seatd_buf_put_uint(b, (unsigned)seatd_err_http_status(err));
    if (detail)
        seatd_buf_json_member(b, "detail", detail);
    if (instance)
        seatd_buf_json_member(b, "instance", instance);
    if (cJSON_IsObject(extra)) {
        for (const cJSON *it = extra->child; it; it = it->next) {
            if (it->string == NULL || problem_member_taken(extra, it))
                continue;
            char *value = cJSON_PrintUnformatted(it);
            if (value == NULL)
                continue;
            seatd_buf_puts(b, ",\"");
            seatd_buf_json_escape(b, it->string, strlen(it->string));
            seatd_buf_puts(b, "\":");
            seatd_buf_puts(b, value);
            free(value);
        }
    }
    if (members && members[0]) {
        seatd_buf_puts(b, ",");
        seatd_buf_puts(b, members);
    }
    seatd_buf_puts(b, "}");
}

static void finish_problem(seatd_req_t *r, int err, const char *detail, const cJSON *extra,
                           const char *members)
{
    int status = seatd_err_http_status(err);
    seatd_buf_t text = SEATD_BUF_INIT;
    problem_text(&text, err, detail, r->path ? r->path : NULL, extra, members);
    if ((status == 429 || status == 503) &&
        !(r->resp_headers.data && strstr(r->resp_headers.data, "Retry-After:")))
        seatd_req_add_header(r, "Retry-After", "1"); /* unless the handler set its own */
    if (status == 401 &&
        !(r->resp_headers.data && strstr(r->resp_headers.data, "WWW-Authenticate:")))
        seatd_req_add_header(r, "WWW-Authenticate", "Bearer"); /* unless a challenge was set */
    seatd_req_finish(r, status, "application/problem+json", text.data, text.len);
    seatd_buf_free(&text);
}

void seatd_req_finish_problem(seatd_req_t *r, int err, const char *detail, cJSON *extra)
{
    if (!r->detached)
        finish_problem(r, err, detail, extra, NULL);
    cJSON_Delete(extra);
}

void seatd_req_finish_problem_members(seatd_req_t *r, int err, const char *detail,
                                      const char *members)
{
    if (!r->detached)
        finish_problem(r, err, detail, NULL, members);
}

void seatd_req_parser_error_response(int err, seatd_buf_t *out)
{
    int status = seatd_err_http_status(err);
    seatd_buf_t text = SEATD_BUF_INIT;
    problem_text(&text, err, NULL, NULL, NULL, NULL);
    char id[SEATD_REQ_ID_MAX + 1];
    generate_id(id);
    seatd_buf_printf(out,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\nX-Request-Id: %s\r\n%s\r\n",
                     status, reason(status), text.len, id,
                     status == 429 || status == 503 ? "Retry-After: 1\r\n" : "");
    seatd_buf_append(out, text.data, text.len);
    seatd_buf_free(&text);
}

/* ----------------------------------------------------------------------------------------
 * Parser callbacks. Data callbacks may fire several times per element: they append.
 * ---------------------------------------------------------------------------------------- */

static seatd_req_parser_t *P(http_parser *hp)
{
    return hp->data;
}

static int fail(seatd_req_parser_t *p, int err)
{
    if (p->err == 0)
        p->err = err;
    return -1;
}

static int on_message_begin(http_parser *hp)
{
    seatd_req_parser_t *p = P(hp);
    assert(p->cur == NULL);
    p->cur = req_new();
    p->in_message = 1;
    p->headers_done = 0;
    p->complete = 0;
    p->last_was_value = 0;
    return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
    seatd_req_parser_t *p = P(hp);
    seatd_buf_append(&p->cur->url, at, len);
    return 0;
}

/* Ends the current header's value: NUL-terminate and trim it in place. */
static void close_value(seatd_req_t *r)
{
    if (r->nhdrs == 0)
        return;
    hdr_t *h = &r->hdrs[r->nhdrs - 1];
    seatd_buf_append(&r->hdrbuf, "", 1); /* the NUL */
    char *v = r->hdrbuf.data + h->val_off;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        v[--n] = '\0';
    size_t lead = 0;
    while (v[lead] == ' ' || v[lead] == '\t')
        lead++;
    h->val_off += lead;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    seatd_req_parser_t *p = P(hp);
    seatd_req_t *r = p->cur;
    if (p->headers_done)
        return 0; /* a chunked body's trailer section: dropped, never merged (RFC 9110 6.5.1) */
    if (p->last_was_value || r->nhdrs == 0) {
        /* A new field starts. */
        close_value(r);
        if (r->nhdrs >= p->lim.max_headers)
            return fail(p, SEATD_EHDRTOOLARGE);
        hdr_t *h = &r->hdrs[r->nhdrs++];
        memset(h, 0, sizeof(*h));
        h->name_off = r->hdrbuf.len;
        p->last_was_value = 0;
    }
    r->hdrs[r->nhdrs - 1].name_len += len;
    for (size_t i = 0; i < len; i++) {
        char c = at[i];
        if (!is_tchar((unsigned char)c))
            return fail(p, SEATD_EINVAL); /* RFC 9110 5.1: a field name is a token */
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        seatd_buf_append(&r->hdrbuf, &c, 1);
    }
    return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    seatd_req_parser_t *p = P(hp);
    seatd_req_t *r = p->cur;
    if (p->headers_done)
        return 0; /* a trailer field's value: dropped */
    hdr_t *h = &r->hdrs[r->nhdrs - 1];
    if (!p->last_was_value) {
        seatd_buf_append(&r->hdrbuf, "", 1); /* ends the name */
        h->val_off = r->hdrbuf.len;
        p->last_was_value = 1;
    }
    if (memchr(at, '\0', len))
        return fail(p, SEATD_EINVAL);
    h->val_len += len;
    seatd_buf_append(&r->hdrbuf, at, len);
    return 0;
}

/* 1 when every escape of the query string is '%' and two hex digits, none of them "%00": a
 * parameter that cannot be decoded is a 400 for the whole request, not a parameter that
 * seatd_req_query() silently reports absent (?minVersion=%zz read as no minVersion). */
static int query_well_formed(const char *q)
{
    for (; *q; q++) {
        if (*q != '%')
            continue;
        int hi = hexval((unsigned char)q[1]), lo = hi < 0 ? -1 : hexval((unsigned char)q[2]);
        if (hi < 0 || lo < 0 || hi * 16 + lo == 0)
            return 0;
        q += 2;
    }
    return 1;
}

/* Splits the target into path and query, decodes the path and checks the query's escapes. */
static int parse_target(seatd_req_t *r)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (r->url.len == 0 || http_parser_parse_url(r->url.data, r->url.len, 0, &u) != 0)
        return SEATD_EINVAL;
    if (u.field_set & (1 << UF_PATH))
        r->raw_path =
            seatd_strndup(r->url.data + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
    else
        r->raw_path = seatd_strdup("/");
    if (r->raw_path[0] != '/')
        return SEATD_EINVAL;
    if (u.field_set & (1 << UF_QUERY))
        r->query =
            seatd_strndup(r->url.data + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
    if (r->query && !query_well_formed(r->query))
        return SEATD_EINVAL;
    r->path = pct_decode(r->raw_path, strlen(r->raw_path), 0);
    return r->path ? 0 : SEATD_EINVAL;
}

/* The one route allowed a larger body (process-wide configuration, set at start-up). */
static struct {
    char method[16];
    char path[64];
    size_t max;
} large_body;

void seatd_req_set_large_body_route(const char *method, const char *path, size_t max)
{
    snprintf(large_body.method, sizeof(large_body.method), "%s", method);
    snprintf(large_body.path, sizeof(large_body.path), "%s", path);
    large_body.max = max;
}

/* 1 when a header the server reads as one value came twice: which one counts would depend
 * on who reads it (this server takes the first, a proxy or a log may take the last), so a
 * request with two Idempotency-Keys or two credentials is refused rather than guessed at. */
static int singleton_repeated(const seatd_req_t *r)
{
    static const char *const singletons[] = {"authorization", "content-type", "idempotency-key",
                                             "seatd-admission"};
    for (size_t k = 0; k < sizeof(singletons) / sizeof(singletons[0]); k++) {
        int seen = 0;
        for (size_t i = 0; i < r->nhdrs; i++)
            if (strcasecmp(r->hdrbuf.data + r->hdrs[i].name_off, singletons[k]) == 0 && seen++)
                return 1;
    }
    return 0;
}

static int on_headers_complete(http_parser *hp)
{
    seatd_req_parser_t *p = P(hp);
    seatd_req_t *r = p->cur;
    if (p->last_was_value)
        close_value(r);
    p->headers_done = 1;
    if (r->nhdrs && !p->last_was_value)
        return fail(p, SEATD_EINVAL); /* a field name without a value: http-parser rejects */
    if (hp->http_major != 1)
        return fail(p, SEATD_EINVAL); /* HTTP/0.9 and 2+ do not speak this framing */
    seatd_fmt_copy(r->method, sizeof(r->method), http_method_str((enum http_method)hp->method));
    r->http_major = hp->http_major;
    r->http_minor = hp->http_minor;
    r->keep_alive = http_should_keep_alive(hp);
    int rc = parse_target(r);
    if (rc < 0)
        return fail(p, rc);
    if (singleton_repeated(r))
        return fail(p, SEATD_EINVAL);
    const char *xid = seatd_req_header(r, "x-request-id");
    if (xid && valid_req_id(xid))
        seatd_fmt_copy(r->id, sizeof(r->id), xid);
    else
        generate_id(r->id);
    /* Refuse an announced oversized body before reading any of it. */
    p->body_max = p->lim.max_body;
    if (large_body.max > p->body_max && strcmp(r->method, large_body.method) == 0 && r->raw_path &&
        strcmp(r->raw_path, large_body.path) == 0)
        p->body_max = large_body.max;
    if (!(hp->flags & F_CHUNKED) && hp->content_length != ULLONG_MAX &&
        hp->content_length > p->body_max)
        return fail(p, SEATD_ETOOLARGE);
    const char *expect = seatd_req_header(r, "expect");
    if (expect && strcasecmp(expect, "100-continue") == 0 && r->http_minor >= 1 &&
        ((hp->flags & F_CHUNKED) || (hp->content_length != ULLONG_MAX && hp->content_length > 0)))
        p->continue_pending = 1;
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    seatd_req_parser_t *p = P(hp);
    seatd_req_t *r = p->cur;
    if (r->body.len + len > p->body_max)
        return fail(p, SEATD_ETOOLARGE);
    seatd_buf_append(&r->body, at, len);
    return 0;
}

static int on_message_complete(http_parser *hp)
{
    seatd_req_parser_t *p = P(hp);
    p->complete = 1;
    p->in_message = 0;
    /* Stop here: pipelined bytes wait until this request is answered. */
    http_parser_pause(hp, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ----------------------------------------------------------------------------------------
 * Parser API
 * ---------------------------------------------------------------------------------------- */

seatd_req_parser_t *seatd_req_parser_new(const seatd_req_limits_t *limits)
{
    seatd_req_parser_t *p = seatd_calloc(1, sizeof(*p));
    p->lim.max_header = limits && limits->max_header ? limits->max_header : SEATD_REQ_MAX_HEADER;
    p->lim.max_headers =
        limits && limits->max_headers ? limits->max_headers : SEATD_REQ_MAX_HEADERS;
    if (p->lim.max_headers > SEATD_REQ_MAX_HEADERS)
        p->lim.max_headers = SEATD_REQ_MAX_HEADERS;
    p->lim.max_body = limits && limits->max_body ? limits->max_body : SEATD_REQ_MAX_BODY;
    http_parser_init(&p->hp, HTTP_REQUEST);
    p->hp.data = p;
    return p;
}

void seatd_req_parser_free(seatd_req_parser_t *p)
{
    if (p == NULL)
        return;
    seatd_req_free(p->cur);
    free(p);
}

int seatd_req_parser_in_message(const seatd_req_parser_t *p)
{
    return p->in_message;
}

int seatd_req_parser_in_body(const seatd_req_parser_t *p)
{
    return p->in_message && p->headers_done;
}

int seatd_req_parser_take_continue(seatd_req_parser_t *p)
{
    int c = p->continue_pending && p->in_message && p->headers_done;
    p->continue_pending = 0;
    return c;
}

int seatd_req_parser_eof(seatd_req_parser_t *p)
{
    return p->in_message ? SEATD_EINVAL : 0;
}

static int map_parser_error(enum http_errno e)
{
    switch (e) {
    case HPE_HEADER_OVERFLOW:
        return SEATD_EHDRTOOLARGE;
    default:
        return SEATD_EINVAL;
    }
}

int seatd_req_parser_feed(seatd_req_parser_t *p, const char *data, size_t len, size_t *consumed,
                          seatd_req_t **out)
{
    *consumed = 0;
    *out = NULL;
    if (p->err)
        return p->err;
    size_t off = 0;
    while (off < len) {
        if (!p->in_message)
            p->header_bytes = 0;
        int in_headers = !(p->in_message && p->headers_done);
        size_t chunk = len - off;
        int limited = 0;
        if (in_headers) {
            /* Never feed the header phase more than the limit: if the headers are not
             * complete after exactly max_header bytes, they are too large. */
            size_t allow = p->lim.max_header - p->header_bytes;
            if (chunk >= allow) {
                chunk = allow;
                limited = 1;
            }
        }
        size_t n = http_parser_execute(&p->hp, &settings, data + off, chunk);
        if (in_headers)
            p->header_bytes += n;
        off += n;
        *consumed = off;
        if (p->err)
            return p->err;
        enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);
        if (e == HPE_PAUSED) {
            http_parser_pause(&p->hp, 0);
            assert(p->complete);
            *out = p->cur;
            p->cur = NULL;
            p->complete = 0;
            p->headers_done = 0;
            p->header_bytes = 0;
            p->continue_pending = 0;
            return 0;
        }
        if (e != HPE_OK) {
            p->err = map_parser_error(e);
            return p->err;
        }
        if (limited && !(p->in_message && p->headers_done)) {
            p->err = SEATD_EHDRTOOLARGE;
            return p->err;
        }
        if (n < chunk) /* cannot happen without an error; do not spin */
            break;
    }
    return 0;
}
