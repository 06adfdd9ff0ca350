/*
 * test_rds_failures.c - the Redis client (worker/clients/rds.c) when things go wrong: a killed
 * connection, a server restart, a full queue, close with commands pending or from inside a
 * callback, and connection errors seen when they happen. Suite rds (test_rds.c declares it).
 *
 * Every test counts its callbacks and asserts the exact counts, runs its loop under a
 * watchdog, and ends with seatd_test_loop_free() == 0 (uv_loop_close() succeeded, nothing
 * left open).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "base/errors.h"
#include "base/metrics.h"
#include "clients/rds.h"
#include "loop.h"
#include "rds_harness.h"
#include "redis_fixture.h"
#define KILLED 10

static void kill_normal_clients(void *arg)
{
    int *killed = arg;
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = redisCommand(c, "CLIENT KILL TYPE normal");
    *killed = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
    if (r)
        freeReplyObject(r);
    redisFree(c);
}

Test(rds, fires_every_pending_callback_once_when_the_connection_is_killed)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 1, 10000, 0);
    cr_assert_eq(wait_connected(loop, rds, 1, 3000), 0);

    /* A blocking command holds the connection, so everything behind it stays in flight. */
    int done = 0;
    probe_t p[KILLED + 1];
    memset(p, 0, sizeof(p));
    const char *blpop[] = {"BLPOP", "{rds0}:never", "0"};
    const char *ping[] = {"PING"};
    p[0].done_counter = &done;
    cr_assert_eq(call(rds, &p[0], 3, blpop), 0);
    for (int i = 1; i <= KILLED; i++) {
        p[i].done_counter = &done;
        cr_assert_eq(call(rds, &p[i], 1, ping), 0);
    }
    int killed = 0;
    cr_assert_eq(wait_blocked(loop, 1, 5000), 0, "the BLPOP holds the connection");
    kill_normal_clients(&killed);
    cr_assert_eq(run_until_count(loop, &done, KILLED + 1, 5000), 0);
    cr_assert_geq(killed, 1, "CLIENT KILL killed nobody");
    cr_assert_eq(done, KILLED + 1);
    for (int i = 0; i <= KILLED; i++) {
        cr_assert_eq(p[i].calls, 1);
        cr_assert_eq(p[i].err, SEATD_EUNAVAILABLE, "command %d got %s", i,
                     seatd_err_name(p[i].err));
    }

    /* The client reconnects by itself and serves again. */
    probe_t again = {0};
    int again_done = 0;
    again.done_counter = &again_done;
    cr_assert_eq(call(rds, &again, 1, ping), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &again_done, 5000), 0);
    cr_assert_eq(again.err, 0);
    cr_assert_str_eq(again.str, "PONG");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.errors, KILLED + 1);
    cr_assert_eq(st.reconnects, 1);

    close_and_check(loop, rds);
    for (int i = 0; i <= KILLED; i++)
        cr_assert_eq(p[i].calls, 1);
    cr_assert_eq(again.calls, 1);
}

typedef struct restart_ctx_s {
    seatd_rds_t *rds;
    int restarted;  /* seatd_test_redis_restart() result + 1 */
    probe_t during; /* sent right after the restart, before the loop saw the drop */
    int done;
} restart_ctx_t;

static void restart_server(void *arg)
{
    restart_ctx_t *r = arg;
    seatd_test_redis_t fx;
    if (seatd_test_redis_from_env(&fx) != 0) {
        r->restarted = -1;
        return;
    }
    r->restarted = seatd_test_redis_restart(&fx) + 1;
    const char *set[] = {"SET", "{rds0}:during", "1"};
    r->during.done_counter = &r->done;
    if (call(r->rds, &r->during, 3, set) != 0)
        r->restarted = -2;
}

/* Sends PING until one succeeds; counts the failures. */
typedef struct retry_ctx_s {
    uv_loop_t *loop;
    seatd_rds_t *rds;
    int failures;
    int calls;
    int ok;
} retry_ctx_t;

static void send_retry_ping(void *arg);

static void on_retry_ping(const struct redisReply *reply, int err, void *data)
{
    retry_ctx_t *r = data;
    r->calls++;
    if (!err && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_STATUS) {
        r->ok = 1;
        return;
    }
    r->failures++;
    run_later(r->loop, 50, send_retry_ping, r);
}

static void send_retry_ping(void *arg)
{
    retry_ctx_t *r = arg;
    const char *ping[] = {"PING"};
    if (seatd_rds_callv(r->rds, 1, ping, NULL, on_retry_ping, r) != 0)
        r->ok = -1;
}

