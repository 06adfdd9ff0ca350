/* Integration tests for lua/queue.lua (the waiting room of a queued show, issue 15) and the
 * admission check of lua/hold.lua, through store.c against the runner's redis-server. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>

#include "store_harness.h"

static const char *const seats10[] = {"A1", "A2", "A3", "A4",  "A5", "A6",
                                      "A7", "A8", "A9", "A10", NULL};
static const char *const seats2[] = {"A1", "A2", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_queue, .init = setup, .timeout = 60);

/* Creates queued show 'show' over 'seats' opening at 'opens_ms' (epoch ms; Redis clock). */
static int q_create_with(th_t *t, const char *show, const char *const *seats, long long opens_ms,
                         int max_shoppers, int seats_per_shopper, const char *areas_json);

static int q_create(th_t *t, const char *show, const char *const *seats, long long opens_ms,
                    int max_shoppers, int seats_per_shopper)
{
    return q_create_with(t, show, seats, opens_ms, max_shoppers, seats_per_shopper, NULL);
}

/* As q_create, with standing areas 'areas_json' (the "areas" array, or NULL for none). */
static int q_create_with(th_t *t, const char *show, const char *const *seats, long long opens_ms,
                         int max_shoppers, int seats_per_shopper, const char *areas_json)
{
    char layout[4096], extra[256];
    size_t n = 0, off = 0;
    off += (size_t)snprintf(layout + off, sizeof(layout) - off, "{\"showId\":\"%s\",\"seats\":[",
                            show);
    for (; seats[n]; n++)
        off += (size_t)snprintf(layout + off, sizeof(layout) - off,
                                "%s{\"id\":\"%s\",\"row\":\"A\",\"number\":%zu,"
                                "\"tier\":\"standard\",\"x\":%zu,\"y\":0}",
                                n ? "," : "", seats[n], n + 1, n);
    snprintf(layout + off, sizeof(layout) - off, "]}");
    snprintf(extra, sizeof(extra),
             "{\"queue\":{\"opensAt\":%lld,\"maxShoppers\":%d,\"admissionSeconds\":60,"
             "\"seatsPerShopper\":%d}%s%s}",
             opens_ms, max_shoppers, seats_per_shopper, areas_json ? ",\"areas\":" : "",
             areas_json ? areas_json : "");
    seatd_show_args_t a = {0};
    a.show_id = show;
    a.title = "On sale";
    a.starts_at_ms = 1900000000000LL;
    a.hold_ttl_ms = 60000;
    a.price_tiers_json = "{\"standard\":1200}";
    a.layout_json = layout;
    a.seat_ids = seats;
    a.nseats = n;
    a.extra_json = extra;
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

static int q_join(th_t *t, th_res_t *r, const char *show, const char *user)
{
    char ticket[SEATD_ID_MAX];
    th_res_clear(r);
    if (seatd_keys_new_id(ticket, show, 'q') < 0)
        return -1;
    return th_finish(t, r, seatd_store_queue_join(t->store, show, ticket, user, th_on_result, r));
}

static int q_status(th_t *t, th_res_t *r, const char *ticket, const char *user)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_queue_status(t->store, ticket, user, th_on_result, r));
}

static int q_advance(th_t *t, th_res_t *r, const char *show)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_queue_advance(t->store, show, th_on_result, r));
}

/* A named hold of 'seats' by 'owner', with ('admitted' 1) or without a verified admission. */
static int q_hold(th_t *t, th_res_t *r, const char *show, const char *owner,
                  const char *const *seats, int admitted)
{
    char hold_id[SEATD_ID_MAX];
    size_t n = 0;
    while (seats[n])
        n++;
    th_res_clear(r);
    if (seatd_keys_new_id(hold_id, show, 'h') < 0)
        return -1;
    seatd_hold_args_t a = {0};
    a.show_id = show;
    a.hold_id = hold_id;
    a.owner = owner;
    a.seat_ids = seats;
    a.nseats = n;
    a.admitted = admitted;
    return th_finish(t, r, seatd_store_hold(t->store, &a, th_on_result, r));
}

