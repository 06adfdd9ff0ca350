/* Integration tests for sales channels (issue 30; lua/channels.lua and the hold Function's
 * checks): seats and places kept for a channel are held only with it, under a race too; the
 * release (an admin's, or at its time) is one version with a delta; against the runner's
 * redis-server. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "racer.h"
#include "store_harness.h"

static const char *const seats4[] = {"C1", "C2", "C3", "C4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_channels, .init = setup, .timeout = 60);

/* Show "1": seats C1-C4 and FLOOR (capacity 5); channel boxoffice keeps C1, C2 and 2 FLOOR
 * places until 'release_at' (epoch ms, 0: none). */
static int create_show(th_t *t, long long release_at)
{
    char channels[256];
    snprintf(channels, sizeof(channels),
             "{\"boxoffice\":{\"seatIds\":[\"C1\",\"C2\"],\"areas\":{\"FLOOR\":2},"
             "\"releaseAt\":%lld}}",
             release_at);
    return th_create_show_with(
        t, "1", seats4, 60000, "{\"standard\":1200}",
        "{\"areas\":[{\"id\":\"FLOOR\",\"capacity\":5,\"tier\":\"standard\"}]}", channels);
}

/* A hold by 'owner' carrying the token channels 'channels' ("" for none). */
static int hold(th_t *t, th_res_t *r, const char *owner, const char *const *seats,
                const char *areas, const char *channels, long long ttl_ms)
{
    char hold_id[SEATD_ID_MAX], request[128];
    size_t n = 0;
    while (seats && seats[n])
        n++;
    if (!areas[0] && !channels[0])
        snprintf(request, sizeof(request), "named");
    else
        snprintf(request, sizeof(request), "named;%s%s%s", areas, channels[0] ? ";" : "", channels);
    seatd_hold_args_t a;
    th_res_clear(r);
    if (th_hold_args(&a, hold_id, "1", owner, seats, n, NULL, ttl_ms, 0) < 0)
        return -1;
    a.request = request;
    return th_finish(t, r, seatd_store_hold(t->store, &a, th_on_result, r));
}

static int seatmap_areas(th_t *t, th_res_t *r)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_seatmap(t->store, "1", th_on_result, r));
}

Test(lua_channels, kept_seats_and_places_are_held_only_with_the_channel)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 0), 0);
    const char *c1[] = {"C1", NULL}, *c3[] = {"C3", NULL};
    cr_assert_eq(hold(&t, &r, "alice", c1, "", "", 0), SEATD_ENOTFORSALE);
    cr_assert_str_eq(r.detail, "C1");
    cr_assert_eq(hold(&t, &r, "alice", c1, "", "partner", 0), SEATD_ENOTFORSALE,
                 "another channel does not open it");
    cr_assert_eq(hold(&t, &r, "alice", c3, "", "", 0), 0, "a seat no channel keeps");
    cr_assert_eq(hold(&t, &r, "bob", c1, "", "boxoffice", 0), 0, "err %d %s", r.err, r.detail);

    /* FLOOR: 5 places, 2 kept: the public sees and gets 3 */
    cr_assert_eq(seatmap_areas(&t, &r), 0);
    cr_assert_str_eq(th_get(&r, "areas"), "FLOOR:5:3");
    cr_assert_eq(th_get(&r, "blocked")[0] & 0xC0, 0xC0, "C1 and C2 are in the blocked bitmap");
    cr_assert_eq(hold(&t, &r, "carol", NULL, "FLOOR:4", "", 0), SEATD_EAREASOLDOUT);
    cr_assert_eq(hold(&t, &r, "carol", NULL, "FLOOR:3", "", 0), 0);
    cr_assert_eq(hold(&t, &r, "dave", NULL, "FLOOR:1", "", 0), SEATD_EAREASOLDOUT);
    cr_assert_eq(hold(&t, &r, "erin", NULL, "FLOOR:2", "boxoffice", 0), 0, "err %d %s", r.err,
                 r.detail);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "HEXISTS {s:1}:akept FLOOR|boxoffice"), 0,
                 "taken from the quota, none left behind");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_channels, a_release_is_one_version_with_a_delta_and_opens_the_seats)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 0), 0);
    redisContext *s = seatd_test_redis_connect();
    redisReply *rep = redisCommand(s, "SUBSCRIBE {s:1}:ch");
    freeReplyObject(rep);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_channel_release(t.store, "1", "boxoffice", th_on_result, &r)),
        0, "err %d %s", r.err, r.detail);
    cr_assert_eq(th_get_ll(&r, "version"), 1);
    cr_assert_eq(redisGetReply(s, (void **)&rep), REDIS_OK);
    cr_assert_str_eq(rep->element[2]->str,
                     "{\"v\":1,\"c\":[[\"C1\",\"available\"],[\"C2\",\"available\"]],"
                     "\"a\":{\"FLOOR\":5}}");
    freeReplyObject(rep);
    redisFree(s);
    const char *c1[] = {"C1", NULL};
    cr_assert_eq(hold(&t, &r, "alice", c1, "FLOOR:5", "", 0), 0, "everyone's now");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_channel_release(t.store, "1", "boxoffice", th_on_result, &r)),
        SEATD_ENOTFOUND, "released once");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_channels, a_channel_is_released_at_its_time_and_a_held_kept_seat_returns_to_it)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    long long now = th_redis_ms(c);
    cr_assert_eq(create_show(&t, now + 600), 0);
    const char *c2[] = {"C2", NULL};
    /* a channel hold that expires before the release: C2 goes back to the channel */
    cr_assert_eq(hold(&t, &r, "bob", c2, "", "boxoffice", 200), 0);
    redisContext *s = seatd_test_redis_connect();
    redisReply *rep = redisCommand(s, "SUBSCRIBE {s:1}:ch");
    freeReplyObject(rep);
    th_sleep_ms(260);
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    cr_assert_eq(redisGetReply(s, (void **)&rep), REDIS_OK);
    cr_assert_str_eq(rep->element[2]->str, "{\"v\":2,\"c\":[[\"C2\",\"unavailable\"]]}");
    freeReplyObject(rep);
    cr_assert_eq(hold(&t, &r, "alice", c2, "", "", 0), SEATD_ENOTFORSALE);
    /* the reaper tells the sweeper when to come back: the release time */
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "next"), now + 600);
    cr_assert_eq(th_wait_redis_ms(c, now + 610, 3000), 0);
    cr_assert_eq(hold(&t, &r, "alice", c2, "FLOOR:5", "", 0), 0, "released at its time");
    cr_assert_eq(th_int(c, "EXISTS {s:1}:blocked"), 0);
    redisFree(s);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------- the race */

