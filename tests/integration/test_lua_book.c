/* Integration tests for book_begin / book_confirm / book_fail / cancel and booking_get. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "domain/layout.h"
#include "racer.h"
#include "store_harness.h"

static const char *const seats4[] = {"A1", "A2", "A3", "A4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_book, .init = setup, .timeout = 30);

/* Creates the show and a hold of A1,A2 for alice; copies its id into 'hold_id'. */
static void hold_two(th_t *t, th_res_t *r, char *hold_id)
{
    const char *want[] = {"A1", "A2", NULL};
    cr_assert_eq(th_open(t), 0);
    cr_assert_eq(th_create_show(t, "1", seats4, 60000), 0);
    cr_assert_eq(th_hold(t, r, "1", "alice", want, 0, 0, NULL), 0);
    snprintf(hold_id, SEATD_ID_MAX, "%s", th_get(r, "holdId"));
}

Test(lua_book, begin_then_confirm_books_the_seats_once)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 60000), 0);
    cr_assert_str_eq(th_get(&r, "status"), "PENDING_PAYMENT");
    cr_assert_str_eq(th_get(&r, "replayed"), "0");
    cr_assert_str_eq(th_get(&r, "seatIds"), "A1,A2");
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "PENDING_PAYMENT");
    cr_assert_str_eq(th_get(&r, "bookingId"), booking);

    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    long long version = th_get_ll(&r, "version");
    cr_assert_eq(version, 2);
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0, "confirming twice answers the same");
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    cr_assert_eq(th_get_ll(&r, "version"), version);

    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:booked"), 2);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:booked 0"), 1);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:booked 1"), 1);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 0);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1 {s:1}:seat:A2"), 0);
    cr_assert_eq(th_int(c, "XLEN {s:1}:bookings"), 1, "exactly one stream entry");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 0);
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice booked"), 1);
    cr_assert_str_eq(v, "2");
    redisReply *x = seatd_test_redis_command(c, "XRANGE {s:1}:bookings - +");
    cr_assert(x && x->type == REDIS_REPLY_ARRAY && x->elements == 1);
    redisReply *fields = x->element[0]->element[1];
    cr_assert_str_eq(fields->element[0]->str, "type");
    cr_assert_str_eq(fields->element[1]->str, "booking.confirmed");
    cr_assert_str_eq(fields->element[3]->str, booking);
    freeReplyObject(x);
    redisFree(c);

    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_booking_get(t.store, booking, "alice", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    cr_assert_str_eq(th_get(&r, "paymentRef"), "pay_1");
    cr_assert_str_eq(th_get(&r, "amount"), "2400");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_booking_get(t.store, booking, "bob", th_on_result, &r)),
        SEATD_ENOTFOUND);
    const char *again[] = {"A2", "A3", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "bob", again, 0, 0, NULL), SEATD_ECONFLICT);
    cr_assert_str_eq(r.detail, "A2", "a booked seat cannot be held");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book, bookings_status_reads_a_shows_bookings_in_one_call_in_the_order_asked)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 60000), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    const char *ids[] = {"1-b00000000000000000000", booking, booking};
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_bookings_status(t.store, "1", 3, ids, th_on_result, &r)), 0);
    cr_assert_eq(r.nfields, 3);
    cr_assert_str_eq(r.names[0], "status");
    cr_assert_str_eq(r.values[0], "", "a booking that does not exist reads as \"\"");
    cr_assert_str_eq(r.values[1], "PENDING_PAYMENT");
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_bookings_status(t.store, "1", 3, ids, th_on_result, &r)), 0);
    cr_assert_str_eq(r.values[2], "CONFIRMED");
    th_res_clear(&r);

    /* Refused before Redis: another show's id, no ids, more than a page. */
    const char *other[] = {booking, "2-b00000000000000000000"};
    cr_assert_eq(seatd_store_bookings_status(t.store, "1", 2, other, th_on_result, &r),
                 SEATD_EBADID);
    cr_assert_eq(seatd_store_bookings_status(t.store, "1", 0, ids, th_on_result, &r), SEATD_EINVAL);
    const char *many[SEATD_STORE_STATUSES_MAX + 1];
    for (size_t i = 0; i <= SEATD_STORE_STATUSES_MAX; i++)
        many[i] = booking;
    cr_assert_eq(seatd_store_bookings_status(t.store, "1", SEATD_STORE_STATUSES_MAX + 1, many,
                                             th_on_result, &r),
                 SEATD_EINVAL);
    cr_assert_eq(r.done, 0, "no callback for a call refused before Redis");
    cr_assert_eq(th_close(&t), 0);
}

