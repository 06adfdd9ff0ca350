/* Unit tests for http_request.c: parsing and limits (sans-IO), accessors, response
 * rendering, problem+json, and the detached-request lifecycle. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/auth.h"
#include "base/buf.h"
#include "http/http_request.h"
#include "base/mem.h"
#include "http/router.h"

/* Feeds 'raw' in pieces of 'step' bytes (0: all at once) until a request completes or an
 * error occurs. Returns the feed's code; '*out' gets the request, '*used' the bytes used. */
static int parse_steps(seatd_req_parser_t *p, const char *raw, size_t len, size_t step,
                       seatd_req_t **out, size_t *used)
{
    size_t off = 0;
    *out = NULL;
    while (off < len) {
        size_t n = step ? (len - off < step ? len - off : step) : len - off;
        size_t consumed = 0;
        int rc = seatd_req_parser_feed(p, raw + off, n, &consumed, out);
        off += consumed;
        if (rc < 0 || *out) {
            if (used)
                *used = off;
            return rc;
        }
        cr_assert_eq(consumed, n, "an incomplete message consumes everything fed");
    }
    if (used)
        *used = off;
    return 0;
}

static seatd_req_t *parse_ok(const char *raw)
{
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    seatd_req_t *r = NULL;
    size_t used = 0;
    int rc = parse_steps(p, raw, strlen(raw), 0, &r, &used);
    cr_assert_eq(rc, 0, "parse of '%s' failed: %d", raw, rc);
    cr_assert_not_null(r, "incomplete: '%s'", raw);
    seatd_req_parser_free(p);
    return r;
}

static int parse_err(const char *raw, size_t len, const seatd_req_limits_t *lim)
{
    seatd_req_parser_t *p = seatd_req_parser_new(lim);
    seatd_req_t *r = NULL;
    int rc = parse_steps(p, raw, len, 0, &r, NULL);
    seatd_req_free(r);
    seatd_req_parser_free(p);
    return rc;
}

Test(http_request, parses_method_path_query_and_headers)
{
    seatd_req_t *r =
        parse_ok("GET /v1/shows/4%32?page=2&q=a+b%21&flag&page=3 HTTP/1.1\r\n"
                 "Host: x\r\nIf-None-Match:   \"118\"  \r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n");
    cr_assert_str_eq(seatd_req_method(r), "GET");
    cr_assert_str_eq(seatd_req_path(r), "/v1/shows/42");
    cr_assert_str_eq(seatd__req_raw_path(r), "/v1/shows/4%32");
    cr_assert_str_eq(seatd_req_query(r, "page"), "2");
    cr_assert_str_eq(seatd_req_query(r, "q"), "a b!");
    cr_assert_str_eq(seatd_req_query(r, "flag"), "");
    cr_assert_null(seatd_req_query(r, "nope"));
    cr_assert_str_eq(seatd_req_header(r, "if-none-match"), "\"118\"");
    cr_assert_str_eq(seatd_req_header(r, "IF-NONE-MATCH"), "\"118\"");
    cr_assert_str_eq(seatd_req_header(r, "x-dup"), "1");
    cr_assert_null(seatd_req_header(r, "authorization"));
    size_t len = 99;
    cr_assert_str_eq(seatd_req_body(r, &len), "");
    cr_assert_eq(len, 0);
    cr_assert_eq(seatd_req_http_minor(r), 1);
    cr_assert_eq(seatd__req_wants_close(r), 0);
    seatd_req_free(r);
}

/* A query whose escapes do not decode is a 400 for the request: seatd_req_query() used to
 * report such a parameter absent, so ?minVersion=%zz read as a plain map read and
 * ?minVersion=5%00abc as 5. */
