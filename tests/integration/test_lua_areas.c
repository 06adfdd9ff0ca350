/* Integration tests for standing areas (issue 30) in lua/hold.lua and the scripts that end a
 * hold or a booking: places held with seats all or nothing, capacity never below zero under a
 * race of forked buyers, and every way out (expiry, release, failed payment, cancellation)
 * giving the places back; against the runner's redis-server. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "racer.h"
#include "store_harness.h"

static const char *const seats4[] = {"C1", "C2", "C3", "C4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_areas, .init = setup, .timeout = 60);

/* Show "1": seats C1-C4 (standard, 1200) and FLOOR (capacity 'cap', standing, 800) and BALC
 * (capacity 3, standard). */
static int create_show(th_t *t, long long cap, long long ttl_ms)
{
    char extra[256];
    snprintf(extra, sizeof(extra),
             "{\"areas\":[{\"id\":\"FLOOR\",\"capacity\":%lld,\"tier\":\"standing\"},"
             "{\"id\":\"BALC\",\"capacity\":3,\"tier\":\"standard\"}]}",
             cap);
    return th_create_show_with(t, "1", seats4, ttl_ms, "{\"standard\":1200,\"standing\":800}",
                               extra, NULL);
}

/* A hold of 'seats' (NULL-terminated) and the places text 'areas' ("" for none) by 'owner';
 * the hold id is written to 'hold_id' (SEATD_ID_MAX bytes). */
static int hold(th_t *t, th_res_t *r, const char *owner, const char *const *seats,
                const char *areas, long long ttl_ms, int max, const char *idem, char *hold_id)
{
    size_t n = 0;
    while (seats && seats[n])
        n++;
    char request[128];
    snprintf(request, sizeof(request), "named%s%s", areas[0] ? ";" : "", areas);
    seatd_hold_args_t a;
    th_res_clear(r);
    if (th_hold_args(&a, hold_id, "1", owner, seats, n, idem, ttl_ms, max) < 0)
        return -1;
    a.request = request;
    return th_finish(t, r, seatd_store_hold(t->store, &a, th_on_result, r));
}

static int book_begin(th_t *t, th_res_t *r, const char *hold_id, const char *owner)
{
    char booking_id[SEATD_ID_MAX];
    th_res_clear(r);
    if (seatd_keys_new_id(booking_id, "1", 'b') < 0)
        return -1;
    seatd_book_args_t a = {0};
    a.hold_id = hold_id;
    a.owner = owner;
    a.booking_id = booking_id;
    a.amount = SEATD_BOOK_PRICE_IN_STORE;
    a.currency = "EUR";
    a.payment_method = "tok_ok";
    a.payment_window_ms = 60000;
    return th_finish(t, r, seatd_store_book_begin(t->store, &a, th_on_result, r));
}

static long long taken(redisContext *c, const char *area)
{
    return th_int(c, "EVAL %s 0 %s",
                  "return tonumber(redis.call('HGET', '{s:1}:areas', ARGV[1]) or '0')", area);
}

