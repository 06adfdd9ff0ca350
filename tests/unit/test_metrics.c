/* Unit tests for metrics.c: the Prometheus text of /metrics. */
#include <criterion/criterion.h>
#include <string.h>

#include "app.h"
#include "buf.h"
#include "metrics.h"
#include "router.h"

static int handler(seatd_req_t *r)
{
    return 0;
}

Test(metrics, renders_route_stats_counters_and_histograms)
{
    seatd_route_t routes[] = {
        {.method = "POST",
         .pattern = "/v1/shows/{id}/holds",
         .name = "holds_create",
         .handler = handler},
        {.method = "GET", .pattern = "/healthz", .name = "healthz", .handler = handler},
    };
    seatd_route_stats_observe(&routes[0].stats, 201, 0.002);
    seatd_route_stats_observe(&routes[0].stats, 409, 0.004);
    seatd_metrics_inc(SEATD_METRIC_HOLD_CREATED);
    seatd_metrics_inc(SEATD_METRIC_HOLD_CONFLICT);
    seatd_app_t app;
    memset(&app, 0, sizeof(app));
    app.routes = routes;
    app.nroutes = 2;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_metrics_render(&app, &b);
    cr_assert_not_null(
        strstr(b.data, "seatd_http_requests_total{route=\"holds_create\",code=\"2xx\"} 1\n"));
    cr_assert_not_null(
        strstr(b.data, "seatd_http_requests_total{route=\"holds_create\",code=\"4xx\"} 1\n"));
    cr_assert_not_null(
        strstr(b.data, "seatd_http_request_duration_seconds_count{route=\"holds_create\"} 2\n"));
    cr_assert_not_null(strstr(
        b.data,
        "seatd_http_request_duration_seconds_bucket{route=\"holds_create\",le=\"+Inf\"} 2\n"));
    /* A route nobody called has no histogram lines. */
    cr_assert_null(strstr(b.data, "duration_seconds_count{route=\"healthz\"}"));
    cr_assert_not_null(strstr(b.data, "seatd_holds_total{outcome=\"created\"} 1\n"));
    cr_assert_not_null(strstr(b.data, "seatd_holds_total{outcome=\"conflict\"} 1\n"));
    /* Each family has exactly one TYPE line. */
    const char *first = strstr(b.data, "# TYPE seatd_holds_total counter");
    cr_assert_not_null(first);
    cr_assert_null(strstr(first + 1, "# TYPE seatd_holds_total counter"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_connected 0\n"));
    seatd_buf_free(&b);
}
