/*
 * test_rds.c - the Redis client (worker/clients/rds.c) against a real redis-server: commands
 * queued before connect, pipelining, binary-safe arguments and timeouts. Failures (a killed
 * connection, a restart, overload, close with commands pending) are test_rds_failures.c, in
 * the same suite.
 *
 * Every test counts its callbacks and asserts the exact counts, runs its loop under a
 * watchdog, and ends with seatd_test_loop_free() == 0 (uv_loop_close() succeeded, nothing
 * left open).
 */
#include <criterion/criterion.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/errors.h"
#include "base/log.h"
#include "loop.h"
#include "base/metrics.h"
#include "clients/rds.h"
#include "rds_harness.h"
#include "redis_fixture.h"

static void setup(void)
{
    seatd_log_set_level(SEATD_LOG_WARN);
    signal(SIGPIPE, SIG_IGN); /* hiredis 0.14 writes with write(): a dead peer raises SIGPIPE */
    seatd_test_redis_flushall();
}

TestSuite(rds, .init = setup, .timeout = 30);

/* ---------------------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------------------- */

Test(rds, queues_commands_sent_before_connect_and_answers_them)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 2, 2000, 0);
    cr_assert_eq(seatd_rds_is_ready(rds), 0);
    int done = 0;
    probe_t set = {.done_counter = &done}, get = {.done_counter = &done};
    const char *a1[] = {"SET", "{rds0}:k", "hello"};
    const char *a2[] = {"GET", "{rds0}:k"};
    cr_assert_eq(call(rds, &set, 3, a1), 0);
    cr_assert_eq(call(rds, &get, 2, a2), 0);
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.pending, 2, "both commands wait in the queue");
    cr_assert_eq(set.calls + get.calls, 0, "no callback runs before the loop does");

    cr_assert_eq(run_until_count(loop, &done, 2, 3000), 0);
    cr_assert_eq(done, 2);
    cr_assert_eq(set.err, 0);
    cr_assert_eq(set.type, SEATD_RDS_REPLY_STATUS);
    cr_assert_str_eq(set.str, "OK");
    cr_assert_eq(get.err, 0);
    cr_assert_eq(get.type, SEATD_RDS_REPLY_STRING);
    cr_assert_str_eq(get.str, "hello");
    cr_assert_eq(seatd_rds_is_ready(rds), 1);
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.commands, 2);
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(st.pending, 0);

    close_and_check(loop, rds);
    cr_assert_eq(set.calls, 1);
    cr_assert_eq(get.calls, 1);
}

#define PIPELINED 2000

Test(rds, pipelines_many_commands_and_answers_each_once)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 2, 5000, 0);
    cr_assert_eq(wait_connected(loop, rds, 2, 3000), 0);
    probe_t *p = calloc(PIPELINED, sizeof(*p));
    int done = 0;
    const char *incr[] = {"INCR", "{rds0}:counter"};
    for (int i = 0; i < PIPELINED; i++) {
        p[i].done_counter = &done;
        cr_assert_eq(call(rds, &p[i], 2, incr), 0);
    }
    cr_assert_eq(run_until_count(loop, &done, PIPELINED, 5000), 0);
    cr_assert_eq(done, PIPELINED);
    char *seen = calloc(PIPELINED + 1, 1);
    for (int i = 0; i < PIPELINED; i++) {
        cr_assert_eq(p[i].calls, 1);
        cr_assert_eq(p[i].err, 0);
        cr_assert_eq(p[i].type, SEATD_RDS_REPLY_INTEGER);
        cr_assert(p[i].integer >= 1 && p[i].integer <= PIPELINED);
        cr_assert_eq(seen[p[i].integer], 0, "INCR value %lld answered twice", p[i].integer);
        seen[p[i].integer] = 1;
    }
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.commands, PIPELINED);
    cr_assert_gt(st.rtt_us_sum, 0);
    /* Every answered command is one observation of the Redis round-trip histogram. */
    cr_assert_eq(seatd_metrics_observations(SEATD_HIST_REDIS_RTT), st.commands);

    close_and_check(loop, rds);
    for (int i = 0; i < PIPELINED; i++)
        cr_assert_eq(p[i].calls, 1);
    free(seen);
    free(p);
}

