/* In-process tests for http_server.c over loopback: the pipeline (route, auth, handler,
 * finish), pipelining, limits, detached requests, connection limits and draining. The server
 * runs on this test's own uv loop; a client thread speaks blocking HTTP to it. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "../support/http_client.h"
#include "http/auth.h"
#include "http/http_request.h"
#include "http/http_server.h"
#include "http/router.h"

#define SECRET "0123456789abcdef0123456789abcdef"

/* ---- handlers ---------------------------------------------------------------------------- */

static int finished_hooks; /* on_finish calls */
static int detached_seen;  /* async callbacks that found their request gone */
static int async_started;  /* h_async calls */
static int last_status;    /* the status of the last on_finish call */

static int h_hello(seatd_req_t *r)
{
    seatd_req_finish(r, 200, "text/plain", "hello", 5);
    return 0;
}

static int h_echo(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    seatd_req_finish(r, 200, "text/plain", id, strlen(id));
    return 0;
}

static int h_whoami(seatd_req_t *r)
{
    const seatd_principal_t *who = seatd_req_principal(r);
    seatd_req_finish(r, 201, "text/plain", who->sub, strlen(who->sub));
    return 0;
}

static int h_fail(seatd_req_t *r)
{
    (void)r;
    return SEATD_ECONFLICT;
}

/* An asynchronous handler: answers from a timer, after 'ms'. */
typedef struct {
    uv_timer_t timer;
    seatd_req_t *r;
} async_op_t;

static void on_async_close(uv_handle_t *h)
{
    free(h->data);
}

static void on_async_timer(uv_timer_t *t)
{
    async_op_t *op = t->data;
    seatd_req_t *r = op->r;
    uv_close((uv_handle_t *)&op->timer, on_async_close);
    if (seatd_req_release(r)) {
        detached_seen++;
        return;
    }
    seatd_req_finish(r, 200, "text/plain", "late", 4);
}

static int h_async(seatd_req_t *r)
{
    async_started++;
    async_op_t *op = calloc(1, sizeof(*op));
    op->r = r;
    uv_timer_init(seatd_req_app(r), &op->timer);
    op->timer.data = op;
    const char *ms = seatd_req_query(r, "ms");
    uv_timer_start(&op->timer, on_async_timer, ms ? (uint64_t)atoi(ms) : 20, 0);
    seatd_req_hold(r);
    return 0;
}

/* A large answer (BIG_BODY bytes), synchronously: what a layout or catalogue GET is. */
#define BIG_BODY 65536
static int big_served;
static int h_big(seatd_req_t *r)
{
    static char body[BIG_BODY];
    memset(body, 'x', sizeof(body));
    big_served++;
    seatd_req_finish(r, 200, "text/plain", body, sizeof(body));
    return 0;
}

