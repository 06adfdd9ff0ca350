/* Unit tests for router.c: matching, precedence, 405 with Allow, parameters, stats. */
#include <criterion/criterion.h>
#include <string.h>

#include "http/router.h"

static int h_list(seatd_req_t *r)
{
    (void)r;
    return 0;
}
static int h_get(seatd_req_t *r)
{
    (void)r;
    return 1;
}
static int h_new(seatd_req_t *r)
{
    (void)r;
    return 2;
}

static seatd_route_t table[] = {
    {"GET", "/v1/shows", "shows_list", h_list, 0, {0}},
    {"POST", "/v1/shows", "shows_create", h_new, SEATD_ROUTE_ADMIN, {0}},
    {"GET", "/v1/shows/{id}", "shows_get", h_get, 0, {0}},
    {"GET", "/v1/shows/featured", "shows_featured", h_new, 0, {0}},
    {"POST", "/v1/shows/{id}/holds", "holds_create", h_new, SEATD_ROUTE_AUTH, {0}},
    {"GET", "/v1/holds/{id}", "holds_get", h_get, SEATD_ROUTE_AUTH, {0}},
    {"DELETE", "/v1/holds/{id}", "holds_delete", h_get, SEATD_ROUTE_AUTH, {0}},
    {"GET", "/v1/a/{x}/b/{y}", "two_params", h_get, 0, {0}},
    {"GET", "/healthz", "healthz", h_list, 0, {0}},
};
#define N (sizeof(table) / sizeof(table[0]))

Test(router, matches_a_literal_route)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/shows", &m), 0);
    cr_assert_str_eq(m.route->name, "shows_list");
    cr_assert_eq(m.nparams, 0);
}

Test(router, extracts_a_path_parameter)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/shows/42", &m), 0);
    cr_assert_str_eq(m.route->name, "shows_get");
    cr_assert_eq(m.nparams, 1);
    cr_assert_str_eq(m.params[0].name, "id");
    cr_assert_str_eq(m.params[0].value, "42");
}

Test(router, prefers_static_segment_over_param)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/shows/featured", &m), 0);
    cr_assert_str_eq(m.route->name, "shows_featured");
}

Test(router, extracts_several_parameters_in_order)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/a/one/b/two", &m), 0);
    cr_assert_eq(m.nparams, 2);
    cr_assert_str_eq(m.params[0].name, "x");
    cr_assert_str_eq(m.params[0].value, "one");
    cr_assert_str_eq(m.params[1].name, "y");
    cr_assert_str_eq(m.params[1].value, "two");
}

Test(router, picks_the_route_of_the_method)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "DELETE", "/v1/holds/7-h1", &m), 0);
    cr_assert_str_eq(m.route->name, "holds_delete");
    cr_assert_eq(seatd_router_match(table, N, "POST", "/v1/shows", &m), 0);
    cr_assert_str_eq(m.route->name, "shows_create");
}

Test(router, answers_method_not_allowed_with_the_allowed_methods)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "PUT", "/v1/holds/9", &m), SEATD_EMETHOD);
    cr_assert_str_eq(m.allow, "GET, HEAD, DELETE");
    cr_assert_null(m.route);
    cr_assert_eq(seatd_router_match(table, N, "DELETE", "/v1/shows", &m), SEATD_EMETHOD);
    cr_assert_str_eq(m.allow, "GET, HEAD, POST");
}

Test(router, answers_no_route_for_unknown_paths)
{
    seatd_route_match_t m;
    const char *paths[] = {"/v1/nope", "/v1/shows/", "/v1/shows/42/holds/x", "/", "",
                           "v1/shows", "/v1//42",    "/v1/shows//holds"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        cr_assert_eq(seatd_router_match(table, N, "GET", paths[i], &m), SEATD_ENOROUTE, "path '%s'",
                     paths[i]);
}

Test(router, percent_decodes_parameters)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/holds/a%2Fb%20c", &m), 0);
    cr_assert_str_eq(m.params[0].value, "a/b c");
    /* '+' is literal in a path (it means space only in a query). */
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/holds/a+b", &m), 0);
    cr_assert_str_eq(m.params[0].value, "a+b");
}

Test(router, rejects_malformed_or_oversized_parameters)
{
    seatd_route_match_t m;
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/holds/%zz", &m), SEATD_EBADID);
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/holds/ab%2", &m), SEATD_EBADID);
    cr_assert_eq(seatd_router_match(table, N, "GET", "/v1/holds/a%00b", &m), SEATD_EBADID);
    char path[200] = "/v1/holds/";
    memset(path + strlen(path), 'x', SEATD_ROUTE_PARAM_MAX);
    cr_assert_eq(seatd_router_match(table, N, "GET", path, &m), 0, "64 bytes fit");
    strcat(path, "x");
    cr_assert_eq(seatd_router_match(table, N, "GET", path, &m), SEATD_EBADID, "65 do not");
}

Test(router, rejects_too_many_segments)
{
    seatd_route_match_t m;
    char path[256] = "";
    for (int i = 0; i < SEATD_ROUTE_MAX_SEGMENTS + 1; i++)
        strcat(path, "/a");
    cr_assert_eq(seatd_router_match(table, N, "GET", path, &m), SEATD_ENOROUTE);
}

Test(router, check_accepts_a_good_table)
{
    const seatd_route_t *bad = NULL;
    cr_assert_eq(seatd_router_check(table, N, &bad), 0);
    cr_assert_null(bad);
}

Test(router, check_rejects_bad_rows)
{
    seatd_route_t rows[][2] = {
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "/x", "b", h_get, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"FETCH", "/y", "b", h_get, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "y", "b", h_get, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "/y", "b", NULL, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "/y/{a}{b}", "b", h_get, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "/{a}/{b}/{c}/{d}/{e}", "b", h_get, 0, {0}}},
        {{"GET", "/x", "a", h_get, 0, {0}}, {"GET", "/y", "", h_get, 0, {0}}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const seatd_route_t *bad = NULL;
        cr_assert_eq(seatd_router_check(rows[i], 2, &bad), SEATD_EINVAL, "case %zu", i);
        cr_assert_eq(bad, &rows[i][1], "case %zu names the second row", i);
    }
}

Test(router, stats_count_status_classes_and_cumulative_latency)
{
    seatd_route_stats_t s;
    memset(&s, 0, sizeof(s));
    seatd_route_stats_observe(&s, 200, 0.0004);
    seatd_route_stats_observe(&s, 409, 0.003);
    seatd_route_stats_observe(&s, 503, 10.0);
    cr_assert_eq(s.count, 3);
    cr_assert_eq(s.by_status[2], 1);
    cr_assert_eq(s.by_status[4], 1);
    cr_assert_eq(s.by_status[5], 1);
    cr_assert_eq(s.latency_buckets[0], 1);                         /* <= 0.5 ms */
    cr_assert_eq(s.latency_buckets[3], 2);                         /* <= 5 ms */
    cr_assert_eq(s.latency_buckets[SEATD_LATENCY_BUCKETS - 1], 2); /* <= 5 s; 10 s is +Inf */
    cr_assert_float_eq(s.latency_sum_s, 10.0034, 1e-9);
    for (int i = 1; i < SEATD_LATENCY_BUCKETS; i++)
        cr_assert(seatd_latency_bounds[i] > seatd_latency_bounds[i - 1]);
}
