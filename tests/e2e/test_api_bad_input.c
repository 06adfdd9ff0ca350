/* End-to-end: bad input gets a 4xx problem+json and changes nothing in Redis. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "e2e.h"

TestSuite(api_bad_input, .timeout = 60);

typedef struct {
    const char *name;
    const char *body; /* POSTed to the show's holds */
    int status;       /* expected */
    const char *type; /* expected problem type suffix */
} bad_case_t;

static const bad_case_t cases[] = {
    {"malformed json", "{\"seatIds\":[\"A1\"", 400, "malformed-json"},
    {"not an object", "[\"A1\"]", 400, "malformed-json"},
    {"a member named twice (the first won)", "{\"seatIds\":[\"A3\"],\"seatIds\":[\"A4\"]}", 400,
     "malformed-json"},
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

/* ---------------------------------------------------------------------------------------
 * Issue 9: NUL inside strings, every bad field named, 415 with Accept-Post, no Redis key
 * names in answers, sales close at the start.
 * --------------------------------------------------------------------------------------- */

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <time.h>

static void b64url_append(seatd_buf_t *b, const unsigned char *in, size_t len)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        char q[4] = {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
        seatd_buf_append(b, q, i + 2 < len ? 4 : i + 1 < len ? 3 : 2);
    }
}

/* An HS256 token over 'claims' (JSON text, borrowed) signed with the stack's secret, as
 * "Authorization: Bearer …\r\n". Returns owned text. */
static char *auth_header_for(const char *claims)
{
    const char *secret = getenv("SEATD_JWT_SECRET");
    cr_assert_not_null(secret);
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    seatd_buf_t t = SEATD_BUF_INIT;
    b64url_append(&t, (const unsigned char *)header, sizeof(header) - 1);
    seatd_buf_puts(&t, ".");
    b64url_append(&t, (const unsigned char *)claims, strlen(claims));
    unsigned char mac[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)t.data, t.len, mac,
         &len);
    seatd_buf_puts(&t, ".");
    b64url_append(&t, mac, len);
    seatd_buf_t h = SEATD_BUF_INIT;
    seatd_buf_printf(&h, "Authorization: Bearer %s\r\n", t.data);
    seatd_buf_free(&t);
    return seatd_buf_steal(&h, NULL);
}

static const char *const show_body =
    "{\"title\":\"nul probe\",\"startsAt\":\"2030-01-01T20:00:00Z\",\"priceTiers\":"
    "{\"standard\":1000},\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
    "\"tier\":\"standard\",\"x\":1,\"y\":1}]}";

static long catalogue_size(void)
{
    seatd_redis_t *c = e2e_redis();
    redisReply *rep = seatd_redis_command(c, "ZCARD seatd:shows");
    long n = rep && rep->type == REDIS_REPLY_INTEGER ? (long)rep->integer : -1;
    freeReplyObject(rep);
    seatd_redis_free(c);
    return n;
}

Test(api_bad_input, a_nul_inside_a_signed_claim_is_401_never_a_truncated_identity)
{
    char show[32], path[96], hold_id[64];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "alice", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    char *before = e2e_show_snapshot(show);
    long shows_before = catalogue_size();
    long long exp = (long long)time(NULL) + 600;
    char claims[256];

    /* "alice\u0000evil" must not read (or release) alice's hold. */
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice\\u0000evil\",\"exp\":%lld}", exp);
    char *hdr = auth_header_for(claims);
    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, hdr, &res), 0);
    assert_problem(&res, 401, "unauthorized", "sub with an escaped NUL, GET");
    cr_assert(seatd_test_http_header(&res.http, "www-authenticate"));
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, NULL, NULL, hdr, &res), 0);
    assert_problem(&res, 401, "unauthorized", "sub with an escaped NUL, DELETE");
    e2e_res_free(&res);
    free(hdr);

    /* "admin\u0000x" is no admin role, in "role" or in "roles". */
    const char *roles[] = {"\"role\":\"admin\\u0000x\"", "\"roles\":[\"admin\\u0000x\"]"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(claims, sizeof(claims), "{\"sub\":\"mallory\",\"exp\":%lld,%s}", exp, roles[i]);
        hdr = auth_header_for(claims);
        cr_assert_eq(e2e_call("POST", "/v1/shows", NULL, show_body, hdr, &res), 0);
        assert_problem(&res, 401, "unauthorized", roles[i]);
        e2e_res_free(&res);
        free(hdr);
    }
    /* The same claims without the escape work (the probe itself is sound). */
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice\",\"exp\":%lld}", exp);
    hdr = auth_header_for(claims);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, hdr, &res), 0);
    cr_assert_eq(res.http.status, 200);
    e2e_res_free(&res);
    free(hdr);

    char *after = e2e_show_snapshot(show);
    cr_assert_str_eq(before, after, "nothing changed");
    cr_assert_eq(catalogue_size(), shows_before, "no show was created");
    free(before);
    free(after);
}

