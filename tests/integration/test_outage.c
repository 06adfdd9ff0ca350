/*
 * test_outage.c - honest answers while Redis hangs: a real worker (forked child: HTTP server,
 * route table, store) against a private redis-server that the test SIGSTOPs and SIGCONTs.
 *
 *   - /healthz fails (503 + Retry-After) while Redis is connected but does not answer.
 *   - Holds in flight when Redis stops are answered 503 + Retry-After (never 504), and none of
 *     them is still held once Redis is back and the worker's compensation has settled; a retry
 *     with the same idempotency key then gets a fresh hold, not a replay of the released one.
 *
 * Waits are conditions polled with a deadline; nothing asserts on elapsed time.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "redis_fixture.h"
#include "routes.h"
#include "store/scripts.h"
#include "store/store.h"

#define OUT_SECRET "outage-secret-outage-secret-outage-0123"
#define OUT_REDIS_TIMEOUT_MS 300
#define OUT_HEALTH_TIMEOUT_MS 200
#define OUT_HOLDS 24

typedef struct out_child_s {
    seatd_app_t app;
    seatd_config_t cfg;
    uv_signal_t sig;
} out_child_t;

static out_child_t *out_child;

static void out_on_drained(seatd_http_server_t *srv, void *data)
{
    seatd_app_t *app = &out_child->app;
    seatd_store_free(app->store);
    app->store = NULL;
    seatd_scripts_free(app->scripts);
    app->scripts = NULL;
    seatd_rds_close(app->rds);
    app->rds = NULL;
    uv_close((uv_handle_t *)&out_child->sig, NULL);
}

static void out_on_signal(uv_signal_t *h, int signum)
{
    if (out_child->app.draining)
        return;
    out_child->app.draining = 1;
    if (seatd_http_server_drain(out_child->app.server, out_on_drained, NULL) < 0)
        out_on_drained(out_child->app.server, NULL);
}

/* The worker child: never returns. */
static void out_child_main(int fd, int redis_port)
{
    seatd_mem_init();
    seatd_log_set_level(SEATD_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    static out_child_t C;
    out_child = &C;
    seatd_config_defaults(&C.cfg);
    C.cfg.redis_timeout_ms = OUT_REDIS_TIMEOUT_MS;
    C.cfg.health_timeout_ms = OUT_HEALTH_TIMEOUT_MS;
    seatd_app_t *app = &C.app;
    app->cfg = &C.cfg;
    app->loop = uv_default_loop();
    app->routes = seatd_routes;
    app->nroutes = seatd_nroutes;
    if (seatd_auth_new(OUT_SECRET, strlen(OUT_SECRET), &app->auth) < 0)
        _exit(4);
    seatd_rds_opts_t ro = {.port = redis_port, .pool_size = 2, .timeout_ms = OUT_REDIS_TIMEOUT_MS};
    app->rds = seatd_rds_new(app->loop, &ro);
    app->scripts = seatd_scripts_new(app->rds);
    app->store = seatd_store_new(app->scripts);
    seatd_store_set_batching(app->store, app->loop, 32, 1); /* as the worker does */
    seatd_http_opts_t ho = {.listen = "127.0.0.1:0", .auth = app->auth, .drain_timeout_ms = 3000};
    app->server = seatd_http_server_new(app->loop, &ho, seatd_routes, seatd_nroutes, app);
    if (seatd_http_server_listen(app->server) < 0)
        _exit(5);
    int port = seatd_http_server_port(app->server);
    if (write(fd, &port, sizeof(port)) != sizeof(port))
        _exit(6);
    close(fd);
    uv_signal_init(app->loop, &C.sig);
    uv_signal_start(&C.sig, out_on_signal, SIGTERM);
    uv_run(app->loop, UV_RUN_DEFAULT);
    seatd_http_server_free(app->server);
    seatd_auth_free(app->auth);
    seatd_test_child_exit(uv_loop_close(app->loop) == 0 ? 0 : 3); /* leaks fail it */
}

typedef struct out_s {
    seatd_test_redis_t redis; /* private: the test stops and continues it */
    int pid;                  /* the worker child */
    int port;                 /* its HTTP port */
    int stopped;              /* redis is SIGSTOPped (teardown continues it) */
} out_t;

static out_t O;

static void out_start(void)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    memset(&O, 0, sizeof(O));
    cr_assert_eq(seatd_test_redis_start(&O.redis), 0);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    int pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        out_child_main(fds[1], O.redis.port);
    }
    close(fds[1]);
    O.pid = pid;
    cr_assert_eq(read(fds[0], &O.port, sizeof(O.port)), (ssize_t)sizeof(O.port));
    close(fds[0]);
}