Test(rds, fails_commands_across_a_server_restart_then_recovers_without_a_new_client)
{
    if (seatd_test_redis_is_cluster())
        cr_skip_test("restarts the suite's one redis-server; on a cluster node a restart would "
                     "come back without its cluster state (test_cluster.c covers node loss)");
    uv_loop_t *loop = seatd_test_loop_new();
    restart_ctx_t r = {0};
    r.rds = new_client(loop, 2, 1000, 0);
    cr_assert_eq(wait_connected(loop, r.rds, 2, 3000), 0);

    int done = 0;
    probe_t before = {.done_counter = &done}, blocked = {.done_counter = &done};
    const char *set[] = {"SET", "{rds0}:before", "1"};
    const char *blpop[] = {"BLPOP", "{rds0}:never", "0"};
    cr_assert_eq(call(r.rds, &before, 3, set), 0);
    cr_assert_eq(call(r.rds, &blocked, 3, blpop), 0);
    cr_assert_eq(wait_blocked(loop, 1, 5000), 0, "the BLPOP holds its connection");
    restart_server(&r);
    cr_assert_eq(run_until_count(loop, &done, 2, 5000), 0);
    cr_assert_eq(run_until_count(loop, &r.done, 1, 5000), 0);
    cr_assert_eq(r.restarted, 1, "restart failed (%d)", r.restarted);
    cr_assert_eq(before.err, 0);
    cr_assert_eq(blocked.calls, 1);
    cr_assert_eq(blocked.err, SEATD_EUNAVAILABLE, "got %s", seatd_err_name(blocked.err));
    cr_assert_eq(r.during.calls, 1);
    cr_assert_neq(r.during.err, 0, "a command sent on a dead connection cannot succeed");

    /* Same client, no re-creation: it reconnects and serves the new (empty) server. */
    retry_ctx_t rt = {.loop = loop, .rds = r.rds};
    send_retry_ping(&rt);
    cr_assert_eq(seatd_test_loop_run_until(loop, &rt.ok, 5000), 0);
    cr_assert_eq(rt.ok, 1);
    cr_assert_eq(rt.calls, rt.failures + 1);

    int gdone = 0;
    probe_t get = {.done_counter = &gdone};
    const char *getv[] = {"GET", "{rds0}:before"};
    cr_assert_eq(call(r.rds, &get, 2, getv), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &gdone, 3000), 0);
    cr_assert_eq(get.err, 0);
    cr_assert_eq(get.type, SEATD_RDS_REPLY_NIL, "the restarted server starts empty");
    cr_assert_eq(wait_connected(loop, r.rds, 2, 6000), 0);
    seatd_rds_stats_t st;
    seatd_rds_get_stats(r.rds, &st);
    cr_assert_eq(st.reconnects, 2);

    close_and_check(loop, r.rds);
    cr_assert_eq(before.calls, 1);
    cr_assert_eq(blocked.calls, 1);
    cr_assert_eq(r.during.calls, 1);
    cr_assert_eq(get.calls, 1);
}

Test(rds, answers_overload_synchronously_when_the_queue_is_full)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 1, 2000, 4);
    int done = 0;
    probe_t p[6];
    memset(p, 0, sizeof(p));
    const char *ping[] = {"PING"};
    for (int i = 0; i < 4; i++) {
        p[i].done_counter = &done;
        cr_assert_eq(call(rds, &p[i], 1, ping), 0);
    }
    p[4].done_counter = &done;
    cr_assert_eq(call(rds, &p[4], 1, ping), SEATD_EOVERLOAD);
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.pending, 4);

    cr_assert_eq(run_until_count(loop, &done, 4, 5000), 0);
    cr_assert_eq(done, 4);
    cr_assert_eq(p[4].calls, 0, "a refused command's callback never runs");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(p[i].err, 0);

    /* Room again once they are answered. */
    p[5].done_counter = &done;
    cr_assert_eq(call(rds, &p[5], 1, ping), 0);
    cr_assert_eq(run_until_count(loop, &done, 5, 5000), 0);
    cr_assert_eq(p[5].err, 0);

    close_and_check(loop, rds);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(p[i].calls, i == 4 ? 0 : 1);
}

typedef struct close_ctx_s {
    seatd_rds_t *rds;
    probe_t pings[3];
    int done;
} close_ctx_t;

static void send_and_close(void *arg)
{
    close_ctx_t *c = arg;
    const char *ping[] = {"PING"};
    for (int i = 0; i < 3; i++) {
        c->pings[i].done_counter = &c->done;
        if (call(c->rds, &c->pings[i], 1, ping) != 0)
            c->done = -100;
    }
    seatd_rds_close(c->rds);
    /* After close: refused synchronously. */
    probe_t late = {0};
    if (call(c->rds, &late, 1, ping) != SEATD_ESHUTDOWN)
        c->done = -100;
}