Test(api_bad_input, a_nul_inside_any_body_string_is_400_and_changes_nothing)
{
    char show[32], holds[96], body[256], hold_id[64];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    e2e_res_t res;
    snprintf(holds, sizeof(holds), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", holds, "alice", "{\"seatIds\":[\"A2\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    char *before = e2e_show_snapshot(show);
    long shows_before = catalogue_size();

    const char *hold_bodies[] = {"{\"seatIds\":[\"A1\\u0000x\"]}",
                                 "{\"seatIds\":[\"A1\"],\"idempotencyKey\":\"k\\u0000x\"}"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(e2e_call("POST", holds, "bob", hold_bodies[i], NULL, &res), 0);
        assert_problem(&res, 400, "malformed-json", hold_bodies[i]);
        e2e_res_free(&res);
    }
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\\u0000x\"}",
             hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "alice", body, NULL, &res), 0);
    assert_problem(&res, 400, "malformed-json", "paymentMethod");
    e2e_res_free(&res);
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\\u0000x\",\"paymentMethod\":\"tok_ok\"}",
             hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "alice", body, NULL, &res), 0);
    assert_problem(&res, 400, "malformed-json", "holdId");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin",
                          "{\"title\":\"x\\u0000y\",\"startsAt\":\"2030-01-01T20:00:00Z\"}", NULL,
                          &res),
                 0);
    assert_problem(&res, 400, "malformed-json", "title");
    e2e_res_free(&res);

    char *after = e2e_show_snapshot(show);
    cr_assert_str_eq(before, after, "nothing changed");
    cr_assert_eq(catalogue_size(), shows_before, "no show was created");
    free(before);
    free(after);
}

/* Asserts that 'res' lists exactly the fields 'names' (NULL-terminated) in invalidParams. */
static void assert_invalid_params(const e2e_res_t *res, const char *const *names)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(res->json, "invalidParams");
    cr_assert(cJSON_IsArray(params), "no invalidParams: %.*s", (int)res->http.body_len,
              res->http.body);
    size_t n = 0;
    while (names[n])
        n++;
    cr_assert_eq((size_t)cJSON_GetArraySize(params), n, "%.*s", (int)res->http.body_len,
                 res->http.body);
    for (size_t i = 0; i < n; i++) {
        const cJSON *p = cJSON_GetArrayItem(params, (int)i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(p, "reason");
        cr_assert(cJSON_IsString(name) && strcmp(name->valuestring, names[i]) == 0,
                  "invalidParams[%zu] is not %s", i, names[i]);
        cr_assert(cJSON_IsString(reason) && reason->valuestring[0]);
    }
}

Test(api_bad_input, a_400_names_every_bad_field)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer", "{}", NULL, &res), 0);
    assert_problem(&res, 400, "bad-request", "empty booking");
    cr_assert_str_eq(e2e_str(&res, "detail"), "field 'holdId' is required");
    assert_invalid_params(&res, (const char *const[]){"holdId", "paymentMethod", NULL});
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer",
                          "{\"holdId\":7,\"paymentMethod\":\"TOK OK\",\"idempotencyKey\":\"a b\"}",
                          NULL, &res),
                 0);
    assert_problem(&res, 400, "bad-request", "three bad booking fields");
    assert_invalid_params(&res,
                          (const char *const[]){"holdId", "paymentMethod", "idempotencyKey", NULL});
    e2e_res_free(&res);

    char show[32], path[96];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(
        e2e_call("POST", path, "fuzzer", "{\"seatIds\":5,\"idempotencyKey\":\"a b\"}", NULL, &res),
        0);
    assert_problem(&res, 400, "bad-request", "two bad hold fields");
    assert_invalid_params(&res, (const char *const[]){"seatIds", "idempotencyKey", NULL});
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", "{\"holdTtlSeconds\":0}", NULL, &res), 0);
    assert_problem(&res, 400, "bad-request", "empty show");
    assert_invalid_params(&res, (const char *const[]){"title", "startsAt", "holdTtlSeconds",
                                                      "priceTiers", "seats", NULL});
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin",
                          "{\"title\":\"t\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                          "\"salesCloseAt\":\"2030-01-02T20:00:00Z\",\"priceTiers\":"
                          "{\"standard\":1000},\"seats\":[{\"id\":\"A1\",\"row\":\"A\","
                          "\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1}]}",
                          NULL, &res),
                 0);
    assert_problem(&res, 400, "bad-request", "sales closing after the start");
    assert_invalid_params(&res, (const char *const[]){"salesCloseAt", NULL});
    e2e_res_free(&res);
}