/* Drains the worker with SIGTERM; its exit status (0: drained, loop closed cleanly, with
 * nothing left open, the compensation timer included), or -1 if it had to be killed. */
static int out_worker_stop(void)
{
    if (O.pid <= 0)
        return -1;
    kill(O.pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        int st = 0;
        if (waitpid(O.pid, &st, WNOHANG) == O.pid) {
            O.pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(50000);
    }
    kill(O.pid, SIGKILL);
    waitpid(O.pid, NULL, 0);
    O.pid = 0;
    return -1;
}

static void out_stop(void)
{
    if (O.stopped)
        kill(O.redis.pid, SIGCONT);
    out_worker_stop();
    seatd_test_redis_stop(&O.redis);
}

TestSuite(outage, .init = out_start, .fini = out_stop, .timeout = 60);

static void redis_signal(int sig)
{
    cr_assert_eq(kill(O.redis.pid, sig), 0);
    O.stopped = sig == SIGSTOP;
}

/* "Authorization: Bearer …\r\nContent-Type: application/json\r\n[extra]" for 'sub'. */
static void auth_headers(const char *sub, int admin, const char *extra, char *out, size_t cap)
{
    seatd_auth_t *auth = NULL;
    char *tok = NULL;
    if (seatd_auth_new(OUT_SECRET, strlen(OUT_SECRET), &auth) < 0 ||
        seatd_auth_sign(auth, sub, admin, 3600, &tok) < 0)
        abort();
    snprintf(out, cap, "Authorization: Bearer %s\r\nContent-Type: application/json\r\n%s", tok,
             extra ? extra : "");
    free(tok);
    seatd_auth_free(auth);
}

static int request(const char *method, const char *path, const char *sub, int admin,
                   const char *extra, const char *body, seatd_test_http_response_t *res)
{
    char hdr[1024];
    auth_headers(sub ? sub : "nobody", admin, extra, hdr, sizeof(hdr));
    memset(res, 0, sizeof(*res));
    return seatd_test_http_request("127.0.0.1", O.port, method, path, sub ? hdr : NULL, body,
                                   body ? strlen(body) : 0, res);
}

/* Polls GET /healthz until it answers 'want' (deadline 'ms'). Returns 0 or -1. */
static int wait_health(int want, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        seatd_test_http_response_t res;
        int rc = request("GET", "/healthz", NULL, 0, NULL, NULL, &res);
        int status = rc == 0 ? res.status : 0;
        seatd_test_http_response_free(&res);
        if (status == want)
            return 0;
        usleep(20000);
    }
    return -1;
}

static redisContext *out_redis(void)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", O.redis.port, tv);
    cr_assert(c && !c->err, "cannot connect to the private redis");
    redisSetTimeout(c, tv);
    return c;
}

/* Creates a show of one row of 'n' seats (A1..An) as admin; writes its id. */
static void create_show(int n, char *id, size_t cap)
{
    char body[8192];
    size_t off = (size_t)snprintf(body, sizeof(body),
                                  "{\"title\":\"Outage\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                                  "\"holdTtlSeconds\":300,\"priceTiers\":{\"standard\":1000},"
                                  "\"seats\":[");
    for (int i = 1; i <= n; i++)
        off += (size_t)snprintf(body + off, sizeof(body) - off,
                                "%s{\"id\":\"A%d\",\"row\":\"A\",\"number\":%d,"
                                "\"tier\":\"standard\",\"x\":%d,\"y\":1}",
                                i > 1 ? "," : "", i, i, i);
    snprintf(body + off, sizeof(body) - off, "]}");
    seatd_test_http_response_t res;
    cr_assert_eq(request("POST", "/v1/shows", "ops", 1, NULL, body, &res), 0);
    cr_assert_eq(res.status, 201, "create show: %d %s", res.status, res.body ? res.body : "");
    const char *p = strstr(res.body, "\"id\":\"");
    cr_assert_not_null(p);
    p += 6;
    size_t k = 0;
    while (p[k] && p[k] != '"' && k + 1 < cap) {
        id[k] = p[k];
        k++;
    }
    id[k] = '\0';
    seatd_test_http_response_free(&res);
}

