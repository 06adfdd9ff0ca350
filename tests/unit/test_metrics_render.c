/* Unit tests for metrics_render.c: the whole /metrics document, and the Grafana dashboard in
 * deploy/ that reads it. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "base/buf.h"
#include "base/metrics.h"
#include "flows/metrics_render.h"
#include "http/router.h"
#include "routes.h"

static int handler(seatd_req_t *r)
{
    return 0;
}

/* The /metrics text of an app with two routes (one called twice) and no modules. */
static seatd_buf_t render_sample(seatd_route_t *routes)
{
    seatd_route_stats_observe(&routes[0].stats, 201, 0.002);
    seatd_route_stats_observe(&routes[0].stats, 409, 0.004);
    seatd_route_stats_observe(&routes[1].stats, 201, 0.2);
    seatd_app_t app;
    memset(&app, 0, sizeof(app));
    app.routes = routes;
    app.nroutes = 3;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_metrics_render(&app, &b);
    return b;
}

#define SAMPLE_ROUTES                                                                              \
    {                                                                                              \
        {.method = "POST",                                                                         \
         .pattern = "/v1/shows/{id}/holds",                                                        \
         .name = "holds_create",                                                                   \
         .handler = handler},                                                                      \
            {.method = "POST",                                                                     \
             .pattern = "/v1/bookings",                                                            \
             .name = "bookings_create",                                                            \
             .handler = handler},                                                                  \
        {                                                                                          \
            .method = "GET", .pattern = "/healthz", .name = "healthz", .handler = handler          \
        }                                                                                          \
    }

Test(metrics_render, renders_route_stats_counters_and_every_module)
{
    seatd_route_t routes[] = SAMPLE_ROUTES;
    seatd_metrics_inc(SEATD_METRIC_HOLD_CREATED);
    seatd_metrics_inc(SEATD_METRIC_HOLD_CONFLICT);
    seatd_buf_t b = render_sample(routes);
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
    /* Modules that are absent read 0: every family is always there for dashboards. */
    cr_assert_not_null(strstr(b.data, "seatd_redis_connected 0\n"));
    cr_assert_not_null(strstr(b.data, "seatd_live_watchers 0\n"));
    cr_assert_not_null(strstr(b.data, "seatd_sweeper_lag_seconds 0.000\n"));
    cr_assert_not_null(strstr(b.data, "seatd_payment_requests_inflight 0\n"));
    cr_assert_not_null(strstr(b.data, "seatd_http_connections 0\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_count 0\n"));
    /* One TYPE line per family in the whole document. */
    const char *p = b.data;
    int types = 0;
    while ((p = strstr(p, "# TYPE seatd_redis_rtt_seconds ")) != NULL) {
        types++;
        p++;
    }
    cr_assert_eq(types, 1);
    seatd_buf_free(&b);
}

/* --------------------------------------------------------------------- the dashboard */

/* 1 if 'text' has a sample line of metric 'name' ("name{" or "name "). */
static int exported(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, name, n) == 0 && (line[n] == '{' || line[n] == ' '))
            return 1;
    return 0;
}

/* 1 if the API route table has a route named 'name'. */
static int route_exists(const char *name)
{
    for (size_t i = 0; i < seatd_nroutes; i++)
        if (strcmp(seatd_routes[i].name, name) == 0)
            return 1;
    return 0;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    seatd_buf_t b = SEATD_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        seatd_buf_append(&b, chunk, n);
    fclose(f);
    seatd_buf_puts(&b, "");
    return b.data; /* owned: the buffer's storage */
}

/* Checks every seatd_* metric and every route="…" label of one PromQL 'expr'; adds each
 * metric name it found to 'seen' (space-separated). */