/* Issue 32: a show that starts in the past, or whose sales close in the past, is refused with
 * a 400 naming the field (it was created: 201, never listed, every hold 409 sales-closed). */
Test(api_bad_input, a_show_starting_or_closing_sales_in_the_past_is_400_and_not_created)
{
    static const char seats[] =
        "\"priceTiers\":{\"standard\":1000},\"seats\":[{\"id\":\"A1\",\"row\":\"A\","
        "\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1}]";
    time_t t = time(NULL) - 60;
    struct tm tm;
    gmtime_r(&t, &tm);
    char minute_ago[32];
    strftime(minute_ago, sizeof(minute_ago), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const struct {
        const char *starts, *close;
        const char *const fields[3];
    } past[] = {
        {"2020-01-01T20:00:00Z", NULL, {"startsAt", NULL}},
        {minute_ago, NULL, {"startsAt", NULL}},
        {"2030-01-01T20:00:00Z", "2020-01-01T19:00:00Z", {"salesCloseAt", NULL}},
        {"2030-01-01T20:00:00Z", minute_ago, {"salesCloseAt", NULL}},
        {"2020-01-01T20:00:00Z", "2020-01-01T19:00:00Z", {"startsAt", "salesCloseAt", NULL}},
    };
    long shows_before = catalogue_size();
    for (size_t i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
        char body[512], close[64] = "";
        if (past[i].close)
            snprintf(close, sizeof(close), "\"salesCloseAt\":\"%s\",", past[i].close);
        snprintf(body, sizeof(body), "{\"title\":\"late\",\"startsAt\":\"%s\",%s%s}",
                 past[i].starts, close, seats);
        e2e_res_t res;
        cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
        assert_problem(&res, 400, "bad-request", body);
        assert_invalid_params(&res, past[i].fields);
        const char *detail = e2e_str(&res, "detail");
        char want[64];
        snprintf(want, sizeof(want), "'%s' is in the past", past[i].fields[0]);
        cr_assert(strstr(detail, want), "%s: detail %s", body, detail);
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res.json, "invalidParams"), 0),
            "reason");
        cr_assert(cJSON_IsString(reason) && strstr(reason->valuestring, "in the past"), "%s", body);
        cr_assert_null(seatd_test_http_header(&res.http, "location"));
        e2e_res_free(&res);
    }
    cr_assert_eq(catalogue_size(), shows_before, "no show was created");
}

Test(api_bad_input, a_415_says_what_it_accepts)
{
    seatd_test_http_response_t res;
    char hdr[1200];
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\nContent-Type: text/plain\r\n",
             e2e_token("fuzzer", 0));
    static const char body[] = "{\"holdId\":\"1-h0\",\"paymentMethod\":\"tok_ok\"}";
    cr_assert_eq(seatd_test_http_request("127.0.0.1", e2e_port(), "POST", "/v1/bookings", hdr, body,
                                         sizeof(body) - 1, &res),
                 0);
    cr_assert_eq(res.status, 415);
    const char *accept = seatd_test_http_header(&res, "accept-post");
    cr_assert(accept && strcmp(accept, "application/json") == 0, "Accept-Post: %s",
              accept ? accept : "(none)");
    seatd_test_http_response_free(&res);
}