Test(rds, fires_each_pending_callback_once_with_shutdown_on_close)
{
    uv_loop_t *loop = seatd_test_loop_new();
    /* A: connected, commands in flight behind a blocking one. */
    close_ctx_t a = {0};
    a.rds = new_client(loop, 1, 10000, 0);
    cr_assert_eq(wait_connected(loop, a.rds, 1, 3000), 0);
    int done = 0;
    probe_t blocked = {.done_counter = &done};
    const char *blpop[] = {"BLPOP", "{rds0}:never", "0"};
    cr_assert_eq(call(a.rds, &blocked, 3, blpop), 0);
    cr_assert_eq(wait_blocked(loop, 1, 5000), 0, "the BLPOP holds the connection");
    send_and_close(&a);

    /* B: never connected (nothing listens on port 1), commands only queued. */
    seatd_rds_opts_t o = {.host = "127.0.0.1", .port = 1, .pool_size = 2, .timeout_ms = 10000};
    seatd_rds_t *b = seatd_rds_new(loop, &o);
    probe_t queued[3];
    memset(queued, 0, sizeof(queued));
    const char *ping[] = {"PING"};
    for (int i = 0; i < 3; i++) {
        queued[i].done_counter = &done;
        cr_assert_eq(call(b, &queued[i], 1, ping), 0);
    }
    seatd_rds_close(b);
    cr_assert_eq(queued[0].calls, 0, "no callback runs inside close()");

    cr_assert_eq(seatd_test_loop_free(loop), 0, "the loop did not close cleanly");
    cr_assert_eq(blocked.calls, 1);
    cr_assert_eq(blocked.err, SEATD_ESHUTDOWN, "got %s", seatd_err_name(blocked.err));
    cr_assert_eq(a.done, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(a.pings[i].calls, 1);
        cr_assert_eq(a.pings[i].err, SEATD_ESHUTDOWN);
        cr_assert_eq(queued[i].calls, 1);
        cr_assert_eq(queued[i].err, SEATD_ESHUTDOWN);
    }
    cr_assert_eq(done, 4);
}

typedef struct inner_close_s {
    seatd_rds_t *rds;
    int calls;
    int errs[4];
} inner_close_t;

static void on_close_from_callback(const struct redisReply *reply, int err, void *data)
{
    inner_close_t *c = data;
    if (c->calls < 4)
        c->errs[c->calls] = err;
    c->calls++;
    seatd_rds_close(c->rds); /* the first call closes; later ones are no-ops */
}

Test(rds, closes_safely_from_inside_a_reply_callback)
{
    uv_loop_t *loop = seatd_test_loop_new();
    inner_close_t c = {0};
    c.rds = new_client(loop, 1, 2000, 0);
    const char *ping[] = {"PING"};
    const char *blpop[] = {"BLPOP", "{rds0}:never", "0"};
    cr_assert_eq(seatd_rds_callv(c.rds, 1, ping, NULL, on_close_from_callback, &c), 0);
    cr_assert_eq(seatd_rds_callv(c.rds, 3, blpop, NULL, on_close_from_callback, &c), 0);
    cr_assert_eq(seatd_test_loop_free(loop), 0, "the loop did not close cleanly");
    cr_assert_eq(c.calls, 2);
    cr_assert_eq(c.errs[0], 0, "the PING is answered");
    cr_assert_eq(c.errs[1], SEATD_ESHUTDOWN, "the blocked command is failed by the close");
}

/* ---------------------------------------------------------------------------------------
 * Connection errors are seen when they happen (rds_uv.c), not at a deadline. Each test runs
 * with a 5 s command deadline and a sentinel timer at half of it: the answer must come first,
 * through the error path (EUNAVAILABLE, no timeout counted).
 * ------------------------------------------------------------------------------------- */

#define SLOW_DEADLINE_MS 5000

typedef struct sentinel_s {
    uv_timer_t t;
    int fired; /* the sentinel ran before the answer */
    int done;  /* what run_until waits on: the answer or the sentinel */
    probe_t p; /* the answer */
} sentinel_t;

static void on_sentinel(uv_timer_t *t)
{
    sentinel_t *s = t->data;
    s->fired = 1;
    s->done = 1;
}

static void on_sentinel_probe(const struct redisReply *reply, int err, void *data)
{
    sentinel_t *s = data;
    on_probe(reply, err, &s->p);
    s->done = 1;
}