/* Begins a booking of 'hold_id' priced in Redis (SEATD_BOOK_PRICE_IN_STORE). */
static int begin_priced_in_store(th_t *t, th_res_t *r, const char *show, const char *hold_id)
{
    char booking_id[SEATD_ID_MAX];
    th_res_clear(r);
    cr_assert_eq(seatd_keys_new_id(booking_id, show, 'b'), 0);
    seatd_book_args_t a = {.hold_id = hold_id,
                           .owner = "alice",
                           .booking_id = booking_id,
                           .amount = SEATD_BOOK_PRICE_IN_STORE,
                           .currency = "EUR",
                           .payment_method = "tok_ok",
                           .payment_window_ms = 60000};
    return th_finish(t, r, seatd_store_book_begin(t->store, &a, th_on_result, r));
}

Test(lua_book, book_begin_prices_the_holds_seats_by_their_tiers_and_confirm_answers_the_booking)
{
    static const char layout[] =
        "{\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,"
        "\"y\":0},{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"premium\",\"x\":2,"
        "\"y\":0},{\"id\":\"A3\",\"row\":\"A\",\"number\":3,\"tier\":\"premium\",\"x\":3,"
        "\"y\":0}]}";
    static const char *const ids[] = {"A1", "A2", "A3", NULL};
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_show_args_t a = {.show_id = "1",
                           .title = "Two tiers",
                           .starts_at_ms = 1800000000000LL,
                           .hold_ttl_ms = 60000,
                           .price_tiers_json = "{\"standard\":1200,\"premium\":1800}",
                           .layout_json = layout,
                           .seat_ids = ids,
                           .nseats = 3};
    cr_assert_eq(th_finish(&t, &r, seatd_store_create_show(t.store, &a, th_on_result, &r)), 0);
    redisContext *c = seatd_test_redis_connect();
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:tiers"), 1);
    cr_assert_str_eq(v, "abb", "one letter per seat in bit order");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:meta tierNames"), 1);
    cr_assert_str_eq(v, "standard,premium");

    const char *two[] = {"A1", "A2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", two, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(begin_priced_in_store(&t, &r, "1", hold_id), 0);
    cr_assert_str_eq(th_get(&r, "amount"), "3000", "1200 + 1800");
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    cr_assert_str_eq(th_get(&r, "amount"), "3000", "confirm answers the whole booking");
    cr_assert_str_eq(th_get(&r, "owner"), "alice");
    cr_assert_str_eq(th_get(&r, "currency"), "EUR");
    cr_assert_str_eq(th_get(&r, "seatIds"), "A1,A2");
    cr_assert_gt(th_get_ll(&r, "version"), 0);
    cr_assert_gt(th_get_ll(&r, "confirmedAt"), 0);

    /* A show from before seats were priced in Redis: UNPRICED, nothing begun; its tiers
     * stored from the layout, then priced. */
    cr_assert_eq(th_int(c, "DEL {s:1}:tiers"), 1);
    cr_assert_eq(th_int(c, "HDEL {s:1}:meta tierNames"), 1);
    const char *three[] = {"A3", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", three, 0, 0, NULL), 0);
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(begin_priced_in_store(&t, &r, "1", hold_id), SEATD_EUNPRICED);
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "HELD", "an unpriced begin changes nothing");
    cJSON *doc = cJSON_Parse(layout);
    seatd_layout_t *l = NULL;
    cr_assert_eq(
        seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l, NULL, 0),
        0);
    cJSON_Delete(doc);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_tiers_put(t.store, "1", l, th_on_result, &r)),
                 0);
    cr_assert_str_eq(th_get(&r, "created"), "1");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_tiers_put(t.store, "1", l, th_on_result, &r)),
                 0);
    cr_assert_str_eq(th_get(&r, "created"), "0", "written once");
    seatd_layout_free(l);
    cr_assert_eq(begin_priced_in_store(&t, &r, "1", hold_id), 0);
    cr_assert_str_eq(th_get(&r, "amount"), "1800");
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book, a_stranger_cannot_book_or_release_another_users_hold)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "mallory", 60000), SEATD_ENOTFOUND);
    cr_assert_eq(th_release(&t, &r, hold_id, "mallory"), SEATD_ENOTFOUND);
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "mallory"), SEATD_ENOTFOUND);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before);
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

