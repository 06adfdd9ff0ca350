/*
 * test_api_cold_layout.c - a worker that has never served a show gets a burst of requests
 * for it at once (a cold start at an on-sale): one Redis read of the ~160 KB layout, every
 * other request waiting on it, all answered.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "racer.h"

#define BURST 32

static char cold[600];

/* A counter of the worker's /metrics, e.g. seatd_layout_fetches_total{result="fetched"}. */
static long long metric(const char *line_prefix)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call_at(cold, "GET", "/metrics", NULL, NULL, NULL, &res), 0);
    const char *p = strstr(res.http.body ? res.http.body : "", line_prefix);
    long long v = p ? atoll(p + strlen(line_prefix)) : -1;
    e2e_res_free(&res);
    return v;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int seat_map_racer(int i, void *arg)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/seats", (const char *)arg);
    seatd_test_racer_ready_and_wait();
    int64_t t0 = mono_us();
    seatd_test_http_response_t r;
    int rc = seatd_test_http_request(cold, 0, "GET", path, NULL, NULL, 0, &r);
    char report[64];
    snprintf(report, sizeof(report), "%lld", (long long)(mono_us() - t0));
    seatd_test_racer_report(report);
    int ok = rc == 0 && r.status == 200;
    seatd_test_http_response_free(&r);
    return ok ? 0 : 1;
}

Test(api_cold_layout, a_burst_on_a_cold_worker_reads_the_layout_once)
{
    char warm[600], show[32];
    snprintf(warm, sizeof(warm), "unix:%s/worker-1.sock", getenv("SEATD_E2E_RUN"));
    snprintf(cold, sizeof(cold), "unix:%s/worker-2.sock", getenv("SEATD_E2E_RUN"));
    /* Created through worker 1, which caches its layout; worker 2 has never seen it. */
    cr_assert_eq(e2e_create_show_at(warm, 20, 100, 300, show), 0);
    long long fetched0 = metric("seatd_layout_fetches_total{result=\"fetched\"} ");
    long long waited0 = metric("seatd_layout_fetches_total{result=\"coalesced\"} ");
    cr_assert(fetched0 >= 0 && waited0 >= 0, "the worker exports its layout fetches");

    int status[BURST];
    char *reports[BURST];
    cr_assert_eq(seatd_test_race(BURST, seat_map_racer, show, status, reports, 30000), 0);
    long long slowest = 0;
    for (int i = 0; i < BURST; i++) {
        cr_assert_eq(status[i], 0, "request %d answered 200", i);
        long long us = reports[i] ? atoll(reports[i]) : 0;
        slowest = us > slowest ? us : slowest;
        free(reports[i]);
    }
    long long fetched = metric("seatd_layout_fetches_total{result=\"fetched\"} ") - fetched0;
    long long waited = metric("seatd_layout_fetches_total{result=\"coalesced\"} ") - waited0;
    cr_log_info("cold-start burst: %d seat-map reads of a 2,000-seat show on a cold worker: "
                "%lld layout read(s) from Redis, %lld waited on it, slowest answer %.1f ms",
                BURST, fetched, waited, slowest / 1000.0);
    cr_assert_eq(fetched, 1, "one Redis read of the layout for the whole burst");
    /* The others waited on that read, or came after it and found the layout cached. */
    cr_assert(waited >= 0 && fetched + waited <= BURST);
}
