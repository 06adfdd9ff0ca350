/*
 * Integration tests for standing areas (issue 30) on the live seat map (flows/live*.c): the
 * snapshot carries every area's capacity and free count, a delta the last free count of each
 * area that changed in its range (a change of places alone is a version and a frame), from a
 * coalescing tick as from a ?since= reconnect, and a snapshot built from the worker's live
 * state (no read) has the areas the deltas brought. A real worker in a forked child, real
 * Redis, holds through store.c.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "store_harness.h"
#include "test_live_client.h"
#include "test_live_server.h"

static const char *const SEATS[] = {"C1", "C2", "C3", "C4", NULL};

static void live_areas_init(void)
{
    seatd_test_redis_flushall();
}

TestSuite(live_areas, .init = live_areas_init, .timeout = 40);

/* Show "1": seats C1-C4 and the areas FLOOR (capacity 5, standing) and BALC (capacity 3). */
static int create_show(th_t *t)
{
    char layout[1024];
    size_t off = (size_t)snprintf(layout, sizeof(layout), "{\"showId\":\"1\",\"seats\":[");
    for (size_t n = 0; SEATS[n]; n++)
        off += (size_t)snprintf(layout + off, sizeof(layout) - off,
                                "%s{\"id\":\"%s\",\"row\":\"C\",\"number\":%zu,"
                                "\"tier\":\"standard\",\"x\":%zu,\"y\":0}",
                                n ? "," : "", SEATS[n], n + 1, n);
    snprintf(layout + off, sizeof(layout) - off, "]}");
    seatd_show_args_t a = {0};
    a.show_id = "1";
    a.title = "Areas";
    a.starts_at_ms = 1800000000000LL;
    a.hold_ttl_ms = 60000;
    a.price_tiers_json = "{\"standard\":1200,\"standing\":800}";
    a.layout_json = layout;
    a.seat_ids = SEATS;
    a.nseats = 4;
    a.extra_json = "{\"areas\":[{\"id\":\"FLOOR\",\"capacity\":5,\"tier\":\"standing\"},"
                   "{\"id\":\"BALC\",\"capacity\":3,\"tier\":\"standard\"}]}";
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

/* A hold by 'owner' of 'seat' (NULL: none) and the places text 'places' ("" for none, else
 * "BALC:1,FLOOR:2", sorted by id); its id goes to 'hold_id' (SEATD_ID_MAX bytes). Returns the
 * version it made, or -1. */
static long long hold(th_t *t, const char *owner, const char *seat, const char *places,
                      char *hold_id)
{
    const char *seats[] = {seat, NULL};
    char request[128];
    snprintf(request, sizeof(request), "named%s%s", places[0] ? ";" : "", places);
    seatd_hold_args_t a;
    th_res_t r = {0};
    if (th_hold_args(&a, hold_id, "1", owner, seat ? seats : NULL, seat ? 1 : 0, NULL, 60000, 0) <
        0)
        return -1;
    a.request = request;
    int rc = th_finish(t, &r, seatd_store_hold(t->store, &a, th_on_result, &r));
    long long v = rc == 0 ? th_get_ll(&r, "version") : -1;
    th_res_clear(&r);
    return v;
}

/* Releases 'hold_id' of 'owner'; returns the version it made, or -1. */
static long long release(th_t *t, const char *hold_id, const char *owner)
{
    th_res_t r = {0};
    long long v = th_release(t, &r, hold_id, owner) == 0 ? th_get_ll(&r, "version") : -1;
    th_res_clear(&r);
    return v;
}

/* The frame's "areas" member, or NULL. */
static const cJSON *frame_areas(const cJSON *j)
{
    return cJSON_GetObjectItemCaseSensitive(j, "areas");
}

/* In a snapshot's "areas": area 'id' has 'capacity' and 'available'. */
static void expect_snapshot_area(const cJSON *j, const char *id, long long capacity,
                                 long long available)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(frame_areas(j), id);
    cr_assert(cJSON_IsObject(a), "area %s in the snapshot", id);
    cr_assert_eq(wsc_int(a, "capacity"), capacity, "%s capacity", id);
    cr_assert_eq(wsc_int(a, "available"), available, "%s available", id);
}

/* The free count of area 'id' in a delta's "areas", or -1 when it is not there. */
static long long delta_area(const cJSON *j, const char *id)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(frame_areas(j), id);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

static int members(const cJSON *o)
{
    return cJSON_IsObject(o) ? cJSON_GetArraySize(o) : -1;
}

/* The next frame of 'c': a delta from 'from' to 'to' (both checked). Owned: cJSON_Delete. */
static cJSON *expect_delta(wsc_t *c, long long from, long long to)
{
    cJSON *j = wsc_next(c, 3000);
    cr_assert_not_null(j, "a delta %lld..%lld", from, to);
    cr_assert_str_eq(wsc_type(j), "delta");
    cr_assert_eq(wsc_int(j, "fromVersion"), from);
    cr_assert_eq(wsc_int(j, "version"), to);
    return j;
}

