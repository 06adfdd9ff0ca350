/*
 * fuzz_http_request.c - libFuzzer harness for the sans-IO request parser (http_request.h).
 *
 * Input layout: byte 0 picks the limits and how each request is answered, byte 1 seeds the
 * read sizes; the rest is the byte stream a client sends on one connection. The stream is
 * delivered in pseudo-random reads (1 byte to everything), as a socket would, and fed to
 * seatd_req_parser_feed() exactly as http_server.c does: unconsumed bytes (pipelining) are
 * fed again after the previous request is answered. Every complete request is read through
 * all accessors, answered (finish / finish_json / finish_problem / hold-release-disown) and
 * its rendered response is parsed back with http-parser to check it is a well-formed reply.
 *
 * Invariants (abort on violation, so libFuzzer reports them):
 *   - consumed <= len; a 0 return without a request consumed everything;
 *   - a body never exceeds the limit in force for its route;
 *   - a request's method, path, target and id are sane; an error is sticky;
 *   - each response is one complete HTTP/1.1 message with the status it was given.
 */
#include <http_parser.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/errors.h"
#include "http/http_request.h"
#include "base/mem.h"
#include "fuzz_check.h"

#define LARGE_MAX 4096 /* the large-body route's limit in this harness */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    seatd_mem_init();
    /* As main.c does, with a smaller limit so the fuzzer can reach it. */
    seatd_req_set_large_body_route("POST", "/v1/shows", LARGE_MAX);
    return 0;
}

/* ---------------------------------------------------------------- response checking */

typedef struct {
    int headers_done;
    int complete;
    int skip_body;
    size_t body_len;
} resp_state_t;

static int resp_on_headers_complete(http_parser *hp)
{
    resp_state_t *s = hp->data;
    s->headers_done = 1;
    return s->skip_body ? 1 : 0; /* 1: no body follows (a reply to HEAD) */
}

static int resp_on_body(http_parser *hp, const char *at, size_t len)
{
    resp_state_t *s = hp->data;
    s->body_len += len;
    return 0;
}

static int resp_on_message_complete(http_parser *hp)
{
    resp_state_t *s = hp->data;
    s->complete = 1;
    return 0;
}

/* The rendered response must be exactly one HTTP/1.1 message with status 'status'. */
static void check_response(const seatd_buf_t *resp, int status, int head)
{
    CHECK(resp->len > 0 && resp->data != NULL);
    CHECK(memcmp(resp->data, "HTTP/1.1 ", 9) == 0);
    static const http_parser_settings rs = {
        .on_headers_complete = resp_on_headers_complete,
        .on_body = resp_on_body,
        .on_message_complete = resp_on_message_complete,
    };
    http_parser hp;
    resp_state_t st = {.skip_body = head};
    http_parser_init(&hp, HTTP_RESPONSE);
    hp.data = &st;
    size_t n = http_parser_execute(&hp, &rs, resp->data, resp->len);
    if (HTTP_PARSER_ERRNO(&hp) != HPE_OK) {
        fprintf(stderr, "bad response (%s):\n%.*s\n", http_errno_name(HTTP_PARSER_ERRNO(&hp)),
                (int)resp->len, resp->data);
        abort();
    }
    CHECK(n == resp->len);
    CHECK(st.headers_done);
    CHECK((int)hp.status_code == status);
    /* 1xx/204/304 and HEAD replies have no body; the others say how long it is. */
    if (!(status < 200 || status == 204 || status == 304 || head))
        CHECK(st.complete);
}

/* ---------------------------------------------------------------- request handling */

static int valid_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > SEATD_REQ_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", s[i]))
            return 0;
    return 1;
}

