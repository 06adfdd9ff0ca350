/* End-to-end: Redis stopped mid-run -> 503 with Retry-After; started again -> the same worker
 * processes serve again, with no restart. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

TestSuite(api_redis_down, .timeout = 90);

static char *worker_pids(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cat %s/worker-*.pid | sort | tr '\\n' ' '", getenv("SEATD_E2E_RUN"));
    FILE *f = popen(cmd, "r");
    static char out[256];
    out[0] = '\0';
    if (f) {
        if (fgets(out, sizeof(out), f) == NULL)
            out[0] = '\0';
        pclose(f);
    }
    return strdup(out);
}

static int all_workers_alive(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "for f in %s/worker-*.pid; do kill -0 $(cat $f) || exit 1; done",
             getenv("SEATD_E2E_RUN"));
    return system(cmd) == 0;
}

Test(api_redis_down, answers_503_while_redis_is_down_and_recovers_without_restart)
{
    char show[32], path[96], cmd[512];
    cr_assert_eq(e2e_create_show(1, 10, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    char *pids = worker_pids();
    const char *run = getenv("SEATD_E2E_RUN");
    int rport = atoi(getenv("SEATD_E2E_REDIS_PORT"));

    snprintf(cmd, sizeof(cmd),
             "REDISCLI_AUTH=$(cat %s/redis-admin.pass) redis-cli --no-auth-warning -p %d "
             "shutdown >/dev/null 2>&1; sleep 0.3",
             run, rport);
    cr_assert_eq(system(cmd) >> 8, 0);

    e2e_res_t res;
    int saw503 = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(e2e_call("POST", path, "downer", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
        if (res.http.status == 503) {
            saw503++;
            cr_assert_not_null(seatd_test_http_header(&res.http, "retry-after"));
        }
        e2e_res_free(&res);
    }
    cr_assert_eq(saw503, 4, "answers while redis was down: %d of 4 were 503", saw503);
    cr_assert_eq(e2e_call("GET", "/healthz", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 503);
    e2e_res_free(&res);
    cr_assert(all_workers_alive());

    snprintf(cmd, sizeof(cmd), "redis-server %s/redis.conf", run);
    cr_assert_eq(system(cmd), 0);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        usleep(100 * 1000);
        if (e2e_call("POST", path, "downer", "{\"seatIds\":[\"A1\"]}", NULL, &res) == 0)
            ok = res.http.status == 201;
        e2e_res_free(&res);
    }
    cr_assert(ok, "the workers did not serve again after redis came back");
    char *pids_after = worker_pids();
    cr_assert_str_eq(pids, pids_after, "worker processes changed");
    cr_assert(all_workers_alive());
    free(pids);
    free(pids_after);
}
