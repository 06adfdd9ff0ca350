/* End-to-end: Redis stopped mid-run -> 503 with Retry-After; started again -> the same worker
 * processes serve again, with no restart. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

TestSuite(api_redis_down, .timeout = 90);

static char *worker_pids(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cat %s/worker-*.pid | sort | tr '\\n' ' '",
             getenv("SEATD_E2E_RUN"));
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
    if (e2e_cluster())
        cr_skip_test("stops the one Redis process and starts it again from its redis.conf: a "
                     "cluster's node failures and failovers are tests/cluster's scenarios");
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
    cr_assert_eq(e2e_wait_workers_ready(15000), 0, "a worker did not reconnect to redis");
    char *pids_after = worker_pids();
    cr_assert_str_eq(pids, pids_after, "worker processes changed");
    cr_assert(all_workers_alive());
    free(pids);
    free(pids_after);
}

/* Redis hung (SIGSTOP) under holds, through nginx: every hold is answered 503 with
 * Retry-After (not 504), /healthz fails, and once Redis continues no hold answered 5xx is
 * still held (the workers compensate), waited for as a condition with a deadline. */
#define HUNG_HOLDS 12

static int hung_hold(const char *path, int i)
{
    char sub[32], extra[64], body[64];
    snprintf(sub, sizeof(sub), "hung%d", i);
    snprintf(extra, sizeof(extra), "Idempotency-Key: hung-%d\r\n", i);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"A%d\"]}", i);
    e2e_res_t res;
    if (e2e_call("POST", path, sub, body, extra, &res) != 0)
        return 9;
    int code = res.http.status == 201                                                       ? 0
               : res.http.status == 503 && seatd_test_http_header(&res.http, "retry-after") ? 5
               : res.http.status >= 500                                                     ? 4
                                                                                            : 9;
    e2e_res_free(&res);
    return code;
}

Test(api_redis_down, a_hung_redis_answers_503_and_leaves_no_refused_hold_held)
{
    if (e2e_cluster())
        cr_skip_test("hangs the one Redis process (its redis.pid): a hung or failed cluster node "
                     "is tests/cluster's scenario");
    char show[32], path[96], pidfile[512];
    cr_assert_eq(e2e_create_show(2, HUNG_HOLDS, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(pidfile, sizeof(pidfile), "%s/redis.pid", getenv("SEATD_E2E_RUN"));
    FILE *f = fopen(pidfile, "r");
    cr_assert_not_null(f);
    int rpid = 0;
    cr_assert_eq(fscanf(f, "%d", &rpid), 1);
    fclose(f);

    /* Warm every worker's layout cache (nginx spreads these), so the holds reach Redis. */
    for (int i = 1; i <= HUNG_HOLDS; i++) {
        char sub[32], body[64];
        snprintf(sub, sizeof(sub), "warm%d", i);
        snprintf(body, sizeof(body), "{\"seatIds\":[\"B%d\"]}", i);
        e2e_res_t w;
        cr_assert_eq(e2e_call("POST", path, sub, body, NULL, &w), 0);
        cr_assert_eq(w.http.status, 201);
        e2e_res_free(&w);
    }

    cr_assert_eq(kill(rpid, SIGSTOP), 0);
    int pids[HUNG_HOLDS + 1], codes[HUNG_HOLDS + 1];
    for (int i = 1; i <= HUNG_HOLDS; i++) {
        fflush(NULL);
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(hung_hold(path, i));
    }
    for (int i = 1; i <= HUNG_HOLDS; i++) {
        int st = 0;
        codes[i] = pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st)
                       ? WEXITSTATUS(st)
                       : 9;
    }
    e2e_res_t res;
    int health = e2e_call("GET", "/healthz", NULL, NULL, NULL, &res) == 0 ? res.http.status : 0;
    int health_retry = health && seatd_test_http_header(&res.http, "retry-after") != NULL;
    if (health)
        e2e_res_free(&res);
    kill(rpid, SIGCONT);

    for (int i = 1; i <= HUNG_HOLDS; i++)
        cr_assert_eq(codes[i], 5, "hold %d: answer class %d (0: 201, 4: 504 or bare 503)", i,
                     codes[i]);
    cr_assert_eq(health, 503, "healthz answered %d while redis was stopped", health);
    cr_assert(health_retry, "healthz 503 without Retry-After");

    seatd_redis_t *c = e2e_redis();
    long held = -1;
    for (int waited = 0; waited <= 15000; waited += 50) {
        held = 0;
        for (int i = 1; i <= HUNG_HOLDS; i++) {
            redisReply *r = seatd_redis_command(c, "EXISTS {s:%s}:seat:A%d", show, i);
            cr_assert(r && r->type == REDIS_REPLY_INTEGER);
            held += r->integer;
            freeReplyObject(r);
        }
        if (held == 0)
            break;
        usleep(50 * 1000);
    }
    seatd_redis_free(c);
    cr_assert_eq(held, 0, "%ld seats of holds answered 503 are still held", held);
    cr_assert_eq(e2e_wait_workers_ready(15000), 0, "a worker did not get redis back");
}
