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

#include "redis_fixture.h"

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) {
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