Test(rds, sends_binary_safe_arguments)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 1, 2000, 0);
    static const char key[] = "{rds0}:bin\0key";
    static const char val[] = "a\0b\r\nc\xff";
    const char *sargv[] = {"SET", key, val};
    size_t slens[] = {3, sizeof(key) - 1, sizeof(val) - 1};
    const char *gargv[] = {"GET", key};
    size_t glens[] = {3, sizeof(key) - 1};
    int done = 0;
    probe_t set = {.done_counter = &done}, get = {.done_counter = &done};
    cr_assert_eq(seatd_rds_callv(rds, 3, sargv, slens, on_probe, &set), 0);
    cr_assert_eq(seatd_rds_callv(rds, 2, gargv, glens, on_probe, &get), 0);
    cr_assert_eq(run_until_count(loop, &done, 2, 5000), 0);
    cr_assert_eq(done, 2);
    cr_assert_eq(set.err, 0);
    cr_assert_eq(get.err, 0);
    cr_assert_eq(get.type, SEATD_RDS_REPLY_STRING);
    cr_assert_eq(get.len, sizeof(val) - 1);
    cr_assert_eq(memcmp(get.str, val, sizeof(val) - 1), 0);

    /* The key really contains the NUL: the truncated name does not exist. */
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = redisCommand(c, "EXISTS %s", "{rds0}:bin");
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    r = redisCommand(c, "EXISTS %b", key, sizeof(key) - 1);
    cr_assert_eq(r->integer, 1);
    freeReplyObject(r);
    redisFree(c);

    close_and_check(loop, rds);
    cr_assert_eq(set.calls, 1);
    cr_assert_eq(get.calls, 1);
}

typedef struct timeout_ctx_s {
    seatd_rds_t *rds;
    probe_t ping;
    int done;
} timeout_ctx_t;

static void send_ping(void *arg)
{
    timeout_ctx_t *t = arg;
    const char *ping[] = {"PING"};
    t->ping.done_counter = &t->done;
    if (call(t->rds, &t->ping, 1, ping) != 0)
        t->done = -1;
}

Test(rds, times_out_a_slow_command_then_reconnects_and_serves_again)
{
    uv_loop_t *loop = seatd_test_loop_new();
    timeout_ctx_t t = {0};
    t.rds = new_client(loop, 1, 100, 0);
    cr_assert_eq(wait_connected(loop, t.rds, 1, 3000), 0);

    int done = 0;
    probe_t slow = {.done_counter = &done};
    const char *sleep_cmd[] = {"DEBUG", "SLEEP", "0.5"};
    uint64_t t0 = uv_hrtime();
    cr_assert_eq(call(t.rds, &slow, 3, sleep_cmd), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &done, 3000), 0);
    uint64_t elapsed_ms = (uv_hrtime() - t0) / 1000000u;
    cr_assert_eq(slow.calls, 1);
    /* A timeout, not the reply: the callback ran while the server was still asleep. */
    cr_assert_eq(slow.err, SEATD_ETIMEOUT, "got %s", seatd_err_name(slow.err));
    cr_assert_geq(elapsed_ms, 90, "never before the 100 ms deadline");

    /* Once the server has woken up (a PING on a connection of our own answers only then) and
     * the client has connected again, the same client serves again. */
    redisContext *own = seatd_test_redis_connect();
    freeReplyObject(redisCommand(own, "PING"));
    redisFree(own);
    cr_assert_eq(wait_connected(loop, t.rds, 1, 10000), 0);
    send_ping(&t);
    cr_assert_eq(seatd_test_loop_run_until(loop, &t.done, 5000), 0);
    cr_assert_eq(t.ping.err, 0, "got %s", seatd_err_name(t.ping.err));
    cr_assert_str_eq(t.ping.str, "PONG");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(t.rds, &st);
    cr_assert_eq(st.timeouts, 1);
    cr_assert_eq(st.errors, 1);
    cr_assert_geq(st.reconnects, 1);

    close_and_check(loop, t.rds);
    cr_assert_eq(slow.calls, 1);
    cr_assert_eq(t.ping.calls, 1);
}

/* A uv_check callback (after the loop polled for I/O, so the PING below is written): stalls
 * the loop, once, for 'stall_ms' while Redis answers into the socket. */
typedef struct stall_s {
    uv_check_t h;
    int stall_ms;
} stall_t;

static void on_stall(uv_check_t *h)
{
    stall_t *s = h->data;
    usleep((useconds_t)s->stall_ms * 1000);
    uv_check_stop(h);
}

/*
 * The deadline timer runs before the loop reads its sockets: after a loop turn longer than
 * a command's deadline (a fan-out to 20,000 watchers, a descheduled worker) the reply that
 * came in time is waiting in the socket. It is an answer, not a timeout (issue 31: the
 * opening burst counted such replies as overruns).
 */
Test(rds, a_reply_in_the_socket_after_a_long_loop_turn_is_not_a_timeout)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = new_client(loop, 1, 100, 0);
    cr_assert_eq(wait_connected(loop, rds, 1, 3000), 0);
    int done = 0;
    probe_t ping = {.done_counter = &done};
    const char *cmd[] = {"PING"};
    stall_t stall = {.stall_ms = 300};
    uv_check_init(loop, &stall.h);
    stall.h.data = &stall;
    uv_check_start(&stall.h, on_stall);
    cr_assert_eq(call(rds, &ping, 1, cmd), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &done, 3000), 0);
    cr_assert_eq(ping.calls, 1);
    cr_assert_eq(ping.err, 0, "got %s", seatd_err_name(ping.err));
    cr_assert_str_eq(ping.str, "PONG");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.timeouts, 0);
    cr_assert_eq(st.errors, 0);
    uv_close((uv_handle_t *)&stall.h, NULL);
    close_and_check(loop, rds);
}
