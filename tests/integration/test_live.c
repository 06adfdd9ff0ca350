/*
 * Integration tests for the live seat map (live.c, pubsub.c, the upgrade seam of
 * http_server.c, handlers/live.c): a real worker in a forked child, real Redis, and a
 * blocking WebSocket client. Seat changes are made through store.c (or HTTP) in the test.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "http_client.h"
#include "store_harness.h"
#include "test_live_client.h"
#include "test_live_server.h"

static const char *const SEATS[] = {"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", NULL};

static void live_init(void)
{
    seatd_test_redis_flushall();
}

TestSuite(live, .init = live_init, .timeout = 40);

/* Reads deltas until 'want' is reached, checking they chain (each fromVersion is the last
 * version + 1). Applies each change to 'seats' (8 statuses for A1..A8). Returns the last
 * version reached, or -1 on a broken chain, a snapshot or a timeout. */
static long long follow(wsc_t *c, long long from, long long want, char seats[8][16])
{
    long long v = from;
    while (v < want) {
        cJSON *j = wsc_next(c, 3000);
        if (j == NULL)
            return -1;
        if (strcmp(wsc_type(j), "delta") != 0 || wsc_int(j, "fromVersion") != v + 1 ||
            wsc_int(j, "version") < v + 1) {
            cJSON_Delete(j);
            return -1;
        }
        v = wsc_int(j, "version");
        for (int i = 0; i < 8; i++) {
            const char *st = wsc_delta_seat(j, SEATS[i]);
            if (st)
                snprintf(seats[i], 16, "%s", st);
        }
        cJSON_Delete(j);
    }
    return v;
}

/* The next frame of 'c' is a snapshot at 'version' showing 'seat' as 'status'. */
static void expect_snapshot(wsc_t *c, long long version, const char *seat, const char *status)
{
    cJSON *j = wsc_next(c, 3000);
    cr_assert_not_null(j, "a snapshot");
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), version);
    cr_assert_str_eq(wsc_snapshot_seat(j, seat), status);
    cJSON_Delete(j);
}

/* Opens the harness, creates show 1 (SEATS, holds of 'ttl_ms'), starts a worker with 'lo'
 * (NULL: defaults) and connects 'c' to the show's live map: its first frame, a snapshot at
 * version 0, is taken. */
static void watch_fresh_show(th_t *t, tls_t *srv, wsc_t *c, const seatd_live_opts_t *lo,
                             long long ttl_ms)
{
    cr_assert_eq(th_open(t), 0);
    cr_assert_eq(th_create_show(t, "1", SEATS, ttl_ms), 0);
    cr_assert_eq(tls_start(srv, lo), 0);
    cr_assert_eq(wsc_connect(c, srv->port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(c, 3000);
    cr_assert_not_null(j, "a first frame");
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 0);
    cJSON_Delete(j);
}

#define MANY_SEATS 90
/* Seat ids <prefix>1..<prefix>90 into 'names', and 'seats' pointing at them (NULL-ended). */
static void many_seats(char names[MANY_SEATS][8], const char *seats[MANY_SEATS + 1], char prefix)
{
    for (int i = 0; i < MANY_SEATS; i++) {
        snprintf(names[i], sizeof(names[i]), "%c%d", prefix, i + 1);
        seats[i] = names[i];
    }
    seats[MANY_SEATS] = NULL;
}

static long long redis_version(redisContext *rc, const char *show)
{
    char v[32] = "";
    th_str(rc, v, sizeof(v), "GET {s:%s}:ver", show);
    return atoll(v);
}

Test(live, sends_a_snapshot_then_chained_deltas_and_nothing_for_a_rejected_hold)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", SEATS, 60000), 0);
    const char *first[] = {"A1", "A2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "u1", first, 60000, 8, NULL), 0);
    char hold1[SEATD_ID_MAX];
    snprintf(hold1, sizeof(hold1), "%s", th_get(&r, "holdId"));

    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *snap = wsc_next(&c, 3000);
    cr_assert_not_null(snap, "a snapshot first");
    cr_assert_str_eq(wsc_type(snap), "snapshot");
    cr_assert_eq(wsc_int(snap, "version"), 1);
    cr_assert_str_eq(wsc_snapshot_seat(snap, "A1"), "held");
    cr_assert_str_eq(wsc_snapshot_seat(snap, "A3"), "available");
    cJSON_Delete(snap);

    /* hold, rejected hold, release, hold + book: each version exactly once, in order. */
    const char *a3[] = {"A3", NULL}, *a4[] = {"A4", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "u2", a3, 60000, 8, NULL), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "u3", a3, 60000, 8, NULL), SEATD_ECONFLICT);
    cr_assert_eq(th_release(&t, &r, hold1, "u1"), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "u4", a4, 60000, 8, NULL), 0);
    char hold4[SEATD_ID_MAX];
    snprintf(hold4, sizeof(hold4), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold4, "u4", 60000), 0);
    char booking[SEATD_ID_MAX];
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);

    redisContext *rc = seatd_test_redis_connect();
    long long final = redis_version(rc, "1");
    cr_assert_geq(final, 5);
    char seats[8][16] = {"held",      "held",      "available", "available",
                         "available", "available", "available", "available"};
    cr_assert_eq(follow(&c, 1, final, seats), final, "chained deltas up to %lld", final);
    cr_assert_str_eq(seats[0], "available");
    cr_assert_str_eq(seats[1], "available");
    cr_assert_str_eq(seats[2], "held");
    cr_assert_str_eq(seats[3], "booked");

    /* A rejected hold changes nothing and sends nothing. */
    cr_assert_eq(th_hold(&t, &r, "1", "u5", a3, 60000, 8, NULL), SEATD_ECONFLICT);
    cJSON *none = wsc_next(&c, 400);
    cr_assert_null(none, "no frame for a rejected hold");
    cr_assert_eq(redis_version(rc, "1"), final);

    wsc_close(&c);
    redisFree(rc);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0, "the worker drains and closes its loop");
    cr_assert_eq(th_close(&t), 0);
}

