/*
 * test_cluster.c - the rds client against a real local Redis Cluster (3 primaries + 3
 * replicas, tests/support/cluster_fixture.h): slots vs CLUSTER KEYSLOT, routing, MOVED, ASK,
 * failover, and which commands are resent after one. Each test starts its own cluster (a few
 * seconds) and stops it. The store, resharding and deltas over the cluster are
 * test_cluster_store.c, in the same suite.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <uv.h>

#include "cluster_fixture.h"
#include "cluster_harness.h"
#include "base/errors.h"
#include "base/log.h"
#include "loop.h"
#include "clients/rds.h"
#include "domain/rds_slot.h"

seatd_test_cluster_t cl;

static void cluster_up(void)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    if (seatd_test_cluster_start(&cl, 3, 1) != 0)
        cr_assert_fail("could not start a local Redis Cluster");
}

static void cluster_down(void)
{
    seatd_test_cluster_stop(&cl);
}

TestSuite(cluster, .init = cluster_up, .fini = cluster_down, .timeout = 120);

/* A random key of 0..24 bytes over an alphabet rich in braces. */
static size_t random_key(char *out, unsigned *seed)
{
    static const char alpha[] = "{}{}ab:s01\xff\x00";
    size_t len = (size_t)(rand_r(seed) % 25);
    for (size_t i = 0; i < len; i++)
        out[i] = alpha[rand_r(seed) % (sizeof(alpha) - 1)];
    return len;
}

Test(cluster, keyslot_matches_the_server_on_random_and_brace_keys)
{
    redisContext *c = seatd_test_cluster_connect(&cl, 0);
    cr_assert(c);
    static const char *edge[] = {"{}",      "{{a}}", "a{b",    "}{",          "{a}{b}", "{}a",
                                 "a{}b{c}", "{",     "}",      "{s:42}:meta", "",       "{{}}",
                                 "x{y}}",   "{ }",   "{\xff}", "foo"};
    unsigned seed = 12345;
    int checked = 0;
    for (int i = 0; i < 5000 + (int)(sizeof(edge) / sizeof(edge[0])); i++) {
        char key[32];
        size_t len;
        if (i < (int)(sizeof(edge) / sizeof(edge[0]))) {
            len = strlen(edge[i]);
            memcpy(key, edge[i], len);
        } else {
            len = random_key(key, &seed);
        }
        const char *argv[] = {"CLUSTER", "KEYSLOT", key};
        size_t lens[] = {7, 7, len};
        redisAppendCommandArgv(c, 3, argv, lens);
        unsigned want = seatd_rds_keyslot(key, len);
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK);
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
        cr_assert_eq((unsigned)r->integer, want, "key #%d (%zu bytes): server %lld, ours %u", i,
                     len, r->integer, want);
        freeReplyObject(r);
        checked++;
    }
    cr_assert_geq(checked, 5000);
    redisFree(c);
}

/* ---------------------------------------------------------------------------------------
 * The rds client in cluster mode
 * ------------------------------------------------------------------------------------- */

Test(cluster, commands_reach_the_primary_of_their_slot_on_every_shard)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = cluster_client(loop, 5000);
    enum { N = 300 };
    static cprobe_t cp[N];
    static char keys[N][32], vals[N][16];
    counter_t cnt = {.want = N};
    int shards_hit[SEATD_TEST_CLUSTER_MAX] = {0};
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "{s:%d}:meta", i);
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        const char *argv[] = {"SET", keys[i], vals[i]};
        cp[i].c = &cnt;
        cr_assert_eq(seatd_rds_callv(rds, 3, argv, NULL, on_counted, &cp[i]), 0);
    }
    cr_assert_eq(seatd_test_loop_run_until(loop, &cnt.all, 20000), 0);
    for (int i = 0; i < N; i++) {
        probe_t *p = &cp[i].p;
        cr_assert_eq(p->calls, 1);
        cr_assert_eq(p->err, 0, "SET %s: %s", keys[i], seatd_err_name(p->err));
        cr_assert_str_eq(p->str, "OK", "SET %s answered %s", keys[i], p->str);
        shards_hit[seatd_test_cluster_primary_of(&cl,
                                                 seatd_rds_keyslot(keys[i], strlen(keys[i])))] = 1;
    }
    for (int i = 0; i < N; i += 37)
        assert_on_owner(keys[i], vals[i]);
    int shards = 0;
    for (int i = 0; i < SEATD_TEST_CLUSTER_MAX; i++)
        shards += shards_hit[i];
    cr_assert_eq(shards, 3, "the keys spread over the 3 primaries");

    const char *ping[] = {"PING"};
    probe_t pp = run1(loop, rds, 0, 1, ping);
    cr_assert_str_eq(pp.str, "PONG");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_eq(st.moved, 0, "the map from CLUSTER SLOTS was right first time");
    cr_assert_eq(st.connected, 6, "one pool of 2 per primary");
    cr_assert(seatd_rds_is_cluster(rds));
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