static void check_expr(const char *expr, const char *metrics, seatd_buf_t *seen)
{
    for (const char *p = expr; *p;) {
        if ((p == expr || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            strncmp(p, "seatd_", 6) == 0) {
            const char *e = p;
            while (isalnum((unsigned char)*e) || *e == '_' || *e == ':')
                e++;
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(e - p), p);
            cr_assert(exported(metrics, name), "the dashboard queries %s, which no worker exports",
                      name);
            seatd_buf_printf(seen, " %s ", name);
            p = e;
        } else if (strncmp(p, "route=\"", 7) == 0) {
            const char *v = p + 7, *e = strchr(v, '"');
            cr_assert_not_null(e);
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(e - v), v);
            cr_assert(route_exists(name), "the dashboard names route %s, which routes.c lacks",
                      name);
            p = e;
        } else {
            p++;
        }
    }
}

Test(metrics_render, grafana_dashboard_is_importable_and_queries_only_exported_metrics)
{
    seatd_route_t routes[] = SAMPLE_ROUTES;
    seatd_buf_t metrics = render_sample(routes);
    char *text = read_all(SEATD_SOURCE_DIR "/deploy/grafana-dashboard.json");
    cJSON *d = cJSON_Parse(text);
    cr_assert_not_null(d, "deploy/grafana-dashboard.json is not JSON");

    /* Grafana's import format. */
    cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d, "title")));
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, "schemaVersion")));
    cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(d, "templating"), "list")));
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(d, "__inputs");
    cr_assert(cJSON_IsArray(inputs));
    int ds_input = 0;
    const cJSON *in;
    cJSON_ArrayForEach(in, inputs)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "name");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(in, "type");
        const cJSON *plugin = cJSON_GetObjectItemCaseSensitive(in, "pluginId");
        ds_input |= cJSON_IsString(name) && strcmp(name->valuestring, "DS_PROMETHEUS") == 0 &&
                    cJSON_IsString(type) && strcmp(type->valuestring, "datasource") == 0 &&
                    cJSON_IsString(plugin) && strcmp(plugin->valuestring, "prometheus") == 0;
    }
    cr_assert(ds_input, "__inputs lacks the DS_PROMETHEUS datasource");

    const cJSON *panels = cJSON_GetObjectItemCaseSensitive(d, "panels");
    cr_assert(cJSON_IsArray(panels) && cJSON_GetArraySize(panels) > 0);
    seatd_buf_t seen = SEATD_BUF_INIT;
    int queries = 0;
    const cJSON *panel;
    cJSON_ArrayForEach(panel, panels)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(panel, "type");
        cr_assert(cJSON_IsString(type));
        cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(panel, "gridPos")));
        if (strcmp(type->valuestring, "row") == 0)
            continue;
        const cJSON *ds = cJSON_GetObjectItemCaseSensitive(panel, "datasource");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(ds, "uid");
        cr_assert(cJSON_IsString(uid) && strcmp(uid->valuestring, "${DS_PROMETHEUS}") == 0,
                  "a panel's datasource is not ${DS_PROMETHEUS}");
        const cJSON *targets = cJSON_GetObjectItemCaseSensitive(panel, "targets");
        cr_assert(cJSON_IsArray(targets) && cJSON_GetArraySize(targets) > 0);
        const cJSON *t;
        cJSON_ArrayForEach(t, targets)
        {
            const cJSON *expr = cJSON_GetObjectItemCaseSensitive(t, "expr");
            cr_assert(cJSON_IsString(expr));
            check_expr(expr->valuestring, metrics.data, &seen);
            queries++;
        }
    }
    cr_assert_gt(queries, 10);
    /* An on-sale at a glance: each of these figures has a panel. */
    static const char *const wanted[] = {
        "seatd_holds_total",
        "seatd_http_request_duration_seconds_bucket",
        "seatd_bookings_total",
        "seatd_payments_total",
        "seatd_payment_duration_seconds_bucket",
        "seatd_redis_rtt_seconds_bucket",
        "seatd_live_watchers",
        "seatd_payments_pending",
        "seatd_sweeper_lag_seconds",
        "seatd_reconcile_bookings_total",
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        char key[96];
        snprintf(key, sizeof(key), " %s ", wanted[i]);
        cr_assert_not_null(strstr(seen.data, key), "no panel shows %s", wanted[i]);
    }
    seatd_buf_free(&seen);
    cJSON_Delete(d);
    free(text);
    seatd_buf_free(&metrics);
}
