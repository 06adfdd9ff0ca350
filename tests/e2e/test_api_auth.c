/* End-to-end: identity. Strangers see 404, no token is 401, a customer on an admin route 403;
 * a refused token is told why (the problem's detail, RFC 6750's challenge). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/auth.h"
#include "e2e.h"

TestSuite(api_auth, .timeout = 60);

static void assert_problem(const e2e_res_t *res, int status)
{
    cr_assert_eq(res->http.status, status, "got %d: %.*s", res->http.status,
                 (int)res->http.body_len, res->http.body ? res->http.body : "");
    const char *ct = seatd_test_http_header(&res->http, "content-type");
    cr_assert(ct && strstr(ct, "application/problem+json"), "content-type %s", ct ? ct : "none");
    cr_assert(strlen(e2e_str(res, "type")) > 0);
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res->json, "status")),
                 status);
}

Test(api_auth, a_stranger_cannot_read_book_or_release_someone_elses_hold)
{
    char show[32], path[96], body[128];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "owner1", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    char *before = e2e_show_snapshot(show);

    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, "mallory", NULL, NULL, &res), 0);
    assert_problem(&res, 404);
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, "mallory", NULL, NULL, &res), 0);
    assert_problem(&res, 404);
    e2e_res_free(&res);
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "mallory", body, NULL, &res), 0);
    assert_problem(&res, 404);
    e2e_res_free(&res);

    char *after = e2e_show_snapshot(show);
    cr_assert_str_eq(before, after);
    free(before);
    free(after);

    cr_assert_eq(e2e_call("GET", path, "owner1", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    e2e_res_free(&res);
}

Test(api_auth, no_token_is_401_and_a_customer_on_an_admin_route_is_403)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows/1/holds", NULL, "{\"seatIds\":[\"A1\"]}", NULL, &res),
                 0);
    assert_problem(&res, 401);
    cr_assert_not_null(seatd_test_http_header(&res.http, "www-authenticate"));
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("GET", "/v1/holds/1-h0123456789abcdef0123", NULL, NULL,
                          "Authorization: Bearer not.a.token\r\n", &res),
                 0);
    assert_problem(&res, 401);
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("POST", "/v1/shows", "customer", "{\"title\":\"x\"}", NULL, &res), 0);
    assert_problem(&res, 403);
    e2e_res_free(&res);
}

static int64_t an_hour_ago(void *data)
{
    (void)data;
    return (int64_t)time(NULL) - 3600;
}

/* GET /v1/me/holds with 'authorization' (a header line, or NULL for none): 401, its problem's
 * detail contains 'detail' and its WWW-Authenticate is 'challenge'. */
static void assert_refused(const char *authorization, const char *detail, const char *challenge)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", "/v1/me/holds", NULL, NULL, authorization, &res), 0);
    assert_problem(&res, 401);
    const char *d = e2e_str(&res, "detail");
    cr_assert(strstr(d, detail) != NULL, "the detail '%s' does not say '%s'", d, detail);
    const char *h = seatd_test_http_header(&res.http, "www-authenticate");
    cr_assert(h && strcmp(h, challenge) == 0, "WWW-Authenticate '%s', wanted '%s'", h ? h : "",
              challenge);
    e2e_res_free(&res);
}

Test(api_auth, a_refused_token_says_why)
{
    char line[1400];
    /* Expired: signed by this stack an hour ago for a minute. */
    seatd_auth_t *auth = NULL;
    const char *secret = getenv("SEATD_JWT_SECRET");
    cr_assert_eq(seatd_auth_new(secret, strlen(secret), &auth), 0);
    seatd_auth_set_clock(auth, an_hour_ago, NULL);
    char *t = NULL;
    cr_assert_eq(seatd_auth_sign(auth, "late-larry", 0, 60, &t), 0);
    seatd_auth_free(auth);
    snprintf(line, sizeof(line), "Authorization: Bearer %s\r\n", t);
    free(t);
    assert_refused(line, "the token has expired",
                   "Bearer error=\"invalid_token\", error_description=\"the token has expired\"");

    /* A bad signature: another secret. */
    const char *other = "another secret, 32 bytes or more, not the stack's";
    cr_assert_eq(seatd_auth_new(other, strlen(other), &auth), 0);
    cr_assert_eq(seatd_auth_sign(auth, "forger", 0, 600, &t), 0);
    seatd_auth_free(auth);
    snprintf(line, sizeof(line), "Authorization: Bearer %s\r\n", t);
    free(t);
    assert_refused(line, "the token has a bad signature",
                   "Bearer error=\"invalid_token\", error_description=\"the token has a bad "
                   "signature (not signed by this service)\"");

    /* Malformed. */
    assert_refused("Authorization: Bearer not.a.token\r\n", "the token is malformed",
                   "Bearer error=\"invalid_token\", error_description=\"the token is malformed "
                   "(not a JWT)\"");

    /* No token: no error code (RFC 6750 section 3.1), and the detail says what to send. */
    assert_refused(NULL, "no bearer token: send Authorization: Bearer <token>", "Bearer");
    assert_refused("Authorization: Basic YTpi\r\n", "no bearer token", "Bearer");
}