Test(http_request, refuses_a_query_string_that_does_not_decode)
{
    static const char *bad[] = {
        "%",          "minVersion=%", "minVersion=%zz", "minVersion=%4", "minVersion=5%00abc",
        "cursor=%00", "a%g1=1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char raw[160];
        snprintf(raw, sizeof(raw), "GET /v1/shows/1/availability?%s HTTP/1.1\r\nHost: x\r\n\r\n",
                 bad[i]);
        cr_assert_eq(parse_err(raw, strlen(raw), NULL), SEATD_EINVAL, "?%s", bad[i]);
    }
    seatd_req_t *r = parse_ok("GET /x?minVersion=%35&q=%7e+%41 HTTP/1.1\r\nHost: x\r\n\r\n");
    cr_assert_str_eq(seatd_req_query(r, "minVersion"), "5");
    cr_assert_str_eq(seatd_req_query(r, "q"), "~ A");
    seatd_req_free(r);
}

/* A header the server reads as one value, sent twice, is a 400: which one counted depended
 * on the reader (two Idempotency-Keys were taken as the first, silently). Headers that are
 * lists (Accept, If-None-Match, ...) may repeat. */
Test(http_request, refuses_a_single_valued_header_sent_twice)
{
    static const char *twice[] = {"Idempotency-Key: a\r\nIdempotency-Key: b",
                                  "Authorization: Bearer x\r\nauthorization: Bearer y",
                                  "Seatd-Admission: a\r\nSeatd-Admission: a",
                                  "Content-Type: application/json\r\nContent-Type: text/plain"};
    for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
        char raw[256];
        snprintf(raw, sizeof(raw), "POST /v1/shows/1/holds HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n",
                 twice[i]);
        cr_assert_eq(parse_err(raw, strlen(raw), NULL), SEATD_EINVAL, "%s", twice[i]);
    }
    seatd_req_t *r = parse_ok("GET /x HTTP/1.1\r\nHost: x\r\nAccept: a\r\nAccept: b\r\n"
                              "If-None-Match: \"1\"\r\nIf-None-Match: \"2\"\r\n\r\n");
    cr_assert_str_eq(seatd_req_header(r, "accept"), "a");
    seatd_req_free(r);
}

Test(http_request, parses_the_same_request_fed_one_byte_at_a_time)
{
    const char *raw = "POST /v1/bookings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      "\r\nX-Long-Header-Name: some long value here\r\nContent-Length: 11\r\n\r\n"
                      "{\"a\":\"bc\"}\n";
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    seatd_req_t *r = NULL;
    size_t used = 0;
    cr_assert_eq(parse_steps(p, raw, strlen(raw), 1, &r, &used), 0);
    cr_assert_not_null(r);
    cr_assert_eq(used, strlen(raw));
    cr_assert_str_eq(seatd_req_header(r, "x-long-header-name"), "some long value here");
    cr_assert_str_eq(seatd_req_header(r, "content-type"), "application/json");
    size_t len = 0;
    const char *body = seatd_req_body(r, &len);
    cr_assert_eq(len, 11);
    cr_assert_eq(memcmp(body, "{\"a\":\"bc\"}\n", 11), 0);
    seatd_req_free(r);
    seatd_req_parser_free(p);
}

Test(http_request, stops_after_each_pipelined_request)
{
    const char *a = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
    const char *b = "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz";
    const char *c = "DELETE /c HTTP/1.1\r\nHost: x\r\n\r\n";
    char raw[512];
    snprintf(raw, sizeof(raw), "%s%s%s", a, b, c);
    size_t len = strlen(raw);
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    size_t off = 0, used = 0;
    seatd_req_t *r = NULL;

    cr_assert_eq(seatd_req_parser_feed(p, raw, len, &used, &r), 0);
    cr_assert_not_null(r);
    cr_assert_eq(used, strlen(a), "only the first request is consumed");
    cr_assert_str_eq(seatd_req_path(r), "/a");
    seatd_req_free(r);
    off += used;

    cr_assert_eq(seatd_req_parser_feed(p, raw + off, len - off, &used, &r), 0);
    cr_assert_not_null(r);
    cr_assert_eq(used, strlen(b));
    cr_assert_str_eq(seatd_req_method(r), "POST");
    size_t blen = 0;
    cr_assert_eq(memcmp(seatd_req_body(r, &blen), "xyz", 3), 0);
    seatd_req_free(r);
    off += used;

    cr_assert_eq(seatd_req_parser_feed(p, raw + off, len - off, &used, &r), 0);
    cr_assert_not_null(r);
    cr_assert_str_eq(seatd_req_method(r), "DELETE");
    cr_assert_eq(off + used, len);
    seatd_req_free(r);
    seatd_req_parser_free(p);
}

