/*
 * main.c - the seatd worker: flags + env -> config -> logs -> loop -> Redis pool -> function
 * library -> store -> payment client -> HTTP server -> signals -> uv_run -> drain.
 *
 * One process, one libuv loop, no threads in the request path; run one per core behind nginx.
 * SIGTERM/SIGINT drain: stop accepting, finish in-flight requests, close Redis and the
 * payment client, and exit 0 once the loop has nothing left (uv_loop_close() == 0).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "app.h"
#include "http/auth.h"
#include "base/buf.h"
#include "domain/config.h"
#include "http/http_request.h"
#include "http/http_server.h"
#include "flows/live.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/passwd.h"
#include "clients/payment.h"
#include "clients/pubsub.h"
#include "clients/rds.h"
#include "flows/booking.h"
#include "flows/reconcile.h"
#include "routes.h"
#include "store/scripts.h"
#include "store/store.h"
#include "flows/sweeper.h"

typedef struct {
    seatd_app_t app;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_prepare_t log_check;       /* arms log_flush when lines wait (log.h) */
    uv_timer_t log_flush;         /* writes the batched log lines LOG_FLUSH_MS after the first */
    seatd_reconcile_t *reconcile; /* settles payments left pending (reconcile.h) */
    seatd_http_server_t *metrics; /* the --metrics-listen listener, or NULL */
    char redis_host[1280];        /* host name or unix socket path from --redis */
    int redis_port;
    int exit_code;
} worker_t;

static worker_t W;

/* "host:port" or "unix:/path" -> W.redis_host / W.redis_port (0 for unix). */
static int parse_redis_addr(const char *spec)
{
    if (strncmp(spec, "unix:", 5) == 0) {
        snprintf(W.redis_host, sizeof(W.redis_host), "%.1200s", spec + 5);
        W.redis_port = 0;
        return W.redis_host[0] ? 0 : -1;
    }
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || colon == spec)
        return -1;
    snprintf(W.redis_host, sizeof(W.redis_host), "%.*s", (int)(colon - spec), spec);
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
        return -1;
    W.redis_port = (int)port;
    return 0;
}

/* Reads a one-line secret file (a trailing newline is dropped) into 'out'; 0 or -1. */
static int read_secret_file(const char *path, char *out, size_t size)
{
    out[0] = '\0';
    if (path[0] == '\0')
        return 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(out, 1, size - 1, f);
    int bad = ferror(f) || !feof(f) || n == 0;
    fclose(f);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    return bad || n == 0 ? -1 : 0;
}

static void on_drained(seatd_http_server_t *srv, void *data)
{
    seatd_app_t *app = &W.app;
    seatd_log(SEATD_LOG_INFO, NULL, "drained", NULL);
    seatd_live_close(app->live);
    app->live = NULL;
    seatd_sweeper_close(app->sweeper);
    app->sweeper = NULL;
    seatd_reconcile_close(W.reconcile);
    W.reconcile = NULL;
    seatd_payment_close(app->payment);
    app->payment = NULL;
    seatd_store_free(app->store);
    app->store = NULL;
    seatd_scripts_free(app->scripts);
    app->scripts = NULL;
    seatd_rds_close(app->rds);
    app->rds = NULL;
    uv_close((uv_handle_t *)&W.sigterm, NULL);
    uv_close((uv_handle_t *)&W.sigint, NULL);
    uv_close((uv_handle_t *)&W.log_check, NULL);
    uv_close((uv_handle_t *)&W.log_flush, NULL);
    seatd_log_set_batching(0);
}

/* Batched log lines wait at most this long (log.h): one write() for all the lines of that
 * time, where a write() per loop iteration was one in five of a busy worker's system calls. */
#define LOG_FLUSH_MS 50

static void on_log_flush(uv_timer_t *h)
{
    (void)h;
    seatd_log_flush();
}

/* Before the loop waits: lines wait and no flush is due yet, so one is set. An idle worker
 * with nothing batched sets no timer and never wakes for its logs. */
static void on_log_check(uv_prepare_t *h)
{
    (void)h;
    if (seatd_log_pending() && !uv_is_active((uv_handle_t *)&W.log_flush))
        uv_timer_start(&W.log_flush, on_log_flush, LOG_FLUSH_MS, 0);
}

static void on_metrics_drained(seatd_http_server_t *srv, void *data)
{
    seatd_log(SEATD_LOG_DEBUG, NULL, "metrics listener closed", NULL);
}

/* Starts the --metrics-listen listener on 'app' when one is configured: 0, or -1 when it
 * cannot listen. */