/* Reads everything a handler could read. */
static void read_request(seatd_req_t *r, size_t max_body)
{
    const char *m = seatd_req_method(r);
    CHECK(m != NULL && m[0] != '\0');
    const char *path = seatd_req_path(r);
    CHECK(path != NULL && path[0] == '/');
    const char *raw = seatd__req_raw_path(r);
    CHECK(raw[0] == '/');
    CHECK(strlen(path) <= strlen(raw));
    const char *target = seatd_req_target(r);
    CHECK(target != NULL && target[0] != '\0');
    CHECK(valid_id(seatd_req_id(r)));
    int minor = seatd_req_http_minor(r);
    CHECK(minor == 0 || minor == 1);
    CHECK(seatd_req_route(r) == NULL && seatd_req_principal(r) == NULL);
    CHECK(seatd_req_param(r, "id") == NULL);

    static const char *const qnames[] = {"page", "limit", "a", "", "q", "seat id", "x&y"};
    for (size_t i = 0; i < sizeof(qnames) / sizeof(qnames[0]); i++) {
        const char *v = seatd_req_query(r, qnames[i]);
        if (v) {
            /* Handed-out values live until the request is freed; touch every byte. */
            volatile size_t n = strlen(v);
            (void)n;
        }
    }
    static const char *const hnames[] = {"host",          "content-type",  "Content-Length",
                                         "authorization", "x-request-id",  "expect",
                                         "connection",    "IF-NONE-MATCH", "idempotency-key"};
    for (size_t i = 0; i < sizeof(hnames) / sizeof(hnames[0]); i++) {
        const char *v = seatd_req_header(r, hnames[i]);
        if (v) {
            size_t n = strlen(v);
            /* Values are trimmed. */
            CHECK(n == 0 || (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t'));
        }
    }
    size_t blen = 12345;
    const char *body = seatd_req_body(r, &blen);
    CHECK(body != NULL);
    size_t limit = max_body;
    if (strcmp(m, "POST") == 0 && strcmp(raw, "/v1/shows") == 0 && LARGE_MAX > limit)
        limit = LARGE_MAX;
    CHECK(blen <= limit);
    if (blen) {
        volatile char last = body[blen - 1]; /* readable to the end (ASan) */
        (void)last;
    }
}

static void on_finish(seatd_req_t *r, void *data)
{
    int *calls = data;
    (*calls)++;
}

/* Answers 'r' in one of several ways ('how') and frees it. */
static void answer(seatd_req_t *r, unsigned how)
{
    int head = strcmp(seatd_req_method(r), "HEAD") == 0;
    int calls = 0;
    int status = 0;
    seatd__req_set_finish_cb(r, on_finish, &calls);
    if (how % 8 == 6) {
        /* The client goes away while an operation is pending: the late answer is dropped
         * and the operation's release frees the request. */
        seatd_req_hold(r);
        CHECK(seatd__req_disown(r) == 0);
        CHECK(seatd_req_is_detached(r) && !seatd_req_is_finished(r));
        seatd_req_finish_problem(r, SEATD_ETIMEOUT, "late", cJSON_CreateObject());
        seatd_req_finish(r, 200, NULL, NULL, 0);
        CHECK(calls == 0);
        CHECK(seatd_req_release(r) == 1); /* freed here */
        return;
    }
    switch (how % 8) {
    case 0: {
        size_t blen;
        const char *body = seatd_req_body(r, &blen);
        /* Client data in a response header: a request header's value (http-parser let only
         * field-value bytes through; the path may hold control bytes, which add_header does
         * not promise to filter, and no handler echoes it). */
        const char *host = seatd_req_header(r, "host");
        seatd_req_add_header(r, "X-Echo", host ? host : "-");
        seatd_req_finish(r, 200, "application/octet-stream", body, blen);
        status = 200;
        break;
    }
    case 1: {
        cJSON *extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "path", seatd_req_path(r));
        cJSON_AddStringToObject(extra, "status", "override attempt");
        seatd_req_finish_problem(r, SEATD_ECONFLICT, seatd_req_target(r), extra);
        status = 409;
        break;
    }
    case 2:
        seatd_req_finish_problem(r, SEATD_ERATELIMIT, NULL, NULL);
        status = 429;
        break;
    case 3: {
        cJSON *o = cJSON_CreateObject();
        const char *ct = seatd_req_header(r, "content-type");
        cJSON_AddStringToObject(o, "ct", ct ? ct : "");
        seatd_req_finish_json(r, 201, o);
        status = 201;
        break;
    }
    case 7:
        seatd_req_finish(r, 1000, "text/plain", "x", 1); /* out of range: 500 */
        status = 500;
        break;
    case 4:
        seatd__req_set_close(r);
        seatd_req_finish_json(r, 204, NULL);
        status = 204;
        break;
    default:
        /* An asynchronous operation that completes after the answer. */
        seatd_req_hold(r);
        CHECK(!seatd_req_is_finished(r));
        seatd_req_finish_problem(r, SEATD_EUNAUTH, "no token", NULL);
        status = 401;
        CHECK(seatd_req_release(r) == 1); /* answered: the callback must stop */
        break;
    }
    CHECK(calls == 1);
    CHECK(seatd_req_is_finished(r));
    CHECK(seatd__req_status(r) == status);
    check_response(seatd__req_response(r), status, head);
    if (how & 8)
        CHECK(seatd__req_disown(r) == 1);
    else
        seatd_req_free(r);
}

/* ---------------------------------------------------------------- the connection */

static uint32_t next_rand(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t cfg = data[0];
    uint32_t rnd = 0x9e3779b9u ^ ((uint32_t)data[1] * 2654435761u);
    const char *stream = (const char *)data + 2;
    size_t len = size - 2;

    /* Small limits half the time, so the 413/431 paths are reachable. */
    seatd_req_limits_t lim = {0, 0, 0};
    if (cfg & 1) {
        lim.max_header = 64 + (cfg >> 4) * 32;
        lim.max_headers = 1 + (cfg >> 5);
        lim.max_body = 16 + (cfg >> 4) * 8;
    }
    size_t max_body = lim.max_body ? lim.max_body : SEATD_REQ_MAX_BODY;
    seatd_req_parser_t *p = seatd_req_parser_new(&lim);

    size_t pos = 0;     /* bytes the parser consumed */
    size_t arrived = 0; /* bytes the "socket" delivered so far */
    unsigned nreq = 0;
    int err = 0;
    while (pos < len && !err) {
        /* One read: 1..64 bytes, or a larger slab, or everything that is left. */
        size_t step;
        uint32_t r = next_rand(&rnd);
        if ((r & 7) == 0)
            step = len - arrived;
        else if ((r & 7) == 1)
            step = 1 + (r >> 8) % 1024;
        else
            step = 1 + (r >> 8) % 64;
        arrived = arrived + step > len ? len : arrived + step;
        if (arrived == pos)
            continue;
        /* Feed the pending bytes until the parser wants more or fails. */
        while (pos < arrived) {
            size_t avail = arrived - pos, consumed = 99999;
            seatd_req_t *req = (seatd_req_t *)1;
            int rc = seatd_req_parser_feed(p, stream + pos, avail, &consumed, &req);
            CHECK(consumed <= avail);
            pos += consumed;
            if (rc < 0) {
                CHECK(rc == SEATD_EINVAL || rc == SEATD_EHDRTOOLARGE || rc == SEATD_ETOOLARGE);
                CHECK(req == NULL);
                err = rc;
                break;
            }
            CHECK(rc == 0);
            if (req == NULL) {
                CHECK(consumed == avail); /* documented: everything was consumed */
                (void)seatd_req_parser_take_continue(p);
                CHECK(seatd_req_parser_take_continue(p) == 0); /* once */
                break;
            }
            CHECK(!seatd_req_parser_in_message(p));
            CHECK(!seatd_req_parser_in_body(p));
            read_request(req, max_body);
            answer(req, (cfg >> 1) + nreq++);
        }
    }

    if (err) {
        /* Sticky: the connection cannot continue. */
        size_t consumed = 1;
        seatd_req_t *req = (seatd_req_t *)1;
        CHECK(seatd_req_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &consumed, &req) == err);
        CHECK(consumed == 0 && req == NULL);
        seatd_buf_t out = SEATD_BUF_INIT;
        seatd_req_parser_error_response(err, &out);
        check_response(&out, seatd_err_http_status(err), 0);
        seatd_buf_free(&out);
    } else {
        int eof = seatd_req_parser_eof(p);
        CHECK(eof == 0 || eof == SEATD_EINVAL);
        CHECK((eof == 0) == !seatd_req_parser_in_message(p));
    }
    seatd_req_parser_free(p);
    return 0;
}