Test(lua_areas, places_are_held_with_seats_and_priced_into_the_booking)
{
    th_t t;
    th_res_t r = {0};
    char hid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 5, 60000), 0);
    redisContext *c = seatd_test_redis_connect();
    const char *want[] = {"C2", NULL};
    cr_assert_eq(hold(&t, &r, "alice", want, "BALC:1,FLOOR:2", 0, 0, NULL, hid), 0, "err %d %s",
                 r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "seatIds"), "C2");
    cr_assert_str_eq(th_get(&r, "areas"), "BALC:1,FLOOR:2");
    cr_assert_eq(taken(c, "FLOOR"), 2);
    cr_assert_eq(taken(c, "BALC"), 1);
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice %s", hid), 1);
    cr_assert_str_eq(v, "4", "places count against the per-user cap like seats");

    /* the seat map read carries every area's free count */
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_seatmap(t.store, "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "areas"), "FLOOR:5:3,BALC:3:2");

    /* priced in the store: 1200 (C2) + 1200 (BALC, standard) + 2 x 800 (FLOOR, standing) */
    cr_assert_eq(book_begin(&t, &r, hid, "alice"), 0, "err %d %s", r.err, r.detail);
    cr_assert_eq(th_get_ll(&r, "amount"), 4000);
    char bid[SEATD_ID_MAX];
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, bid), 0);
    cr_assert_str_eq(th_get(&r, "areas"), "BALC:1,FLOOR:2");
    cr_assert_eq(taken(c, "FLOOR"), 2, "a booked place stays taken");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice booked"), 1);
    cr_assert_str_eq(v, "4");

    /* cancelled: the places come back, with a version and a delta */
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_cancel(t.store, bid, "alice", 0, th_on_result, &r)),
                 0, "err %d %s", r.err, r.detail);
    cr_assert_eq(taken(c, "FLOOR"), 0);
    cr_assert_eq(taken(c, "BALC"), 0);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice booked"), 1);
    cr_assert_str_eq(v, "0");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_areas, places_alone_are_a_hold_and_a_booking)
{
    th_t t;
    th_res_t r = {0};
    char hid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 5, 60000), 0);
    cr_assert_eq(hold(&t, &r, "alice", NULL, "FLOOR:3", 0, 0, NULL, hid), 0, "err %d %s", r.err,
                 r.detail);
    cr_assert_str_eq(th_get(&r, "seatIds"), "");
    cr_assert_eq(th_get_ll(&r, "version"), 1, "a change of places is a version");
    cr_assert_eq(book_begin(&t, &r, hid, "alice"), 0, "err %d %s", r.err, r.detail);
    cr_assert_eq(th_get_ll(&r, "amount"), 2400);
    char bid[SEATD_ID_MAX];
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, bid), 0, "err %d %s", r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_areas, a_sold_out_area_takes_nothing_and_says_what_is_left)
{
    th_t t;
    th_res_t r = {0};
    char hid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 5, 60000), 0);
    cr_assert_eq(hold(&t, &r, "alice", NULL, "FLOOR:4", 0, 0, NULL, hid), 0);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    const char *want[] = {"C1", NULL};
    cr_assert_eq(hold(&t, &r, "bob", want, "FLOOR:2", 0, 0, "k1", hid), SEATD_EAREASOLDOUT);
    cr_assert_str_eq(r.detail, "FLOOR 1 FLOOR:5:1,BALC:3:3");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused hold changed the keyspace");
    /* a taken seat refuses the places too */
    const char *c1[] = {"C1", NULL};
    cr_assert_eq(hold(&t, &r, "carol", c1, "", 0, 0, NULL, hid), 0);
    cr_assert_eq(hold(&t, &r, "bob", c1, "FLOOR:1", 0, 0, NULL, hid), SEATD_ECONFLICT);
    cr_assert_eq(taken(c, "FLOOR"), 4);
    /* unknown areas, and more than a hold may have */
    cr_assert_eq(hold(&t, &r, "bob", NULL, "PIT:1", 0, 0, NULL, hid), SEATD_EUNKNOWNAREA);
    cr_assert_str_eq(r.detail, "PIT");
    /* a name the parsed areas once kept their list under (a Lua error after reaping) */
    cr_assert_eq(hold(&t, &r, "bob", NULL, "order:1", 0, 0, NULL, hid), SEATD_EUNKNOWNAREA);
    cr_assert_eq(hold(&t, &r, "bob", NULL, "FLOOR:101", 0, 0, NULL, hid), SEATD_ETOOMANY);
    cr_assert_eq(hold(&t, &r, "bob", NULL, "FLOOR:1,BALC:1", 0, 0, NULL, hid), SEATD_EINVAL,
                 "places out of order are malformed");
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_areas, expiry_and_release_give_the_places_back_and_publish_the_count)
{
    th_t t;
    th_res_t r = {0};
    char hid[SEATD_ID_MAX], hid2[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 5, 60000), 0);
    redisContext *c = seatd_test_redis_connect();
    redisContext *s = seatd_test_redis_connect();
    redisReply *rep = redisCommand(s, "SUBSCRIBE {s:1}:ch");
    freeReplyObject(rep);
    cr_assert_eq(hold(&t, &r, "alice", NULL, "FLOOR:2", 200, 0, NULL, hid), 0);
    cr_assert_eq(redisGetReply(s, (void **)&rep), REDIS_OK);
    cr_assert_str_eq(rep->element[2]->str, "{\"v\":1,\"c\":[],\"a\":{\"FLOOR\":3}}");
    freeReplyObject(rep);
    cr_assert_eq(hold(&t, &r, "bob", NULL, "FLOOR:3", 0, 0, NULL, hid2), 0);
    cr_assert_eq(redisGetReply(s, (void **)&rep), REDIS_OK);
    freeReplyObject(rep);
    cr_assert_eq(hold(&t, &r, "carol", NULL, "FLOOR:1", 0, 0, NULL, hid2), SEATD_EAREASOLDOUT);
    th_sleep_ms(260);
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    cr_assert_eq(taken(c, "FLOOR"), 3, "the expired hold's places are free again");
    cr_assert_eq(redisGetReply(s, (void **)&rep), REDIS_OK);
    cr_assert_str_eq(rep->element[2]->str, "{\"v\":3,\"c\":[],\"a\":{\"FLOOR\":2}}");
    freeReplyObject(rep);
    cr_assert_eq(hold(&t, &r, "carol", NULL, "FLOOR:1", 0, 0, NULL, hid), 0);
    cr_assert_eq(th_release(&t, &r, hid, "carol"), 0);
    cr_assert_eq(taken(c, "FLOOR"), 3);
    redisFree(s);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_areas, places_count_against_the_per_user_limit_and_replay_with_their_key)
{
    th_t t;
    th_res_t r = {0};
    char hid[SEATD_ID_MAX], first[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, 50, 60000), 0);
    const char *two[] = {"C1", "C2", NULL};
    cr_assert_eq(hold(&t, &r, "alice", two, "FLOOR:2", 0, 6, "k", hid), 0);
    snprintf(first, sizeof(first), "%s", th_get(&r, "holdId"));
    cr_assert_eq(hold(&t, &r, "alice", two, "FLOOR:2", 0, 6, "k", hid), 0);
    cr_assert_str_eq(th_get(&r, "replayed"), "1");
    cr_assert_str_eq(th_get(&r, "holdId"), first);
    cr_assert_eq(hold(&t, &r, "alice", two, "FLOOR:3", 0, 6, "k", hid), SEATD_EIDEMMISMATCH,
                 "other places under the same key");
    cr_assert_eq(hold(&t, &r, "alice", NULL, "FLOOR:3", 0, 6, NULL, hid), SEATD_ELIMIT);
    cr_assert_str_eq(r.detail, "4+3>6");
    cr_assert_eq(hold(&t, &r, "alice", NULL, "FLOOR:2", 0, 6, NULL, hid), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------- the race */

enum { RACERS = 48, CAPACITY = 30 };

/* Exit codes: 0 held 2 places, 1 AREA_SOLD_OUT, 2+ anything else. */
static int area_racer(int i, void *arg)
{
    (void)arg;
    th_t t;
    th_res_t r = {0};
    char owner[16], hid[SEATD_ID_MAX];
    snprintf(owner, sizeof(owner), "user%d", i);
    if (th_open(&t) != 0)
        return 10;
    th_res_t warm = {0};
    if (th_finish(&t, &warm, seatd_store_show_get(t.store, "1", th_on_result, &warm)) != 0)
        return 12;
    th_res_clear(&warm);
    seatd_test_racer_ready_and_wait();
    int rc = hold(&t, &r, owner, NULL, "FLOOR:2", 0, 0, NULL, hid);
    int code = rc == 0 ? 0 : rc == SEATD_EAREASOLDOUT ? 1 : 2;
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(lua_areas, racers_far_more_than_the_capacity_hold_exactly_the_capacity)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_show(&t, CAPACITY, 60000), 0);
    cr_assert_eq(th_close(&t), 0);
    int status[RACERS], won = 0, lost = 0;
    cr_assert_eq(seatd_test_race(RACERS, area_racer, NULL, status, NULL, 30000), 0);
    for (int i = 0; i < RACERS; i++) {
        cr_assert(status[i] == 0 || status[i] == 1, "racer %d exited %d", i, status[i]);
        won += status[i] == 0;
        lost += status[i] == 1;
    }
    cr_assert_eq(won, CAPACITY / 2);
    cr_assert_eq(lost, RACERS - CAPACITY / 2);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(taken(c, "FLOOR"), CAPACITY, "the store agrees");
    cr_assert_eq(th_int(c, "EVAL %s 0",
                        "local n = 0 for _, k in ipairs(redis.call('KEYS', '{s:1}:hold:*')) do "
                        "local a = redis.call('HGET', k, 'areas') or '' "
                        "n = n + (tonumber(string.match(a, 'FLOOR:(%d+)')) or 0) end return n"),
                 CAPACITY, "the holds' places add up to the count");
    redisFree(c);
}