static int metrics_listen(seatd_app_t *app, const seatd_config_t *cfg)
{
    if (cfg->metrics_listen[0] == '\0')
        return 0;
    seatd_http_opts_t mopts = {
        .listen = cfg->metrics_listen,
        /* Scrapers and probes, not clients; a connection that says nothing is closed soon,
         * so that idle connections (70 held /metrics at 503 for 10 s) cannot crowd them out. */
        .max_connections = 256,
        .idle_timeout_ms = 5000,
        .header_timeout_ms = 2000,
        .max_header = (size_t)cfg->max_header,
        .max_body = 1024,
        .output_budget = (size_t)cfg->conn_output_budget,
    };
    W.metrics =
        seatd_http_server_new(app->loop, &mopts, seatd_metrics_routes, seatd_metrics_nroutes, app);
    if (seatd_http_server_listen(W.metrics) < 0)
        return -1;
    seatd_log(SEATD_LOG_INFO, NULL, "metrics listening", "\"listen\":\"%s\",\"port\":%d",
              cfg->metrics_listen, seatd_http_server_port(W.metrics));
    return 0;
}

static void on_signal(uv_signal_t *h, int signum)
{
    if (W.app.draining)
        return;
    W.app.draining = 1;
    seatd_log(SEATD_LOG_INFO, NULL, "draining", "\"signal\":%d", signum);
    if (W.metrics && seatd_http_server_drain(W.metrics, on_metrics_drained, NULL) < 0)
        seatd_log(SEATD_LOG_WARN, NULL, "metrics listener drain refused", NULL);
    if (seatd_http_server_drain(W.app.server, on_drained, NULL) < 0)
        on_drained(W.app.server, NULL);
}