/* Sends PING and runs the loop until it is answered or half the command deadline passed. */
static void ping_against_sentinel(uv_loop_t *loop, seatd_rds_t *rds, sentinel_t *s)
{
    memset(s, 0, sizeof(*s));
    uv_timer_init(loop, &s->t);
    s->t.data = s;
    uv_timer_start(&s->t, on_sentinel, SLOW_DEADLINE_MS / 2, 0);
    const char *ping[] = {"PING"};
    cr_assert_eq(seatd_rds_callv(rds, 1, ping, NULL, on_sentinel_probe, s), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &s->done, SLOW_DEADLINE_MS * 2), 0);
    uv_close((uv_handle_t *)&s->t, NULL);
}

Test(rds, fails_commands_at_once_when_the_connect_is_refused_not_at_their_deadline)
{
    /* A port nobody listens on: connect() is refused asynchronously (POLLERR), which the
     * packaged hiredis adapter dropped, so the command waited for its 5 s deadline. */
    seatd_test_redis_t fx;
    cr_assert_eq(seatd_test_redis_start(&fx), 0);
    int port = fx.port;
    seatd_test_redis_stop(&fx); /* now refused */
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {
        .host = "127.0.0.1", .port = port, .pool_size = 2, .timeout_ms = SLOW_DEADLINE_MS};
    seatd_rds_t *rds = seatd_rds_new(loop, &o);
    sentinel_t s;
    ping_against_sentinel(loop, rds, &s);
    cr_assert_eq(s.fired, 0, "the answer did not come before half the command deadline");
    cr_assert_eq(s.p.calls, 1);
    cr_assert_eq(s.p.err, SEATD_EUNAVAILABLE, "got %s", seatd_err_name(s.p.err));
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.timeouts, 0, "answered by a deadline, not by the connection error");
    cr_assert_geq(st.connect_failures, 1);
    cr_assert_eq(st.refused, 1, "the command failed through the unreachable path");
    cr_assert_eq(seatd_rds_is_ready(rds), 0);

    /* Still unreachable: a command queued later fails at once as well. */
    sentinel_t again;
    ping_against_sentinel(loop, rds, &again);
    cr_assert_eq(again.fired, 0);
    cr_assert_eq(again.p.err, SEATD_EUNAVAILABLE);
    close_and_check(loop, rds);
    cr_assert_eq(s.p.calls, 1);
    cr_assert_eq(again.p.calls, 1);
}

Test(rds, fails_commands_at_once_after_redis_is_killed_not_at_their_deadline)
{
    seatd_test_redis_t fx;
    cr_assert_eq(seatd_test_redis_start(&fx), 0);
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {
        .host = "127.0.0.1", .port = fx.port, .pool_size = 1, .timeout_ms = SLOW_DEADLINE_MS};
    seatd_rds_t *rds = seatd_rds_new(loop, &o);
    cr_assert_eq(wait_connected(loop, rds, 1, 3000), 0);

    /* The server stops reading, gets a command it never reads, and is killed: the kernel
     * resets the connection (unread data), which libuv reports as a poll error. */
    cr_assert_eq(kill(fx.pid, SIGSTOP), 0);
    int done = 0;
    probe_t inflight = {.done_counter = &done};
    const char *set[] = {"SET", "{rds0}:lost", "1"};
    cr_assert_eq(call(rds, &inflight, 3, set), 0);
    for (int i = 0; i < 3; i++)
        uv_run(loop, UV_RUN_NOWAIT); /* the socket is writable: the command is written */
    cr_assert_eq(done, 0);
    cr_assert_eq(kill(fx.pid, SIGKILL), 0);
    seatd_test_redis_stop(&fx); /* reaps it */

    sentinel_t s = {0};
    uv_timer_init(loop, &s.t);
    s.t.data = &s;
    uv_timer_start(&s.t, on_sentinel, SLOW_DEADLINE_MS / 2, 0);
    cr_assert_eq(run_until_count(loop, &done, 1, SLOW_DEADLINE_MS * 2), 0);
    cr_assert_eq(s.fired, 0, "the reset was seen only at the deadline");
    uv_close((uv_handle_t *)&s.t, NULL);
    cr_assert_eq(inflight.err, SEATD_EUNAVAILABLE, "got %s", seatd_err_name(inflight.err));

    /* The reconnect is refused: the next command fails at once too. */
    sentinel_t next;
    ping_against_sentinel(loop, rds, &next);
    cr_assert_eq(next.fired, 0, "the refused reconnect was seen only at the deadline");
    cr_assert_eq(next.p.err, SEATD_EUNAVAILABLE, "got %s", seatd_err_name(next.p.err));
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.timeouts, 0);
    close_and_check(loop, rds);
    cr_assert_eq(inflight.calls, 1);
    cr_assert_eq(next.p.calls, 1);
}
