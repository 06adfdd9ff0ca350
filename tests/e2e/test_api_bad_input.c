/* End-to-end: bad input gets a 4xx problem+json and changes nothing in Redis. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "e2e.h"

TestSuite(api_bad_input, .timeout = 60);

typedef struct {
    const char *name;
    const char *body;   /* POSTed to the show's holds */
    int status;         /* expected */
    const char *type;   /* expected problem type suffix */
} bad_case_t;

static const bad_case_t cases[] = {
    {"malformed json", "{\"seatIds\":[\"A1\"", 400, "malformed-json"},
    {"not an object", "[\"A1\"]", 400, "malformed-json"},
    {"seatIds of the wrong type", "{\"seatIds\":\"A1\"}", 400, "bad-request"},
    {"a number among the seat ids", "{\"seatIds\":[\"A1\",7]}", 400, "bad-request"},
    {"empty seat set", "{\"seatIds\":[]}", 400, "empty-seat-set"},
    {"unknown seat", "{\"seatIds\":[\"Z99\"]}", 400, "unknown-seat"},
    {"malformed seat", "{\"seatIds\":[\"A{1}\"]}", 400, "invalid-seat-id"},
    {"duplicate seats", "{\"seatIds\":[\"A1\",\"A1\"]}", 400, "duplicate-seat"},
    {"too many seats",
     "{\"seatIds\":[\"A1\",\"A2\",\"A3\",\"A4\",\"A5\",\"A6\",\"A7\",\"A8\",\"A9\",\"A10\","
     "\"B1\"]}",
     400, "too-many-seats"},
    {"bad idempotency key", "{\"seatIds\":[\"A1\"],\"idempotencyKey\":\"a b\"}", 400,
     "bad-request"},
};

static void assert_problem(const e2e_res_t *res, int status, const char *type, const char *name)
{
    cr_assert_eq(res->http.status, status, "%s: got %d: %.*s", name, res->http.status,
                 (int)res->http.body_len, res->http.body ? res->http.body : "");
    const char *ct = seatd_test_http_header(&res->http, "content-type");
    cr_assert(ct && strstr(ct, "application/problem+json"), "%s: content-type %s", name,
              ct ? ct : "none");
    if (type) {
        const char *t = e2e_str(res, "type");
        size_t tl = strlen(t), l = strlen(type);
        cr_assert(tl >= l && strcmp(t + tl - l, type) == 0, "%s: type %s, wanted %s", name, t,
                  type);
    }
}

Test(api_bad_input, every_bad_hold_request_is_rejected_and_changes_nothing)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(2, 10, 300, show), 0);
    /* Some state to protect: a live hold. */
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "keeper", "{\"seatIds\":[\"B5\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    e2e_res_free(&res);
    char *before = e2e_show_snapshot(show);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(e2e_call("POST", path, "fuzzer", cases[i].body, NULL, &res), 0);
        assert_problem(&res, cases[i].status, cases[i].type, cases[i].name);
        e2e_res_free(&res);
    }
    /* Unknown and malformed shows. */
    cr_assert_eq(e2e_call("POST", "/v1/shows/999999999/holds", "fuzzer", "{\"seatIds\":[\"A1\"]}",
                          NULL, &res),
                 0);
    assert_problem(&res, 404, "show-not-found", "unknown show");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("POST", "/v1/shows/x%7B1%7D/holds", "fuzzer", "{\"seatIds\":[\"A1\"]}",
                          NULL, &res),
                 0);
    assert_problem(&res, 404, NULL, "malformed show");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", "/v1/shows/999999999/seats", NULL, NULL, NULL, &res), 0);
    assert_problem(&res, 404, "show-not-found", "unknown show map");
    e2e_res_free(&res);

    /* An oversized body: about 30 KiB of seat ids. */
    seatd_buf_t big = SEATD_BUF_INIT;
    seatd_buf_puts(&big, "{\"seatIds\":[");
    for (int i = 0; i < 4000; i++)
        seatd_buf_printf(&big, "%s\"A%d\"", i ? "," : "", i);
    seatd_buf_puts(&big, "]}");
    cr_assert_eq(e2e_call("POST", path, "fuzzer", big.data, NULL, &res), 0);
    assert_problem(&res, 413, "body-too-large", "oversized body");
    e2e_res_free(&res);
    seatd_buf_free(&big);

    /* 1,000 headers. */
    seatd_buf_t hdrs = SEATD_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        seatd_buf_printf(&hdrs, "X-Filler-%d: %d\r\n", i, i);
    int rc = e2e_call("POST", path, "fuzzer", "{\"seatIds\":[\"A1\"]}", hdrs.data, &res);
    seatd_buf_free(&hdrs);
    cr_assert_eq(rc, 0);
    assert_problem(&res, 431, "headers-too-large", "1000 headers");
    e2e_res_free(&res);

    /* Bookings with bad shapes. */
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer", "{\"holdId\":5}", NULL, &res), 0);
    assert_problem(&res, 400, "bad-request", "holdId of the wrong type");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer",
                          "{\"holdId\":\"nope\",\"paymentMethod\":\"tok_ok\"}", NULL, &res),
                 0);
    assert_problem(&res, 404, NULL, "malformed hold id");
    e2e_res_free(&res);

    char *after = e2e_show_snapshot(show);
    cr_assert_str_eq(before, after, "the show's keys changed");
    free(before);
    free(after);
}
