/* metrics.c - counters and Prometheus text; see metrics.h. */
#include "metrics.h"

#include <string.h>

#include "app.h"
#include "http_server.h"
#include "live.h"
#include "rds.h"
#include "router.h"
#include "sweeper.h"

typedef struct {
    const char *family;
    const char *labels;
    const char *help;
} metric_row_t;

static const metric_row_t rows[] = {
#define SEATD_METRIC_ROW(name, family, labels, help) {family, labels, help},
    SEATD_METRIC_MAP(SEATD_METRIC_ROW)
#undef SEATD_METRIC_ROW
};

static unsigned long long counters[SEATD_METRIC__COUNT];

void seatd_metrics_inc(int m)
{
    if (m >= 0 && m < SEATD_METRIC__COUNT)
        counters[m]++;
}

unsigned long long seatd_metrics_get(int m)
{
    return (m >= 0 && m < SEATD_METRIC__COUNT) ? counters[m] : 0;
}

static void render_counters(seatd_buf_t *out)
{
    const char *last = "";
    for (int i = 0; i < SEATD_METRIC__COUNT; i++) {
        if (strcmp(rows[i].family, last) != 0) {
            seatd_buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", rows[i].family, rows[i].help,
                             rows[i].family);
            last = rows[i].family;
        }
        if (rows[i].labels[0])
            seatd_buf_printf(out, "%s{%s} %llu\n", rows[i].family, rows[i].labels, counters[i]);
        else
            seatd_buf_printf(out, "%s %llu\n", rows[i].family, counters[i]);
    }
}

static void render_routes(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_buf_puts(out, "# HELP seatd_http_requests_total HTTP requests by route and status "
                        "class\n# TYPE seatd_http_requests_total counter\n");
    for (unsigned long i = 0; i < app->nroutes; i++) {
        const seatd_route_t *rt = &app->routes[i];
        for (int c = 1; c <= 5; c++)
            if (rt->stats.by_status[c])
                seatd_buf_printf(out,
                                 "seatd_http_requests_total{route=\"%s\",code=\"%dxx\"} %llu\n",
                                 rt->name, c, rt->stats.by_status[c]);
    }
    seatd_buf_puts(out,
                   "# HELP seatd_http_request_duration_seconds Time from parsed request to "
                   "finished response\n# TYPE seatd_http_request_duration_seconds histogram\n");
    for (unsigned long i = 0; i < app->nroutes; i++) {
        const seatd_route_t *rt = &app->routes[i];
        if (rt->stats.count == 0)
            continue;
        for (int b = 0; b < SEATD_LATENCY_BUCKETS; b++)
            seatd_buf_printf(out,
                             "seatd_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} "
                             "%llu\n",
                             rt->name, seatd_latency_bounds[b], rt->stats.latency_buckets[b]);
        seatd_buf_printf(out,
                         "seatd_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
                         "%llu\n",
                         rt->name, rt->stats.count);
        seatd_buf_printf(out, "seatd_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n",
                         rt->name, rt->stats.latency_sum_s);
        seatd_buf_printf(out, "seatd_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                         rt->name, rt->stats.count);
    }
}

static void render_redis(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_rds_stats_t st;
    memset(&st, 0, sizeof(st));
    if (app->rds)
        seatd_rds_get_stats(app->rds, &st);
    seatd_buf_printf(out,
                     "# HELP seatd_redis_commands_total Redis commands answered\n"
                     "# TYPE seatd_redis_commands_total counter\n"
                     "seatd_redis_commands_total %llu\n"
                     "# HELP seatd_redis_errors_total Redis commands failed (unavailable, "
                     "timeout, shutdown)\n"
                     "# TYPE seatd_redis_errors_total counter\n"
                     "seatd_redis_errors_total %llu\n"
                     "# HELP seatd_redis_timeouts_total Redis commands timed out\n"
                     "# TYPE seatd_redis_timeouts_total counter\n"
                     "seatd_redis_timeouts_total %llu\n"
                     "# HELP seatd_redis_reconnects_total Redis reconnections\n"
                     "# TYPE seatd_redis_reconnects_total counter\n"
                     "seatd_redis_reconnects_total %llu\n"
                     "# HELP seatd_redis_rtt_seconds_sum Summed Redis round-trip time\n"
                     "# TYPE seatd_redis_rtt_seconds_sum counter\n"
                     "seatd_redis_rtt_seconds_sum %.6f\n"
                     "# HELP seatd_redis_pending Redis commands queued or in flight\n"
                     "# TYPE seatd_redis_pending gauge\n"
                     "seatd_redis_pending %u\n"
                     "# HELP seatd_redis_connected Redis connections ready\n"
                     "# TYPE seatd_redis_connected gauge\n"
                     "seatd_redis_connected %u\n",
                     st.commands, st.errors, st.timeouts, st.reconnects, st.rtt_us_sum / 1e6,
                     st.pending, st.connected);
}

/* One "# HELP / # TYPE / value" block. */
static void metric(seatd_buf_t *out, const char *name, const char *type, const char *help,
                   unsigned long long value)
{
    seatd_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                     value);
}

static void render_live(const seatd_app_t *app, seatd_buf_t *out)
{
    if (app->live) {
        seatd_live_stats_t st;
        memset(&st, 0, sizeof(st));
        seatd_live_get_stats(app->live, &st);
        metric(out, "seatd_live_watchers", "gauge", "Open seat-map WebSocket connections",
               st.watchers);
        metric(out, "seatd_live_shows", "gauge", "Shows this worker is subscribed to", st.shows);
        metric(out, "seatd_live_frames_total", "counter", "Frames queued to watchers", st.frames);
        metric(out, "seatd_live_snapshots_total", "counter", "Snapshot frames sent", st.snapshots);
        metric(out, "seatd_live_resyncs_total", "counter",
               "Seat-map reads after a version gap or a reconnect", st.resyncs);
        metric(out, "seatd_live_slow_closed_total", "counter", "Watchers closed for not keeping up",
               st.slow_closed);
    }
    if (app->sweeper) {
        seatd_sweeper_stats_t st;
        memset(&st, 0, sizeof(st));
        seatd_sweeper_get_stats(app->sweeper, &st);
        metric(out, "seatd_sweeper_sweeps_total", "counter", "Due-show claims sent", st.sweeps);
        metric(out, "seatd_sweeper_reaped_total", "counter",
               "Expired holds released by the sweeper", st.reaped);
        metric(out, "seatd_sweeper_errors_total", "counter", "Failed sweeper Redis calls",
               st.errors);
    }
}

void seatd_metrics_render(const seatd_app_t *app, seatd_buf_t *out)
{
    render_routes(app, out);
    render_counters(out);
    render_redis(app, out);
    render_live(app, out);
    if (app->server)
        seatd_buf_printf(out,
                         "# HELP seatd_http_connections Open HTTP connections\n"
                         "# TYPE seatd_http_connections gauge\n"
                         "seatd_http_connections %zu\n",
                         seatd_http_server_connections(app->server));
    if (app->server) {
        seatd_http_server_stats_t st;
        seatd_http_server_get_stats(app->server, &st);
        metric(out, "seatd_http_output_bytes", "gauge",
               "Response and frame bytes queued to clients, not yet written", st.output_bytes);
        metric(out, "seatd_http_output_peak_bytes", "gauge",
               "The most output one connection ever had queued", st.output_peak);
        metric(out, "seatd_http_output_paused_total", "counter",
               "Times a connection stopped being read because its output was over budget",
               st.output_paused);
        metric(out, "seatd_http_output_closed_total", "counter",
               "Connections closed for not reading their output", st.output_closed);
    }
}