/* No answer carries a Redis key name, a Redis error text or another internal. */
static void assert_no_internals(const e2e_res_t *res, const char *what)
{
    char *b = strndup(res->http.body ? res->http.body : "", res->http.body_len);
    const char *bad[] = {"{s:", ":meta", "seatd:", "ERR ", "NOSHOW", "NOTFOUND", "script"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert(strstr(b, bad[i]) == NULL, "%s: the answer shows '%s': %s", what, bad[i], b);
    free(b);
}

Test(api_bad_input, no_answer_names_a_redis_key_or_shows_a_redis_error)
{
    struct {
        const char *method, *path, *body;
        int status;
    } probes[] = {
        {"GET", "/v1/shows/987654321", NULL, 404},
        {"GET", "/v1/shows/987654321/seats", NULL, 404},
        {"GET", "/v1/shows/987654321/layout", NULL, 404},
        {"POST", "/v1/shows/987654321/holds", "{\"seatIds\":[\"A1\"]}", 404},
        {"GET", "/v1/holds/987654321-h0123456789abcdef0123", NULL, 404},
        {"DELETE", "/v1/holds/987654321-h0123456789abcdef0123", NULL, 404},
        {"GET", "/v1/bookings/987654321-b0123456789abcdef0123", NULL, 404},
        {"DELETE", "/v1/bookings/987654321-b0123456789abcdef0123", NULL, 404},
        {"POST", "/v1/bookings",
         "{\"holdId\":\"987654321-h0123456789abcdef0123\",\"paymentMethod\":\"tok_ok\"}", 404},
    };
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        e2e_res_t res;
        cr_assert_eq(
            e2e_call(probes[i].method, probes[i].path, "fuzzer", probes[i].body, NULL, &res), 0);
        assert_problem(&res, probes[i].status, NULL, probes[i].path);
        assert_no_internals(&res, probes[i].path);
        e2e_res_free(&res);
    }
}

/* A show's texts are counted in characters and carry no control characters; a refund policy
 * names each beforeSeconds once. 201 for 200 accented characters (400 bytes: refused as
 * over 200 before), 400 for a title that would clear an operator's terminal or forge a line
 * (accepted before), for invalid UTF-8, and for two refund tiers at one beforeSeconds (which
 * one applied was left to an unstable sort). */
Test(api_bad_input, show_texts_are_characters_without_controls_and_refund_tiers_are_distinct)
{
    static const char seats[] =
        "\"priceTiers\":{\"standard\":1000},\"seats\":[{\"id\":\"A1\","
        "\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1}]";
    char title[512] = "", body[2048];
    for (int i = 0; i < 200; i++)
        strcat(title, "\xc3\xa9");
    e2e_res_t res;
    snprintf(body, sizeof(body), "{\"title\":\"%s\",\"startsAt\":\"2030-01-01T20:00:00Z\",%s}",
             title, seats);
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "title"), title);
    e2e_res_free(&res);
    char long_title[600]; /* 201 characters */
    snprintf(long_title, sizeof(long_title), "\"title\":\"%sx\"", title);
    const struct {
        const char *field, *member;
    } bad[] = {
        {"title", "\"title\":\"evil\\u001b[2J\\nFAKE 1\""},
        {"title", "\"title\":\"\xc3\""},
        {"title", long_title},
        {"screen", "\"title\":\"t\",\"screen\":\"1\\u0085\""},
        {"refundPolicy", "\"title\":\"t\",\"refundPolicy\":[{\"beforeSeconds\":5,\"percent\":100},"
                         "{\"beforeSeconds\":5,\"percent\":0}]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body), "{%s,\"startsAt\":\"2030-01-01T20:00:00Z\",%s}", bad[i].member,
                 seats);
        cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
        assert_problem(&res, 400, "bad-request", bad[i].field);
        assert_invalid_params(&res, (const char *const[]){bad[i].field, NULL});
        e2e_res_free(&res);
    }
}

/* Two Idempotency-Keys on one hold: 400 and nothing held (the first was taken, silently). */
Test(api_bad_input, a_hold_with_two_idempotency_keys_is_400_and_holds_nothing)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(1, 3, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    char *before = e2e_show_snapshot(show);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", path, "twokeys", "{\"seatIds\":[\"A1\"]}",
                          "Idempotency-Key: k-one\r\nIdempotency-Key: k-two\r\n", &res),
                 0);
    cr_assert_eq(res.http.status, 400, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    char *after = e2e_show_snapshot(show);
    cr_assert_str_eq(after, before);
    free(before);
    free(after);
}

/* Creates a show starting at 'starts' (RFC 3339) with an optional 'close' cutoff. */
static void create_show_at(const char *starts, const char *close, char *id)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"title\":\"sales\",\"startsAt\":\"%s\",%s%s%s\"holdTtlSeconds\":300,"
             "\"priceTiers\":{\"standard\":1000},\"seats\":[{\"id\":\"A1\",\"row\":\"A\","
             "\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},{\"id\":\"A2\",\"row\":\"A\","
             "\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":1}]}",
             starts, close ? "\"salesCloseAt\":\"" : "", close ? close : "", close ? "\"," : "");
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(id, 32, "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);
}

