/* Integration tests for lua/release.lua and hold_get through store.c. */
#include <criterion/criterion.h>

#include "store_harness.h"

static const char *const seats4[] = {"A1", "A2", "A3", "A4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_release, .init = setup, .timeout = 30);

Test(lua_release, frees_the_seats_and_answers_the_same_twice)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *want[] = {"A1", "A2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_release(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "RELEASED");
    cr_assert_eq(th_get_ll(&r, "version"), 2);
    cr_assert_eq(th_release(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "RELEASED");
    cr_assert_eq(th_get_ll(&r, "version"), 2, "a repeat changes nothing");

    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1 {s:1}:seat:A2"), 0);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 0);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 0);
    cr_assert_eq(th_int(c, "HLEN {s:1}:user:alice"), 0);
    redisFree(c);
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "RELEASED");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", want, 0, 0, NULL), 0, "the seats are free again");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_release, a_stranger_can_neither_read_nor_release_a_hold)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *want[] = {"A3", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    cr_assert_eq(th_release(&t, &r, hold_id, "mallory"), SEATD_ENOTFOUND);
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "mallory"), SEATD_ENOTFOUND);
    cr_assert_eq(th_hold_get(&t, &r, "1-h00000000000000000000", "alice"), SEATD_ENOTFOUND);
    cr_assert_eq(th_release(&t, &r, "not-an-id", "alice"), SEATD_EBADID);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before);
    free(before);
    free(after);
    redisFree(c);
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "owner"), "alice");
    cr_assert_str_eq(th_get(&r, "seatIds"), "A3");
    cr_assert_str_eq(th_get(&r, "status"), "HELD");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_release, refuses_a_hold_that_is_paying_or_expired)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *a[] = {"A1", NULL}, *b[] = {"A2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a, 0, 0, NULL), 0);
    char paying[SEATD_ID_MAX], expiring[SEATD_ID_MAX];
    snprintf(paying, sizeof(paying), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", paying, "alice", 60000), 0);
    cr_assert_eq(th_release(&t, &r, paying, "alice"), SEATD_ESTATE);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b, 100, 0, NULL), 0);
    snprintf(expiring, sizeof(expiring), "%s", th_get(&r, "holdId"));
    th_sleep_ms(150);
    cr_assert_eq(th_release(&t, &r, expiring, "alice"), SEATD_EEXPIRED);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 1"), 0, "the expired hold was reaped");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* The compensation of a hold answered 5xx releases it only if no client has it yet: once a
 * retry with the same idempotency key was answered the hold (a replay), it stays. */
Test(lua_release, a_hold_a_replay_gave_to_its_buyer_is_not_released_by_compensation)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *a1[] = {"A1", NULL}, *a2[] = {"A2", NULL};
    char unseen[SEATD_ID_MAX], replayed[SEATD_ID_MAX];

    /* Never replayed: compensation releases it. */
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a1, 0, 0, "k-1"), 0);
    snprintf(unseen, sizeof(unseen), "%s", th_get(&r, "holdId"));
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r,
                  seatd_store_release_unclaimed(t.store, unseen, "alice", th_on_result, &r)),
        0, "err %d", r.err);
    cr_assert_str_eq(th_get(&r, "status"), "RELEASED");

    /* Replayed to its buyer: compensation refuses, nothing changes. */
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a2, 0, 0, "k-2"), 0);
    snprintf(replayed, sizeof(replayed), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a2, 0, 0, "k-2"), 0);
    cr_assert_str_eq(th_get(&r, "replayed"), "1");
    cr_assert_str_eq(th_get(&r, "holdId"), replayed);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r,
                  seatd_store_release_unclaimed(t.store, replayed, "bob", th_on_result, &r)),
        SEATD_ESTATE);
    redisContext *c = seatd_test_redis_connect();
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:seat:A2"), 1);
    cr_assert_str_eq(v, replayed, "bob still holds A2");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s status", replayed), 1);
    cr_assert_str_eq(v, "HELD");
    redisFree(c);
    /* The owner's own release still works. */
    cr_assert_eq(th_release(&t, &r, replayed, "bob"), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_release, an_operator_reads_any_owners_hold_but_releases_only_as_its_owner)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *want[] = {"A4", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_hold_get(&t, &r, hold_id, NULL), 0, "owner NULL: any owner");
    cr_assert_str_eq(th_get(&r, "owner"), "alice");
    cr_assert_str_eq(th_get(&r, "status"), "HELD");
    cr_assert_eq(th_hold_get(&t, &r, "1-h00000000000000000000", NULL), SEATD_ENOTFOUND);
    cr_assert_eq(th_release(&t, &r, hold_id, NULL), SEATD_ENOTFOUND, "NULL never matches");
    cr_assert_eq(th_release(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "RELEASED");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