Test(http_request, parses_pipelined_requests_split_across_feeds)
{
    const char *raw = "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t len = strlen(raw);
    /* Every split point: the connection buffers what was not consumed and feeds it again. */
    for (size_t split = 1; split < len; split++) {
        seatd_req_parser_t *p = seatd_req_parser_new(NULL);
        seatd_buf_t in = SEATD_BUF_INIT;
        const char *paths[2] = {NULL, NULL};
        seatd_req_t *got[2] = {NULL, NULL};
        int n = 0;
        const char *pieces[2] = {raw, raw + split};
        size_t plen[2] = {split, len - split};
        for (int k = 0; k < 2; k++) {
            seatd_buf_append(&in, pieces[k], plen[k]);
            for (;;) {
                size_t used = 0;
                seatd_req_t *r = NULL;
                cr_assert_eq(seatd_req_parser_feed(p, in.data, in.len, &used, &r), 0);
                seatd_buf_consume(&in, used);
                if (r == NULL)
                    break;
                cr_assert(n < 2);
                got[n] = r;
                paths[n] = seatd_req_path(r);
                n++;
            }
        }
        cr_assert_eq(n, 2, "split %zu", split);
        cr_assert_str_eq(paths[0], "/one");
        cr_assert_str_eq(paths[1], "/two");
        cr_assert_eq(in.len, 0);
        seatd_req_free(got[0]);
        seatd_req_free(got[1]);
        seatd_buf_free(&in);
        seatd_req_parser_free(p);
    }
}

/* Requests are recycled (http_request.c keeps finished ones with their buffers): a request
 * made after a bigger one must carry nothing of it. */
Test(http_request, a_recycled_request_carries_nothing_of_the_previous_one)
{
    const char *first = "POST /one?minVersion=7 HTTP/1.1\r\nHost: x\r\nX-Request-Id: first-id\r\n"
                        "Authorization: Bearer t\r\nContent-Length: 5\r\n\r\nhello";
    const char *second = "GET /two HTTP/1.1\r\nHost: y\r\n\r\n";
    for (int round = 0; round < 3; round++) {
        seatd_req_parser_t *p = seatd_req_parser_new(NULL);
        seatd_req_t *r = NULL;
        cr_assert_eq(parse_steps(p, first, strlen(first), 0, &r, NULL), 0);
        cr_assert_not_null(r);
        cr_assert_str_eq(seatd_req_query(r, "minVersion"), "7");
        seatd_req_add_header(r, "X-Extra", "1");
        seatd_req_free(r);
        seatd_req_parser_free(p);

        p = seatd_req_parser_new(NULL);
        r = NULL;
        cr_assert_eq(parse_steps(p, second, strlen(second), 0, &r, NULL), 0);
        cr_assert_not_null(r);
        cr_assert_str_eq(seatd_req_method(r), "GET");
        cr_assert_str_eq(seatd_req_path(r), "/two");
        cr_assert_str_eq(seatd_req_target(r), "/two");
        cr_assert_null(seatd_req_query(r, "minVersion"));
        cr_assert_null(seatd_req_header(r, "authorization"));
        cr_assert_str_eq(seatd_req_header(r, "host"), "y");
        cr_assert_str_neq(seatd_req_id(r), "first-id");
        size_t len = 1;
        seatd_req_body(r, &len);
        cr_assert_eq(len, 0);
        seatd_req_finish(r, 200, "text/plain", "ok", 2);
        const seatd_buf_t *resp = seatd__req_response(r);
        cr_assert_null(strstr(resp->data, "X-Extra"), "%s", resp->data);
        seatd_req_free(r);
        seatd_req_parser_free(p);
    }
}