static long long redis_clock_ms(seatd_redis_t *c)
{
    redisReply *t = seatd_redis_command(c, "TIME");
    long long ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    return ms;
}

Test(api_bad_input, holds_and_bookings_after_sales_close_are_409_sales_closed)
{
    char started[32], cut[32], path[96];
    e2e_res_t res;
    /* A show that has started, and one whose sales closed before its start: created (a show
     * must start, and its sales close, in the future) to start or close in 2 s, then waited
     * for. */
    time_t past = time(NULL) + 2;
    struct tm ptm;
    gmtime_r(&past, &ptm);
    char closing[32], closed_at[32], closed_ms[32];
    strftime(closing, sizeof(closing), "%Y-%m-%dT%H:%M:%SZ", &ptm);
    strftime(closed_at, sizeof(closed_at), "%Y-%m-%dT%H:%M:%S", &ptm);
    strftime(closed_ms, sizeof(closed_ms), "%Y-%m-%dT%H:%M:%S.000Z", &ptm);
    create_show_at(closing, NULL, started);
    create_show_at("2030-01-01T20:00:00Z", closing, cut);
    snprintf(path, sizeof(path), "/v1/shows/%s", cut);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "salesCloseAt"), closed_ms);
    e2e_res_free(&res);
    seatd_redis_t *rc = e2e_redis();
    for (long long stop = redis_clock_ms(rc) + 10000, now;
         (now = redis_clock_ms(rc)) < (long long)past * 1000; usleep(20 * 1000))
        cr_assert(now < stop);
    seatd_redis_free(rc);
    const char *shows[] = {started, cut};
    for (size_t i = 0; i < 2; i++) {
        char *before = e2e_show_snapshot(shows[i]);
        snprintf(path, sizeof(path), "/v1/shows/%s/holds", shows[i]);
        cr_assert_eq(e2e_call("POST", path, "late", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
        assert_problem(&res, 409, "sales-closed", shows[i]);
        cr_assert(strstr(e2e_str(&res, "detail"), closed_at), "%s", e2e_str(&res, "detail"));
        e2e_res_free(&res);
        char *after = e2e_show_snapshot(shows[i]);
        cr_assert_str_eq(before, after, "nothing changed");
        free(before);
        free(after);
    }

    /* A show starting in 2 s: a hold ends at the start; booking it after is sales-closed. */
    time_t t = time(NULL) + 2;
    struct tm tm;
    gmtime_r(&t, &tm);
    char when[32], soon[32], body[160], hold_id[64];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    strftime(soon, sizeof(soon), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    create_show_at(when, NULL, started);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", started);
    cr_assert_eq(e2e_call("POST", path, "late", "{\"seatIds\":[\"A2\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "expiresAt"), soon, "the hold ends when sales close");
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    seatd_redis_t *c = e2e_redis();
    long long close = (long long)t * 1000, stop = redis_clock_ms(c) + 10000, now;
    while ((now = redis_clock_ms(c)) < close)
        cr_assert(now < stop);
    /* The hold ended at the close; the sweeper reaps it (its own change, asynchronous): wait
     * for that, so that the snapshots below see only what the booking attempt does. */
    for (;;) {
        redisReply *st = seatd_redis_command(c, "HGET {s:%s}:hold:%s status", started, hold_id);
        int held = st && st->type == REDIS_REPLY_STRING && strcmp(st->str, "HELD") == 0;
        freeReplyObject(st);
        if (!held)
            break;
        cr_assert(redis_clock_ms(c) < stop + 10000, "the sweeper reaps the hold");
        usleep(20 * 1000);
    }
    seatd_redis_free(c);
    char *before = e2e_show_snapshot(started);
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "late", body, NULL, &res), 0);
    assert_problem(&res, 409, "sales-closed", "booking after the close");
    e2e_res_free(&res);
    /* The attempt was counted against the hold's decline cap and given back (the worker's
     * give may reach Redis just after the answer): wait for it to be gone. */
    c = e2e_redis();
    for (long long until = redis_clock_ms(c) + 5000;;) {
        redisReply *ex = seatd_redis_command(c, "EXISTS {s:%s}:declines:%s", started, hold_id);
        long long n = ex ? ex->integer : 0;
        freeReplyObject(ex);
        if (n == 0)
            break;
        cr_assert(redis_clock_ms(c) < until, "the attempt is given back");
        usleep(10 * 1000);
    }
    seatd_redis_free(c);
    char *after = e2e_show_snapshot(started);
    cr_assert_str_eq(before, after, "nothing changed, no charge started");
    free(before);
    free(after);
}

/* ---------------------------------------------------------------------------------------
 * Issue 32: a refusal says what is wrong: where a body stops being JSON, which hold is
 * unknown, what a cursor must be.
 * --------------------------------------------------------------------------------------- */

/* The problem's "detail" contains 'want'. */
static void assert_detail(const e2e_res_t *res, const char *want, const char *name)
{
    const char *d = e2e_str(res, "detail");
    cr_assert(strstr(d, want) != NULL, "%s: the detail '%s' does not say '%s'", name, d, want);
}

Test(api_bad_input, a_malformed_body_says_where)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    static const struct {
        const char *body, *want;
    } bodies[] = {
        {"{\"seatIds\":[\"A1\",]}", "a syntax error at line 1, column 18 (byte 17)"},
        {"{\n  \"seatIds\": [\"A1\"]\n  \"idempotencyKey\": \"k1\"\n}",
         "a syntax error at line 3, column 3 (byte 24)"},
        {"{\"seatIds\":[\"A1\"]} {}", "more after the JSON value at line 1, column 20 (byte 19)"},
        {"{\"seatIds\":[\"A1\"],\"seatIds\":[\"A2\"]}", "member \"seatIds\" is named twice"},
    };
    e2e_res_t res;
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        cr_assert_eq(e2e_call("POST", path, "fuzzer", bodies[i].body, NULL, &res), 0);
        assert_problem(&res, 400, "malformed-json", bodies[i].body);
        assert_detail(&res, bodies[i].want, bodies[i].body);
        e2e_res_free(&res);
    }
}

