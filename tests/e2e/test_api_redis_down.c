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

#include "../integration/test_live_client.h"
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

/* ---------------------------------------------------------------------------------------
 * Redis lost acknowledged writes (docs/durability.md: with appendfsync everysec a crash may
 * lose the last second; a failover may lose the writes a replica had not received). The
 * seat map then follows Redis, not the lost state, and no version number is used twice.
 * Before: every worker answered the lost state (A2, A3 held) for as long as the show stayed
 * below the lost version, and a feed reconnecting with ?since= of a lost version was told it
 * had missed nothing once new writes brought the show back to that number.
 * --------------------------------------------------------------------------------------- */

static void hold_one(const char *show, const char *sub, const char *seat)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"%s\"]}", seat);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%s: %.*s", seat, (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
}

/* GET /seats from worker 'w' (1-based, its own socket: no nginx cache); the status of 'seat'
 * into 'status' (16 bytes); returns the version. */
static long long worker_seat(int w, const char *show, long long min_version, const char *seat,
                             char *status)
{
    char host[600], path[128];
    snprintf(host, sizeof(host), "unix:%s/worker-%d.sock", getenv("SEATD_E2E_RUN"), w);
    if (min_version >= 0)
        snprintf(path, sizeof(path), "/v1/shows/%s/seats?minVersion=%lld", show, min_version);
    else
        snprintf(path, sizeof(path), "/v1/shows/%s/seats", show);
    e2e_res_t res;
    cr_assert_eq(e2e_call_at(host, "GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "worker %d: %d", w, res.http.status);
    const cJSON *seats = cJSON_GetObjectItemCaseSensitive(res.json, "seats");
    snprintf(status, 16, "%s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(seats, seat)));
    long long v = (long long)e2e_num(&res, "version");
    e2e_res_free(&res);
    return v;
}

Test(api_redis_down, after_redis_lost_acknowledged_writes_the_seat_map_follows_it)
{
    if (e2e_cluster())
        cr_skip_test("restores the one Redis process's AOF: a cluster's lost writes are a "
                     "failover, tests/cluster's scenarios");
    const char *run = getenv("SEATD_E2E_RUN");
    char show[32], path[128], cmd[2048], st[16];
    cr_assert_eq(e2e_create_show(1, 10, 300, show), 0);
    hold_one(show, "loss-a", "A1");
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_not_null(j);
    long long ver = wsc_int(j, "version");
    cJSON_Delete(j);

    /* The AOF as it is now (everysec: on disk within a second), then two more holds. */
    usleep(1500 * 1000);
    snprintf(cmd, sizeof(cmd), "rm -rf %s/aof-kept && cp -a %s/redis/appendonlydir %s/aof-kept",
             run, run, run);
    cr_assert_eq(system(cmd), 0);
    hold_one(show, "loss-b", "A2");
    hold_one(show, "loss-c", "A3");
    long long lost = 0;
    for (int w = 1; w <= 2; w++) {
        long long v = worker_seat(w, show, ver + 2, "A2", st);
        cr_assert_str_eq(st, "held");
        lost = v > lost ? v : lost;
    }
    while (ver < lost) { /* the feed saw the two holds */
        j = wsc_next(&c, 3000);
        cr_assert_not_null(j, "the feed stopped at %lld of %lld", ver, lost);
        ver = wsc_int(j, "version");
        cJSON_Delete(j);
    }

    /* kill -9, and Redis comes back from the AOF of before the two holds. */
    snprintf(cmd, sizeof(cmd),
             "kill -9 $(cat %s/redis.pid) && sleep 0.3 && rm -rf %s/redis/appendonlydir && "
             "cp -a %s/aof-kept %s/redis/appendonlydir && rm -rf %s/aof-kept && "
             "rm -f %s/redis.pid && redis-server %s/redis.conf",
             run, run, run, run, run, run, run);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(e2e_wait_workers_ready(15000), 0, "a worker did not reconnect to redis");

    /* Each worker answers what Redis has (A2 free), at a version past the lost ones. */
    for (int w = 1; w <= 2; w++) {
        long long v = 0;
        long long deadline = wsc_now_ms() + 5000;
        do {
            v = worker_seat(w, show, -1, "A2", st);
            if (strcmp(st, "available") == 0 && v > lost)
                break;
            usleep(50 * 1000);
        } while (wsc_now_ms() < deadline);
        cr_assert_str_eq(st, "available", "worker %d still answers the lost hold", w);
        cr_assert_gt(v, lost, "worker %d: version %lld reuses a lost one (%lld)", w, v, lost);
    }
    /* The feed that was open gets the map as Redis has it. */
    int fixed = 0;
    for (long long deadline = wsc_now_ms() + 5000; !fixed && wsc_now_ms() < deadline;) {
        j = wsc_next(&c, (int)(deadline - wsc_now_ms()));
        if (j == NULL)
            break;
        fixed = strcmp(wsc_type(j), "snapshot") == 0 &&
                strcmp(wsc_snapshot_seat(j, "A2"), "available") == 0;
        cJSON_Delete(j);
    }
    wsc_close(&c);
    cr_assert(fixed, "the open feed never heard that A2 is free");
    /* New writes go on past the lost versions, and a feed that reconnects with a lost version
     * gets a snapshot, not "nothing missed" nor a delta from another history. */
    hold_one(show, "loss-d", "A5");
    hold_one(show, "loss-e", "A6");
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws?since=%lld", show, lost);
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101);
    j = wsc_next(&c, 3000);
    cr_assert_not_null(j);
    cr_assert_str_eq(wsc_type(j), "snapshot", "since=%lld", lost);
    cr_assert_str_eq(wsc_snapshot_seat(j, "A2"), "available");
    cr_assert_str_eq(wsc_snapshot_seat(j, "A5"), "held");
    cJSON_Delete(j);
    wsc_close(&c);
}