Test(http_request, decodes_chunked_bodies)
{
    const char *raw = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n";
    for (size_t step = 0; step <= 7; step += 7) {
        seatd_req_parser_t *p = seatd_req_parser_new(NULL);
        seatd_req_t *r = NULL;
        cr_assert_eq(parse_steps(p, raw, strlen(raw), step, &r, NULL), 0);
        cr_assert_not_null(r);
        size_t len = 0;
        const char *body = seatd_req_body(r, &len);
        cr_assert_eq(len, 23);
        cr_assert_eq(memcmp(body, "Wikipedia in\r\n\r\nchunks.", 23), 0);
        seatd_req_free(r);
        seatd_req_parser_free(p);
    }
}

Test(http_request, drops_chunked_trailer_fields_instead_of_merging_them)
{
    /* Found by fuzz/fuzz_http_request: a trailer must never smuggle in a header. */
    const char *raw = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "2\r\nok\r\n0\r\nAuthorization: Bearer t\r\nX-Request-Id: smuggled\r\n\r\n";
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    seatd_req_t *r = NULL;
    cr_assert_eq(parse_steps(p, raw, strlen(raw), 0, &r, NULL), 0);
    cr_assert_not_null(r);
    cr_assert_null(seatd_req_header(r, "authorization"));
    cr_assert_str_neq(seatd_req_id(r), "smuggled");
    size_t len = 0;
    cr_assert_eq(memcmp(seatd_req_body(r, &len), "ok", 2), 0);
    cr_assert_eq(len, 2);
    seatd_req_free(r);
    seatd_req_parser_free(p);
}

/* ---- limits ----------------------------------------------------------------------------- */

static char *request_with_header_bytes(size_t total)
{
    /* "GET / HTTP/1.1\r\n" + "X: <pad>\r\n" + "\r\n" == total bytes */
    const char *line = "GET / HTTP/1.1\r\n";
    size_t fixed = strlen(line) + strlen("X: ") + 2 + 2;
    cr_assert(total > fixed);
    char *raw = malloc(total + 1);
    size_t o = 0;
    memcpy(raw, line, strlen(line));
    o += strlen(line);
    memcpy(raw + o, "X: ", 3);
    o += 3;
    memset(raw + o, 'a', total - fixed);
    o += total - fixed;
    memcpy(raw + o, "\r\n\r\n", 4);
    o += 4;
    raw[o] = '\0';
    cr_assert_eq(o, total);
    return raw;
}

Test(http_request, accepts_headers_of_exactly_the_limit)
{
    char *raw = request_with_header_bytes(SEATD_REQ_MAX_HEADER);
    cr_assert_eq(parse_err(raw, strlen(raw), NULL), 0);
    free(raw);
}

Test(http_request, rejects_headers_over_the_limit_with_431)
{
    char *raw = request_with_header_bytes(SEATD_REQ_MAX_HEADER + 1);
    cr_assert_eq(parse_err(raw, strlen(raw), NULL), SEATD_EHDRTOOLARGE);
    /* The same, fed in small pieces. */
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    seatd_req_t *r = NULL;
    cr_assert_eq(parse_steps(p, raw, strlen(raw), 100, &r, NULL), SEATD_EHDRTOOLARGE);
    cr_assert_null(r);
    seatd_req_parser_free(p);
    free(raw);
    /* A smaller configured limit. */
    raw = request_with_header_bytes(1100);
    cr_assert_eq(parse_err(raw, strlen(raw), &(seatd_req_limits_t){.max_header = 1024}),
                 SEATD_EHDRTOOLARGE);
    free(raw);
}

static char *request_with_n_headers(int n)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < n; i++)
        seatd_buf_printf(&b, "H%d: v\r\n", i);
    seatd_buf_puts(&b, "\r\n");
    return seatd_buf_steal(&b, NULL);
}