Test(api_bad_input, an_unknown_hold_id_is_named)
{
    e2e_res_t res;
    /* A hold id of the right shape that names no hold. */
    const char *ghost = "1-h0123456789abcdef0123";
    char body[160];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", ghost);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer", body, NULL, &res), 0);
    assert_problem(&res, 404, "not-found", "unknown hold");
    assert_detail(&res, "no hold 1-h0123456789abcdef0123 of yours", "unknown hold");
    cr_assert_str_eq(e2e_str(&res, "holdId"), ghost);
    e2e_res_free(&res);

    /* Someone else's hold reads the same (never 403, nothing about its owner). */
    char show[32], hold_id[64];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    e2e_hold(show, "holder", "[\"A2\"]", hold_id, sizeof(hold_id));
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer", body, NULL, &res), 0);
    assert_problem(&res, 404, "not-found", "someone else's hold");
    char want[96];
    snprintf(want, sizeof(want), "no hold %s of yours", hold_id);
    assert_detail(&res, want, "someone else's hold");
    e2e_res_free(&res);

    /* Not a hold id at all (deploy/up's "<holdId>" pasted as it is): said so, not echoed. */
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fuzzer",
                          "{\"holdId\":\"<holdId>\",\"paymentMethod\":\"tok_ok\"}", NULL, &res),
                 0);
    assert_problem(&res, 404, "not-found", "not a hold id");
    assert_detail(&res, "holdId is not a hold id (<show>-h<20 hex digits>", "not a hold id");
    cr_assert_null(strstr(e2e_str(&res, "detail"), "<holdId>"));
    e2e_res_free(&res);
}

Test(api_bad_input, a_bad_cursor_or_limit_says_what_it_must_be)
{
    static const struct {
        const char *query, *param, *want;
    } queries[] = {
        {"cursor=abc", "cursor", "query parameter 'cursor' must be the nextCursor"},
        {"cursor=%E2%80%A6", "cursor", "query parameter 'cursor' must be the nextCursor"},
        {"limit=0", "limit", "query parameter 'limit' must be an integer in [1, 100]"},
    };
    e2e_res_t res;
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/me/bookings?%s", queries[i].query);
        cr_assert_eq(e2e_call("GET", path, "cursor-carl", NULL, NULL, &res), 0);
        assert_problem(&res, 400, "bad-request", queries[i].query);
        assert_detail(&res, queries[i].want, queries[i].query);
        assert_invalid_params(&res, (const char *const[]){queries[i].param, NULL});
        e2e_res_free(&res);
    }
}