/* Joins users u000..u<n-1> to 'show'. */
static void join_many(th_t *t, const char *show, int n)
{
    th_res_t r = {0};
    for (int i = 0; i < n; i++) {
        char user[16];
        snprintf(user, sizeof(user), "u%03d", i);
        cr_assert_eq(q_join(t, &r, show, user), 0, "join %s: %d %s", user, r.err, r.detail);
    }
    th_res_clear(&r);
}

Test(lua_queue, a_second_join_answers_the_same_ticket_and_place)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(q_create(&t, "1", seats10, th_redis_ms(c) + 3600000, 100, 2), 0);
    cr_assert_eq(q_join(&t, &r, "1", "alice"), 0, "%d %s", r.err, r.detail);
    char ticket[SEATD_ID_MAX];
    snprintf(ticket, sizeof(ticket), "%s", th_get(&r, "ticket"));
    cr_assert_str_eq(th_get(&r, "joined"), "1");
    cr_assert_str_eq(th_get(&r, "state"), "WAITING");
    cr_assert_str_eq(th_get(&r, "queueState"), "PENDING");
    cr_assert_eq(q_join(&t, &r, "1", "bob"), 0);
    cr_assert_eq(q_join(&t, &r, "1", "alice"), 0);
    cr_assert_str_eq(th_get(&r, "ticket"), ticket, "the same ticket");
    cr_assert_str_eq(th_get(&r, "joined"), "0");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:queue"), 2, "one place per user");
    cr_assert_eq(th_int(c, "HLEN {s:1}:qticket"), 2);
    /* The ticket is alice's: bob is not told it exists. */
    cr_assert_eq(q_status(&t, &r, ticket, "bob"), SEATD_ENOTFOUND);
    cr_assert_eq(q_status(&t, &r, ticket, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "state"), "WAITING");
    /* A show without a waiting room has no queue. */
    cr_assert_eq(th_create_show(&t, "2", seats10, 60000), 0);
    cr_assert_eq(q_join(&t, &r, "2", "alice"), SEATD_ENOQUEUE);
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_queue, early_joiners_are_ordered_at_random_and_later_ones_after_them_in_order)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(q_create(&t, "1", seats10, th_redis_ms(c) + 3600000, 1, 100), 0);
    const int n = 200;
    join_many(&t, "1", n);
    /* The order in the queue: a permutation of the joiners, not their arrival order. */
    redisReply *z = seatd_test_redis_command(c, "ZRANGE {s:1}:queue 0 -1");
    cr_assert(z && z->type == REDIS_REPLY_ARRAY && z->elements == (size_t)n);
    int same = 0, seen[200] = {0}, first_half_early = 0;
    for (int i = 0; i < n; i++) {
        int u = atoi(z->element[i]->str + 1);
        cr_assert(u >= 0 && u < n && !seen[u]);
        seen[u] = 1;
        same += u == i;
        first_half_early += i < n / 2 && u < n / 2;
    }
    freeReplyObject(z);
    /* A uniform permutation fixes one point on average and puts about half (50, sd 3.5) of
     * the first 100 joiners in the first 100 places; arrival order would give 200 and 100. */
    cr_assert(same < 10, "%d joiners kept their arrival place", same);
    cr_assert(first_half_early > 30 && first_half_early < 70, "%d", first_half_early);
    /* The opening: later arrivals queue after every early one, in arrival order. */
    char now[32];
    snprintf(now, sizeof(now), "%lld", th_redis_ms(c) - 1);
    freeReplyObject(seatd_test_redis_command(c, "HSET {s:1}:meta queueOpensAt %s", now));
    cr_assert_eq(q_join(&t, &r, "1", "late1"), 0);
    cr_assert_eq(q_join(&t, &r, "1", "late2"), 0);
    cr_assert_str_eq(th_get(&r, "queueState"), "OPEN");
    /* maxShoppers 1: one early joiner was admitted; the late ones are last, in order. */
    cr_assert_eq(th_int(c, "ZCARD {s:1}:qadmit"), 1);
    cr_assert_eq(th_int(c, "ZRANK {s:1}:queue late1"), n - 1);
    cr_assert_eq(th_int(c, "ZRANK {s:1}:queue late2"), n);
    cr_assert_eq(th_get_ll(&r, "position"), n + 1);
    cr_assert_eq(th_get_ll(&r, "number"), n + 2, "admitted 1 + position %lld",
                 th_get_ll(&r, "position"));
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_queue, admits_by_what_is_left_to_sell_and_up_to_the_shopper_cap)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    long long past = th_redis_ms(c) - 1000;
    /* 10 seats, 2 expected per shopper: 5 admitted, however many wait. */
    cr_assert_eq(q_create(&t, "1", seats10, past, 100, 2), 0);
    join_many(&t, "1", 20);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 5);
    cr_assert_eq(th_get_ll(&r, "waiting"), 15);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:qpend"), 5);
    /* An admitted shopper holds 3: 7 left, 4 still expected to take 2 each: nobody more. */
    const char *admitted_user = NULL;
    redisReply *z = seatd_test_redis_command(c, "ZRANGE {s:1}:qadmit 0 -1");
    cr_assert(z && z->elements == 5);
    char u0[16], u1[16];
    snprintf(u0, sizeof(u0), "%s", z->element[0]->str);
    snprintf(u1, sizeof(u1), "%s", z->element[1]->str);
    freeReplyObject(z);
    admitted_user = u0;
    const char *three[] = {"A1", "A2", "A3", NULL};
    cr_assert_eq(q_hold(&t, &r, "1", admitted_user, three, 1), 0, "%d %s", r.err, r.detail);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:qpend"), 4, "a shopper who held is no longer pending");
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 0);
    cr_assert_eq(th_get_ll(&r, "available"), 7);
    /* Another admitted shopper holds 1: 6 left, 3 pending (6): still nobody. */
    const char *one[] = {"A4", NULL};
    cr_assert_eq(q_hold(&t, &r, "1", u1, one, 1), 0);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 0);
    /* The first shopper gives 3 back: 9 left, 3 pending: ceil(3 / 2) = 2 more. */
    redisReply *h = seatd_test_redis_command(c, "HKEYS {s:1}:user:%s", admitted_user);
    cr_assert(h && h->elements == 1);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", h->element[0]->str);
    freeReplyObject(h);
    cr_assert_eq(th_release(&t, &r, hold_id, admitted_user), 0);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 2);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 7);

    /* The cap on shoppers at once: 3, though 10 seats could take 5. */
    cr_assert_eq(q_create(&t, "2", seats10, past, 3, 2), 0);
    join_many(&t, "2", 10);
    cr_assert_eq(q_advance(&t, &r, "2"), 0);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 3);
    cr_assert_eq(th_get_ll(&r, "active"), 3);
    /* An admission that lapses without a hold frees its place (here: its deadline moved to
     * the past, as 60 s would). */
    freeReplyObject(seatd_test_redis_command(c, "ZADD {s:2}:qadmit 1 u000"));
    freeReplyObject(seatd_test_redis_command(c, "ZADD {s:2}:qpend 1 u000"));
    cr_assert_eq(q_advance(&t, &r, "2"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 1);
    cr_assert_eq(th_get_ll(&r, "active"), 3);
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_queue, holds_on_a_queued_show_need_a_live_admission_of_their_owner)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(q_create(&t, "1", seats10, th_redis_ms(c) - 1000, 1, 2), 0);
    cr_assert_eq(q_join(&t, &r, "1", "alice"), 0);
    cr_assert_str_eq(th_get(&r, "state"), "ADMITTED", "an open, empty queue admits at once");
    cr_assert(th_get_ll(&r, "expiresAt") > th_redis_ms(c) + 50000);
    cr_assert_eq(q_join(&t, &r, "1", "bob"), 0);
    cr_assert_str_eq(th_get(&r, "state"), "WAITING");
    char *before = th_snapshot(c);
    const char *a1[] = {"A1", NULL};
    /* No admission with the request; an admission claimed by one who has none in Redis. */
    cr_assert_eq(q_hold(&t, &r, "1", "alice", a1, 0), SEATD_EQUEUEREQUIRED);
    cr_assert_eq(q_hold(&t, &r, "1", "bob", a1, 1), SEATD_EQUEUEREQUIRED);
    char *after = th_snapshot(c);
    cr_assert_str_eq(before, after, "a refused hold changes nothing");
    free(before);
    free(after);
    cr_assert_eq(q_hold(&t, &r, "1", "alice", a1, 1), 0, "%d %s", r.err, r.detail);
    /* Expired in Redis (the deadline passed): refused, whatever the request carries. */
    freeReplyObject(seatd_test_redis_command(c, "ZADD {s:1}:qadmit 1 alice"));
    const char *a2[] = {"A2", NULL};
    cr_assert_eq(q_hold(&t, &r, "1", "alice", a2, 1), SEATD_EQUEUEREQUIRED);
    /* A show without a waiting room ignores admissions. */
    cr_assert_eq(th_create_show(&t, "2", seats10, 60000), 0);
    cr_assert_eq(q_hold(&t, &r, "2", "bob", a1, 0), 0);
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

