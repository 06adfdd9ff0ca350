/*
 * test_live_server.h - an in-process seatd worker for the live seat-map tests: a forked
 * child runs the real HTTP server, route table, store, live map and sweeper on its own loop
 * against the runner's redis-server, listening on 127.0.0.1:0. SIGTERM drains it exactly as
 * main.c does; the child exits 0 only if its loop then closes cleanly (uv_loop_close) and,
 * in a sanitizer build, LeakSanitizer found nothing (seatd_test_child_exit).
 * Header-only (static inline).
 */
#ifndef SEATD_TEST_LIVE_SERVER_H
#define SEATD_TEST_LIVE_SERVER_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "app.h"
#include "http/auth.h"
#include "child_exit.h"
#include "domain/config.h"
#include "handlers/handlers.h"
#include "http_client.h"
#include "http/http_server.h"
#include "flows/live.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "redis_fixture.h"
#include "routes.h"
#include "store/scripts.h"
#include "store/store.h"
#include "flows/sweeper.h"

#define TLS_SECRET "test-secret-test-secret-test-secret-0123"

typedef struct tls_child_s {
    seatd_app_t app;
    seatd_config_t cfg;
    uv_signal_t sig;
} tls_child_t;

static tls_child_t *tls_child;
static size_t tls_output_budget; /* the child's opts.output_budget (0: the default) */

static inline void tls_on_drained(seatd_http_server_t *srv, void *data)
{
    seatd_app_t *app = &tls_child->app;
    seatd_live_close(app->live);
    seatd_sweeper_close(app->sweeper);
    seatd_store_free(app->store);
    seatd_scripts_free(app->scripts);
    seatd_rds_close(app->rds);
    uv_close((uv_handle_t *)&tls_child->sig, NULL);
}

static inline void tls_on_signal(uv_signal_t *h, int signum)
{
    if (tls_child->app.draining)
        return;
    tls_child->app.draining = 1;
    if (seatd_http_server_drain(tls_child->app.server, tls_on_drained, NULL) < 0)
        tls_on_drained(tls_child->app.server, NULL);
}

/* The child: never returns. */
static inline void tls_child_main(int fd, const seatd_live_opts_t *lopts)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test never leaves its worker behind */
    seatd_mem_init();
    seatd_log_set_level(SEATD_LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    static tls_child_t C;
    tls_child = &C;
    seatd_config_defaults(&C.cfg);
    seatd_app_t *app = &C.app;
    app->cfg = &C.cfg;
    app->loop = uv_default_loop();
    app->routes = seatd_routes;
    app->nroutes = seatd_nroutes;
    if (seatd_auth_new(TLS_SECRET, strlen(TLS_SECRET), &app->auth) < 0)
        seatd_test_child_exit(4);
    seatd_rds_opts_t ro = {.port = seatd_test_redis_port(),
                           .pool_size = 2,
                           .timeout_ms = 4000,
                           /* cluster mode when set (SEATD_TEST_CLUSTER=1 runs) */
                           .cluster_nodes = getenv("SEATD_TEST_CLUSTER_NODES")};
    app->rds = seatd_rds_new(app->loop, &ro);
    app->scripts = seatd_scripts_new(app->rds);
    app->store = seatd_store_new(app->scripts);
    seatd_store_set_batching(app->store, app->loop, 32, 1); /* as the worker does */
    seatd_store_set_hints(app->store, app->rds);
    app->sweeper = seatd_sweeper_new(app->loop, app->rds, app->scripts, app->store, 0);
    seatd_sweeper_start(app->sweeper);
    seatd_live_opts_t lo = *lopts;
    lo.redis_port = seatd_test_redis_port();
    app->live = seatd_live_new(app->loop, app->store, &lo);
    seatd_http_opts_t ho = {.listen = "127.0.0.1:0",
                            .auth = app->auth,
                            .drain_timeout_ms = 3000,
                            .output_budget = tls_output_budget};
    app->server = seatd_http_server_new(app->loop, &ho, seatd_routes, seatd_nroutes, app);
    if (seatd_http_server_listen(app->server) < 0)
        seatd_test_child_exit(5);
    int port = seatd_http_server_port(app->server);
    if (write(fd, &port, sizeof(port)) != sizeof(port))
        seatd_test_child_exit(6);
    close(fd);
    uv_signal_init(app->loop, &C.sig);
    uv_signal_start(&C.sig, tls_on_signal, SIGTERM);
    uv_run(app->loop, UV_RUN_DEFAULT);
    seatd_http_server_free(app->server);
    seatd_auth_free(app->auth);
    seatd_test_child_exit(uv_loop_close(app->loop) == 0 ? 0 : 3);
}

typedef struct tls_s {
    int pid;  /* the server child */
    int port; /* its HTTP port */
} tls_t;

/* Starts the server child with 'lopts' (NULL: defaults) and tls_output_budget. Returns 0 or
 * -1. */
static inline int tls_start(tls_t *t, const seatd_live_opts_t *lopts)
{
    seatd_live_opts_t dflt = {0};
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    fflush(NULL);
    int pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        tls_child_main(fds[1], lopts ? lopts : &dflt);
    }
    close(fds[1]);
    t->pid = pid;
    t->port = 0;
    ssize_t n = read(fds[0], &t->port, sizeof(t->port));
    close(fds[0]);
    return n == sizeof(t->port) && t->port > 0 ? 0 : -1;
}

/* Drains the child with SIGTERM. Returns its exit status (0: drained and closed cleanly),
 * or -1 if it had to be killed. */
static inline int tls_stop(tls_t *t)
{
    if (t->pid <= 0)
        return -1;
    kill(t->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        int st = 0;
        if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
            t->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(50000);
    }
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    t->pid = 0;
    return -1;
}

/* "Authorization: Bearer <token for 'sub'>\r\nContent-Type: application/json\r\n" into 'out'. */
static inline void tls_auth_headers(const char *sub, char *out, size_t cap)
{
    seatd_auth_t *auth = NULL;
    char *tok = NULL;
    if (seatd_auth_new(TLS_SECRET, strlen(TLS_SECRET), &auth) < 0 ||
        seatd_auth_sign(auth, sub, 0, 3600, &tok) < 0)
        abort();
    snprintf(out, cap, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n", tok);
    free(tok);
    seatd_auth_free(auth);
}

/* The value of the unlabelled metric 'name' in the child's /metrics, or -1. */
static inline long long tls_metric(const tls_t *t, const char *name)
{
    seatd_test_http_response_t res;
    if (seatd_test_http_request("127.0.0.1", t->port, "GET", "/metrics", NULL, NULL, 0, &res) < 0)
        return -1;
    long long v = -1;
    size_t n = strlen(name);
    for (const char *p = res.body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            v = atoll(p + n + 1);
            break;
        }
    }
    seatd_test_http_response_free(&res);
    return v;
}

#endif
