/* Integration tests for hold expiry on Redis's clock: seat keys' PXAT deadline, lazy reaping
 * inside other scripts, and seatd_reap. */
#include <criterion/criterion.h>

#include "store_harness.h"

static const char *const seats4[] = {"A1", "A2", "A3", "A4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_expiry, .init = setup, .timeout = 30);

#define SHORT_TTL 200

Test(lua_expiry, a_seat_can_be_held_again_after_the_deadline)
{
    th_t t;
    th_res_t r = {0};
    const char *a1[] = {"A1", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a1, SHORT_TTL, 0, NULL), 0);
    char first[SEATD_ID_MAX];
    snprintf(first, sizeof(first), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a1, SHORT_TTL, 0, NULL), SEATD_ECONFLICT);
    th_sleep_ms(SHORT_TTL + 50);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a1, 60000, 0, NULL), 0);
    cr_assert_eq(th_hold_get(&t, &r, first, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "EXPIRED");
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1, "the new hold's bit");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 1, "only the live hold is due later");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_expiry, confirm_after_the_deadline_fails_and_books_nothing)
{
    th_t t;
    th_res_t r = {0};
    const char *a2[] = {"A2", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a2, SHORT_TTL, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    /* A window shorter than what is left keeps the hold's own deadline. */
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 10), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    th_sleep_ms(SHORT_TTL + 50);
    cr_assert_eq(th_book_confirm(&t, &r, booking), SEATD_EEXPIRED);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:booked"), 0);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 0, "reaped by the confirm's lazy reaping");
    cr_assert_eq(th_int(c, "EXISTS {s:1}:bookings"), 0, "no event");
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", booking), 1);
    cr_assert_str_eq(v, "PENDING_PAYMENT", "left for book_fail / reconciliation");
    redisFree(c);
    cr_assert_eq(th_book_fail(&t, &r, booking), 0);
    cr_assert_str_eq(th_get(&r, "holdStatus"), "EXPIRED");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_expiry, book_begin_and_confirm_just_before_the_deadline_succeed)
{
    th_t t;
    th_res_t r = {0};
    const char *a3[] = {"A3", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a3, 600, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    long long deadline = th_get_ll(&r, "expiresAt");
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    th_sleep_ms(400); /* most of the TTL gone, with margin for a loaded machine */
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 10), 0);
    cr_assert_eq(th_get_ll(&r, "expiresAt"), deadline, "a short window keeps the deadline");
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0, "err %d", r.err);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_expiry, the_payment_window_extends_the_seat_keys)
{
    th_t t;
    th_res_t r = {0};
    const char *a4[] = {"A4", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a4, SHORT_TTL, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 30000), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    redisContext *c = seatd_test_redis_connect();
    cr_assert(th_int(c, "PTTL {s:1}:seat:A4") > 20000);
    th_sleep_ms(SHORT_TTL + 50);
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0, "the window outlives the hold TTL");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:booked 3"), 1);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_expiry, held_bits_are_cleared_by_lazy_reaping_and_by_reap)
{
    th_t t;
    th_res_t r = {0};
    const char *a1[] = {"A1", NULL}, *a2[] = {"A2", NULL}, *a3[] = {"A3", NULL};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a1, SHORT_TTL, 0, NULL), 0);
    redisContext *c = seatd_test_redis_connect();
    th_sleep_ms(SHORT_TTL + 50);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1"), 0, "Redis expired the key");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 0"), 1, "the projection lags until reaped");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a2, 60000, 0, NULL), 0);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 0"), 0, "reaped lazily by another hold");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 1"), 1);
    cr_assert_eq(th_get_ll(&r, "version"), 2, "the reaping and the hold share one delta");

    cr_assert_eq(th_hold(&t, &r, "1", "carol", a3, SHORT_TTL, 0, NULL), 0);
    th_sleep_ms(SHORT_TTL + 50);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 2"), 1);
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "reaped"), 1);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 2"), 0, "reaped by seatd_reap");
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1, "bob's live hold stays");
    cr_assert_eq(th_reap(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "reaped"), 0, "reaping is idempotent");
    cr_assert_eq(th_reap(&t, &r, "9"), SEATD_ENOSHOW);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