Test(live, catches_up_by_version_with_since)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", SEATS, 60000), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);

    /* B keeps the show watched (and the worker's ring alive) while A is away. */
    wsc_t a, b;
    cr_assert_eq(wsc_connect(&b, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&b, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cJSON_Delete(j);
    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws"), 101);
    j = wsc_next(&a, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 0);
    cJSON_Delete(j);
    wsc_close(&a);

    for (int i = 0; i < 3; i++) {
        const char *one[] = {SEATS[i], NULL};
        cr_assert_eq(th_hold(&t, &r, "1", "u1", one, 60000, 8, NULL), 0);
    }
    char seats[8][16] = {{0}};
    cr_assert_eq(follow(&b, 0, 3, seats), 3);

    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws?since=0"), 101);
    j = wsc_next(&a, 3000);
    cr_assert_not_null(j);
    cr_assert_str_eq(wsc_type(j), "delta", "the missed versions, not a snapshot");
    cr_assert_eq(wsc_int(j, "fromVersion"), 1);
    cr_assert_eq(wsc_int(j, "version"), 3);
    for (int i = 0; i < 3; i++)
        cr_assert_str_eq(wsc_delta_seat(j, SEATS[i]), "held");
    cJSON_Delete(j);

    wsc_t cur, old;
    cr_assert_eq(wsc_connect(&cur, srv.port, "/v1/shows/1/seats/ws?since=3"), 101);
    j = wsc_next(&cur, 3000);
    cr_assert_not_null(j, "an up-to-date client is told so at once (a quiet show too)");
    cr_assert_str_eq(wsc_type(j), "version");
    cr_assert_eq(wsc_int(j, "version"), 3);
    cJSON_Delete(j);
    cr_assert_eq(wsc_connect(&old, srv.port, "/v1/shows/1/seats/ws?since=99999"), 101);
    j = wsc_next(&old, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot", "a version this worker never had: a snapshot");
    cr_assert_eq(wsc_int(j, "version"), 3);
    cJSON_Delete(j);

    const char *a5[] = {"A5", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "u1", a5, 60000, 8, NULL), 0);
    j = wsc_next(&cur, 3000);
    cr_assert_str_eq(wsc_type(j), "delta");
    cr_assert_eq(wsc_int(j, "fromVersion"), 4);
    cr_assert_str_eq(wsc_delta_seat(j, "A5"), "held");
    cJSON_Delete(j);

    /* A resync command answers a fresh snapshot. */
    wsc_send(&cur, "{\"type\":\"resync\"}");
    j = wsc_next(&cur, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 4);
    cJSON_Delete(j);

    wsc_close(&a);
    wsc_close(&b);
    wsc_close(&cur);
    wsc_close(&old);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

/*
 * Opens a worker with 'lo', connects a watcher of a fresh show, then makes 24 versions (three
 * rounds of holding A1..A4 one by one and releasing them) in well under a second: whichever
 * ticks of a second they straddle (at most three), one tick's share is at least 8. Follows
 * the watcher's frames to the last version; returns how many were snapshots, or -1 when a
 * delta did not chain, a frame was missing, or the seats did not end available.
 */
static int burst_snapshots(const seatd_live_opts_t *lo)
{
    th_t t;
    th_res_t r = {0};
    tls_t srv;
    wsc_t c;
    watch_fresh_show(&t, &srv, &c, lo, 60000);

    char ids[4][SEATD_ID_MAX];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4; i++) {
            const char *one[] = {SEATS[i], NULL};
            cr_assert_eq(th_hold(&t, &r, "1", "u1", one, 60000, 8, NULL), 0);
            snprintf(ids[i], sizeof(ids[i]), "%s", th_get(&r, "holdId"));
        }
        for (int i = 0; i < 4; i++)
            cr_assert_eq(th_release(&t, &r, ids[i], "u1"), 0);
    }
    redisContext *rc = seatd_test_redis_connect();
    cr_assert_eq(redis_version(rc, "1"), 24);

    int snapshots = 0;
    long long v = 0;
    char seats[4][16] = {"available", "available", "available", "available"};
    while (v >= 0 && v < 24) {
        cJSON *j = wsc_next(&c, 3000);
        if (j == NULL) {
            v = -1;
            break;
        }
        const char *type = wsc_type(j);
        if (strcmp(type, "snapshot") == 0) {
            snapshots++;
            for (int i = 0; i < 4; i++)
                snprintf(seats[i], 16, "%s", wsc_snapshot_seat(j, SEATS[i]));
            v = wsc_int(j, "version");
        } else if (strcmp(type, "delta") == 0 && wsc_int(j, "fromVersion") == v + 1) {
            for (int i = 0; i < 4; i++) {
                const char *st = wsc_delta_seat(j, SEATS[i]);
                if (st)
                    snprintf(seats[i], 16, "%s", st);
            }
            v = wsc_int(j, "version");
        } else {
            v = -1; /* a delta that does not chain, or another frame */
        }
        cJSON_Delete(j);
    }
    for (int i = 0; i < 4 && v == 24; i++)
        if (strcmp(seats[i], "available") != 0)
            v = -1;

    wsc_close(&c);
    redisFree(rc);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
    return v == 24 ? snapshots : -1;
}