Test(outage, healthz_fails_with_retry_after_while_redis_hangs)
{
    cr_assert_eq(wait_health(200, 5000), 0, "the worker never became healthy");
    redis_signal(SIGSTOP);
    seatd_test_http_response_t res;
    cr_assert_eq(request("GET", "/healthz", NULL, 0, NULL, NULL, &res), 0);
    cr_assert_eq(res.status, 503, "healthz answered %d while redis is stopped", res.status);
    cr_assert_not_null(seatd_test_http_header(&res, "retry-after"));
    cr_assert_not_null(strstr(res.body, "\"redis\":\"down\""), "%s", res.body);
    seatd_test_http_response_free(&res);
    redis_signal(SIGCONT);
    cr_assert_eq(wait_health(200, 10000), 0, "healthz did not recover after SIGCONT");
    cr_assert_eq(out_worker_stop(), 0, "the worker did not drain and close cleanly");
}

/* One hold in a child process; the exit code carries the answer: 0 = 201, 5 = 503 with
 * Retry-After, 4 = 504 or 503 without Retry-After, 9 = anything else. */
static int hold_child(const char *show, int i)
{
    char path[96], sub[32], extra[96], body[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(sub, sizeof(sub), "buyer%d", i);
    snprintf(extra, sizeof(extra), "Idempotency-Key: out-%d\r\n", i);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"A%d\"]}", i);
    seatd_test_http_response_t res;
    if (request("POST", path, sub, 0, extra, body, &res) != 0)
        return 9;
    int code = res.status == 201                                                  ? 0
               : res.status == 503 && seatd_test_http_header(&res, "retry-after") ? 5
               : res.status >= 500                                                ? 4
                                                                                  : 9;
    seatd_test_http_response_free(&res);
    return code;
}

/* Live seat keys among A1..A'n' of 'show' ('held' gets 1 per held seat). */
static int held_seats(redisContext *rc, const char *show, int n, int *held)
{
    int count = 0;
    for (int i = 1; i <= n; i++) {
        redisReply *r = redisCommand(rc, "EXISTS {s:%s}:seat:A%d", show, i);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        held[i] = (int)r->integer;
        count += held[i];
        freeReplyObject(r);
    }
    return count;
}