enum { RACERS = 33 };

/* Racer 0 carries the channel. Exit codes: 0 held, 1 NOT_FOR_SALE, 2 CONFLICT, 3+ other. */
static int racer(int i, void *arg)
{
    (void)arg;
    th_t t;
    th_res_t r = {0};
    char owner[16];
    snprintf(owner, sizeof(owner), "user%d", i);
    if (th_open(&t) != 0)
        return 10;
    seatd_test_racer_ready_and_wait();
    const char *c1[] = {"C1", NULL};
    int rc = hold(&t, &r, owner, c1, "", i == 0 ? "boxoffice" : "", 0);
    int code = rc == 0 ? 0 : rc == SEATD_ENOTFORSALE ? 1 : rc == SEATD_ECONFLICT ? 2 : 3;
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(lua_channels, a_kept_seat_is_never_held_without_the_channel_under_a_race)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 0), 0);
    cr_assert_eq(th_close(&t), 0);
    int status[RACERS];
    cr_assert_eq(seatd_test_race(RACERS, racer, NULL, status, NULL, 30000), 0);
    cr_assert_eq(status[0], 0, "the channel's buyer holds it");
    for (int i = 1; i < RACERS; i++)
        cr_assert(status[i] == 1 || status[i] == 2, "racer %d exited %d", i, status[i]);
    redisContext *c = seatd_test_redis_connect();
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:seat:C1"), 1);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s owner", v), 1);
    cr_assert_str_eq(v, "user0");
    redisFree(c);
}

/* PUT of channel boxoffice on show "1": keeping C1, C2 and the places 'areas'. */
static int channel_set(th_t *t, th_res_t *r, const char *areas)
{
    seatd_layout_t *l = NULL;
    char arr[1024];
    th_seats_json(arr, sizeof(arr), seats4);
    cJSON *doc = cJSON_Parse(arr);
    if (seatd_layout_from_json(doc, NULL, &l, NULL, 0) < 0)
        return -1;
    const char *kept[] = {"C1", "C2"};
    seatd_channel_args_t a = {.show_id = "1",
                              .name = "boxoffice",
                              .layout = l,
                              .seat_ids = kept,
                              .nseats = 2,
                              .areas = areas};
    th_res_clear(r);
    int rc = th_finish(t, r, seatd_store_channel_set(t->store, &a, th_on_result, r));
    seatd_layout_free(l);
    cJSON_Delete(doc);
    return rc;
}

Test(lua_channels, places_return_to_the_quota_they_came_from_unless_an_admin_set_it_again)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 0), 0); /* FLOOR: 5 places, 2 kept for boxoffice */
    redisContext *c = seatd_test_redis_connect();
    char h1[SEATD_ID_MAX], h2[SEATD_ID_MAX];
    cr_assert_eq(hold(&t, &r, "bob", NULL, "FLOOR:1", "boxoffice", 0), 0, "%d %s", r.err, r.detail);
    snprintf(h1, sizeof(h1), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_release(&t, &r, h1, "bob"), 0);
    cr_assert_eq(th_int(c, "HGET {s:1}:akept FLOOR|boxoffice"), -1000, "a string, not an int");
    char v[16];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:akept FLOOR|boxoffice"), 1);
    cr_assert_str_eq(v, "2", "the place went back to the quota it came from");

    /* taken from the quota, then the admin sets the quota again (to 1): the place held is not
     * the new quota's, and goes to the public when it comes back */
    cr_assert_eq(hold(&t, &r, "bob", NULL, "FLOOR:2", "boxoffice", 0), 0, "%d %s", r.err, r.detail);
    snprintf(h2, sizeof(h2), "%s", th_get(&r, "holdId"));
    cr_assert_eq(channel_set(&t, &r, "FLOOR:1"), 0, "%d %s", r.err, r.detail);
    cr_assert_eq(th_release(&t, &r, h2, "bob"), 0);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:akept FLOOR|boxoffice"), 1);
    cr_assert_str_eq(v, "1", "the admin's quota, not 1 + 2");
    cr_assert_eq(seatmap_areas(&t, &r), 0);
    cr_assert_str_eq(th_get(&r, "areas"), "FLOOR:5:4", "5 places, 1 kept, none taken");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
