/* Integration tests for the payment-failure parts of the booking scripts (issue 5): the
 * pending index, seatd_pending_due, the reconciliation hint, refunds recorded on failure and
 * cancellation by the show's refund policy on Redis's clock. */
#include <criterion/criterion.h>

#include "store_harness.h"

static const char *const seats4[] = {"A1", "A2", "A3", "A4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_book_recovery, .init = setup, .timeout = 30);

/* Show 1, a hold of 'seats' for alice and a booking begun on it (2400). */
static void begin_booking(th_t *t, th_res_t *r, const char *const *seats, char *booking)
{
    char hold_id[SEATD_ID_MAX];
    cr_assert_eq(th_hold(t, r, "1", "alice", seats, 0, 0, NULL), 0);
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(r, "holdId"));
    cr_assert_eq(th_book_begin(t, r, "1", hold_id, "alice", 60000), 0);
    snprintf(booking, SEATD_ID_MAX, "%s", th_get(r, "bookingId"));
}

static int due_has(const th_res_t *r, const char *kind, const char *id)
{
    for (size_t i = 0; i < r->nfields; i++)
        if (strcmp(r->names[i], kind) == 0 && strcmp(r->values[i], id) == 0)
            return 1;
    return 0;
}

static int pending_due_within(th_t *t, th_res_t *r, long long age, long long horizon)
{
    th_res_clear(r);
    return th_finish(t, r,
                     seatd_store_pending_due(t->store, "1", age, horizon, 20, th_on_result, r));
}

static int pending_due(th_t *t, th_res_t *r, long long age)
{
    return pending_due_within(t, r, age, -1);
}

Test(lua_book_recovery, the_pending_index_follows_begin_confirm_and_fail)
{
    th_t t;
    th_res_t r = {0};
    char b1[SEATD_ID_MAX], b2[SEATD_ID_MAX];
    const char *s1[] = {"A1", NULL}, *s2[] = {"A2", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    begin_booking(&t, &r, s1, b1);
    begin_booking(&t, &r, s2, b2);

    cr_assert_eq(pending_due(&t, &r, 0), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 2);
    cr_assert(due_has(&r, "booking", b1) && due_has(&r, "booking", b2));
    cr_assert_eq(pending_due(&t, &r, 3600 * 1000), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 2, "young bookings are counted");
    cr_assert_not(due_has(&r, "booking", b1), "but not yet due");

    cr_assert_eq(th_book_confirm(&t, &r, b1), 0);
    cr_assert_eq(th_book_fail(&t, &r, b2), 0);
    cr_assert_eq(pending_due(&t, &r, 0), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 1, "both left {s}:pending; the failed one is watched");
    cr_assert_not(due_has(&r, "booking", b1) || due_has(&r, "booking", b2));
    cr_assert_not(due_has(&r, "late", b2), "no horizon given: no late entry");

    /* The failed booking's charge may still land: it is watched until the charge horizon. */
    cr_assert_eq(pending_due_within(&t, &r, 0, 3600 * 1000), 0);
    cr_assert_not(due_has(&r, "late", b2), "within the horizon");
    cr_assert_eq(pending_due_within(&t, &r, 0, 0), 0);
    cr_assert(due_has(&r, "late", b2), "past the horizon: ask the gateway");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_late_clear(t.store, b2, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_eq(pending_due_within(&t, &r, 0, 0), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 0, "nothing can land any more");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book_recovery, a_booking_failed_after_a_refund_records_the_refund)
{
    th_t t;
    th_res_t r = {0};
    char b[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *s[] = {"A3", NULL};
    begin_booking(&t, &r, s, b);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r,
                           seatd_store_book_fail_refunded(t.store, b, "seats_lost_refunded", 2400,
                                                          "refund-x", th_on_result, &r)),
                 0);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_booking_get(t.store, b, NULL, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_str_eq(th_get(&r, "reason"), "seats_lost_refunded");
    cr_assert_str_eq(th_get(&r, "refund"), "2400");
    cr_assert_str_eq(th_get(&r, "refundStatus"), "succeeded");
    cr_assert_str_eq(th_get(&r, "refundRef"), "refund-x");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r,
                  seatd_store_book_fail_refunded(t.store, b, "x", -1, NULL, th_on_result, &r)),
        SEATD_EINVAL);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book_recovery, a_charge_that_lands_after_the_booking_failed_records_its_refund_once)
{
    /* The reconciler failed the booking (no charge found yet); the worker's charge then
     * landed, confirm answered STATE FAILED, and the worker refunded it. */
    th_t t;
    th_res_t r = {0};
    char b[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *s[] = {"A4", NULL};
    begin_booking(&t, &r, s, b);
    cr_assert_eq(th_book_fail(&t, &r, b), 0);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_book_confirm(t.store, b, "ch_late", th_on_result, &r)),
        SEATD_ESTATE);
    cr_assert_str_eq(r.detail, "FAILED"); /* what the worker checks before refunding */
    for (int i = 0; i < 2; i++) {
        th_res_clear(&r);
        cr_assert_eq(th_finish(&t, &r,
                               seatd_store_book_fail_refunded(t.store, b, "seats_lost_refunded",
                                                              i == 0 ? 1200 : 999, "refund-late",
                                                              th_on_result, &r)),
                     0);
        cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    }
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_booking_get(t.store, b, NULL, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "refund"), "1200", "recorded once, by the first refund");
    cr_assert_str_eq(th_get(&r, "refundRef"), "refund-late");
    cr_assert(strstr(th_get(&r, "reason"), "charged_late_refunded") != NULL);
    cr_assert_eq(pending_due_within(&t, &r, 0, 0), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 0, "the refunded booking is no longer watched");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* Sets show 1's startsAt to Redis's now + 'in_s' seconds and its meta extra. */