static int begin_racer(int i, void *arg)
{
    const char *hold_id = arg;
    th_t t;
    th_res_t r = {0};
    if (th_open(&t) != 0)
        return 10;
    if (th_hold_get(&t, &r, hold_id, "alice") != 0) /* warm up */
        return 11;
    seatd_test_racer_ready_and_wait();
    int rc = th_book_begin(&t, &r, "1", hold_id, "alice", 60000);
    if (rc == 0) {
        char line[128];
        snprintf(line, sizeof(line), "%s %s", th_get(&r, "bookingId"), th_get(&r, "replayed"));
        seatd_test_racer_report(line);
    }
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 12;
    return rc == 0 ? 0 : 1;
}

Test(lua_book, two_concurrent_book_begins_make_one_booking)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);

    int status[2];
    char *reports[2];
    cr_assert_eq(seatd_test_race(2, begin_racer, hold_id, status, reports, 20000), 0);
    cr_assert_eq(status[0], 0);
    cr_assert_eq(status[1], 0);
    char id0[64], id1[64];
    int rep0 = 0, rep1 = 0;
    cr_assert_eq(sscanf(reports[0], "%63s %d", id0, &rep0), 2);
    cr_assert_eq(sscanf(reports[1], "%63s %d", id1, &rep1), 2);
    cr_assert_str_eq(id0, id1, "both answers name the one booking");
    cr_assert_eq(rep0 + rep1, 1, "one created it, the other was replayed");
    free(reports[0]);
    free(reports[1]);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:booking:*')"), 1);
    redisFree(c);
}

Test(lua_book, a_failed_payment_returns_the_hold_to_held)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX], second[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    long long deadline = th_get_ll(&r, "expiresAt");
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 120000), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert(th_get_ll(&r, "expiresAt") > deadline, "the window extends the deadline");
    cr_assert_eq(th_book_fail(&t, &r, booking), 0);
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_str_eq(th_get(&r, "holdStatus"), "HELD");
    cr_assert_eq(th_book_fail(&t, &r, booking), 0, "failing twice answers the same");
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_eq(th_book_confirm(&t, &r, booking), SEATD_ESTATE);

    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "HELD");
    cr_assert_str_eq(th_get(&r, "bookingId"), "");
    cr_assert_eq(th_get_ll(&r, "expiresAt"), deadline, "the original deadline is restored");
    redisContext *c = seatd_test_redis_connect();
    long long pttl = th_int(c, "PTTL {s:1}:seat:A1");
    cr_assert(pttl > 0 && pttl <= 60000, "seat key deadline restored: %lld", pttl);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 2);
    redisFree(c);

    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 60000), 0, "a new attempt");
    snprintf(second, sizeof(second), "%s", th_get(&r, "bookingId"));
    cr_assert_str_neq(second, booking);
    cr_assert_str_eq(th_get(&r, "replayed"), "0");
    cr_assert_eq(th_book_confirm(&t, &r, second), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_book, cancelling_twice_makes_one_cancellation)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    hold_two(&t, &r, hold_id);
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 60000), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_cancel(t.store, booking, "alice", 100, th_on_result, &r)),
        SEATD_ESTATE, "only a confirmed booking can be cancelled");
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_cancel(t.store, booking, "mallory", 100, th_on_result, &r)),
        SEATD_ENOTFOUND);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_cancel(t.store, booking, "alice", 2400, th_on_result, &r)),
        0);
    cr_assert_str_eq(th_get(&r, "status"), "CANCELLED");
    long long version = th_get_ll(&r, "version");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_cancel(t.store, booking, "alice", 999, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "refund"), "2400", "the refund is recorded once");
    cr_assert_eq(th_get_ll(&r, "version"), version);

    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:booked"), 0);
    cr_assert_eq(th_int(c, "XLEN {s:1}:bookings"), 2, "confirmed + cancelled");
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice booked"), 1);
    cr_assert_str_eq(v, "0");
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:ver"), 1);
    cr_assert_eq(atoll(v), version);
    redisFree(c);
    const char *want[] = {"A1", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "bob", want, 0, 0, NULL), 0, "the seat is available");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* book_begin with the hold's decline cap: a booking begun counts one attempt in
 * {s}:declines:<holdId>, a replay counts none, and over the cap nothing begins (RATELIMIT with
 * the ms until the window ends). */
