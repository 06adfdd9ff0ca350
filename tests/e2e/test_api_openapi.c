/*
 * End-to-end: the API description. nginx serves api/openapi.json at /v1/openapi.json, byte
 * for byte, as JSON, and its rendering at /docs/ from files of its own (no CDN). That every
 * answer of the other suites matches the document is checked by tests/e2e/run
 * (validate_responses.py); that it covers every route and problem type, by
 * tests/unit/test_openapi.c.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

TestSuite(api_openapi, .timeout = 60);

/* The bytes of 'path' (NUL-terminated, owned) and their count in '*len'. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    text[n] = '\0';
    *len = (size_t)n;
    return text;
}

Test(api_openapi, the_document_is_served_as_json_exactly_as_in_the_repository)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", "/v1/openapi.json", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    const char *ct = seatd_test_http_header(&res.http, "content-type");
    cr_assert(ct && strncmp(ct, "application/json", 16) == 0, "content-type %s", ct ? ct : "none");
    size_t len;
    char *file = read_file(SEATD_SOURCE_DIR "/api/openapi.json", &len);
    cr_assert_eq(res.http.body_len, len);
    cr_assert_eq(memcmp(res.http.body, file, len), 0);
    free(file);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res.json, "openapi");
    cr_assert(cJSON_IsString(v) && strncmp(v->valuestring, "3.1.", 4) == 0);
    e2e_res_free(&res);
}

Test(api_openapi, the_reference_page_renders_the_document_with_a_local_redoc)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", "/docs/", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    const char *ct = seatd_test_http_header(&res.http, "content-type");
    cr_assert(ct && strncmp(ct, "text/html", 9) == 0, "content-type %s", ct ? ct : "none");
    cr_assert_not_null(strstr(res.http.body, "spec-url=\"/v1/openapi.json\""));
    cr_assert_not_null(strstr(res.http.body, "<script src=\"redoc.standalone.js\"></script>"));
    cr_assert_null(strstr(res.http.body, "http"), "the page loads nothing from elsewhere");
    const char *csp = seatd_test_http_header(&res.http, "content-security-policy");
    cr_assert(csp && strstr(csp, "script-src 'self';"), "CSP %s", csp ? csp : "none");
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("GET", "/docs/redoc.standalone.js", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    ct = seatd_test_http_header(&res.http, "content-type");
    cr_assert(ct && strstr(ct, "javascript"), "content-type %s", ct ? ct : "none");
    cr_assert_gt(res.http.body_len, 100000);
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("GET", "/docs", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 301);
    const char *loc = seatd_test_http_header(&res.http, "location");
    cr_assert(loc && strcmp(loc, "/docs/") == 0, "location %s", loc ? loc : "none");
    e2e_res_free(&res);
}

/* The operators' routes answer as documented (tests/e2e/run validates every answer's shape):
 * a hold and a booking of any user read, released, cancelled, and a show reaped. */
Test(api_openapi, the_admin_routes_answer_any_users_records)
{
    char show[32], path[128], body[160], hold[64], booking[64];
    cr_assert_eq(e2e_create_show(1, 4, 300, show), 0);
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "ann", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(hold, sizeof(hold), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/admin/holds/%s", hold);
    cr_assert_eq(e2e_call("GET", path, "ann", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 403, "a customer on an admin route");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "owner"), "ann");
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/admin/shows/%s/reap", show);
    cr_assert_eq(e2e_call("POST", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_eq(e2e_num(&res, "reaped"), 0);
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/admin/holds/%s", hold);
    cr_assert_eq(e2e_call("DELETE", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "RELEASED");
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "ann", "{\"seatIds\":[\"A2\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(hold, sizeof(hold), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "ann", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(booking, sizeof(booking), "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/admin/bookings/%s", booking);
    cr_assert_eq(e2e_call("GET", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "CANCELLED");
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/admin/bookings/%s-b0123456789abcdef0123", show);
    cr_assert_eq(e2e_call("GET", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 404);
    e2e_res_free(&res);
}