int main(int argc, char **argv)
{
    static seatd_config_t cfg;
    char err[512];
    seatd_mem_init();
    signal(SIGPIPE, SIG_IGN);
    if (seatd_config_load(&cfg, argc, argv, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "seatd: %s\n(see seatd --help)\n", err);
        return 2;
    }
    if (cfg.help) {
        seatd_buf_t b = SEATD_BUF_INIT;
        seatd_config_help(argv[0], &b);
        fwrite(b.data, 1, b.len, stdout);
        seatd_buf_free(&b);
        return 0;
    }
    int level = seatd_log_level_parse(cfg.log_level);
    seatd_log_set_level(level < 0 ? SEATD_LOG_INFO : level);
    if (cfg.worker_name[0])
        seatd_log_set_worker(cfg.worker_name);
    if (parse_redis_addr(cfg.redis) < 0) {
        fprintf(stderr, "seatd: --redis must be host:port or unix:/path, got '%s'\n", cfg.redis);
        return 2;
    }

    seatd_app_t *app = &W.app;
    app->cfg = &cfg;
    app->loop = uv_default_loop();
    app->routes = seatd_routes;
    app->nroutes = seatd_nroutes;
    const seatd_route_t *bad = NULL;
    if (seatd_router_check(seatd_routes, seatd_nroutes, &bad) < 0) {
        fprintf(stderr, "seatd: bad route table row %s %s\n", bad ? bad->method : "?",
                bad ? bad->pattern : "?");
        return 2;
    }
    if (seatd_auth_new(cfg.jwt_secret, cfg.jwt_secret_len, &app->auth) < 0) {
        fprintf(stderr, "seatd: SEATD_JWT_SECRET must be set to at least 32 bytes\n");
        return 2;
    }

    static char redis_pass[256], loader_pass[256];
    if (read_secret_file(cfg.redis_password_file, redis_pass, sizeof(redis_pass)) < 0 ||
        read_secret_file(cfg.redis_loader_password_file, loader_pass, sizeof(loader_pass)) < 0) {
        fprintf(stderr, "seatd: cannot read a Redis password file (--redis-password-file, "
                        "--redis-loader-password-file): missing, empty or too long\n");
        return 2;
    }
    seatd_passwd_set_in_flight((int)cfg.hash_concurrency);
    seatd_rds_opts_t ropts = {
        .host = W.redis_port ? W.redis_host : NULL,
        .port = W.redis_port,
        .unix_path = W.redis_port ? NULL : W.redis_host,
        .pool_size = (int)cfg.redis_pool,
        .timeout_ms = (int)cfg.redis_timeout_ms,
        .max_pending = (int)cfg.redis_max_pending,
        .user = cfg.redis_user,
        .password = redis_pass,
        .wait_replicas = (int)cfg.redis_wait_replicas,
        .wait_ms = (int)cfg.redis_wait_ms,
    };
    /* Cluster mode: the seeds, or the --redis address as the one seed (rds.h). */
    static char cluster_seeds[SEATD_CONFIG_STR_MAX + 1300];
    if (cfg.redis_cluster_nodes[0])
        snprintf(cluster_seeds, sizeof(cluster_seeds), "%s", cfg.redis_cluster_nodes);
    else if (cfg.redis_cluster && W.redis_port)
        snprintf(cluster_seeds, sizeof(cluster_seeds), "%s:%d", W.redis_host, W.redis_port);
    ropts.cluster_nodes = cluster_seeds[0] ? cluster_seeds : NULL;
    app->rds = seatd_rds_new(app->loop, &ropts);
    app->scripts = seatd_scripts_new(app->rds);
    if (cfg.redis_loader_user[0] || loader_pass[0]) {
        /* The library is loaded by its own Redis user on a short connection (scripts.h). */
        seatd_rds_opts_t lopts = ropts;
        lopts.user = cfg.redis_loader_user;
        lopts.password = loader_pass;
        if (seatd_scripts_set_loader(app->scripts, app->loop, &lopts) < 0)
            seatd_log(SEATD_LOG_WARN, NULL, "lua library load not sent", NULL);
    }
    seatd_pubsub_set_auth(cfg.redis_user, redis_pass);
    seatd_pubsub_set_nodes(ropts.cluster_nodes);
    app->store = seatd_store_new(app->scripts);
    seatd_store_set_batching(app->store, app->loop, (unsigned)cfg.hold_batch,
                             (unsigned)cfg.hold_in_flight);
    seatd_store_set_hold_rate(app->store, cfg.hold_rate_per_user, cfg.hold_rate_window_ms);
    seatd_store_set_hints(app->store, app->rds);
    app->payment = seatd_payment_new(app->loop, cfg.gateway_url, (int)cfg.payment_timeout_ms);
    app->sweeper = seatd_sweeper_new(app->loop, app->rds, app->scripts, app->store,
                                     (unsigned)cfg.sweeper_interval_ms);
    seatd_sweeper_rescan_t sro = {.retention_ms = cfg.show_retention_ms};
    seatd_sweeper_set_rescan(app->sweeper, &sro);
    seatd_sweeper_start(app->sweeper);
    seatd_live_opts_t lopts = {.redis_host = W.redis_port ? W.redis_host : NULL,
                               .redis_port = W.redis_port,
                               .redis_unix = W.redis_port ? NULL : W.redis_host};
    app->live = seatd_live_new(app->loop, app->store, &lopts);
    seatd_reconcile_opts_t rcopts = {
        .interval_ms = cfg.reconcile_interval_ms,
        .min_age_ms = cfg.reconcile_after_ms ? cfg.reconcile_after_ms : 2 * cfg.payment_timeout_ms,
        .rescan_every = 10,
        .horizon_ms =
            cfg.charge_horizon_ms ? cfg.charge_horizon_ms : cfg.payment_timeout_ms + 30000,
        .ledger_interval_ms = cfg.ledger_interval_ms,
        .ledger_grace_ms = cfg.ledger_grace_ms,
    };
    static seatd_booking_ctx_t booking; /* the flow's context: lives as long as the process */
    booking = (seatd_booking_ctx_t){.loop = app->loop,
                                    .store = app->store,
                                    .payment = app->payment,
                                    .horizon_ms = rcopts.horizon_ms};
    app->booking = &booking;
    if (app->payment)
        W.reconcile = seatd_reconcile_new(app->loop, app->rds, app->store, app->payment, &rcopts);

    seatd_http_opts_t hopts = {
        .listen = cfg.listen,
        .max_connections = (size_t)cfg.max_connections,
        .idle_timeout_ms = (unsigned)cfg.idle_timeout_ms,
        .max_header = (size_t)cfg.max_header,
        .max_body = (size_t)cfg.max_body,
        .output_budget = (size_t)cfg.conn_output_budget,
        .auth = app->auth,
    };
    for (size_t i = 0; i < seatd_nroutes; i++) /* the routes flagged LARGE_BODY (router.h) */
        if (seatd_routes[i].flags & SEATD_ROUTE_LARGE_BODY)
            seatd_req_set_large_body_route(seatd_routes[i].method, seatd_routes[i].pattern,
                                           SEATD_ROUTE_LARGE_BODY_MAX);
    app->server = seatd_http_server_new(app->loop, &hopts, seatd_routes, seatd_nroutes, app);
    if (metrics_listen(app, &cfg) < 0) {
        fprintf(stderr, "seatd: cannot listen on --metrics-listen %s\n", cfg.metrics_listen);
        return 1;
    }
    if (seatd_http_server_listen(app->server) < 0) {
        fprintf(stderr, "seatd: cannot listen on %s\n", cfg.listen);
        return 1;
    }
    uv_signal_init(app->loop, &W.sigterm);
    uv_signal_start(&W.sigterm, on_signal, SIGTERM);
    uv_signal_init(app->loop, &W.sigint);
    uv_signal_start(&W.sigint, on_signal, SIGINT);
    uv_prepare_init(app->loop, &W.log_check);
    uv_prepare_start(&W.log_check, on_log_check);
    uv_unref((uv_handle_t *)&W.log_check); /* never what keeps the worker running */
    uv_timer_init(app->loop, &W.log_flush);
    uv_unref((uv_handle_t *)&W.log_flush);
    seatd_log_set_batching(1);
    seatd_log(SEATD_LOG_INFO, NULL, "listening", "\"listen\":\"%s\",\"redis\":\"%s\"", cfg.listen,
              cfg.redis);

    uv_run(app->loop, UV_RUN_DEFAULT);
    seatd_log_set_batching(0);

    seatd_http_server_free(app->server);
    seatd_http_server_free(W.metrics);
    seatd_auth_free(app->auth);
    int rc = uv_loop_close(app->loop);
    seatd_log(SEATD_LOG_INFO, NULL, "stopped", "\"loop_closed\":%s", rc == 0 ? "true" : "false");
    return W.exit_code;
}