static int begin_capped(th_t *t, th_res_t *r, const char *hold_id, long long cap)
{
    char booking_id[SEATD_ID_MAX];
    th_res_clear(r);
    cr_assert_eq(seatd_keys_new_id(booking_id, "1", 'b'), 0);
    seatd_book_args_t a = {.hold_id = hold_id,
                           .owner = "alice",
                           .booking_id = booking_id,
                           .amount = 2400,
                           .currency = "EUR",
                           .payment_method = "tok_ok",
                           .payment_window_ms = 60000,
                           .decline_cap = cap,
                           .decline_window_ms = 3600000};
    return th_finish(t, r, seatd_store_book_begin(t->store, &a, th_on_result, r));
}

/* The counter at 'key' (0 when missing). */
static long long count_of(redisContext *c, const char *key)
{
    char v[32] = "0";
    th_str(c, v, sizeof(v), "GET %s", key);
    return atoll(v);
}

Test(lua_book, begin_counts_a_new_booking_against_the_holds_cap_and_a_replay_not)
{
    th_t t;
    th_res_t r = {0};
    char hold_id[SEATD_ID_MAX], key[SEATD_KEY_MAX + 16];
    hold_two(&t, &r, hold_id);
    snprintf(key, sizeof(key), "{s:1}:declines:%s", hold_id);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(begin_capped(&t, &r, hold_id, 2), 0);
    cr_assert_str_eq(th_get(&r, "replayed"), "0");
    char booking[SEATD_ID_MAX];
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(count_of(c, key), 1);
    long long ttl = th_int(c, "PTTL %s", key);
    cr_assert(ttl > 3500000 && ttl <= 3600000, "the window: %lld", ttl);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(begin_capped(&t, &r, hold_id, 2), 0);
        cr_assert_str_eq(th_get(&r, "replayed"), "1");
    }
    cr_assert_eq(count_of(c, key), 1, "replays count nothing");
    cr_assert_eq(th_book_fail(&t, &r, booking), 0); /* declined: the count stays */
    cr_assert_eq(begin_capped(&t, &r, hold_id, 2), 0, "the second attempt");
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(count_of(c, key), 2);
    cr_assert_eq(th_book_fail(&t, &r, booking), 0);
    cr_assert_eq(begin_capped(&t, &r, hold_id, 2), SEATD_ERATELIMIT, "over the cap");
    long long retry = atoll(r.detail);
    cr_assert(retry > 3500000 && retry <= 3600000, "%s", r.detail);
    cr_assert_eq(count_of(c, key), 2, "a refused attempt counts nothing");
    cr_assert_eq(th_hold_get(&t, &r, hold_id, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "HELD", "nothing began");
    cr_assert_eq(begin_capped(&t, &r, hold_id, 0), 0, "without a cap");
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}
