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
    const char *ids[] = {"1", show_b};
    cr_assert_eq(th_group_create(t, ids, 2, gid), 0);
}

/* Holds 'seats' in both shows of 'gid' for 'owner' (with 'twice': show 1 named twice); the
 * group hold id into 'mid'. */
static int group_hold_legs(th_t *t, th_res_t *r, const char *gid, const char *owner,
                           const char *const *seats, size_t n, char *mid, int twice)
{
    const char *shows[] = {"1", twice ? "1" : show_b};
    return th_group_hold(t, r, gid, owner, shows, 2, seats4, seats, n, mid);
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

/* ------------------------------------------------------- one payment for a group hold */

/* A group hold of C1 in both shows for 'owner': its id into 'mid'. */
static void held_group(th_t *t, const char *gid, const char *owner, char *mid)
{
    th_res_t r = {0};
    const char *c1[] = {"C1"};
    cr_assert_eq(group_hold(t, &r, gid, owner, c1, 1, mid), 0, "err %d %s", r.err, r.detail);
    th_res_clear(&r);
}

Test(lua_groups, one_payment_begins_and_confirms_every_show_together)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX], pay[SEATD_ID_MAX], again[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    held_group(&t, gid, "alice", mid);
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "mallory", pay), SEATD_ENOTFOUND, "another's");
    seatd_store_set_hints(t.store, t.rds); /* as the worker's store: hints filed per show */
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pay), 0, "err %d %s", r.err, r.detail);
    cr_assert_eq(th_get_ll(&r, "amount"), 2400, "C1 at 1200 in each show");
    cr_assert_str_eq(th_get(&r, "status"), "PENDING_PAYMENT");
    redisContext *c = seatd_test_redis_connect();
    char m1[SEATD_ID_MAX], m2[SEATD_ID_MAX], st[32];
    cr_assert_eq(th_payment_member(c, pay, "1", m1), 0);
    cr_assert_eq(th_payment_member(c, pay, show_b, m2), 0);
    cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:%s}:booking:%s paidBy", show_b, m2), 1);
    cr_assert_str_eq(st, pay);
    cr_assert_eq(th_int(c, "ZSCORE {s:1}:pending %s", pay), -1000, "a string score, not int");
    cr_assert_eq(th_str(c, st, sizeof(st), "ZSCORE {s:1}:pending %s", pay), 1, "pending");

    /* reconciliation of the second show settles the member by its payment */
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_pending_due(t.store, show_b, 0, -1, 10, th_on_result, &r)),
        0);
    cr_assert_str_eq(th_get(&r, "booking"), pay, "the member's payment, not the member");

    /* a show's booking is never settled alone: only with its payment, every show at once */
    char *before = th_snapshot(c);
    cr_assert_eq(th_book_confirm(&t, &r, m2), SEATD_EINVAL, "confirm alone");
    cr_assert_eq(th_book_fail(&t, &r, m1), SEATD_EINVAL, "fail alone");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused settle changed the keyspace");
    free(before);
    free(after);

    /* a retry with another id answers the same payment */
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", again), 0);
    cr_assert_str_eq(th_get(&r, "bookingId"), pay);
    cr_assert_str_eq(th_get(&r, "replayed"), "1");
    /* (the replay's answer came after the begin's hints on the same connection) */
    char hint[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_PENDING_SHOWS, show_b), 0);
    cr_assert_eq(th_str(c, st, sizeof(st), "ZSCORE %s %s", hint, show_b), 1,
                 "the second show's reconciler told");
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_DUE, show_b), 0);
    cr_assert_eq(th_str(c, st, sizeof(st), "ZSCORE %s %s", hint, show_b), 1, "and its sweeper");

    cr_assert_eq(th_book_confirm(&t, &r, pay), 0, "err %d %s", r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    cr_assert(strstr(th_get(&r, "members"), "|CONFIRMED|1200|"), "%s", th_get(&r, "members"));
    for (int i = 0; i < 2; i++) {
        const char *show = i ? show_b : "1", *m = i ? m2 : m1;
        cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:%s}:booking:%s status", show, m), 1);
        cr_assert_str_eq(st, "CONFIRMED", "show %s", show);
        cr_assert_eq(th_int(c, "GETBIT {s:%s}:booked 0", show), 1, "C1 booked in show %s", show);
        cr_assert_eq(th_int(c, "ZCARD {s:%s}:pending", show), 0, "nothing pending in %s", show);
        cr_assert_eq(th_int(c, "XLEN {s:%s}:bookings", show), 1, "one event in show %s", show);
    }
    cr_assert_eq(th_book_confirm(&t, &r, pay), 0, "confirming again answers the same");
    /* the payment is not cancelled whole: each show's booking is, by its own policy */
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_cancel_by_policy(t.store, pay, "alice", th_on_result, &r)),
        SEATD_ESTATE);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_groups, a_seat_lost_in_one_show_confirms_no_show_and_the_charge_goes_back)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX], pay[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    held_group(&t, gid, "alice", mid);
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pay), 0, "err %d %s", r.err, r.detail);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "DEL {s:%s}:seat:C1", show_b), 1); /* lost (a failover, say) */
    char *before = th_snapshot(c);
    cr_assert_eq(th_book_confirm(&t, &r, pay), SEATD_EEXPIRED);
    char want[64];
    snprintf(want, sizeof(want), "show=%s seat lost", show_b);
    cr_assert_str_eq(r.detail, want);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "nothing confirmed in the first show either");
    free(before);
    free(after);
    /* the worker refunds the charge whole and fails the payment: every show's booking fails */
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r,
                           seatd_store_book_fail_refunded(t.store, pay, "seats_lost_refunded", 2400,
                                                          "re_1", th_on_result, &r)),
                 0, "err %d %s", r.err, r.detail);
    char m1[SEATD_ID_MAX], st[32];
    cr_assert_eq(th_payment_member(c, pay, "1", m1), 0);
    cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:1}:booking:%s status", m1), 1);
    cr_assert_str_eq(st, "FAILED");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:pending"), 0);
    cr_assert_eq(th_int(c, "ZCARD {s:%s}:pending", show_b), 0);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:booked 0"), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_groups, a_declined_payment_leaves_every_show_held_and_may_be_paid_again)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX], pay[SEATD_ID_MAX], pay2[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    held_group(&t, gid, "alice", mid);
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pay), 0, "err %d %s", r.err, r.detail);
    cr_assert_eq(th_book_fail(&t, &r, pay), 0, "err %d %s", r.err, r.detail);
    redisContext *c = seatd_test_redis_connect();
    char holds[256], st[32];
    cr_assert_eq(th_str(c, holds, sizeof(holds), "HGET {s:1}:ghold:%s holds", mid), 1);
    for (char *save = NULL, *h = strtok_r(holds, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(h, ':');
        *colon = '\0';
        cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:%s}:hold:%s status", h, colon + 1), 1);
        cr_assert_str_eq(st, "HELD", "show %s's hold", h);
        cr_assert_eq(th_int(c, "EXISTS {s:%s}:seat:C1", h), 1);
    }
    cr_assert_eq(th_int(c, "ZSCORE {s:1}:failed %s", pay), -1000, "watched for a late charge");
    cr_assert_eq(th_int(c, "ZCARD {s:%s}:failed", show_b), 0,
                 "the payment is watched, not members");
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pay2), 0, "err %d %s", r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "replayed"), "0", "a new payment after the decline");
    cr_assert_eq(th_book_confirm(&t, &r, pay2), 0, "err %d %s", r.err, r.detail);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_groups, a_show_booked_on_its_own_refuses_the_group_payment_and_changes_nothing)
{
    th_t t;
    th_res_t r = {0};
    char gid[SEATD_ID_MAX], mid[SEATD_ID_MAX], pay[SEATD_ID_MAX], h1[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    held_group(&t, gid, "alice", mid);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_str(c, h1, sizeof(h1), "GET {s:1}:seat:C1"), 1);
    cr_assert_eq(th_book_begin(&t, &r, "1", h1, "alice", 60000), 0, "err %d %s", r.err, r.detail);
    char *before = th_snapshot(c);
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pay), SEATD_ESTATE);
    cr_assert_str_eq(r.detail, "show=1 BOOKED");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused payment changed the keyspace");
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---- the race: many payments of one group hold at once */

