/*
 * main.c - the integration test runner: one real redis-server for the whole run.
 *
 * Starts the server (tests/support/redis_fixture.h), exports SEATD_TEST_REDIS_PORT,
 * SEATD_TEST_REDIS_DIR and SEATD_TEST_REDIS_PID so that every Criterion worker (each test
 * runs in its own process) finds it, runs the tests, stops the server. Exits non-zero if a
 * test failed or the server could not start.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster_fixture.h"
#include "redis_fixture.h"

/* SEATD_TEST_CLUSTER=1: the whole suite against a local 3+3 Redis Cluster instead of one
 * server. SEATD_TEST_REDIS_PORT is then its first node, and SEATD_TEST_CLUSTER_NODES (read by
 * store_harness.h and seatd_test_redis_flushall) puts the rds clients in cluster mode. Tests
 * that talk to that one port directly meet MOVED for keys of other shards. */
static int run_on_cluster(struct criterion_test_set *tests)
{
    static seatd_test_cluster_t cl;
    if (seatd_test_cluster_start(&cl, 3, 1) != 0) {
        fprintf(stderr, "integration: could not start a Redis Cluster\n");
        return 2;
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", cl.port[0]);
    setenv("SEATD_TEST_REDIS_PORT", buf, 1);
    setenv("SEATD_TEST_REDIS_DIR", cl.dir, 1);
    setenv("SEATD_TEST_CLUSTER_NODES", cl.nodes, 1);
    int result = !criterion_run_all_tests(tests);
    seatd_test_cluster_stop(&cl);
    return result;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    const char *on_cluster = getenv("SEATD_TEST_CLUSTER");
    if (on_cluster && on_cluster[0] == '1' && criterion_handle_args(argc, argv, true)) {
        result = run_on_cluster(tests);
    } else if (criterion_handle_args(argc, argv, true)) {
        seatd_test_redis_t fx;
        if (seatd_test_redis_start(&fx) != 0) {
            fprintf(stderr, "integration: could not start redis-server\n");
            criterion_finalize(tests);
            return 2;
        }
        char buf[32];
        snprintf(buf, sizeof(buf), "%d", fx.port);
        setenv("SEATD_TEST_REDIS_PORT", buf, 1);
        setenv("SEATD_TEST_REDIS_DIR", fx.dir, 1);
        snprintf(buf, sizeof(buf), "%d", fx.pid);
        setenv("SEATD_TEST_REDIS_PID", buf, 1);
        result = !criterion_run_all_tests(tests);
        seatd_test_redis_stop(&fx);
    }
    criterion_finalize(tests);
    return result;
}