/* A key of 'show' on a given primary: the first {s:N}:meta whose slot 'node' serves. */
static void key_on(int node, char *out, size_t cap, int from)
{
    for (int i = from; i < from + 100000; i++) {
        snprintf(out, cap, "{s:%d}:meta", i);
        if (seatd_test_cluster_primary_of(&cl, seatd_rds_keyslot(out, strlen(out))) == node)
            return;
    }
    cr_assert_fail("no key found on node %d", node);
}

Test(cluster, moved_patches_the_map_and_the_command_still_lands)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = cluster_client(loop, 5000);
    const char *key = "{s:42}:meta";
    unsigned slot = seatd_rds_keyslot(key, strlen(key));
    const char *set[] = {"SET", key, "before"};
    probe_t p = run1(loop, rds, 0, 3, set);
    cr_assert_str_eq(p.str, "OK");

    int from = seatd_test_cluster_primary_of(&cl, slot);
    int to = seatd_test_cluster_other_primary(&cl, from);
    cr_assert_eq(seatd_test_cluster_move_slot(&cl, slot, to, NULL, NULL), 0);

    const char *get[] = {"GET", key};
    p = run1(loop, rds, 0, 2, get);
    cr_assert_eq(p.err, 0);
    cr_assert_str_eq(p.str, "before", "the key moved with its slot and was found there");
    const char *set2[] = {"SET", key, "after"};
    p = run1(loop, rds, 0, 3, set2);
    cr_assert_str_eq(p.str, "OK");
    assert_on_owner(key, "after");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_geq(st.moved, 1, "the first command after the move was redirected");
    cr_assert_leq(st.moved, 1, "then the patched map sent the next one straight there");
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

/* During a migration (keys moved, slot not yet handed over), from inside the fixture. */
typedef struct ask_ctx_s {
    uv_loop_t *loop;
    seatd_rds_t *rds;
    const char *key;
    probe_t get, set_new, get_new;
} ask_ctx_t;

static void during_migration(void *arg)
{
    ask_ctx_t *a = arg;
    const char *get[] = {"GET", a->key};
    a->get = run1(a->loop, a->rds, 0, 2, get);
    const char *set[] = {"SET", "{s:42}:fresh", "new"};
    a->set_new = run1(a->loop, a->rds, 0, 3, set);
    const char *get2[] = {"GET", "{s:42}:fresh"};
    a->get_new = run1(a->loop, a->rds, 0, 2, get2);
}

Test(cluster, ask_during_a_migration_goes_to_the_target_once_without_changing_the_map)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = cluster_client(loop, 5000);
    const char *key = "{s:42}:meta";
    unsigned slot = seatd_rds_keyslot(key, strlen(key));
    const char *set[] = {"SET", key, "moving"};
    cr_assert_str_eq(run1(loop, rds, 0, 3, set).str, "OK");
    int from = seatd_test_cluster_primary_of(&cl, slot);
    int to = seatd_test_cluster_other_primary(&cl, from);
    ask_ctx_t a = {.loop = loop, .rds = rds, .key = key};
    cr_assert_eq(seatd_test_cluster_move_slot(&cl, slot, to, during_migration, &a), 0);
    cr_assert_eq(a.get.err, 0);
    cr_assert_str_eq(a.get.str, "moving", "a migrated key is read on the target after ASK");
    cr_assert_str_eq(a.set_new.str, "OK", "a new key of a migrating slot is written on the target");
    cr_assert_str_eq(a.get_new.str, "new");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_geq(st.asked, 3, "each command was sent with ASKING: the map was not changed");
    cr_assert_eq(st.moved, 0);
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