Test(live_areas, snapshot_has_the_areas_and_each_change_of_places_is_a_delta)
{
    th_t t;
    char h1[SEATD_ID_MAX], h2[SEATD_ID_MAX], h3[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t), 0);
    cr_assert_eq(hold(&t, "u1", NULL, "FLOOR:2", h1), 1);

    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_not_null(j, "a snapshot first");
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 1);
    cr_assert_str_eq(wsc_snapshot_seat(j, "C1"), "available");
    cr_assert_eq(members(frame_areas(j)), 2, "every area of the show");
    expect_snapshot_area(j, "FLOOR", 5, 3);
    expect_snapshot_area(j, "BALC", 3, 3);
    cJSON_Delete(j);

    /* places alone: "c":[] on the channel, still a version and a frame */
    cr_assert_eq(hold(&t, "u2", NULL, "BALC:1", h2), 2);
    j = expect_delta(&c, 2, 2);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "changes")), 0);
    cr_assert_eq(members(frame_areas(j)), 1, "only the area that changed");
    cr_assert_eq(delta_area(j, "BALC"), 2);
    cJSON_Delete(j);

    /* a seat and places in one hold: one version, both in its frame */
    cr_assert_eq(hold(&t, "u3", "C1", "FLOOR:1", h3), 3);
    j = expect_delta(&c, 3, 3);
    cr_assert_str_eq(wsc_delta_seat(j, "C1"), "held");
    cr_assert_eq(members(frame_areas(j)), 1);
    cr_assert_eq(delta_area(j, "FLOOR"), 2);
    cJSON_Delete(j);

    /* a seat alone: no "areas" member */
    cr_assert_eq(hold(&t, "u4", "C2", "", h2), 4);
    j = expect_delta(&c, 4, 4);
    cr_assert_str_eq(wsc_delta_seat(j, "C2"), "held");
    cr_assert_null(frame_areas(j), "no area changed");
    cJSON_Delete(j);

    /* places given back: the area's count goes up again */
    cr_assert_eq(release(&t, h1, "u1"), 5);
    j = expect_delta(&c, 5, 5);
    cr_assert_eq(members(frame_areas(j)), 1);
    cr_assert_eq(delta_area(j, "FLOOR"), 4);
    cJSON_Delete(j);

    wsc_close(&c);
    cr_assert_eq(tls_stop(&srv), 0, "the worker drains and closes its loop");
    cr_assert_eq(th_close(&t), 0);
}

Test(live_areas, a_show_without_areas_has_no_areas_member)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", SEATS, 60000), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_null(frame_areas(j));
    cJSON_Delete(j);
    const char *c1[] = {"C1", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "u1", c1, 60000, 8, NULL), 0);
    j = expect_delta(&c, 1, 1);
    cr_assert_null(frame_areas(j));
    cJSON_Delete(j);
    wsc_close(&c);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

/* The free counts of FLOOR and BALC after each version 1..STEPS, and whether it changed them. */
#define STEPS 6
typedef struct {
    long long floor, balc;
    int floor_changed, balc_changed;
} step_t;

/*
 * Versions land in one tick of a second: the watcher gets them coalesced, and each delta's
 * "areas" has exactly the areas that changed in its range, each with its count after the
 * range's last version, not its first or its lowest (FLOOR goes 5 -> 3 -> 2 -> 4 -> 1, BALC
 * 3 -> 2 -> 1).
 */