Test(http_request, limits_the_number_of_headers)
{
    char *ok = request_with_n_headers(SEATD_REQ_MAX_HEADERS);
    char *bad = request_with_n_headers(SEATD_REQ_MAX_HEADERS + 1);
    cr_assert_eq(parse_err(ok, strlen(ok), NULL), 0);
    cr_assert_eq(parse_err(bad, strlen(bad), NULL), SEATD_EHDRTOOLARGE);
    free(ok);
    free(bad);
}

Test(http_request, rejects_an_announced_oversized_body_before_reading_it)
{
    char raw[256];
    snprintf(raw, sizeof(raw), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
             SEATD_REQ_MAX_BODY + 1);
    /* No body bytes at all: the headers alone are enough to answer 413. */
    cr_assert_eq(parse_err(raw, strlen(raw), NULL), SEATD_ETOOLARGE);
}

Test(http_request, accepts_a_body_of_exactly_the_limit)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
                     SEATD_REQ_MAX_BODY);
    for (int i = 0; i < SEATD_REQ_MAX_BODY; i++)
        seatd_buf_append(&b, "b", 1);
    cr_assert_eq(parse_err(b.data, b.len, NULL), 0);
    seatd_buf_free(&b);
}

Test(http_request, counts_chunked_bodies_against_the_limit)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    /* 17 chunks of 1000 bytes: 17000 > 16384. */
    for (int i = 0; i < 17; i++) {
        seatd_buf_puts(&b, "3e8\r\n");
        for (int k = 0; k < 1000; k++)
            seatd_buf_append(&b, "c", 1);
        seatd_buf_puts(&b, "\r\n");
    }
    seatd_buf_puts(&b, "0\r\n\r\n");
    cr_assert_eq(parse_err(b.data, b.len, NULL), SEATD_ETOOLARGE);
    seatd_buf_free(&b);
}

Test(http_request, rejects_malformed_requests_with_400)
{
    static const char *cases[] = {
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /a%4 HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET * HTTP/1.1\r\n\r\n",
        "GET / HTTP/9.1\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_eq(parse_err(cases[i], strlen(cases[i]), NULL), SEATD_EINVAL, "case %zu: %s", i,
                     cases[i]);
}

Test(http_request, keeps_returning_the_error_after_a_failure)
{
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    size_t used = 0;
    seatd_req_t *r = NULL;
    cr_assert_eq(seatd_req_parser_feed(p, "BAD\r\n\r\n", 7, &used, &r), SEATD_EINVAL);
    cr_assert_eq(seatd_req_parser_feed(p, "GET / HTTP/1.1\r\n\r\n", 18, &used, &r), SEATD_EINVAL);
    cr_assert_null(r);
    seatd_req_parser_free(p);
}

Test(http_request, reports_a_message_cut_by_eof)
{
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    size_t used = 0;
    seatd_req_t *r = NULL;
    cr_assert_eq(seatd_req_parser_eof(p), 0);
    cr_assert_eq(seatd_req_parser_feed(p, "GET / HT", 8, &used, &r), 0);
    cr_assert_eq(seatd_req_parser_in_message(p), 1);
    cr_assert_eq(seatd_req_parser_in_body(p), 0);
    cr_assert_eq(seatd_req_parser_eof(p), SEATD_EINVAL);
    seatd_req_parser_free(p); /* frees the half-built request too */
}

Test(http_request, asks_for_100_continue_once)
{
    const char *raw = "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n"
                      "\r\n";
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    size_t used = 0;
    seatd_req_t *r = NULL;
    cr_assert_eq(seatd_req_parser_feed(p, raw, strlen(raw), &used, &r), 0);
    cr_assert_null(r);
    cr_assert_eq(seatd_req_parser_in_body(p), 1);
    cr_assert_eq(seatd_req_parser_take_continue(p), 1);
    cr_assert_eq(seatd_req_parser_take_continue(p), 0);
    cr_assert_eq(seatd_req_parser_feed(p, "ok", 2, &used, &r), 0);
    cr_assert_not_null(r);
    seatd_req_free(r);
    seatd_req_parser_free(p);
}