static seatd_route_t routes[] = {
    {"GET", "/hello", "hello", h_hello, 0, {0}},
    {"GET", "/things/{id}", "things_get", h_echo, 0, {0}},
    {"POST", "/admin", "admin", h_whoami, SEATD_ROUTE_AUTH | SEATD_ROUTE_ADMIN, {0}},
    {"GET", "/me", "me", h_whoami, SEATD_ROUTE_AUTH, {0}},
    {"GET", "/fail", "fail", h_fail, 0, {0}},
    {"GET", "/async", "async", h_async, 0, {0}},
    {"GET", "/big", "big", h_big, 0, {0}},
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* ---- fixture: a server on 127.0.0.1:0 and a client thread ------------------------------------ */

static uv_loop_t loop;
static seatd_http_server_t *srv;
static seatd_auth_t *auth;
static int port;
static char *user_token, *admin_token;
static size_t fixture_budget;    /* opts.output_budget of the next start_server (0: default) */
static unsigned fixture_idle_ms; /* opts.idle_timeout_ms of the next start_server */

typedef void (*client_fn)(void *arg);
typedef struct {
    client_fn fn;
    void *arg;
    uv_async_t done; /* signalled by the thread when 'fn' returned */
    int finished;
} client_t;

static void on_finish_hook(seatd_req_t *r, int status, double seconds, void *app)
{
    (void)r;
    (void)seconds;
    (void)app;
    last_status = status;
    finished_hooks++;
}

static void start_server(size_t max_connections)
{
    cr_assert_eq(uv_loop_init(&loop), 0);
    cr_assert_eq(seatd_auth_new(SECRET, strlen(SECRET), &auth), 0);
    cr_assert_eq(seatd_auth_sign(auth, "user1", 0, 600, &user_token), 0);
    cr_assert_eq(seatd_auth_sign(auth, "root", 1, 600, &admin_token), 0);
    seatd_http_opts_t opts = {
        .listen = "127.0.0.1:0",
        .max_connections = max_connections,
        .auth = auth,
        .on_finish = on_finish_hook,
        .drain_timeout_ms = 2000,
        .output_budget = fixture_budget,
        .idle_timeout_ms = fixture_idle_ms,
    };
    for (size_t i = 0; i < NROUTES; i++)
        memset(&routes[i].stats, 0, sizeof(routes[i].stats));
    srv = seatd_http_server_new(&loop, &opts, routes, NROUTES, &loop);
    cr_assert_eq(seatd_http_server_listen(srv), 0);
    port = seatd_http_server_port(srv);
    cr_assert(port > 0);
}

static void setup(void)
{
    start_server(0);
}

static int drained;
static int finished_at_drain; /* finished_hooks when the drain called back */
static void on_drained(seatd_http_server_t *s, void *data)
{
    (void)data;
    drained++;
    finished_at_drain = finished_hooks;
    seatd_http_server_free(s);
    srv = NULL;
}

static void stop_server(void)
{
    if (srv) {
        cr_assert_eq(seatd_http_server_drain(srv, on_drained, NULL), 0);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    cr_assert_null(srv, "the drain callback ran");
    cr_assert_eq(uv_loop_close(&loop), 0, "no handle leaked");
    seatd_auth_free(auth);
    free(user_token);
    free(admin_token);
    auth = NULL;
    user_token = admin_token = NULL;
}

static void teardown(void)
{
    stop_server();
}

TestSuite(http_server, .init = setup, .fini = teardown, .timeout = 20);

static void on_client_done(uv_async_t *a)
{
    client_t *c = a->data;
    c->finished = 1;
    uv_close((uv_handle_t *)a, NULL);
}

static void *client_main(void *arg)
{
    client_t *c = arg;
    c->fn(c->arg);
    uv_async_send(&c->done);
    return NULL;
}

/* Runs 'fn' on a client thread while the loop serves; returns when it is done. */
static void run_client(client_fn fn, void *arg)
{
    client_t c = {fn, arg, {0}, 0};
    uv_async_init(&loop, &c.done, on_client_done);
    c.done.data = &c;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, client_main, &c), 0);
    while (!c.finished)
        uv_run(&loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
}

/* ---- the pipeline -------------------------------------------------------------------------- */

typedef struct {
    const char *method, *path, *headers;
    seatd_test_http_response_t res;
    int rc;
} call_t;

static void do_calls(void *arg)
{
    call_t *calls = arg;
    for (call_t *c = calls; c->method; c++)
        c->rc = seatd_test_http_request("127.0.0.1", port, c->method, c->path, c->headers, NULL, 0,
                                        &c->res);
}

Test(http_server, runs_the_pipeline_route_auth_handler)
{
    char user_hdr[1024], admin_hdr[1024];
    snprintf(user_hdr, sizeof(user_hdr), "Authorization: Bearer %s\r\n", user_token);
    snprintf(admin_hdr, sizeof(admin_hdr), "Authorization: Bearer %s\r\n", admin_token);
    call_t calls[] = {
        {"GET", "/hello", NULL, {0}, 0},
        {"GET", "/things/a%20b", NULL, {0}, 0},
        {"GET", "/nope", NULL, {0}, 0},
        {"DELETE", "/hello", NULL, {0}, 0},
        {"GET", "/me", NULL, {0}, 0},
        {"GET", "/me", "Authorization: Bearer not.a.token\r\n", {0}, 0},
        {"GET", "/me", user_hdr, {0}, 0},
        {"POST", "/admin", user_hdr, {0}, 0},
        {"POST", "/admin", admin_hdr, {0}, 0},
        {"GET", "/fail", NULL, {0}, 0},
        {"GET", "/async", NULL, {0}, 0},
        {"HEAD", "/hello", NULL, {0}, 0},
        {NULL, NULL, NULL, {0}, 0},
    };
    run_client(do_calls, calls);
    int want[] = {200, 200, 404, 405, 401, 401, 201, 403, 201, 409, 200, 200};
    for (int i = 0; calls[i].method; i++) {
        cr_assert_eq(calls[i].rc, 0, "call %d", i);
        cr_assert_eq(calls[i].res.status, want[i], "call %d: %s %s", i, calls[i].method,
                     calls[i].path);
        cr_assert_not_null(seatd_test_http_header(&calls[i].res, "x-request-id"));
    }
    cr_assert_str_eq(calls[0].res.body, "hello");
    cr_assert_str_eq(calls[1].res.body, "a b");
    cr_assert(strstr(calls[2].res.body, "\"type\":\"https://seatd.dev/problems/no-route\""));
    cr_assert_str_eq(seatd_test_http_header(&calls[2].res, "content-type"),
                     "application/problem+json");
    cr_assert_str_eq(seatd_test_http_header(&calls[3].res, "allow"), "GET, HEAD");
    cr_assert_str_eq(seatd_test_http_header(&calls[4].res, "www-authenticate"), "Bearer");
    cr_assert_str_eq(seatd_test_http_header(&calls[5].res, "www-authenticate"),
                     "Bearer error=\"invalid_token\", error_description=\"the token is malformed "
                     "(not a JWT)\"");
    cr_assert(strstr(calls[5].res.body, "\"detail\":\"the token is malformed"));
    cr_assert_str_eq(calls[6].res.body, "user1");
    cr_assert_str_eq(calls[8].res.body, "root");
    cr_assert(strstr(calls[9].res.body, "seat-conflict"));
    cr_assert(strstr(calls[9].res.body, "\"instance\":\"/fail\""));
    cr_assert_str_eq(calls[10].res.body, "late");
    cr_assert_str_eq(seatd_test_http_header(&calls[11].res, "content-length"), "5");
    cr_assert_eq(calls[11].res.body_len, 0, "HEAD has no body");
    for (int i = 0; calls[i].method; i++)
        seatd_test_http_response_free(&calls[i].res);

    cr_assert_eq(finished_hooks, 12);
    cr_assert_eq(routes[0].stats.count, 2, "GET and HEAD /hello");
    cr_assert_eq(routes[0].stats.by_status[2], 2);
    cr_assert_eq(routes[3].stats.by_status[4], 2, "/me: two 401s");
    cr_assert_eq(routes[4].stats.by_status[4], 1, "/fail: one 409");
}

/* ---- raw exchanges ----------------------------------------------------------------------------
 */

typedef struct {
    const char *send;
    size_t send_len;
    char *got;
    size_t got_len;
} raw_t;

static void do_raw(void *arg)
{
    raw_t *x = arg;
    x->got = seatd_test_http_raw("127.0.0.1", port, x->send,
                                 x->send_len ? x->send_len : strlen(x->send), 3000, &x->got_len);
}

Test(http_server, answers_pipelined_requests_in_order)
{
    raw_t x = {"GET /async?ms=50 HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /things/second HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /async?ms=1 HTTP/1.1\r\nHost: x\r\n\r\n"
               "GET /things/last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
               0, NULL, 0};
    run_client(do_raw, &x);
    cr_assert_not_null(x.got);
    const char *a = strstr(x.got, "\r\n\r\nlate");
    const char *b = strstr(x.got, "\r\n\r\nsecond");
    const char *c = a ? strstr(a + 1, "\r\n\r\nlate") : NULL;
    const char *d = strstr(x.got, "\r\n\r\nlast");
    cr_assert(a && b && c && d, "four answers: %s", x.got);
    cr_assert(a < b && b < c && c < d, "in request order");
    cr_assert(strstr(d - 200 > x.got ? d - 200 : x.got, "Connection: close"));
    free(x.got);
}

Test(http_server, answers_431_and_413_and_400_then_closes)
{
    char big[10000];
    int n = snprintf(big, sizeof(big), "GET /hello HTTP/1.1\r\nX: ");
    memset(big + n, 'a', 9000);
    strcpy(big + n + 9000, "\r\n\r\n");
    const char *cases[] = {
        big,
        "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n",
        "BROKEN\r\n\r\n",
    };
    const char *want[] = {"HTTP/1.1 431 ", "HTTP/1.1 413 ", "HTTP/1.1 400 "};
    for (int i = 0; i < 3; i++) {
        raw_t x = {cases[i], 0, NULL, 0};
        run_client(do_raw, &x);
        cr_assert_not_null(x.got);
        cr_assert(strncmp(x.got, want[i], strlen(want[i])) == 0, "case %d: %s", i, x.got);
        cr_assert(strstr(x.got, "Connection: close\r\n"));
        cr_assert(strstr(x.got, "application/problem+json"));
        free(x.got);
    }
}

Test(http_server, keeps_a_connection_alive_across_requests_and_http10_closes)
{
    raw_t x = {"GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.0\r\n\r\n"
               "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n",
               0, NULL, 0};
    run_client(do_raw, &x);
    cr_assert_not_null(x.got);
    /* Two answers: the HTTP/1.0 request ends the connection, the third is never read. */
    const char *first = strstr(x.got, "HTTP/1.1 200");
    const char *second = first ? strstr(first + 1, "HTTP/1.1 200") : NULL;
    cr_assert(first && second);
    cr_assert_null(strstr(second + 1, "HTTP/1.1 200"));
    cr_assert(strstr(second, "Connection: close"));
    free(x.got);
}

/* ---- detached requests
 * ---------------------------------------------------------------------------- */

static void do_send_and_leave(void *arg)
{
    (void)arg;
    size_t len = 0;
    /* Read for 10 ms only, then close while the handler's 2 s timer is pending. */
    char *got =
        seatd_test_http_raw("127.0.0.1", port, "GET /async?ms=2000 HTTP/1.1\r\n\r\n", 32, 10, &len);
    free(got);
}

Test(http_server, a_request_whose_client_left_runs_to_completion_and_is_counted_as_499)
{
    run_client(do_send_and_leave, NULL);
    /* The handler's timer fires after the client left: the request still wants its answer
     * (it runs to completion), the answer is written nowhere, logged and counted as 499. */
    uint64_t until = uv_now(&loop) + 10000;
    while (finished_hooks == 0 && uv_now(&loop) < until)
        uv_run(&loop, UV_RUN_ONCE);
    cr_assert_eq(detached_seen, 0, "the handler ran to its finish");
    cr_assert_eq(finished_hooks, 1, "one finish: logged and counted");
    cr_assert_eq(last_status, 200, "the hook sees what was done (a hold gets its hint)");
    cr_assert_eq(routes[5].stats.count, 1);
    cr_assert_eq(routes[5].stats.by_status[4], 1);
    cr_assert_eq(seatd_http_server_connections(srv), 0);
}

Test(http_server, a_drain_waits_for_a_request_whose_client_left)
{
    run_client(do_send_and_leave, NULL); /* the client is gone; the handler's timer runs */
    cr_assert_eq(finished_hooks, 0);
    cr_assert_eq(seatd_http_server_drain(srv, on_drained, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(drained, 1);
    cr_assert_eq(finished_at_drain, 1, "the drain ended after the request finished");
    cr_assert_eq(routes[5].stats.by_status[4], 1, "counted as 499");
}

/* ---- connection limit and drain
 * ---------------------------------------------------------------------- */

static void *second_client(void *arg)
{
    char **out = arg;
    size_t len = 0;
    /* Until the first connection's request is running in the server (the loop's thread
     * counts it); that request then stays open 2 s, ample for this one to be refused. */
    while (__atomic_load_n(&async_started, __ATOMIC_ACQUIRE) == 0)
        usleep(1000);
    out[1] = seatd_test_http_raw("127.0.0.1", port, "GET /hello HTTP/1.1\r\n\r\n", 24, 5000, &len);
    return NULL;
}

static void do_limit(void *arg)
{
    char **out = arg;
    size_t len = 0;
    pthread_t th;
    pthread_create(&th, NULL, second_client, arg);
    /* The first connection waits 2 s for its answer while the second one arrives. */
    out[0] = seatd_test_http_raw("127.0.0.1", port, "GET /async?ms=2000 HTTP/1.1\r\n\r\n", 32, 5000,
                                 &len);
    pthread_join(th, NULL);
}

Test(http_server, refuses_connections_beyond_the_limit_with_503)
{
    stop_server();
    drained = 0;
    start_server(1);
    char *out[2] = {NULL, NULL};
    run_client(do_limit, out);
    cr_assert_not_null(out[0]);
    cr_assert_not_null(out[1]);
    cr_assert(strstr(out[0], "\r\n\r\nlate"), "the first connection is served: %s", out[0]);
    cr_assert(strncmp(out[1], "HTTP/1.1 503 ", 13) == 0, "the second is refused: %s", out[1]);
    cr_assert(strstr(out[1], "Retry-After: 1\r\n"));
    free(out[0]);
    free(out[1]);
}

static void *drain_client(void *arg)
{
    char **out = arg;
    size_t len = 0;
    out[0] = seatd_test_http_raw("127.0.0.1", port,
                                 "GET /async?ms=150 HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n",
                                 54, 2000, &len);
    return NULL;
}

Test(http_server, drains_in_flight_requests_then_calls_back)
{
    char *out[1] = {NULL};
    pthread_t th;
    pthread_create(&th, NULL, drain_client, out);
    /* Serve until the async request is running, then drain. */
    while (async_started == 0)
        uv_run(&loop, UV_RUN_ONCE);
    cr_assert_eq(seatd_http_server_drain(srv, on_drained, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    cr_assert_eq(drained, 1);
    cr_assert_not_null(out[0]);
    cr_assert(strstr(out[0], "\r\n\r\nlate"), "the in-flight request was answered: %s", out[0]);
    cr_assert(strstr(out[0], "Connection: close"));
    cr_assert_null(strstr(out[0], "hello"), "the pipelined one was not started");
    free(out[0]);
}

/* ---- the output budget ----------------------------------------------------------------------- */

#define PIPELINED 200
#define TEST_BUDGET (256u << 10)

typedef struct {
    int go[2];    /* the test writes one byte when the client may start reading */
    int read_all; /* read the answers after the go (else close without reading) */
    int answers;  /* complete 200 answers read */
    int ok;       /* connected and wrote every request */
} nonreader_t;

/* A client with a small receive buffer that pipelines PIPELINED GET /big in one write and
 * reads nothing until the test says so. */
static void do_nonreader(void *arg)
{
    nonreader_t *x = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char one[] = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    char *reqs = malloc(PIPELINED * (sizeof(one) - 1));
    for (int i = 0; i < PIPELINED; i++)
        memcpy(reqs + i * (sizeof(one) - 1), one, sizeof(one) - 1);
    size_t total = PIPELINED * (sizeof(one) - 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        write(fd, reqs, total) == (ssize_t)total)
        x->ok = 1;
    free(reqs);
    char b;
    if (read(x->go[0], &b, 1) != 1 || !x->read_all) {
        close(fd);
        return;
    }
    /* Every answer: headers, then Content-Length bytes. */
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    while (x->answers < PIPELINED) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        for (;;) {
            char *end = strstr(buf, "\r\n\r\n");
            char *cl = strstr(buf, "Content-Length: ");
            if (end == NULL || cl == NULL || cl > end)
                break;
            size_t need = (size_t)(end + 4 - buf) + (size_t)atol(cl + 16);
            if (len < need)
                break;
            if (strncmp(buf, "HTTP/1.1 200 ", 13) == 0)
                x->answers++;
            memmove(buf, buf + need, len - need);
            len -= need;
            buf[len] = '\0';
        }
    }
    free(buf);
    close(fd);
}

static void on_poll_tick(uv_timer_t *t)
{
    (void)t; /* only wakes the loop up so the test can look at the server's figures */
}

/* Runs the loop until 'cond' holds or 5 s pass; returns whether it held. */
static int serve_until(int (*cond)(void))
{
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, on_poll_tick, 5, 5);
    uint64_t deadline = uv_now(&loop) + 5000;
    int held;
    while (!(held = cond()) && uv_now(&loop) < deadline)
        uv_run(&loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return held;
}

static int paused_or_all_served(void)
{
    seatd_http_server_stats_t st;
    seatd_http_server_get_stats(srv, &st);
    return st.output_paused > 0 || big_served == PIPELINED;
}

static int closed_for_output(void)
{
    seatd_http_server_stats_t st;
    seatd_http_server_get_stats(srv, &st);
    return st.output_closed > 0 && seatd_http_server_connections(srv) == 0;
}

/* Starts 'c' (fn, arg set) on a thread while the caller keeps serving; finish_client()
 * serves until it returned. */
static void start_client(client_t *c, pthread_t *th)
{
    uv_async_init(&loop, &c->done, on_client_done);
    c->done.data = c;
    cr_assert_eq(pthread_create(th, NULL, client_main, c), 0);
}

static void finish_client(client_t *c, pthread_t th)
{
    while (!c->finished)
        uv_run(&loop, UV_RUN_ONCE);
    pthread_join(th, NULL);
}

Test(http_server, queues_at_most_its_output_budget_for_a_pipelining_client_that_does_not_read)
{
    stop_server();
    drained = 0;
    fixture_budget = TEST_BUDGET;
    start_server(0);
    big_served = 0;
    nonreader_t x = {{-1, -1}, 1, 0, 0};
    cr_assert_eq(pipe(x.go), 0);
    client_t c = {do_nonreader, &x, {0}, 0};
    pthread_t th;
    start_client(&c, &th);
    /* The client reads nothing: the server answers until its output is over budget. */
    cr_assert(serve_until(paused_or_all_served));
    seatd_http_server_stats_t st;
    seatd_http_server_get_stats(srv, &st);
    int served_unread = big_served;
    fprintf(stderr,
            "http output budget: %d of %d pipelined answers built for a client that "
            "reads nothing, peak queued %zu bytes (budget %u)\n",
            served_unread, PIPELINED, st.output_peak, TEST_BUDGET);
    /* At most the high-water mark (half the budget) plus one answer in flight. */
    cr_assert_leq(st.output_peak, TEST_BUDGET / 2 + BIG_BODY + 512, "peak %zu", st.output_peak);
    cr_assert_lt(served_unread, PIPELINED);
    cr_assert_geq(st.output_paused, 1);

    /* Once the client reads, every answer arrives, in full, and the budget still holds. */
    cr_assert_eq(write(x.go[1], "g", 1), 1);
    finish_client(&c, th); /* after the last answer, or 5 s without a byte */
    close(x.go[0]);
    close(x.go[1]);
    cr_assert(x.ok);
    cr_assert_eq(x.answers, PIPELINED, "answers %d", x.answers);
    seatd_http_server_get_stats(srv, &st);
    cr_assert_leq(st.output_peak, TEST_BUDGET / 2 + BIG_BODY + 512, "peak %zu", st.output_peak);
    fixture_budget = 0;
}

Test(http_server, closes_a_client_that_does_not_read_its_answers_for_the_idle_timeout)
{
    stop_server();
    drained = 0;
    fixture_budget = TEST_BUDGET;
    fixture_idle_ms = 200;
    start_server(0);
    big_served = 0;
    nonreader_t x = {{-1, -1}, 0, 0, 0};
    cr_assert_eq(pipe(x.go), 0);
    client_t c = {do_nonreader, &x, {0}, 0};
    pthread_t th;
    start_client(&c, &th);
    cr_assert(serve_until(closed_for_output), "closed for not reading");
    cr_assert_eq(write(x.go[1], "g", 1), 1);
    finish_client(&c, th);
    close(x.go[0]);
    close(x.go[1]);
    cr_assert(x.ok);
    cr_assert_lt(big_served, PIPELINED);
    fixture_budget = 0;
    fixture_idle_ms = 0;
}
