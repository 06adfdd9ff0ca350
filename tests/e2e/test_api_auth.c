/* End-to-end: identity. Strangers see 404, no token is 401, a customer on an admin route 403. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