/* ---- ids and keep-alive ------------------------------------------------------------------ */

Test(http_request, uses_a_valid_x_request_id_or_generates_one)
{
    seatd_req_t *r = parse_ok("GET / HTTP/1.1\r\nX-Request-Id: abc-123_x.y\r\n\r\n");
    cr_assert_str_eq(seatd_req_id(r), "abc-123_x.y");
    seatd_req_free(r);
    r = parse_ok("GET / HTTP/1.1\r\nX-Request-Id: bad id{}\r\n\r\n");
    cr_assert_eq(strlen(seatd_req_id(r)), 16);
    cr_assert_neq(strcmp(seatd_req_id(r), "bad id{}"), 0);
    seatd_req_t *r2 = parse_ok("GET / HTTP/1.1\r\n\r\n");
    cr_assert_neq(strcmp(seatd_req_id(r), seatd_req_id(r2)), 0, "ids are unique");
    seatd_req_free(r);
    seatd_req_free(r2);
}

Test(http_request, decides_keep_alive_by_version_and_connection_header)
{
    struct {
        const char *raw;
        int close;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        seatd_req_t *r = parse_ok(cases[i].raw);
        cr_assert_eq(seatd__req_wants_close(r), cases[i].close, "case %zu", i);
        seatd__req_set_close(r);
        cr_assert_eq(seatd__req_wants_close(r), 1);
        seatd_req_free(r);
    }
}

/* ---- responses ---------------------------------------------------------------------------- */

static int finishes;
static void count_finish(seatd_req_t *r, void *data)
{
    (void)r;
    (void)data;
    finishes++;
}

static seatd_req_t *req_for_response(const char *raw)
{
    seatd_req_t *r = parse_ok(raw);
    seatd__req_set_finish_cb(r, count_finish, NULL);
    return r;
}

Test(http_request, renders_a_response_with_content_length_and_request_id)
{
    seatd_req_t *r = req_for_response("GET /x HTTP/1.1\r\nX-Request-Id: rid1\r\n\r\n");
    seatd_req_add_header(r, "ETag", "\"7\"");
    seatd_req_add_header(r, "X-Evil", "a\r\nSet-Cookie: b");
    seatd_req_finish(r, 200, "text/plain", "hello", 5);
    cr_assert_eq(finishes, 1);
    cr_assert_eq(seatd__req_status(r), 200);
    const char *out = seatd__req_response(r)->data;
    cr_assert_str_eq(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
                          "X-Request-Id: rid1\r\nETag: \"7\"\r\nX-Evil: a  Set-Cookie: b\r\n\r\n"
                          "hello");
    cr_assert_eq(seatd_req_is_finished(r), 1);
    seatd_req_free(r);
}