enum { PAYERS = 16 };
static char pay_mid[SEATD_ID_MAX];

/* Begins a payment of the group hold under its own id. Exit codes: 0 began, 1 replayed (the
 * payment another began), 2+ other. */
static int payer(int i, void *arg)
{
    (void)arg;
    (void)i;
    th_t t;
    th_res_t r = {0};
    char pay[SEATD_ID_MAX];
    if (th_open(&t) != 0)
        return 10;
    seatd_test_racer_ready_and_wait();
    int rc = th_pay_begin(&t, &r, "1", pay_mid, "alice", pay);
    const char *rep = th_get(&r, "replayed");
    int code = rc != 0 || rep == NULL ? 2 : strcmp(rep, "0") == 0 ? 0 : 1;
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(lua_groups, payments_of_one_group_hold_sent_at_once_begin_exactly_one)
{
    th_t t;
    char gid[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create(&t, gid);
    held_group(&t, gid, "alice", pay_mid);
    cr_assert_eq(th_close(&t), 0);
    int status[PAYERS];
    cr_assert_eq(seatd_test_race(PAYERS, payer, NULL, status, NULL, 30000), 0);
    int began = 0;
    for (int i = 0; i < PAYERS; i++) {
        cr_assert(status[i] == 0 || status[i] == 1, "payer %d exited %d", i, status[i]);
        began += status[i] == 0;
    }
    cr_assert_eq(began, 1, "one payment begun, %d replayed", PAYERS - 1);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:*}:booking:*')"), 3,
                 "one payment and one booking per show: no other booking record");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:pending"), 2, "the payment and show 1's booking");
    redisFree(c);
}