Test(outage, holds_answered_5xx_while_redis_hangs_are_not_left_held)
{
    char show[32];
    cr_assert_eq(wait_health(200, 5000), 0, "the worker never became healthy");
    create_show(OUT_HOLDS + 1, show, sizeof(show));
    /* Warm the worker's layout cache, so that every hold below reaches Redis. */
    char path[96], warm_body[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(warm_body, sizeof(warm_body), "{\"seatIds\":[\"A%d\"]}", OUT_HOLDS + 1);
    seatd_test_http_response_t res;
    cr_assert_eq(request("POST", path, "warm", 0, NULL, warm_body, &res), 0);
    cr_assert_eq(res.status, 201);
    seatd_test_http_response_free(&res);

    /* Redis stops; the holds arrive together and are sent to it on the open connections. */
    redis_signal(SIGSTOP);
    int pids[OUT_HOLDS + 1];
    for (int i = 1; i <= OUT_HOLDS; i++) {
        fflush(NULL);
        pids[i] = fork();
        cr_assert_geq(pids[i], 0);
        if (pids[i] == 0)
            seatd_test_child_exit(hold_child(show, i));
    }
    int answered[OUT_HOLDS + 1], n5xx = 0;
    for (int i = 1; i <= OUT_HOLDS; i++) {
        int st = 0;
        cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
        answered[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 9;
        cr_assert(answered[i] == 5, "hold %d: answer class %d (0: 201, 4: 504 or bare 503)", i,
                  answered[i]);
        n5xx++;
    }
    cr_assert_eq(n5xx, OUT_HOLDS);

    /* Redis wakes up and runs what was buffered; the worker compensates. */
    redis_signal(SIGCONT);
    redisContext *rc = out_redis();
    int held[OUT_HOLDS + 2];
    /* How many of the refused holds Redis applied after all (their records exist). */
    redisReply *keys = redisCommand(rc, "KEYS {s:%s}:hold:*", show);
    cr_assert(keys && keys->type == REDIS_REPLY_ARRAY);
    size_t records = keys->elements;
    freeReplyObject(keys);
    /* Settled: no seat of a refused hold is held and no idempotency record of one is left. */
    int still = -1;
    size_t idem = 0;
    for (int waited = 0; waited <= 10000; waited += 20) {
        still = held_seats(rc, show, OUT_HOLDS, held);
        redisReply *r = redisCommand(rc, "KEYS {s:%s}:idem:*", show);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY);
        idem = r->elements;
        freeReplyObject(r);
        if (still == 0 && idem == 0)
            break;
        usleep(20000);
    }
    cr_assert_eq(still, 0, "%d seats of holds answered 5xx are still held", still);
    cr_assert_eq(idem, 0, "%zu idempotency records of holds answered 5xx are left", idem);
    keys = redisCommand(rc, "KEYS {s:%s}:hold:*", show);
    cr_assert(keys && keys->type == REDIS_REPLY_ARRAY);
    size_t records_after = keys->elements;
    freeReplyObject(keys);
    cr_log_info("outage: %zu hold records after SIGCONT (the warm-up's included), %zu after "
                "compensation",
                records, records_after);
    cr_assert_geq(records_after, 2, "no refused hold reached Redis: the test proves nothing");
    held[OUT_HOLDS + 1] = 0;
    redisReply *warm = redisCommand(rc, "EXISTS {s:%s}:seat:A%d", show, OUT_HOLDS + 1);
    cr_assert_eq(warm->integer, 1, "the warm-up hold (answered 201) is untouched");
    freeReplyObject(warm);

    /* A retry with the same idempotency key now gets a fresh hold, not a replay. */
    cr_assert_eq(request("POST", path, "buyer1", 0, "Idempotency-Key: out-1\r\n",
                         "{\"seatIds\":[\"A1\"]}", &res),
                 0);
    cr_assert_eq(res.status, 201, "retry: %d %s", res.status, res.body ? res.body : "");
    cr_assert_null(seatd_test_http_header(&res, "idempotent-replayed"));
    seatd_test_http_response_free(&res);
    still = held_seats(rc, show, 1, held);
    cr_assert_eq(still, 1, "the retried hold holds its seat");
    redisFree(rc);
    cr_assert_eq(out_worker_stop(), 0, "the worker did not drain and close cleanly");
}

Test(outage, a_worker_draining_with_compensations_pending_still_closes_cleanly)
{
    char show[32];
    cr_assert_eq(wait_health(200, 5000), 0, "the worker never became healthy");
    create_show(4, show, sizeof(show));
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    seatd_test_http_response_t res;
    cr_assert_eq(request("POST", path, "warm", 0, NULL, "{\"seatIds\":[\"A4\"]}", &res), 0);
    cr_assert_eq(res.status, 201);
    seatd_test_http_response_free(&res);
    redis_signal(SIGSTOP);
    for (int i = 1; i <= 3; i++) {
        cr_assert_eq(hold_child(show, i), 5, "hold %d was not answered 503 + Retry-After", i);
    }
    /* Redis still hung: the compensations cannot run; draining drops them (logged) and the
     * worker's loop still closes with nothing left open. */
    cr_assert_eq(out_worker_stop(), 0, "the worker did not drain and close cleanly");
    redis_signal(SIGCONT);
}