Test(live_areas, a_coalesced_delta_has_the_last_count_of_each_area_changed_in_its_range)
{
    seatd_live_opts_t lo = {.tick_ms = 1000};
    th_t t;
    char h1[SEATD_ID_MAX], h2[SEATD_ID_MAX], h3[SEATD_ID_MAX], h4[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, &lo), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 0);
    expect_snapshot_area(j, "FLOOR", 5, 5);
    cJSON_Delete(j);

    /* (the snapshot's tick just ran: these land well within the next one) */
    step_t want[STEPS + 1] = {{5, 3, 0, 0}};
    cr_assert_eq(hold(&t, "u1", NULL, "FLOOR:2", h1), 1);
    want[1] = (step_t){3, 3, 1, 0};
    cr_assert_eq(hold(&t, "u2", NULL, "BALC:1,FLOOR:1", h2), 2);
    want[2] = (step_t){2, 2, 1, 1};
    cr_assert_eq(hold(&t, "u3", "C1", "", h3), 3);
    want[3] = (step_t){2, 2, 0, 0};
    cr_assert_eq(release(&t, h1, "u1"), 4);
    want[4] = (step_t){4, 2, 1, 0};
    cr_assert_eq(hold(&t, "u4", "C2", "FLOOR:3", h4), 5);
    want[5] = (step_t){1, 2, 1, 0};
    cr_assert_eq(hold(&t, "u5", "C3", "BALC:1", h1), 6);
    want[6] = (step_t){1, 1, 0, 1};

    long long v = 0;
    int widest = 0;
    while (v < STEPS) {
        j = wsc_next(&c, 3000);
        cr_assert_not_null(j, "frames up to version %d (at %lld)", STEPS, v);
        cr_assert_str_eq(wsc_type(j), "delta");
        cr_assert_eq(wsc_int(j, "fromVersion"), v + 1, "deltas chain");
        long long to = wsc_int(j, "version");
        cr_assert(to > v && to <= STEPS);
        int floor_changed = 0, balc_changed = 0;
        for (long long k = v + 1; k <= to; k++) {
            floor_changed |= want[k].floor_changed;
            balc_changed |= want[k].balc_changed;
        }
        cr_assert_eq(delta_area(j, "FLOOR"), floor_changed ? want[to].floor : -1,
                     "FLOOR in %lld..%lld", v + 1, to);
        cr_assert_eq(delta_area(j, "BALC"), balc_changed ? want[to].balc : -1, "BALC in %lld..%lld",
                     v + 1, to);
        if (!floor_changed && !balc_changed)
            cr_assert_null(frame_areas(j));
        if (to - v > widest)
            widest = (int)(to - v);
        v = to;
        cJSON_Delete(j);
    }
    cr_assert_geq(widest, 3, "versions were coalesced (%d at most)", widest);

    wsc_close(&c);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

/*
 * A client that reconnects with ?since= in the ring gets the areas that changed after its
 * version (and only those); one that connects afresh gets a snapshot the worker builds from
 * its live state (no seat-map read) with the counts the deltas brought.
 */
Test(live_areas, a_reconnect_with_since_gets_the_areas_changed_after_it)
{
    th_t t;
    char h1[SEATD_ID_MAX], h2[SEATD_ID_MAX], h3[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);

    /* B keeps the show watched (and the worker's ring alive) while A is away. */
    wsc_t a, b;
    cr_assert_eq(wsc_connect(&b, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&b, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cJSON_Delete(j);

    cr_assert_eq(hold(&t, "u1", NULL, "FLOOR:1", h1), 1); /* FLOOR 4 */
    cr_assert_eq(hold(&t, "u2", "C1", "", h2), 2);
    cr_assert_eq(hold(&t, "u3", NULL, "BALC:2", h3), 3); /* BALC 1 */
    for (long long v = 0; v < 3;) {
        j = wsc_next(&b, 3000);
        cr_assert_not_null(j);
        cr_assert_str_eq(wsc_type(j), "delta");
        v = wsc_int(j, "version");
        cJSON_Delete(j);
    }
    long long resyncs = tls_metric(&srv, "seatd_live_resyncs_total");
    cr_assert_geq(resyncs, 1);

    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws?since=1"), 101);
    j = expect_delta(&a, 2, 3);
    cr_assert_str_eq(wsc_delta_seat(j, "C1"), "held");
    cr_assert_eq(members(frame_areas(j)), 1, "FLOOR changed before version 2");
    cr_assert_eq(delta_area(j, "BALC"), 1);
    cJSON_Delete(j);
    wsc_close(&a);

    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws?since=0"), 101);
    j = expect_delta(&a, 1, 3);
    cr_assert_eq(members(frame_areas(j)), 2);
    cr_assert_eq(delta_area(j, "FLOOR"), 4);
    cr_assert_eq(delta_area(j, "BALC"), 1);
    cJSON_Delete(j);
    wsc_close(&a);

    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws?since=2"), 101);
    j = expect_delta(&a, 3, 3);
    cr_assert_eq(members(frame_areas(j)), 1);
    cr_assert_eq(delta_area(j, "BALC"), 1);
    cJSON_Delete(j);
    wsc_close(&a);

    cr_assert_eq(wsc_connect(&a, srv.port, "/v1/shows/1/seats/ws"), 101);
    j = wsc_next(&a, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cr_assert_eq(wsc_int(j, "version"), 3);
    cr_assert_str_eq(wsc_snapshot_seat(j, "C1"), "held");
    expect_snapshot_area(j, "FLOOR", 5, 4);
    expect_snapshot_area(j, "BALC", 3, 1);
    cJSON_Delete(j);
    cr_assert_eq(tls_metric(&srv, "seatd_live_resyncs_total"), resyncs,
                 "the snapshot came from the deltas applied, not from a read");

    wsc_close(&a);
    wsc_close(&b);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}
