/*
 * publisher.c - seatd_fanout's publisher processes: they change seats at the run's fixed rate
 * (open loop, op i due at t0 + i * gap), each change a hold of one seat then its release
 * (seatd) or one message (nchan), and log each change's send time in the shared memory.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "fanout.h"
void fanout_wait_until(long long t)
{
    for (long long now = fanout_now_ns(); now < t; now = fanout_now_ns()) {
        long long d = t - now;
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        nanosleep(&ts, NULL);
    }
}

static void note_late(long long due)
{
    long long late = (fanout_now_ns() - due) / 1000000;
    if (late > fanout_shared->late_ms_max)
        fanout_shared->late_ms_max = late; /* racy max: a report, not a check */
}

/* One publisher process: takes hold/release pairs until ops_max. */
void fanout_publisher_proc(void)
{
    http_conn_t h = {.fd = -1, .in = SEATD_BUF_INIT};
    char path[128], body[160];
    for (;;) {
        long long p = __sync_fetch_and_add(&fanout_shared->next_pair, 1);
        /* a side that cannot keep the rate publishes less, never past the window */
        if (2 * p >= fanout_shared->ops_max || fanout_now_ns() >= fanout_shared->win_end_ns)
            break;
        int seat = (int)(p % fanout_shared->nseats); /* index; the seat is S<seat+1> */
        for (int half = 0; half < 2; half++) {
            long long due = fanout_shared->t0_ns + (2 * p + half) * fanout_shared->gap_ns;
            fanout_wait_until(due);
            note_late(due);
            int st = half == 0 ? ST_HELD : ST_AVAILABLE;
            if (fanout_shared->side == SIDE_NCHAN) {
                long long k = 2 * p + half + 1;
                snprintf(path, sizeof(path), "/pub/%s", fanout_shared->target);
                snprintf(body, sizeof(body), "{\"seq\":%lld,\"seat\":\"S%d\",\"status\":\"%s\"}", k,
                         seat + 1, st == ST_HELD ? "held" : "available");
                fanout_shared->op_seat[k] = (uint16_t)seat;
                fanout_shared->op_st[k] = (uint8_t)st;
                fanout_shared->send_ns[k] = fanout_now_ns();
                int status = fanout_http_req(&h, "POST", path, NULL, body, NULL);
                if (status == 201 || status == 202) {
                    __sync_fetch_and_add(&fanout_shared->ops_ok, 1);
                    long long m;
                    while ((m = fanout_shared->max_k) < k &&
                           !__sync_bool_compare_and_swap(&fanout_shared->max_k, m, k))
                        ;
                } else {
                    __sync_fetch_and_add(&fanout_shared->ops_fail, 1);
                }
                continue;
            }
            /* seatd: hold, then release that hold */
            static char hold_id[96];
            const char *resp = NULL;
            long long t_send = fanout_now_ns();
            int status;
            if (half == 0) {
                snprintf(path, sizeof(path), "/v1/shows/%s/holds", fanout_shared->target);
                snprintf(body, sizeof(body), "{\"seatIds\":[\"S%d\"]}", seat + 1);
                status = fanout_http_req(&h, "POST", path, fanout_tokens[seat], body, &resp);
                hold_id[0] = '\0';
                const char *hid = status == 201 ? strstr(resp, "\"holdId\":\"") : NULL;
                if (hid)
                    sscanf(hid + 10, "%95[^\"]", hold_id);
                if (!hid)
                    status = -status;
            } else {
                if (!hold_id[0]) {
                    __sync_fetch_and_add(&fanout_shared->ops_fail, 1);
                    continue;
                }
                snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
                status = fanout_http_req(&h, "DELETE", path, fanout_tokens[seat], NULL, &resp);
            }
            long long v =
                status == 200 || status == 201 ? fanout_json_ll(resp, "\"version\":") : -1;
            long long k = v - fanout_shared->v0;
            if (v < 0 || k < 1 || k > MAX_OPS) {
                __sync_fetch_and_add(&fanout_shared->ops_fail, 1);
                if (fanout_shared->ops_fail <= 5)
                    fprintf(stderr, "fanout: publisher: %s seat S%d: status %d %.200s\n",
                            half ? "release" : "hold", seat + 1, status, resp ? resp : "");
                continue;
            }
            fanout_shared->op_seat[k] = (uint16_t)seat;
            fanout_shared->op_st[k] = (uint8_t)st;
            fanout_shared->send_ns[k] = t_send;
            __sync_fetch_and_add(&fanout_shared->ops_ok, 1);
            long long m;
            while ((m = fanout_shared->max_k) < k &&
                   !__sync_bool_compare_and_swap(&fanout_shared->max_k, m, k))
                ;
        }
    }
    if (h.fd >= 0)
        close(h.fd);
    _exit(0);
}