/*
 * A burst of more versions within one tick than the ring keeps for ?since= reconnects: the
 * watchers that were up to date still get chained deltas, not a snapshot of the whole map
 * each (a busy on-sale with many watchers per worker is exactly this, every tick).
 */
Test(live, a_burst_longer_than_the_ring_within_one_tick_is_still_a_delta)
{
    seatd_live_opts_t lo = {.tick_ms = 1000, .ring = 4};
    cr_assert_eq(burst_snapshots(&lo), 0, "chained deltas up to version 24, no snapshot");
}

/*
 * A tick's frames go out a slice of watchers per loop turn (opts.pass_slice), so that tens of
 * thousands of writes never keep the loop from Redis's replies. Here slices of 2 among 12
 * watchers, ticks of 20 ms and a ring of 4, while 48 versions land and a third of the
 * watchers leave half-way: every watcher left still gets every version in chained deltas
 * (the ring keeps what a pass's early watchers have not had yet: no snapshot), and ends with
 * the store's statuses.
 */
#define SLICED_WATCHERS 12
Test(live, a_pass_in_slices_keeps_every_watcher_chained)
{
    seatd_live_opts_t lo = {.tick_ms = 20, .ring = 4, .pass_slice = 2};
    th_t t;
    th_res_t r = {0};
    tls_t srv;
    wsc_t c[SLICED_WATCHERS];
    watch_fresh_show(&t, &srv, &c[0], &lo, 60000);
    for (int k = 1; k < SLICED_WATCHERS; k++) {
        cr_assert_eq(wsc_connect(&c[k], srv.port, "/v1/shows/1/seats/ws"), 101);
        cJSON *j = wsc_next(&c[k], 3000);
        cr_assert_not_null(j);
        cr_assert_str_eq(wsc_type(j), "snapshot");
        cr_assert_eq(wsc_int(j, "version"), 0);
        cJSON_Delete(j);
    }
    char ids[8][SEATD_ID_MAX];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 8; i++) {
            const char *one[] = {SEATS[i], NULL};
            cr_assert_eq(th_hold(&t, &r, "1", "u1", one, 60000, 8, NULL), 0);
            snprintf(ids[i], sizeof(ids[i]), "%s", th_get(&r, "holdId"));
            usleep(3000); /* versions spread over the ticks and their passes */
        }
        if (round == 1)
            for (int k = 0; k < SLICED_WATCHERS; k += 3)
                wsc_close(&c[k]); /* leave while passes may be walking past them */
        for (int i = 0; i < 8; i++) {
            cr_assert_eq(th_release(&t, &r, ids[i], "u1"), 0);
            usleep(3000);
        }
    }
    redisContext *rc = seatd_test_redis_connect();
    long long final = redis_version(rc, "1");
    cr_assert_eq(final, 48);
    for (int k = 0; k < SLICED_WATCHERS; k++) {
        if (k % 3 == 0)
            continue;
        char seats[8][16];
        for (int i = 0; i < 8; i++)
            snprintf(seats[i], 16, "available");
        cr_assert_eq(follow(&c[k], 0, final, seats), final, "watcher %d: chained to %lld", k,
                     final);
        for (int i = 0; i < 8; i++)
            cr_assert_str_eq(seats[i], "available", "watcher %d seat %s", k, SEATS[i]);
        wsc_close(&c[k]);
    }
    redisFree(rc);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

