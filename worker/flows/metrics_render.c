/* metrics_render.c - the /metrics document, from every module's figures; see
 * metrics_render.h. */
#include "flows/metrics_render.h"

#include <string.h>

#include "app.h"
#include "http/auth.h"
#include "http/http_server.h"
#include "flows/live.h"
#include "base/metrics.h"
#include "clients/payment.h"
#include "clients/rds.h"
#include "http/router.h"
#include "flows/sweeper.h"

/* One "# HELP / # TYPE / value" block. */
static void metric(seatd_buf_t *out, const char *name, const char *type, const char *help,
                   unsigned long long value)
{
    seatd_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                     value);
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

/* The Redis client's own figures (its round-trip histogram is in the metrics leaf). */
static void render_redis(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_rds_stats_t st;
    memset(&st, 0, sizeof(st));
    if (app->rds)
        seatd_rds_get_stats(app->rds, &st);
    metric(out, "seatd_redis_commands_total", "counter", "Redis commands answered", st.commands);
    metric(out, "seatd_redis_errors_total", "counter",
           "Redis commands failed (unavailable, timeout, shutdown)", st.errors);
    metric(out, "seatd_redis_timeouts_total", "counter", "Redis commands timed out", st.timeouts);
    metric(out, "seatd_redis_reconnects_total", "counter", "Redis reconnections", st.reconnects);
    metric(out, "seatd_redis_pending", "gauge", "Redis commands queued or in flight", st.pending);
    metric(out, "seatd_redis_connected", "gauge", "Redis connections ready", st.connected);
}

static void render_live(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_live_stats_t st;
    memset(&st, 0, sizeof(st));
    if (app->live)
        seatd_live_get_stats(app->live, &st);
    metric(out, "seatd_live_watchers", "gauge", "Open seat-map WebSocket connections", st.watchers);
    metric(out, "seatd_live_shows", "gauge", "Shows this worker is subscribed to", st.shows);
    metric(out, "seatd_live_frames_total", "counter", "Frames queued to watchers", st.frames);
    metric(out, "seatd_live_snapshots_total", "counter", "Snapshot frames sent", st.snapshots);
    metric(out, "seatd_live_resyncs_total", "counter",
           "Seat-map reads after a version gap or a reconnect", st.resyncs);
    metric(out, "seatd_live_slow_closed_total", "counter", "Watchers closed for not keeping up",
           st.slow_closed);
}

static void render_sweeper(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_sweeper_stats_t st;
    memset(&st, 0, sizeof(st));
    if (app->sweeper)
        seatd_sweeper_get_stats(app->sweeper, &st);
    metric(out, "seatd_sweeper_sweeps_total", "counter", "Due-show claims sent", st.sweeps);
    metric(out, "seatd_sweeper_reaped_total", "counter", "Expired holds released by the sweeper",
           st.reaped);
    metric(out, "seatd_sweeper_errors_total", "counter", "Failed sweeper Redis calls", st.errors);
    metric(out, "seatd_queue_advances_total", "counter",
           "Waiting-room advances this worker made (every worker advances every room each tick)",
           st.queue_advances);
    metric(out, "seatd_queue_rooms", "gauge",
           "Waiting rooms with people in them at this worker's last tick (take the max)",
           st.queue_rooms);
    metric(out, "seatd_queue_waiting", "gauge",
           "People waiting in those rooms at this worker's last tick (take the max)",
           st.queue_waiting);
    seatd_buf_printf(out,
                     "# HELP seatd_sweeper_lag_seconds Time since this worker's last sweep "
                     "ended (about one interval while it keeps up)\n"
                     "# TYPE seatd_sweeper_lag_seconds gauge\n"
                     "seatd_sweeper_lag_seconds %.3f\n",
                     (double)st.lag_ms / 1000.0);
}

static void render_http(const seatd_app_t *app, seatd_buf_t *out)
{
    seatd_http_server_stats_t st;
    memset(&st, 0, sizeof(st));
    size_t conns = 0;
    if (app->server) {
        seatd_http_server_get_stats(app->server, &st);
        conns = seatd_http_server_connections(app->server);
    }
    metric(out, "seatd_http_connections", "gauge", "Open HTTP connections", conns);
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

void seatd_metrics_render(const seatd_app_t *app, seatd_buf_t *out)
{
    render_routes(app, out);
    seatd_metrics_render_tables(out);
    render_redis(app, out);
    render_live(app, out);
    render_sweeper(app, out);
    metric(out, "seatd_payment_requests_inflight", "gauge",
           "Payment gateway requests sent and not yet answered",
           (unsigned long long)seatd_payment_inflight(app->payment));
    render_http(app, out);
    unsigned long long hits, misses;
    seatd_auth_cache_stats(app->auth, &hits, &misses);
    metric(out, "seatd_auth_cache_hits_total", "counter",
           "Bearer tokens answered from the cache of verified tokens", hits);
    metric(out, "seatd_auth_cache_misses_total", "counter",
           "Bearer tokens verified (HMAC and claims) because the cache did not have them", misses);
}
