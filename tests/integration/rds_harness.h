/*
 * rds_harness.h - what the rds suites (test_rds.c, test_rds_failures.c) share: a probe that
 * records what one command's callback saw, a client on the test Redis, and loop drivers that
 * wait for a pool, blocked clients or a count under a deadline. Header-only (static inline).
 */
#ifndef SEATD_TEST_RDS_HARNESS_H
#define SEATD_TEST_RDS_HARNESS_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "clients/rds.h"
#include "loop.h"
#include "redis_fixture.h"
/* What one command's callback saw. */
typedef struct probe_s {
    int calls;         /* times the callback ran: must end at exactly 1 */
    int err;           /* its 'err' */
    int type;          /* reply type (SEATD_RDS_REPLY_*) */
    long long integer; /* integer reply */
    char str[128];     /* string/status/error reply, truncated */
    size_t len;        /* its full length */
    int *done_counter; /* incremented on every call, if set */
} probe_t;

static inline void on_probe(const struct redisReply *reply, int err, void *data)
{
    probe_t *p = data;
    p->calls++;
    p->err = err;
    p->type = seatd_rds_reply_type(reply);
    p->integer = seatd_rds_reply_integer(reply);
    size_t len = 0;
    const char *s = seatd_rds_reply_str(reply, &len);
    p->len = len;
    if (s) {
        size_t n = len < sizeof(p->str) - 1 ? len : sizeof(p->str) - 1;
        memcpy(p->str, s, n);
        p->str[n] = '\0';
    }
    if (p->done_counter)
        (*p->done_counter)++;
}

static inline seatd_rds_t *new_client(uv_loop_t *loop, int pool, int timeout_ms, int max_pending)
{
    seatd_rds_opts_t o = {0};
    o.host = "127.0.0.1";
    o.port = seatd_test_redis_port();
    cr_assert_gt(o.port, 0, "SEATD_TEST_REDIS_PORT is not set");
    o.pool_size = pool;
    o.timeout_ms = timeout_ms;
    o.max_pending = max_pending;
    return seatd_rds_new(loop, &o);
}

static inline int call(seatd_rds_t *rds, probe_t *p, int argc, const char **argv)
{
    return seatd_rds_callv(rds, argc, argv, NULL, on_probe, p);
}

/* A repeating check that sets 'done' once the pool has 'want' ready connections. */
typedef struct waiter_s {
    uv_timer_t t;
    seatd_rds_t *rds;
    unsigned want;
    int done;
} waiter_t;

static inline void on_wait_tick(uv_timer_t *t)
{
    waiter_t *w = t->data;
    seatd_rds_stats_t st;
    seatd_rds_get_stats(w->rds, &st);
    if (st.connected >= w->want)
        w->done = 1;
}

static inline void on_waiter_closed(uv_handle_t *h)
{
    free(h->data);
}

static inline int wait_connected(uv_loop_t *loop, seatd_rds_t *rds, unsigned want, int timeout_ms)
{
    waiter_t *w = calloc(1, sizeof(*w));
    w->rds = rds;
    w->want = want;
    uv_timer_init(loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, on_wait_tick, 5, 5);
    int rc = seatd_test_loop_run_until(loop, &w->done, timeout_ms);
    uv_close((uv_handle_t *)&w->t, on_waiter_closed);
    return rc;
}

/* A repeating check that sets 'done' once Redis counts 'want' clients blocked (a BLPOP of
 * ours has reached the server and holds its connection). */
typedef struct blocked_waiter_s {
    uv_timer_t t;
    redisContext *c;
    long long want;
    int done;
} blocked_waiter_t;

static inline void on_blocked_tick(uv_timer_t *t)
{
    blocked_waiter_t *w = t->data;
    redisReply *r = redisCommand(w->c, "INFO clients");
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "blocked_clients:") : NULL;
    if (p && atoll(p + strlen("blocked_clients:")) >= w->want)
        w->done = 1;
    freeReplyObject(r);
}

static inline int wait_blocked(uv_loop_t *loop, long long want, int timeout_ms)
{
    blocked_waiter_t *w = calloc(1, sizeof(*w));
    w->c = seatd_test_redis_connect();
    w->want = want;
    uv_timer_init(loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, on_blocked_tick, 1, 5);
    int rc = seatd_test_loop_run_until(loop, &w->done, timeout_ms);
    redisFree(w->c);
    uv_close((uv_handle_t *)&w->t, on_waiter_closed);
    return rc;
}

/* A one-shot timer that runs 'fn(arg)'; freed when it has run and closed. */
typedef struct later_s {
    uv_timer_t t;
    void (*fn)(void *);
    void *arg;
} later_t;

static inline void on_later(uv_timer_t *t)
{
    later_t *l = t->data;
    l->fn(l->arg);
    uv_close((uv_handle_t *)t, on_waiter_closed);
}

static inline void run_later(uv_loop_t *loop, int ms, void (*fn)(void *), void *arg)
{
    later_t *l = calloc(1, sizeof(*l));
    l->fn = fn;
    l->arg = arg;
    uv_timer_init(loop, &l->t);
    l->t.data = l;
    uv_timer_start(&l->t, on_later, (uint64_t)ms, 0);
}

/* Runs the loop until '*count' reaches 'want' (checked by a 1 ms repeating timer). */
typedef struct count_wait_s {
    uv_timer_t t;
    const int *count;
    int want;
    int done;
} count_wait_t;

static inline void on_count_tick(uv_timer_t *t)
{
    count_wait_t *w = t->data;
    if (*w->count >= w->want)
        w->done = 1;
}

static inline int run_until_count(uv_loop_t *loop, const int *count, int want, int timeout_ms)
{
    count_wait_t *w = calloc(1, sizeof(*w));
    w->count = count;
    w->want = want;
    w->done = *count >= want;
    uv_timer_init(loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, on_count_tick, 1, 1);
    int rc = seatd_test_loop_run_until(loop, &w->done, timeout_ms);
    uv_close((uv_handle_t *)&w->t, on_waiter_closed);
    return rc;
}

static inline void close_and_check(uv_loop_t *loop, seatd_rds_t *rds)
{
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0, "the loop did not close cleanly");
}

#endif /* SEATD_TEST_RDS_HARNESS_H */