static void show_starts_in(long long in_s, const char *extra)
{
    redisContext *c = seatd_test_redis_connect();
    redisReply *tm = seatd_test_redis_command(c, "TIME");
    long long now = atoll(tm->element[0]->str) * 1000 + atoll(tm->element[1]->str) / 1000;
    freeReplyObject(tm);
    freeReplyObject(seatd_test_redis_command(c, "HSET {s:1}:meta startsAt %lld extra %s",
                                             now + in_s * 1000, extra));
    redisFree(c);
}

static long long cancel_by_policy(th_t *t, th_res_t *r, const char *b)
{
    th_res_clear(r);
    cr_assert_eq(
        th_finish(t, r, seatd_store_cancel_by_policy(t->store, b, "alice", th_on_result, r)), 0);
    return th_get_ll(r, "refund");
}

Test(lua_book_recovery, cancelling_by_policy_refunds_by_the_time_left_on_redis_clock)
{
    th_t t;
    th_res_t r = {0};
    char b[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    const char *s1[] = {"A1", NULL}, *s2[] = {"A2", NULL}, *s3[] = {"A3", NULL},
               *s4[] = {"A4", NULL};

    /* Default policy, one hour before: 50 %. */
    begin_booking(&t, &r, s1, b);
    cr_assert_eq(th_book_confirm(&t, &r, b), 0);
    show_starts_in(3600, "{}");
    cr_assert_eq(cancel_by_policy(&t, &r, b), 1200);
    cr_assert_str_eq(th_get(&r, "refundStatus"), "pending");
    cr_assert_str_eq(th_get(&r, "paymentRef"), "pay_1");
    cr_assert_eq(pending_due(&t, &r, 0), 0);
    cr_assert(due_has(&r, "refund", b), "an unconfirmed refund is reconciliation's work");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_refund_done(t.store, b, "cancel-x", th_on_result, &r)), 0);
    cr_assert_eq(pending_due(&t, &r, 0), 0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 0);
    show_starts_in(86400, "{}");
    cr_assert_eq(cancel_by_policy(&t, &r, b), 1200, "decided once, at the first cancel");
    cr_assert_str_eq(th_get(&r, "refundStatus"), "succeeded");

    /* Default policy, two days before: 100 %; 10 minutes before: nothing. */
    begin_booking(&t, &r, s2, b);
    cr_assert_eq(th_book_confirm(&t, &r, b), 0);
    show_starts_in(2 * 86400, "{}");
    cr_assert_eq(cancel_by_policy(&t, &r, b), 2400);
    begin_booking(&t, &r, s3, b);
    cr_assert_eq(th_book_confirm(&t, &r, b), 0);
    show_starts_in(600, "{}");
    cr_assert_eq(cancel_by_policy(&t, &r, b), 0);
    cr_assert_str_eq(th_get(&r, "refundStatus"), "none");

    /* The show's own policy (tiers in any order). */
    begin_booking(&t, &r, s4, b);
    cr_assert_eq(th_book_confirm(&t, &r, b), 0);
    show_starts_in(600, "{\"refundPolicy\":[{\"beforeSeconds\":0,\"percent\":10},"
                        "{\"beforeSeconds\":86400,\"percent\":90}]}");
    cr_assert_eq(cancel_by_policy(&t, &r, b), 240);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book_recovery, the_hint_is_cleared_only_if_nobody_hinted_since)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    char hint[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_PENDING_SHOWS, "7"), 0);
    freeReplyObject(seatd_test_redis_command(c, "ZINCRBY %s 1 7", hint));
    freeReplyObject(seatd_test_redis_command(c, "ZINCRBY %s 1 7", hint));
    cr_assert_eq(th_finish(&t, &r, seatd_store_hint_clear(t.store, "7", "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "removed"), "0", "re-hinted since the score 1 was read");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_hint_clear(t.store, "7", "2", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "removed"), "1");
    cr_assert_eq(th_int(c, "ZCARD %s", hint), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
