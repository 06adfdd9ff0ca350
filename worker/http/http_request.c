/*
 * http_request.c - request parsing (http-parser 2.9.4): the parser's state and callbacks,
 * the bounds they enforce, the request target's decoding and the request id; see
 * http_request.h. This is the only module that includes <http_parser.h>. The request object
 * it fills is in http_request_object.c, the answers in http_response.c and http_problem.c.
 */
#include "http/http_request_internal.h"

#include <assert.h>
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

#include "base/fmt.h"
#include "base/mem.h"

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

/* Percent-decodes 'len' bytes of 'in' into an owned string; '+' becomes a space when
 * 'plus'. Returns NULL on a malformed escape or a decoded NUL. */
char *req__pct_decode(const char *in, size_t len, int plus)
{
    char *out = seatd_malloc(len + 1);
    if (seatd_fmt_pct_decode(in, len, plus, out, len + 1) < 0) {
        free(out);
        return NULL;
    }
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
void req__generate_id(char *out)
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
    p->cur = req__new();
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
        int hi = seatd_fmt_hex_digit((unsigned char)q[1]);
        int lo = hi < 0 ? -1 : seatd_fmt_hex_digit((unsigned char)q[2]);
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
    r->path = req__pct_decode(r->raw_path, strlen(r->raw_path), 0);
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
        req__generate_id(r->id);
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