/* The versions kept for a tick are bounded (ring_burst): past it, the watcher gets a snapshot
 * of the current map and its feed goes on from there. */
Test(live, a_burst_past_the_bound_falls_back_to_one_snapshot)
{
    seatd_live_opts_t lo = {.tick_ms = 1000, .ring = 2, .ring_burst = 4};
    int n = burst_snapshots(&lo);
    cr_assert_geq(n, 1, "a snapshot once a tick outran 4 versions (got %d)", n);
}

/*
 * permessage-deflate: a client that offers it gets the extension in the 101, and every frame
 * of 256 bytes or more compressed (the same JSON as an uncompressed watcher's, in a fraction
 * of the bytes); its own compressed command is understood.
 */
Test(live, compresses_frames_for_a_client_that_offers_permessage_deflate)
{
    static char names[MANY_SEATS][8];
    const char *seats[MANY_SEATS + 1];
    many_seats(names, seats, 'A');
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    wsc_t z, p;
    cr_assert_eq(wsc_connect_ext(&z, srv.port, "/v1/shows/1/seats/ws",
                                 "permessage-deflate; client_max_window_bits"),
                 101);
    cr_assert(z.deflate, "the 101 takes the offer");
    cr_assert_eq(wsc_connect(&p, srv.port, "/v1/shows/1/seats/ws"), 101);
    cr_assert_not(p.deflate);

    cJSON *jz = wsc_next(&z, 3000), *jp = wsc_next(&p, 3000);
    cr_assert_not_null(jz);
    cr_assert_not_null(jp);
    cr_assert_str_eq(wsc_type(jz), "snapshot");
    cr_assert(cJSON_Compare(jz, jp, 1), "the same snapshot, compressed or not");
    cr_assert_lt(z.rx_bytes * 3, p.rx_bytes, "compressed: %zu bytes, plain: %zu", z.rx_bytes,
                 p.rx_bytes);
    cJSON_Delete(jz);
    cJSON_Delete(jp);

    size_t z0 = z.rx_bytes, p0 = p.rx_bytes;
    cr_assert_eq(th_hold(&t, &r, "1", "u1", seats + 80, 60000, 20, NULL), 0, "A81..A90");
    jz = wsc_next(&z, 3000);
    jp = wsc_next(&p, 3000);
    cr_assert_str_eq(wsc_type(jz), "delta");
    cr_assert(cJSON_Compare(jz, jp, 1), "the same delta, compressed or not");
    cr_assert_lt(z.rx_bytes - z0, p.rx_bytes - p0);
    cJSON_Delete(jz);
    cJSON_Delete(jp);

    /* The client's own command, compressed: a resync answers a snapshot. */
    const char *cmd = "{\"type\":\"resync\"}";
    seatd_buf_t c = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_deflate(cmd, strlen(cmd), &c), 0);
    cr_assert_eq(seatd_ws_send_deflated(z.ws, SEATD_WS_TEXT, c.data, c.len), 0);
    wsc_flush(&z);
    seatd_buf_free(&c);
    expect_snapshot(&z, 1, "A90", "held");

    wsc_close(&z);
    wsc_close(&p);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