Test(http_request, renders_connection_headers_for_close_and_http10)
{
    seatd_req_t *r = req_for_response("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    seatd_req_finish(r, 200, NULL, NULL, 0);
    cr_assert(strstr(seatd__req_response(r)->data, "\r\nConnection: close\r\n"));
    cr_assert(strstr(seatd__req_response(r)->data, "\r\nContent-Length: 0\r\n"));
    seatd_req_free(r);
    r = req_for_response("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    seatd_req_finish(r, 200, NULL, NULL, 0);
    cr_assert(strstr(seatd__req_response(r)->data, "\r\nConnection: keep-alive\r\n"));
    seatd_req_free(r);
}

Test(http_request, sends_no_body_for_204_304_and_head)
{
    seatd_req_t *r = req_for_response("GET / HTTP/1.1\r\n\r\n");
    seatd_req_finish(r, 304, "application/json", "{}", 2);
    const char *out = seatd__req_response(r)->data;
    cr_assert(strncmp(out, "HTTP/1.1 304 Not Modified\r\n", 27) == 0);
    cr_assert_null(strstr(out, "Content-Length"));
    cr_assert(strcmp(out + strlen(out) - 4, "\r\n\r\n") == 0);
    seatd_req_free(r);

    r = req_for_response("HEAD / HTTP/1.1\r\n\r\n");
    seatd_req_finish(r, 200, "text/plain", "abc", 3);
    out = seatd__req_response(r)->data;
    cr_assert(strstr(out, "Content-Length: 3\r\n"));
    cr_assert(strcmp(out + strlen(out) - 4, "\r\n\r\n") == 0, "no body after HEAD");
    seatd_req_free(r);
}

Test(http_request, finish_json_takes_the_tree)
{
    seatd_req_t *r = req_for_response("GET / HTTP/1.1\r\n\r\n");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "holdId", "42-h1");
    seatd_req_finish_json(r, 201, root);
    const char *out = seatd__req_response(r)->data;
    cr_assert(strstr(out, "HTTP/1.1 201 Created\r\n"));
    cr_assert(strstr(out, "Content-Type: application/json\r\n"));
    cr_assert(strstr(out, "\r\n\r\n{\"holdId\":\"42-h1\"}"));
    seatd_req_free(r);
}

/* Returns the parsed body of a rendered response (owned). */
static cJSON *response_json(seatd_req_t *r)
{
    const char *out = seatd__req_response(r)->data;
    const char *body = strstr(out, "\r\n\r\n");
    cr_assert_not_null(body);
    cJSON *doc = cJSON_Parse(body + 4);
    cr_assert_not_null(doc);
    return doc;
}

Test(http_request, renders_problem_json_with_extra_members)
{
    seatd_req_t *r = req_for_response("POST /v1/shows/42/holds HTTP/1.1\r\n\r\n");
    cJSON *extra = cJSON_CreateObject();
    cJSON *seats = cJSON_AddArrayToObject(extra, "conflictingSeats");
    cJSON_AddItemToArray(seats, cJSON_CreateString("C7"));
    cJSON_AddStringToObject(extra, "status", "must not override");
    seatd_req_finish_problem(r, SEATD_ECONFLICT, "2 seats taken", extra);
    const char *out = seatd__req_response(r)->data;
    cr_assert(strstr(out, "HTTP/1.1 409 Conflict\r\n"));
    cr_assert(strstr(out, "Content-Type: application/problem+json\r\n"));
    cr_assert_null(strstr(out, "Retry-After"));
    cJSON *doc = response_json(r);
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "type")->valuestring,
                     "https://seatd.dev/problems/seat-conflict");
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "title")->valuestring, "seats were already taken");
    cr_assert_eq(cJSON_GetObjectItem(doc, "status")->valueint, 409);
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "detail")->valuestring, "2 seats taken");
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "instance")->valuestring, "/v1/shows/42/holds");
    cJSON *cs = cJSON_GetObjectItem(doc, "conflictingSeats");
    cr_assert_eq(cJSON_GetArraySize(cs), 1);
    cr_assert_str_eq(cJSON_GetArrayItem(cs, 0)->valuestring, "C7");
    cJSON_Delete(doc);
    seatd_req_free(r);
}

Test(http_request, adds_retry_after_to_503_and_429_and_www_authenticate_to_401)
{
    int errs[] = {SEATD_EUNAVAILABLE, SEATD_ERATELIMIT, SEATD_EUNAUTH};
    const char *want[] = {"Retry-After: 1\r\n", "Retry-After: 1\r\n",
                          "WWW-Authenticate: Bearer\r\n"};
    for (int i = 0; i < 3; i++) {
        seatd_req_t *r = req_for_response("GET / HTTP/1.1\r\n\r\n");
        seatd_req_finish_problem(r, errs[i], NULL, NULL);
        cr_assert(strstr(seatd__req_response(r)->data, want[i]), "case %d", i);
        cJSON *doc = response_json(r);
        cr_assert_null(cJSON_GetObjectItem(doc, "detail"), "no detail when NULL");
        cJSON_Delete(doc);
        seatd_req_free(r);
    }
}

