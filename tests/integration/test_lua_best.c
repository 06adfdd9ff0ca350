/* Integration tests for seatd_hold_sell (lua/hold.lua) with best.c's candidates, through
 * store.c: best available, the split fallback, no orphan seats, alternatives, accessible
 * seating, against the runner's redis-server. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "domain/best.h"
#include "domain/layout.h"
#include "best_harness.h"

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_best, .init = setup, .timeout = 30);

Test(lua_best, takes_the_best_block_near_the_sweet_spot)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    /* sweet spot: x = 5 (between B4 and B5, the aisle), y = 20 (row B) */
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 2, NULL, 0, NULL), 0, "err %d %s", r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "seatIds"), "B3,B4");
    cr_assert_str_eq(th_get(&r, "split"), "0");
    redisContext *c = seatd_test_redis_connect();
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:seat:B4"), 1);
    cr_assert_str_eq(v, th_get(&r, "holdId"));
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 2);
    /* the next one gets the other side of the aisle, then the seats beside */
    cr_assert_eq(tb_best(&t, &r, "1", "bob", 2, NULL, 0, NULL), 0);
    cr_assert_str_eq(th_get(&r, "seatIds"), "B5,B6");
    cr_assert_eq(tb_best(&t, &r, "1", "carol", 1, NULL, 0, NULL), 0);
    cr_assert_str_eq(th_get(&r, "seatIds"), "B2", "a block of 1: %s", th_get(&r, "seatIds"));
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, an_aisle_breaks_a_block_so_five_are_split_in_two)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    /* every segment has 4 seats: 5 adjacent standard seats exist nowhere */
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 5, "standard", 0, NULL), 0, "err %d %s", r.err,
                 r.detail);
    cr_assert_str_eq(th_get(&r, "split"), "1");
    cr_assert_eq(tb_pieces(th_get(&r, "seatIds")), 2, "%s", th_get(&r, "seatIds"));
    cr_assert_eq(tb_count(th_get(&r, "seatIds")), 5);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, a_count_above_any_row_is_no_block_and_changes_nothing)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 9, NULL, 0, "k1"), SEATD_ENOBLOCK);
    cr_assert_str_eq(r.detail, "9");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused best-available hold changed the keyspace");
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, the_tier_filter_holds_and_an_unknown_tier_is_refused)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 3, "premium", 0, NULL), 0);
    cr_assert_str_eq(th_get(&r, "seatIds"), "C3,C4,C5");
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 2, "balcony", 0, NULL), SEATD_EINVAL);
    /* premium has 6 seats in one segment: 3 are left, 4 is one too many even split (2+2
     * needs two pieces of 2: C1,C2 and... C6 alone) */
    cr_assert_eq(tb_best(&t, &r, "1", "bob", 4, "premium", 0, NULL), SEATD_ENOBLOCK);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, a_replay_answers_the_same_seats)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 2, NULL, 0, "same"), 0);
    char first[64], hold[SEATD_ID_MAX];
    snprintf(first, sizeof(first), "%s", th_get(&r, "seatIds"));
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 2, NULL, 0, "same"), 0);
    cr_assert_str_eq(th_get(&r, "replayed"), "1");
    cr_assert_str_eq(th_get(&r, "seatIds"), first);
    cr_assert_str_eq(th_get(&r, "holdId"), hold);
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 3, NULL, 0, "same"), SEATD_EIDEMMISMATCH);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* B1 held by name (at the row end it strands none), then best available for 2 seats on a
 * theatre with or without the orphan rule: they must be 'want'. */
static void best_two_after_b1(int orphan_block, const char *want)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", orphan_block), 0);
    const char *b1[] = {"B1", NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "alice", b1, NULL), 0, "B1 at the row end strands none");
    cr_assert_eq(tb_best(&t, &r, "1", "bob", 2, NULL, 0, NULL), 0);
    cr_assert_str_eq(th_get(&r, "seatIds"), want, "orphan rule %d", orphan_block);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, with_the_orphan_rule_best_available_strands_no_seat)
{
    /* B3,B4 would leave B2 alone between B1 and B3: B5,B6 is taken instead */
    best_two_after_b1(1, "B5,B6");
}

Test(lua_best, without_the_orphan_rule_the_same_hold_may_strand_one)
{
    best_two_after_b1(0, "B3,B4");
}

Test(lua_best, a_named_hold_that_strands_a_seat_is_refused_with_alternatives)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 1), 0);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    /* B2,B3 leaves B1 alone at the row end */
    const char *want[] = {"B2", "B3", NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "alice", want, NULL), SEATD_EORPHANSEAT);
    cr_assert(strncmp(r.detail, "B1 B4 alt=", 10) == 0, "detail: %s", r.detail);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before);
    /* an aisle is a row end too: B6,B7 leaves B8 (row end) and B5 (aisle) alone */
    const char *mid[] = {"B6", "B7", NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "alice", mid, NULL), SEATD_EORPHANSEAT);
    cr_assert(strncmp(r.detail, "B5 B8", 5) == 0, "detail: %s", r.detail);
    /* every alternative is a free block that strands none: hold the first one */
    const char *alt = strstr(r.detail, "alt=");
    cr_assert_not_null(alt);
    char a[64];
    snprintf(a, sizeof(a), "%.*s", (int)strcspn(alt + 4, " "), alt + 4);
    char *comma = strchr(a, ',');
    cr_assert_not_null(comma);
    *comma = '\0';
    const char *take[] = {a, comma + 1, NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "alice", take, NULL), 0, "alt %s,%s: %d %s", take[0],
                 take[1], r.err, r.detail);
    /* B1,B2 from the row end strands none */
    const char *end[] = {"A1", "A2", NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "bob", end, NULL), 0, "%d %s", r.err, r.detail);
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, a_conflict_carries_free_alternatives_of_the_same_size_and_tier)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    const char *want[] = {"B3", "B4", NULL};
    cr_assert_eq(tb_named(&t, &r, "1", "alice", want, NULL), 0);
    cr_assert_eq(tb_named(&t, &r, "1", "bob", want, NULL), SEATD_ECONFLICT);
    cr_assert(strncmp(r.detail, "B3 B4 alt=", 10) == 0, "detail: %s", r.detail);
    int alts = 0;
    const char *first = strstr(r.detail, "alt=");
    for (const char *p = first; p; p = strstr(p + 1, "alt=")) {
        alts++;
        cr_assert(p[4] == 'A' || p[4] == 'B', "same tier (standard): %s", r.detail);
        cr_assert_eq(tb_count(p + 4) - (strchr(p, ' ') ? tb_count(strchr(p, ' ')) - 1 : 0), 2);
    }
    cr_assert_eq(alts, SEATD_BEST_ALTERNATIVES, "detail: %s", r.detail);
    cr_assert_null(strstr(first, "B3"), "B3 is taken: %s", r.detail);
    cr_assert_null(strstr(first, "B4"), "B4 is taken: %s", r.detail);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_best, accessible_takes_a_wheelchair_space_with_its_companions)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(tb_create_theatre(&t, "1", 0), 0);
    cr_assert_eq(tb_best(&t, &r, "1", "alice", 3, NULL, 1, NULL), 0, "%d %s", r.err, r.detail);
    cr_assert_str_eq(th_get(&r, "seatIds"), "A1,A2,A3");
    /* the only space is gone: nothing else is a wheelchair space, and it is never split */
    cr_assert_eq(tb_best(&t, &r, "1", "bob", 2, NULL, 1, NULL), SEATD_ENOBLOCK);
    /* a space and its companions held by name are one atomic hold like any other */
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