Test(cluster, a_killed_primary_fails_over_and_commands_succeed_again_on_the_same_client,
     .timeout = 180)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_t *rds = cluster_client(loop, 1000);
    char victim_key[32], other_key[32];
    key_on(0 <= seatd_test_cluster_primary_of(&cl, 0) ? seatd_test_cluster_primary_of(&cl, 0) : 0,
           victim_key, sizeof(victim_key), 0);
    int victim =
        seatd_test_cluster_primary_of(&cl, seatd_rds_keyslot(victim_key, strlen(victim_key)));
    int other = seatd_test_cluster_other_primary(&cl, victim);
    key_on(other, other_key, sizeof(other_key), 0);
    const char *setw[] = {"SET", other_key, "1"};
    cr_assert_str_eq(run1(loop, rds, 0, 3, setw).str, "OK");
    /* Written and WAITed for on one connection, so that the replica has it before the
     * primary dies (WAIT counts the replicas that have this connection's writes). */
    redisContext *c = seatd_test_cluster_connect(&cl, victim);
    redisReply *w = redisCommand(c, "SET %s 1", victim_key);
    cr_assert(w && w->type == REDIS_REPLY_STATUS);
    freeReplyObject(w);
    w = redisCommand(c, "WAIT 1 5000");
    cr_assert(w && w->type == REDIS_REPLY_INTEGER && w->integer == 1);
    freeReplyObject(w);
    redisFree(c);

    seatd_test_cluster_kill(&cl, victim);
    /* Until the failover, the victim's slot answers EUNAVAILABLE (never a wrong answer), and
     * the other shards keep working. */
    uv_update_time(loop);
    uint64_t start = uv_now(loop);
    int recovered = 0, other_failures = 0, attempts = 0, nowait_failures = 0;
    while (!recovered && uv_now(loop) - start < SEATD_TEST_CLUSTER_NODE_TIMEOUT_MS + 15000) {
        const char *get[] = {"GET", victim_key};
        /* SEATD_RDS_NO_WAIT (a side step a request can do without): it fails at once,
         * resent after no backoff, instead of waiting for the failover. */
        seatd_rds_stats_t before, after;
        seatd_rds_get_stats(rds, &before);
        probe_t q = run1(loop, rds, SEATD_RDS_NO_WAIT, 2, get);
        seatd_rds_get_stats(rds, &after);
        if (q.err != 0) {
            cr_assert_eq(q.err, SEATD_EUNAVAILABLE, "%s", seatd_err_name(q.err));
            cr_assert_eq(after.retries, before.retries, "a NO_WAIT command waited for a retry");
            nowait_failures++;
        }
        probe_t p = run1(loop, rds, 0, 2, get);
        attempts++;
        if (p.err == 0) {
            cr_assert_str_eq(p.str, "1", "the promoted replica has the acknowledged write");
            recovered = 1;
        } else {
            cr_assert(p.err == SEATD_EUNAVAILABLE || p.err == SEATD_ETIMEOUT, "%s",
                      seatd_err_name(p.err));
        }
        const char *oget[] = {"GET", other_key};
        probe_t o = run1(loop, rds, 0, 2, oget);
        if (o.err != 0)
            other_failures++;
        uv_update_time(loop);
    }
    cr_assert(recovered, "the victim's slot never served again on the same client");
    cr_assert_gt(nowait_failures, 0, "the dead primary's slot was never probed while down");
    cr_assert_eq(other_failures, 0, "another shard failed during the failover");
    const char *set2[] = {"SET", victim_key, "2"};
    cr_assert_str_eq(run1(loop, rds, 0, 3, set2).str, "OK");
    seatd_rds_stats_t st;
    seatd_rds_get_stats(rds, &st);
    cr_assert_geq(st.refreshes, 2);
    fprintf(stderr, "failover: %d attempts, %llu ms\n", attempts,
            (unsigned long long)(uv_now(loop) - start));
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

/* ---------------------------------------------------------------------------------------
 * A command that may have run is resent only when idempotent
 * ------------------------------------------------------------------------------------- */

Test(cluster, a_lost_write_is_not_resent_but_a_lost_read_is_after_failover, .timeout = 180)
{
    uv_loop_t *loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {0};
    o.cluster_nodes = cl.nodes;
    o.pool_size = 1; /* one connection per node: the two commands below share it */
    o.timeout_ms = 15000;
    seatd_rds_t *rds = seatd_rds_new(loop, &o);
    const char *key = "{s:42}:meta";
    int victim = seatd_test_cluster_primary_of(&cl, seatd_rds_keyslot(key, strlen(key)));
    /* Written and WAITed for on one connection: WAIT counts the replicas that have this
     * connection's writes. */
    redisContext *c = seatd_test_cluster_connect(&cl, victim);
    redisReply *w = redisCommand(c, "SET %s kept", key);
    cr_assert(w && w->type == REDIS_REPLY_STATUS);
    freeReplyObject(w);
    w = redisCommand(c, "WAIT 1 5000");
    cr_assert(w && w->integer == 1);
    freeReplyObject(w);
    redisFree(c);

    /* The client's connection to the victim is up... */
    const char *get0[] = {"GET", key};
    cr_assert_str_eq(run1(loop, rds, 0, 2, get0).str, "kept");
    /* ...so both commands reach the stopped primary (sent, unanswered), then it dies under
     * them. */
    kill(cl.pid[victim], SIGSTOP);
    counter_t cnt = {.want = 2};
    cprobe_t wr = {.c = &cnt}, rd = {.c = &cnt};
    const char *set2[] = {"SET", key, "maybe"};
    const char *get[] = {"GET", key};
    cr_assert_eq(seatd_rds_callv(rds, 3, set2, NULL, on_counted, &wr), 0);
    cr_assert_eq(seatd_rds_callv(rds, 2, get, NULL, on_counted, &rd), 0);
    for (int i = 0; i < 20; i++) /* a few turns: both are written to the socket */
        uv_run(loop, UV_RUN_NOWAIT);
    seatd_test_cluster_kill(&cl, victim);
    cr_assert_eq(seatd_test_loop_run_until(loop, &cnt.all, 60000), 0);
    cr_assert_eq(wr.p.calls, 1);
    cr_assert_eq(wr.p.err, SEATD_EUNAVAILABLE, "the write may have run: not resent (%s)",
                 seatd_err_name(wr.p.err));
    cr_assert_eq(rd.p.calls, 1);
    cr_assert_eq(rd.p.err, 0, "the read is resent after the failover (%s)",
                 seatd_err_name(rd.p.err));
    cr_assert_str_eq(rd.p.str, "kept", "GET answered type %d '%s'", rd.p.type, rd.p.str);
    seatd_rds_close(rds);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}