Test(http_request, parser_error_response_is_a_closing_problem)
{
    seatd_buf_t out = SEATD_BUF_INIT;
    seatd_req_parser_error_response(SEATD_EHDRTOOLARGE, &out);
    cr_assert(strncmp(out.data, "HTTP/1.1 431 ", 13) == 0);
    cr_assert(strstr(out.data, "Connection: close\r\n"));
    cr_assert(strstr(out.data, "headers-too-large"));
    seatd_buf_free(&out);
}

Test(http_request, finishing_twice_is_a_bug, .signal = SIGABRT)
{
    seatd_req_t *r = req_for_response("GET / HTTP/1.1\r\n\r\n");
    seatd_req_finish(r, 200, NULL, NULL, 0);
    seatd_req_finish(r, 200, NULL, NULL, 0);
}

/* ---- routing glue and the request lifecycle ------------------------------------------------ */

Test(http_request, exposes_route_params_principal_and_app)
{
    seatd_req_t *r = parse_ok("GET /v1/holds/x HTTP/1.1\r\n\r\n");
    cr_assert_null(seatd_req_route(r));
    cr_assert_null(seatd_req_principal(r));
    seatd_route_t rt = {"GET", "/v1/holds/{id}", "holds_get", NULL, 0, {0}};
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(&rt, 1, "GET", seatd__req_raw_path(r), &m), 0);
    seatd__req_set_route(r, &m);
    cr_assert_eq(seatd_req_route(r), &rt);
    cr_assert_str_eq(seatd_req_param(r, "id"), "x");
    cr_assert_null(seatd_req_param(r, "nope"));
    seatd_principal_t who = {.sub = "alice", .admin = 1};
    seatd__req_set_principal(r, &who);
    cr_assert_str_eq(seatd_req_principal(r)->sub, "alice");
    int app = 7;
    seatd__req_set_app(r, &app);
    cr_assert_eq(seatd_req_app(r), &app);
    seatd_req_free(r);
}

static void disown_on_finish(seatd_req_t *r, void *data)
{
    (void)data;
    finishes++;
    seatd__req_disown(r);
}

Test(http_request, a_detached_request_lives_until_its_last_release)
{
    seatd_req_t *r = parse_ok("GET / HTTP/1.1\r\n\r\n");
    seatd__req_set_finish_cb(r, disown_on_finish, NULL);
    seatd_req_hold(r);
    seatd_req_hold(r);
    cr_assert_eq(seatd__req_disown(r), 0, "the connection died: not freed, ops pending");
    cr_assert_eq(seatd_req_is_detached(r), 1);
    seatd_req_finish(r, 200, NULL, NULL, 0); /* a no-op */
    cr_assert_eq(finishes, 0);
    cr_assert_eq(seatd_req_release(r), 1, "first callback: drop the result");
    cr_assert_eq(seatd_req_release(r), 1, "last callback: freed (ASan checks)");
}

Test(http_request, a_release_on_a_live_request_keeps_it)
{
    seatd_req_t *r = parse_ok("GET / HTTP/1.1\r\n\r\n");
    seatd__req_set_finish_cb(r, disown_on_finish, NULL);
    seatd_req_hold(r);
    cr_assert_eq(seatd_req_release(r), 0);
    cr_assert_eq(seatd_req_is_detached(r), 0);
    seatd_req_finish(r, 200, NULL, NULL, 0); /* the hook disowns with nothing pending: freed */
    cr_assert_eq(finishes, 1);
}

Test(http_request, a_release_after_the_answer_tells_the_caller_to_stop)
{
    seatd_req_t *r = parse_ok("GET / HTTP/1.1\r\n\r\n");
    seatd__req_set_finish_cb(r, disown_on_finish, NULL);
    seatd_req_hold(r);
    seatd_req_hold(r);
    seatd_req_finish(r, 500, NULL, NULL, 0); /* answered early, two ops still pending */
    cr_assert_eq(finishes, 1);
    cr_assert_eq(seatd_req_release(r), 1);
    cr_assert_eq(seatd_req_release(r), 1); /* freed here */
}
