/*
 * test_cluster.c - the rds client against a real local Redis Cluster (3 primaries + 3
 * replicas, tests/support/cluster_fixture.h): slots vs CLUSTER KEYSLOT, routing, MOVED, ASK,
 * failover. Each test starts its own cluster (a few seconds) and stops it.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"
#include "rds_slot.h"

static seatd_test_cluster_t cl;

static void cluster_up(void)
{
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