/* Reads the next queue message on 'sub' (subscribed to the show's channel) into 'out'. */
static int next_queue_msg(redisContext *sub, char *out, size_t cap)
{
    for (int i = 0; i < 50; i++) {
        redisReply *m = NULL;
        if (redisGetReply(sub, (void **)&m) != REDIS_OK || m == NULL)
            return -1;
        int ok = m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                 strcmp(m->element[0]->str, "message") == 0 &&
                 strncmp(m->element[2]->str, "{\"q\":1", 6) == 0;
        if (ok)
            snprintf(out, cap, "%s", m->element[2]->str);
        freeReplyObject(m);
        if (ok)
            return 0;
    }
    return -1;
}

Test(lua_queue, nobody_is_admitted_after_the_sell_out_and_every_waiter_is_told_once)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    redisContext *sub = seatd_test_redis_connect();
    struct timeval tv = {5, 0};
    redisSetTimeout(sub, tv);
    freeReplyObject(redisCommand(sub, "SUBSCRIBE {s:1}:ch"));
    cr_assert_eq(q_create(&t, "1", seats2, th_redis_ms(c) - 1000, 100, 1), 0);
    join_many(&t, "1", 5); /* u000, u001 admitted at once (1 seat each expected) */
    char msg[256];
    cr_assert_eq(next_queue_msg(sub, msg, sizeof(msg)), 0);
    cr_assert_str_eq(msg, "{\"q\":1,\"a\":1,\"s\":\"OPEN\",\"w\":0}");
    cr_assert_eq(next_queue_msg(sub, msg, sizeof(msg)), 0);
    cr_assert_str_eq(msg, "{\"q\":1,\"a\":2,\"s\":\"OPEN\",\"w\":0}");
    /* Both seats are bought. */
    const char *seat[2][2] = {{"A1", NULL}, {"A2", NULL}};
    for (int i = 0; i < 2; i++) {
        char user[8], hold[SEATD_ID_MAX], booking[SEATD_ID_MAX];
        snprintf(user, sizeof(user), "u%03d", i);
        cr_assert_eq(q_hold(&t, &r, "1", user, seat[i], 1), 0, "%d %s", r.err, r.detail);
        snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
        cr_assert_eq(th_book_begin(&t, &r, "1", hold, user, 60000), 0);
        snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
        cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    }
    /* The next advance (a sweeper tick) finds nothing left and nothing held. */
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_str_eq(th_get(&r, "queueState"), "SOLD_OUT");
    cr_assert_eq(th_get_ll(&r, "admitted"), 0);
    cr_assert_eq(next_queue_msg(sub, msg, sizeof(msg)), 0);
    cr_assert_str_eq(msg, "{\"q\":1,\"a\":2,\"s\":\"SOLD_OUT\",\"w\":3}");
    /* Every waiter reads SOLD_OUT; nobody is admitted, however often it is asked. */
    for (int i = 0; i < 5; i++)
        cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 2);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:queue"), 3);
    char ticket[SEATD_ID_MAX];
    cr_assert_eq(th_str(c, ticket, sizeof(ticket), "HGET {s:1}:qticket u004"), 1);
    cr_assert_eq(q_status(&t, &r, ticket, "u004"), 0);
    cr_assert_str_eq(th_get(&r, "state"), "SOLD_OUT");
    const char *a1[] = {"A1", NULL};
    cr_assert_eq(q_hold(&t, &r, "1", "u004", a1, 1), SEATD_EQUEUEREQUIRED);
    /* Announced once: the repeated advances published nothing more. */
    freeReplyObject(seatd_test_redis_command(c, "PUBLISH {s:1}:ch {\"q\":1,\"mark\":1}"));
    cr_assert_eq(next_queue_msg(sub, msg, sizeof(msg)), 0);
    cr_assert_str_eq(msg, "{\"q\":1,\"mark\":1}");
    th_res_clear(&r);
    redisFree(sub);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_queue, admission_pauses_while_everything_is_held_and_resumes_when_seats_come_back)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(q_create(&t, "1", seats2, th_redis_ms(c) - 1000, 100, 1), 0);
    join_many(&t, "1", 4);
    const char *a1[] = {"A1", NULL}, *a2[] = {"A2", NULL};
    cr_assert_eq(q_hold(&t, &r, "1", "u000", a1, 1), 0, "%d %s", r.err, r.detail);
    char hold[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(q_hold(&t, &r, "1", "u001", a2, 1), 0);
    /* Nothing left but everything held: not sold out, nobody admitted. */
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_str_eq(th_get(&r, "queueState"), "OPEN");
    cr_assert_eq(th_get_ll(&r, "admitted"), 0);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 2);
    /* A seat comes back: the next in line is admitted. */
    cr_assert_eq(th_release(&t, &r, hold, "u000"), 0);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 1);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 3);
    char ticket[SEATD_ID_MAX];
    cr_assert_eq(th_str(c, ticket, sizeof(ticket), "HGET {s:1}:qticket u002"), 1);
    cr_assert_eq(q_status(&t, &r, ticket, "u002"), 0);
    cr_assert_str_eq(th_get(&r, "state"), "ADMITTED");
    cr_assert_eq(q_hold(&t, &r, "1", "u002", a1, 1), 0, "%d %s", r.err, r.detail);
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_queue, places_in_standing_areas_count_as_left_to_sell)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    long long past = th_redis_ms(c) - 1000;
    /* 2 seats and 6 standing places, 2 expected per shopper: 4 admitted. */
    cr_assert_eq(q_create_with(&t, "1", seats2, past, 100, 2,
                               "[{\"id\":\"FLOOR\",\"capacity\":6,\"tier\":\"standard\"}]"),
                 0);
    join_many(&t, "1", 10);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "available"), 8);
    cr_assert_eq(th_get_ll(&r, "admittedThrough"), 4);
    /* every seat and place held by the admitted: no more admitted, but not sold out either
     * while a place may still come back */
    redisReply *z = seatd_test_redis_command(c, "ZRANGE {s:1}:qadmit 0 -1");
    cr_assert(z && z->elements == 4);
    char u0[16], u1[16];
    snprintf(u0, sizeof(u0), "%s", z->element[0]->str);
    snprintf(u1, sizeof(u1), "%s", z->element[1]->str);
    freeReplyObject(z);
    char hold_id[SEATD_ID_MAX];
    seatd_hold_args_t a;
    cr_assert_eq(th_hold_args(&a, hold_id, "1", u0, seats2, 2, NULL, 0, 0), 0);
    a.admitted = 1;
    a.request = "named";
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_hold(t.store, &a, th_on_result, &r)), 0);
    char places_id[SEATD_ID_MAX];
    cr_assert_eq(th_hold_args(&a, places_id, "1", u1, NULL, 0, NULL, 0, 0), 0);
    a.admitted = 1;
    a.request = "named;FLOOR:6";
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_hold(t.store, &a, th_on_result, &r)), 0, "%d %s",
                 r.err, r.detail);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "available"), 0);
    cr_assert_eq(th_get_ll(&r, "admitted"), 0);
    /* the seats booked for good, the places still held: not SOLD_OUT (they may come back) */
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, u0, 60000), 0, "%d %s", r.err, r.detail);
    char bid[SEATD_ID_MAX];
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, bid), 0);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_str_eq(th_get(&r, "queueState"), "OPEN", "six places are still only held");
    /* the places come back: 6 left, 3 admitted pending: room for nobody (6 - 2 x 3 = 0) */
    cr_assert_eq(th_release(&t, &r, places_id, u1), 0);
    cr_assert_eq(q_advance(&t, &r, "1"), 0);
    cr_assert_eq(th_get_ll(&r, "available"), 6);
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}