Test(live, sends_a_fresh_snapshot_after_a_version_gap)
{
    th_t t;
    tls_t srv;
    wsc_t c;
    watch_fresh_show(&t, &srv, &c, NULL, 60000);

    /* Versions 1..4 were "missed": only version 5 is published. */
    redisContext *rc = seatd_test_redis_connect();
    cr_assert_eq(th_int(rc, "SET {s:1}:ver 5"), -1000, "a status reply");
    cr_assert_eq(th_int(rc, "SETBIT {s:1}:held 6 1"), 0);
    cr_assert_geq(th_int(rc, "PUBLISH {s:1}:ch %s", "{\"v\":5,\"c\":[[\"A7\",\"held\"]]}"), 1);
    expect_snapshot(&c, 5, "A7", "held");

    wsc_close(&c);
    redisFree(rc);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

Test(live, shows_an_abandoned_hold_available_after_its_deadline_without_any_request)
{
    th_t t;
    tls_t srv;
    wsc_t c;
    watch_fresh_show(&t, &srv, &c, NULL, 1000); /* 1 s holds */

    /* Through HTTP, so the worker's finish hook hints the sweeper. */
    char hdr[1024];
    tls_auth_headers("alice", hdr, sizeof(hdr));
    const char *body = "{\"seatIds\":[\"A2\"]}";
    seatd_test_http_response_t res;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", srv.port, "POST", "/v1/shows/1/holds", hdr,
                                         body, strlen(body), &res),
                 0);
    cr_assert_eq(res.status, 201, "%.*s", (int)res.body_len, res.body);
    cJSON *hold = cJSON_ParseWithLength(res.body, res.body_len);
    const cJSON *hid = cJSON_GetObjectItemCaseSensitive(hold, "holdId");
    cr_assert(cJSON_IsString(hid));
    redisContext *rc = seatd_test_redis_connect();
    char exp[32] = "";
    th_str(rc, exp, sizeof(exp), "HGET {s:1}:hold:%s expiresAt", hid->valuestring);
    long long deadline = atoll(exp);
    cr_assert_gt(deadline, 0);
    cJSON_Delete(hold);
    seatd_test_http_response_free(&res);

    cJSON *j = wsc_next(&c, 3000);
    cr_assert_str_eq(wsc_delta_seat(j, "A2"), "held");
    cJSON_Delete(j);
    j = wsc_next(&c, 20000); /* a deadline only a lost expiry reaches */
    long long got = wsc_now_ms();
    cr_assert_not_null(j, "the expiry arrives without any other request");
    cr_assert_str_eq(wsc_delta_seat(j, "A2"), "available");
    cJSON_Delete(j);
    long long lag = got - deadline;
    fprintf(stderr, "live: expiry lag %lld ms after the deadline (watcher receipt)\n", lag);
    cr_assert_geq(lag, 0, "never before the deadline");
    cr_assert_eq(th_int(rc, "BITCOUNT {s:1}:held"), 0);

    wsc_close(&c);
    redisFree(rc);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

Test(live, refuses_plain_requests_and_unknown_shows)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", SEATS, 60000), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    seatd_test_http_response_t res;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", srv.port, "GET", "/v1/shows/1/seats/ws", NULL,
                                         NULL, 0, &res),
                 0);
    cr_assert_eq(res.status, 400);
    seatd_test_http_response_free(&res);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/999/seats/ws"), 404);
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws?since=x"), 400);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

Test(live, closes_a_client_that_cannot_keep_up)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    static char names[MANY_SEATS][8];
    const char *many[MANY_SEATS + 1];
    many_seats(names, many, 'B');
    cr_assert_eq(th_create_show(&t, "1", many, 60000), 0);
    seatd_live_opts_t lo = {.max_queue_bytes = 1024}; /* smaller than one snapshot */
    tls_t srv;
    cr_assert_eq(tls_start(&srv, &lo), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cr_assert_null(wsc_next(&c, 3000));
    cr_assert(c.closed);
    cr_assert_eq(c.close_status, 1008);
    wsc_close(&c);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}
