/* Integration tests for event groups (issue 30; lua/groups.lua): the same seats held in every
 * show of a group or in none, under a race with single-show holds too, and released whole.
 * The shows share a hash slot (as shows created "groupWith" one another do), so the suite
 * runs unchanged on the cluster pass. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "domain/layout.h"
#include "racer.h"
#include "store_harness.h"

static const char *const seats4[] = {"C1", "C2", "C3", "C4", NULL};
static char show_b[24]; /* the second show: the first id after "1" in show 1's slot */

static void setup(void)
{
    seatd_test_redis_flushall();
    snprintf(show_b, sizeof(show_b), "%lld",
             seatd_keys_show_id_in_slot(2, seatd_keys_show_slot("1")));
}

TestSuite(lua_groups, .init = setup, .timeout = 60);

/* Shows "1" and show_b (seats C1-C4) and group 'gid' of both. */
static void create(th_t *t, char *gid)
{
    cr_assert_eq(th_create_show(t, "1", seats4, 60000), 0);
    cr_assert_eq(th_create_show(t, show_b, seats4, 60000), 0);
    cr_assert_eq(seatd_keys_new_id(gid, "1", 'g'), 0);
    const char *ids[] = {"1", show_b};
    th_res_t r = {0};
    cr_assert_eq(
        th_finish(t, &r,
                  seatd_store_group_create(t->store, gid, "Season", ids, 2, th_on_result, &r)),
        0, "err %d %s", r.err, r.detail);
    th_res_clear(&r);
}

/* Holds 'seats' in both shows of 'gid' for 'owner'; the group hold id into 'mid'. */
static int group_hold_legs(th_t *t, th_res_t *r, const char *gid, const char *owner,
                           const char *const *seats, size_t n, char *mid, int twice)
{
    seatd_layout_t *l = NULL;
    char arr[1024];
    th_seats_json(arr, sizeof(arr), seats4);
    cJSON *doc = cJSON_Parse(arr);
    if (seatd_layout_from_json(doc, NULL, &l, NULL, 0) < 0)
        return -1;
    seatd_group_leg_t legs[2] = {{"1", l}, {twice ? "1" : show_b, l}};
    if (seatd_keys_new_id(mid, "1", 'm') < 0)
        return -1;
    seatd_group_hold_args_t a = {.group_id = gid,
                                 .hold_id = mid,
                                 .owner = owner,
                                 .max_per_user = 0,
                                 .request = "named",
                                 .legs = legs,
                                 .nlegs = 2,
                                 .seat_ids = seats,
                                 .nseats = n};
    th_res_clear(r);
    int rc = th_finish(t, r, seatd_store_group_hold(t->store, &a, th_on_result, r));
    seatd_layout_free(l);
    cJSON_Delete(doc);
    return rc;
}

static int group_hold(th_t *t, th_res_t *r, const char *gid, const char *owner,
                      const char *const *seats, size_t n, char *mid)
{
    return group_hold_legs(t, r, gid, owner, seats, n, mid, 0);
}

Test(lua_groups, a_show_named_twice_is_refused_and_holds_nothing)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    const char *one[] = {"C1"};
    /* the second decision of a show would not see the first's deferred effects */
    cr_assert_eq(group_hold_legs(&t, &r, gid, "alice", one, 1, mid, 1), SEATD_EINVAL);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C1"), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_groups, holds_the_same_seats_in_every_show_or_in_none)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    const char *two[] = {"C1", "C2"};
    cr_assert_eq(group_hold(&t, &r, gid, "alice", two, 2, mid), 0, "err %d %s", r.err, r.detail);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C1 {s:1}:seat:C2"), 2);
    cr_assert_eq(th_int(c, "EXISTS {s:%s}:seat:C1 {s:%s}:seat:C2", show_b, show_b), 2);

    /* C4 taken in the second show: a group hold of C3, C4 takes nothing anywhere */
    const char *c4[] = {"C4", NULL};
    cr_assert_eq(th_hold(&t, &r, show_b, "bob", c4, 0, 0, NULL), 0);
    char *before = th_snapshot(c);
    const char *three_four[] = {"C3", "C4"};
    char mid2[SEATD_ID_MAX];
    cr_assert_eq(group_hold(&t, &r, gid, "carol", three_four, 2, mid2), SEATD_ECONFLICT);
    char want[64];
    snprintf(want, sizeof(want), "show=%s C4", show_b);
    cr_assert_str_eq(r.detail, want);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused group hold changed the keyspace");
    free(before);
    free(after);

    /* released whole */
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_group_release(t.store, mid, "mallory", th_on_result, &r)),
        SEATD_ENOTFOUND, "another user's");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_group_release(t.store, mid, "alice", th_on_result, &r)), 0);
    cr_assert_eq(th_get_ll(&r, "released"), 2);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C1 {s:%s}:seat:C2", show_b), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------- the race */

enum { RACERS = 24 };
static char race_gid[SEATD_ID_MAX];

/* Even racers hold C1 in both shows (group), odd ones C1 in one show (alternating). Exit
 * codes: 0 held, 1 CONFLICT, 2+ other. */
static int racer(int i, void *arg)
{
    (void)arg;
    th_t t;
    th_res_t r = {0};
    char owner[16], mid[SEATD_ID_MAX];
    snprintf(owner, sizeof(owner), "user%d", i);
    if (th_open(&t) != 0)
        return 10;
    seatd_test_racer_ready_and_wait();
    const char *c1[] = {"C1", NULL};
    int rc = i % 2 == 0 ? group_hold(&t, &r, race_gid, owner, c1, 1, mid)
                        : th_hold(&t, &r, i % 4 == 1 ? "1" : show_b, owner, c1, 0, 0, NULL);
    int code = rc == 0 ? 0 : rc == SEATD_ECONFLICT ? 1 : 2;
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(lua_groups, group_holds_racing_single_holds_never_leave_a_partial_group)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    create(&t, race_gid);
    cr_assert_eq(th_close(&t), 0);
    int status[RACERS];
    cr_assert_eq(seatd_test_race(RACERS, racer, NULL, status, NULL, 30000), 0);
    int won = 0;
    for (int i = 0; i < RACERS; i++) {
        cr_assert(status[i] == 0 || status[i] == 1, "racer %d exited %d", i, status[i]);
        won += status[i] == 0;
    }
    redisContext *c = seatd_test_redis_connect();
    char h1[64], h2[64], o1[32] = "", o2[32] = "";
    cr_assert_eq(th_str(c, h1, sizeof(h1), "GET {s:1}:seat:C1"), 1, "C1 is held in show 1");
    cr_assert_eq(th_str(c, h2, sizeof(h2), "GET {s:%s}:seat:C1", show_b), 1);
    cr_assert_eq(th_str(c, o1, sizeof(o1), "HGET {s:1}:hold:%s owner", h1), 1);
    cr_assert_eq(th_str(c, o2, sizeof(o2), "HGET {s:%s}:hold:%s owner", show_b, h2), 1);
    int g1 = atoi(o1 + 4) % 2 == 0, g2 = atoi(o2 + 4) % 2 == 0;
    /* a group winner holds both; otherwise the two holders are single-show racers */
    if (g1 || g2)
        cr_assert_str_eq(o1, o2, "a group racer holds C1 in both shows or in neither");
    cr_assert_eq(won, (g1 || g2) ? 1 : 2, "one hold of C1 per show");
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:*}:hold:*')"), 2,
                 "a group winner's two holds, or two single ones: no other hold record");
    redisFree(c);
}
