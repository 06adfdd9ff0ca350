/* End-to-end: the live seat map through nginx (WebSocket upgrade, proxy to any worker):
 * snapshot, deltas for holds made on whichever worker, releases and expiries. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../integration/test_live_client.h"
#include "e2e.h"
#include "racer.h"

TestSuite(api_live, .timeout = 60);

/* Waits for the delta that gives 'seat' 'status', checking the chain from '*ver'. */
static int await_seat(wsc_t *c, long long *ver, const char *seat, const char *status,
                      int timeout_ms, long long *at_ms)
{
    long long deadline = wsc_now_ms() + timeout_ms;
    while (wsc_now_ms() < deadline) {
        cJSON *j = wsc_next(c, (int)(deadline - wsc_now_ms()));
        if (j == NULL)
            return -1;
        int ok = strcmp(wsc_type(j), "delta") == 0 && wsc_int(j, "fromVersion") == *ver + 1;
        *ver = wsc_int(j, "version");
        const char *st = wsc_delta_seat(j, seat);
        int hit = st && strcmp(st, status) == 0;
        cJSON_Delete(j);
        if (!ok)
            return -2;
        if (hit) {
            if (at_ms)
                *at_ms = wsc_now_ms();
            return 0;
        }
    }
    return -1;
}

Test(api_live, upgrades_through_nginx_and_streams_holds_and_releases)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(2, 4, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101, "the upgrade passes nginx");
    cJSON *snap = wsc_next(&c, 3000);
    cr_assert_not_null(snap);
    cr_assert_str_eq(wsc_type(snap), "snapshot");
    long long ver = wsc_int(snap, "version");
    cr_assert_str_eq(wsc_snapshot_seat(snap, "A1"), "available");
    cJSON_Delete(snap);

    /* Several holds: nginx spreads them over the workers; the watcher sees every one. */
    char holds[4][64];
    for (int i = 0; i < 4; i++) {
        char hp[96], body[64], seat[8];
        snprintf(seat, sizeof(seat), "B%d", i + 1);
        snprintf(hp, sizeof(hp), "/v1/shows/%s/holds", show);
        snprintf(body, sizeof(body), "{\"seatIds\":[\"%s\"]}", seat);
        e2e_res_t res;
        cr_assert_eq(e2e_call("POST", hp, "live-user", body, NULL, &res), 0);
        cr_assert_eq(res.http.status, 201);
        snprintf(holds[i], sizeof(holds[i]), "%s", e2e_str(&res, "holdId"));
        e2e_res_free(&res);
        cr_assert_eq(await_seat(&c, &ver, seat, "held", 3000, NULL), 0, "delta for %s", seat);
    }
    char dp[128];
    snprintf(dp, sizeof(dp), "/v1/holds/%s", holds[0]);
    e2e_res_t res;
    cr_assert_eq(e2e_call("DELETE", dp, "live-user", NULL, NULL, &res), 0);
    cr_assert_lt(res.http.status, 300);
    e2e_res_free(&res);
    cr_assert_eq(await_seat(&c, &ver, "B1", "available", 3000, NULL), 0);
    wsc_close(&c);
}

Test(api_live, shows_an_expired_hold_available_through_nginx)
{
    char show[32], path[96], hp[96];
    cr_assert_eq(e2e_create_show(1, 4, 1, show), 0); /* 1 s holds */
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    snprintf(hp, sizeof(hp), "/v1/shows/%s/holds", show);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101);
    cJSON *snap = wsc_next(&c, 3000);
    long long ver = wsc_int(snap, "version");
    cJSON_Delete(snap);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", hp, "live-user", "{\"seatIds\":[\"A3\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    long long held_at = wsc_now_ms();
    e2e_res_free(&res);
    cr_assert_eq(await_seat(&c, &ver, "A3", "held", 3000, NULL), 0);
    long long freed_at = 0;
    cr_assert_eq(await_seat(&c, &ver, "A3", "available", 20000, &freed_at), 0,
                 "no other request on the show: the sweeper releases it");
    fprintf(stderr, "api_live: hold released %lld ms after the request (TTL 1000 ms)\n",
            freed_at - held_at);
    wsc_close(&c);
}

/* Holds and seat-map reads on one show at once, through both workers: a watcher gets every
 * change as a delta, chained, and never a snapshot after its first. (A read that crossed a
 * hold of its own worker, sent before the hold and answered after it, was once taken for a
 * sign that Redis had lost writes: the show's version was moved on with a gap, and every
 * watcher got the whole map again.) */
enum { CROSS_HOLDERS = 2, CROSS_READERS = 4, CROSS_HOLDS = 60 };

static int cross_racer(int i, void *arg)
{
    const char *show = arg;
    char path[128], host[600], body[64], sub[32];
    seatd_test_racer_ready_and_wait();
    if (i < CROSS_HOLDERS) {
        snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
        for (int k = 0; k < CROSS_HOLDS; k++) {
            snprintf(sub, sizeof(sub), "cross%d-%d", i, k); /* within the per-user limits */
            snprintf(body, sizeof(body), "{\"seatIds\":[\"%c%d\"]}", 'A' + i, k + 1);
            e2e_res_t res;
            if (e2e_call("POST", path, sub, body, NULL, &res) < 0 || res.http.status != 201)
                return 1;
            e2e_res_free(&res);
        }
        return 0;
    }
    snprintf(host, sizeof(host), "unix:%s/worker-%d.sock", getenv("SEATD_E2E_RUN"), 1 + i % 2);
    snprintf(path, sizeof(path), "/v1/shows/%s/availability", show);
    for (int k = 0; k < 4 * CROSS_HOLDS; k++) {
        e2e_res_t res;
        if (e2e_call_at(host, "GET", path, NULL, NULL, NULL, &res) < 0 || res.http.status != 200)
            return 1;
        e2e_res_free(&res);
    }
    return 0;
}

Test(api_live, holds_and_reads_at_once_reach_a_watcher_as_chained_deltas_only, .timeout = 120)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(CROSS_HOLDERS, CROSS_HOLDS, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101);
    cJSON *snap = wsc_next(&c, 3000);
    cr_assert_not_null(snap);
    cr_assert_str_eq(wsc_type(snap), "snapshot");
    long long ver = wsc_int(snap, "version");
    cJSON_Delete(snap);
    int status[CROSS_HOLDERS + CROSS_READERS];
    char *reports[CROSS_HOLDERS + CROSS_READERS];
    cr_assert_eq(
        seatd_test_race(CROSS_HOLDERS + CROSS_READERS, cross_racer, show, status, reports, 90000),
        0);
    for (int i = 0; i < CROSS_HOLDERS + CROSS_READERS; i++) {
        cr_assert_eq(status[i], 0, "racer %d", i);
        free(reports[i]);
    }
    long long want = ver + CROSS_HOLDERS * CROSS_HOLDS;
    while (ver < want) {
        cJSON *j = wsc_next(&c, 5000);
        cr_assert_not_null(j, "the feed stopped at %lld of %lld", ver, want);
        cr_assert_str_eq(wsc_type(j), "delta", "at version %lld", ver);
        cr_assert_eq(wsc_int(j, "fromVersion"), ver + 1);
        ver = wsc_int(j, "version");
        cJSON_Delete(j);
    }
    cr_assert_eq(ver, want, "no version beyond the holds'");
    wsc_close(&c);
}
