/*
 * cluster_harness.h - what the cluster suite's files (test_cluster.c, test_cluster_store.c)
 * share: the cluster each test runs on (started by test_cluster.c's .init), probes of one
 * command's callback, a client in cluster mode, and a read straight from a key's primary.
 * Header-only (static inline) but for 'cl', which must be the one object the suite's .init
 * started: test_cluster.c defines it.
 */
#ifndef SEATD_TEST_CLUSTER_HARNESS_H
#define SEATD_TEST_CLUSTER_HARNESS_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "cluster_fixture.h"
#include "clients/rds.h"
#include "domain/rds_slot.h"
#include "loop.h"

/* The local Redis Cluster of the running test (cluster_up() in test_cluster.c). */
extern seatd_test_cluster_t cl;
/* What one command's callback saw. */
typedef struct probe_s {
    int calls;
    int err;
    int type;
    char str[128];
    int *done;
} probe_t;

/* Counts completions: 'all' becomes 1 once 'n' reaches 'want'. */
typedef struct counter_s {
    int n, want, all;
} counter_t;

static inline void on_probe(const struct redisReply *reply, int err, void *data)
{
    probe_t *p = data;
    p->calls++;
    p->err = err;
    p->type = seatd_rds_reply_type(reply);
    size_t len = 0;
    const char *s = seatd_rds_reply_str(reply, &len);
    p->str[0] = '\0';
    if (s)
        snprintf(p->str, sizeof(p->str), "%.*s", (int)len, s);
    if (p->done)
        (*p->done)++;
}

static inline void on_counted(const struct redisReply *reply, int err, void *data);

typedef struct cprobe_s {
    probe_t p;
    counter_t *c;
} cprobe_t;

static inline void on_counted(const struct redisReply *reply, int err, void *data)
{
    cprobe_t *cp = data;
    on_probe(reply, err, &cp->p);
    if (++cp->c->n >= cp->c->want)
        cp->c->all = 1;
}

static inline seatd_rds_t *cluster_client(uv_loop_t *loop, int timeout_ms)
{
    seatd_rds_opts_t o = {0};
    o.cluster_nodes = cl.nodes;
    o.pool_size = 2;
    o.timeout_ms = timeout_ms;
    return seatd_rds_new(loop, &o);
}

/* Runs one command to completion; returns its probe. */
static inline probe_t run1(uv_loop_t *loop, seatd_rds_t *rds, unsigned flags, int argc,
                           const char **argv)
{
    probe_t p = {0};
    int done = 0;
    p.done = &done;
    cr_assert_eq(seatd_rds_callv_ex(rds, argc, argv, NULL, flags, on_probe, &p), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &done, 20000), 0, "the command never completed");
    cr_assert_eq(p.calls, 1);
    return p;
}

/* Reads 'key' straight from the primary that serves it. */
static inline void assert_on_owner(const char *key, const char *want)
{
    int owner = seatd_test_cluster_primary_of(&cl, seatd_rds_keyslot(key, strlen(key)));
    cr_assert_geq(owner, 0);
    redisContext *c = seatd_test_cluster_connect(&cl, owner);
    cr_assert(c);
    redisReply *r = redisCommand(c, "GET %s", key);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s is not on the node that serves its slot",
              key);
    cr_assert_str_eq(r->str, want);
    freeReplyObject(r);
    redisFree(c);
}

#endif /* SEATD_TEST_CLUSTER_HARNESS_H */
