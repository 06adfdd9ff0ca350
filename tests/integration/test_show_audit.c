/*
 * Integration tests for tools/show_audit.c (seatctl audit, bench's seatd_audit): a show built
 * through store.c audits clean, and each deliberate corruption is named by its check.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "show_audit.h"
#include "store_harness.h"

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(show_audit, .init = setup, .timeout = 30);

static const char *const seats6[] = {"A1", "A2", "A3", "A4", "A5", "A6", NULL};

typedef struct fixture_s {
    char alice[SEATD_ID_MAX]; /* HELD: A1, A2 */
    char bob[SEATD_ID_MAX];   /* BOOKED: A3 (booking bob_b CONFIRMED) */
    char bob_b[SEATD_ID_MAX];
    char carol[SEATD_ID_MAX]; /* PENDING_PAYMENT: A4 (booking carol_b) */
    char carol_b[SEATD_ID_MAX];
} fixture_t;

/* Show 1: a live hold, a confirmed booking and a pending one. */
static void build(fixture_t *f)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats6, 60000), 0);
    const char *a[] = {"A1", "A2", NULL}, *b[] = {"A3", NULL}, *c[] = {"A4", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a, 0, 0, NULL), 0);
    snprintf(f->alice, sizeof f->alice, "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_hold(&t, &r, "1", "bob", b, 0, 0, NULL), 0);
    snprintf(f->bob, sizeof f->bob, "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", f->bob, "bob", 30000), 0);
    snprintf(f->bob_b, sizeof f->bob_b, "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, f->bob_b), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "carol", c, 0, 0, NULL), 0);
    snprintf(f->carol, sizeof f->carol, "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", f->carol, "carol", 30000), 0);
    snprintf(f->carol_b, sizeof f->carol_b, "%s", th_get(&r, "bookingId"));
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

typedef struct seen_s {
    char checks[2048]; /* " name name …" */
    long n;
} seen_t;

static void on_violation(const char *check, const char *text, void *data)
{
    seen_t *s = data;
    (void)text;
    size_t len = strlen(s->checks);
    snprintf(s->checks + len, sizeof s->checks - len, " %s", check);
    s->n++;
}

static long audit(seen_t *s, seatd_audit_report_t *rep)
{
    memset(s, 0, sizeof *s);
    redisContext *c = seatd_test_redis_connect();
    seatd_audit_opts_t o = {.wins = -1, .bookings = -1, .on_violation = on_violation, .data = s};
    char err[256];
    cr_assert_eq(seatd_audit_show(c, "1", &o, rep, err, sizeof err), 0, "%s", err);
    redisFree(c);
    cr_assert_eq(rep->violations, s->n);
    return rep->violations;
}

/* Runs 'cmd' (a format with up to two %s: the ids it names) on the fixture's show. */
static void corrupt(const char *cmd, const char *x, const char *y)
{
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = seatd_test_redis_command(c, cmd, x, y);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", cmd, r ? r->str : c->errstr);
    freeReplyObject(r);
    redisFree(c);
}

static int has(const seen_t *s, const char *check)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s", check);
    const char *p = s->checks;
    size_t n = strlen(pat);
    while ((p = strstr(p, pat)) != NULL) {
        if (p[n] == ' ' || p[n] == '\0')
            return 1;
        p += n;
    }
    return 0;
}

Test(show_audit, a_show_built_by_the_scripts_is_consistent)
{
    fixture_t f;
    build(&f);
    seen_t s;
    seatd_audit_report_t rep;
    cr_assert_eq(audit(&s, &rep), 0, "violations:%s", s.checks);
    cr_assert_eq(rep.nseats, 6);
    cr_assert_eq(rep.held_seats, 3);
    cr_assert_eq(rep.booked_seats, 1);
    cr_assert_eq(rep.seat_keys, 3);
    cr_assert_eq(rep.holds, 3);
    cr_assert_eq(rep.live_holds, 2);
    cr_assert_eq(rep.confirmed, 1);
    cr_assert_eq(rep.pending, 1);
    cr_assert_eq(rep.stable, 1);
}

Test(show_audit, an_unknown_show_is_reported_not_audited)
{
    redisContext *c = seatd_test_redis_connect();
    seatd_audit_opts_t o = {.wins = -1, .bookings = -1};
    seatd_audit_report_t rep;
    char err[256];
    cr_assert_eq(seatd_audit_show(c, "7", &o, &rep, err, sizeof err), SEATD_AUDIT_ENOSHOW);
    cr_assert(strstr(err, "7") != NULL, "%s", err);
    redisFree(c);
}

/* One corruption per row, and the check that must name it. */
typedef struct case_s {
    const char *cmd;   /* Redis command, "%s" = the ids below */
    int ids;           /* 0: none, 1: alice's hold, 2: carol's booking, 3: bob's booking */
    const char *check; /* expected among the violations */
} case_t;

static const case_t cases[] = {
    {"SETBIT {s:1}:booked 0 1", 0, "held_and_booked"},
    {"SETBIT {s:1}:booked 4 1", 0, "booked_bits"},
    {"SETBIT {s:1}:held 4 1", 0, "held_bits"},
    {"DEL {s:1}:seat:A1", 0, "held_bits"},
    {"SET {s:1}:seat:A6 %s", 1, "seat_keys"},
    {"ZREM {s:1}:expiry %s", 1, "expiry"},
    {"ZADD {s:1}:expiry 1 %s", 3, "expiry"}, /* a booking id: no such hold record */
    {"HDEL {s:1}:user:alice %s", 1, "user_holds"},
    {"HSET {s:1}:user:alice 1-h00000000000000000000 1", 0, "user_holds"},
    {"ZREM {s:1}:pending %s", 2, "pending"},
    {"ZADD {s:1}:pending 1 %s", 3, "pending"},
    {"ZADD {s:1}:failed 1 %s", 3, "failed"}, /* a CONFIRMED booking watched for a late charge */
    {"HINCRBY {s:1}:user:bob booked 1", 0, "owner_counts"},
    {"XADD {s:1}:bookings * type booking.confirmed", 0, "outbox"},
    {"HSET {s:1}:meta seatCount 7", 0, "counts"},
    {"HSET {s:1}:hold:%s bits 0,5", 1, "bits"},
};

Test(show_audit, each_corruption_is_named_by_its_check)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        seatd_test_redis_flushall();
        fixture_t f;
        build(&f);
        const char *id = cases[i].ids == 1   ? f.alice
                         : cases[i].ids == 2 ? f.carol_b
                         : cases[i].ids == 3 ? f.bob_b
                                             : NULL;
        corrupt(cases[i].cmd, id, NULL);
        seen_t s;
        seatd_audit_report_t rep;
        cr_assert_gt(audit(&s, &rep), 0, "case %zu (%s) found nothing", i, cases[i].cmd);
        cr_assert(has(&s, cases[i].check), "case %zu (%s): want %s, got%s", i, cases[i].cmd,
                  cases[i].check, s.checks);
    }
}

Test(show_audit, a_due_hold_not_yet_reaped_keeps_its_held_bits_legitimately)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats6, 60000), 0);
    const char *a[] = {"A5", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "dave", a, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof hold_id, "%s", th_get(&r, "holdId"));
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
    /* The deadline passes (as Redis's key expiry would make it): the seat key is gone, the
     * hold is due in the expiry set and not reaped yet. */
    corrupt("DEL {s:1}:seat:A5", NULL, NULL);
    corrupt("ZADD {s:1}:expiry 1 %s", hold_id, NULL);
    corrupt("HSET {s:1}:hold:%s expiresAt 1", hold_id, NULL);
    seen_t s;
    seatd_audit_report_t rep;
    cr_assert_eq(audit(&s, &rep), 0, "violations:%s", s.checks);
    cr_assert_eq(rep.held_seats, 1);
    cr_assert_eq(rep.seat_keys, 0);
}

/* ---- standing areas ---------------------------------------------------------------------- */

/* Show "1" with seats6 and areas FLOOR (capacity 10, standing) and BALC (capacity 3). */
static void create_area_show(th_t *t)
{
    char layout[1024];
    size_t off = (size_t)snprintf(layout, sizeof layout, "{\"showId\":\"1\",\"seats\":[");
    for (size_t n = 0; seats6[n]; n++)
        off += (size_t)snprintf(layout + off, sizeof layout - off,
                                "%s{\"id\":\"%s\",\"row\":\"A\",\"number\":%zu,"
                                "\"tier\":\"standard\",\"x\":%zu,\"y\":0}",
                                n ? "," : "", seats6[n], n + 1, n);
    snprintf(layout + off, sizeof layout - off, "]}");
    seatd_show_args_t a = {0};
    a.show_id = "1";
    a.title = "Areas";
    a.starts_at_ms = 1800000000000LL;
    a.hold_ttl_ms = 60000;
    a.price_tiers_json = "{\"standard\":1200,\"standing\":800}";
    a.layout_json = layout;
    a.seat_ids = seats6;
    a.nseats = 6;
    a.extra_json = "{\"areas\":[{\"id\":\"FLOOR\",\"capacity\":10,\"tier\":\"standing\"},"
                   "{\"id\":\"BALC\",\"capacity\":3,\"tier\":\"standard\"}]}";
    th_res_t r = {0};
    cr_assert_eq(th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r)), 0);
    th_res_clear(&r);
}

/* A hold of 'seats' (NULL-terminated, or NULL) and the places 'areas' by 'owner'; its id is
 * written to 'hold_id' (SEATD_ID_MAX bytes). */
static void area_hold(th_t *t, const char *owner, const char *const *seats, const char *areas,
                      char *hold_id)
{
    size_t n = 0;
    while (seats && seats[n])
        n++;
    char request[128];
    snprintf(request, sizeof request, "named;%s", areas);
    seatd_hold_args_t a;
    th_res_t r = {0};
    cr_assert_eq(th_hold_args(&a, hold_id, "1", owner, seats, n, NULL, 0, 0), 0);
    a.request = request;
    cr_assert_eq(th_finish(t, &r, seatd_store_hold(t->store, &a, th_on_result, &r)), 0,
                 "hold %s: err %d %s", areas, r.err, r.detail);
    th_res_clear(&r);
}

/* Begins the booking of 'hold_id' (priced in the store); its id goes to 'booking_id'. */
static void area_book_begin(th_t *t, const char *hold_id, const char *owner, char *booking_id)
{
    th_res_t r = {0};
    cr_assert_eq(seatd_keys_new_id(booking_id, "1", 'b'), 0);
    seatd_book_args_t a = {0};
    a.hold_id = hold_id;
    a.owner = owner;
    a.booking_id = booking_id;
    a.amount = SEATD_BOOK_PRICE_IN_STORE;
    a.currency = "EUR";
    a.payment_method = "tok_ok";
    a.payment_window_ms = 60000;
    cr_assert_eq(th_finish(t, &r, seatd_store_book_begin(t->store, &a, th_on_result, &r)), 0,
                 "book: err %d %s", r.err, r.detail);
    th_res_clear(&r);
}

typedef struct area_fixture_s {
    char held[SEATD_ID_MAX];    /* alice HELD: A1 + FLOOR:2 */
    char only[SEATD_ID_MAX];    /* bob HELD: BALC:1,FLOOR:3, places alone */
    char pending[SEATD_ID_MAX]; /* carol PENDING_PAYMENT: A2 + FLOOR:1 */
    char booked[SEATD_ID_MAX];  /* dave BOOKED: FLOOR:2 (a CONFIRMED booking) */
    char booking[SEATD_ID_MAX]; /* dave's booking */
    char ended[SEATD_ID_MAX];   /* erin RELEASED: FLOOR:1 (given back) */
} area_fixture_t;

/* Show 1 with areas: FLOOR taken 2 + 3 + 1 + 2 = 8 of 10, BALC 1 of 3. */
static void build_areas(area_fixture_t *f)
{
    th_t t;
    th_res_t r = {0};
    char b[SEATD_ID_MAX];
    cr_assert_eq(th_open(&t), 0);
    create_area_show(&t);
    const char *a1[] = {"A1", NULL}, *a2[] = {"A2", NULL};
    area_hold(&t, "alice", a1, "FLOOR:2", f->held);
    area_hold(&t, "bob", NULL, "BALC:1,FLOOR:3", f->only);
    area_hold(&t, "carol", a2, "FLOOR:1", f->pending);
    area_book_begin(&t, f->pending, "carol", b);
    area_hold(&t, "dave", NULL, "FLOOR:2", f->booked);
    area_book_begin(&t, f->booked, "dave", f->booking);
    cr_assert_eq(th_book_confirm(&t, &r, f->booking), 0);
    area_hold(&t, "erin", NULL, "FLOOR:1", f->ended);
    cr_assert_eq(th_release(&t, &r, f->ended, "erin"), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(show_audit, a_show_with_area_holds_and_bookings_is_consistent)
{
    area_fixture_t f;
    build_areas(&f);
    seen_t s;
    seatd_audit_report_t rep;
    cr_assert_eq(audit(&s, &rep), 0, "violations:%s", s.checks);
    cr_assert_eq(rep.areas, 2);
    cr_assert_eq(rep.area_places, 9); /* FLOOR 8 + BALC 1 */
    cr_assert_eq(rep.live_holds, 3);
    cr_assert_eq(rep.confirmed, 1);
    cr_assert_eq(rep.pending, 1);
}

Test(show_audit, a_due_area_hold_not_yet_reaped_still_counts_its_places)
{
    area_fixture_t f;
    build_areas(&f);
    /* bob's deadline passes; the reaper has not run: his places are still taken. */
    corrupt("ZADD {s:1}:expiry 1 %s", f.only, NULL);
    corrupt("HSET {s:1}:hold:%s expiresAt 1", f.only, NULL);
    seen_t s;
    seatd_audit_report_t rep;
    cr_assert_eq(audit(&s, &rep), 0, "violations:%s", s.checks);
    cr_assert_eq(rep.area_places, 9);
}

/* One corruption of the area counters or records per row: 'ids' 1 = bob's places-alone hold,
 * 2 = dave's CONFIRMED booking, 3 = alice's hold. */
static const case_t area_cases[] = {
    {"HINCRBY {s:1}:areas FLOOR 1", 0, "areas"},
    {"HINCRBY {s:1}:areas FLOOR -1", 0, "areas"},
    {"HINCRBY {s:1}:areas BALC -2", 0, "areas"}, /* -1: below zero too */
    {"HSET {s:1}:areas FLOOR 11", 0, "areas"},   /* beyond the capacity */
    {"HDEL {s:1}:areas BALC", 0, "areas"},
    {"HSET {s:1}:areas PIT 1", 0, "areas"},           /* an area the show lacks */
    {"HSET {s:1}:hold:%s areas FLOOR:4", 1, "areas"}, /* the hold says more than counted */
    {"HSET {s:1}:hold:%s areas PIT:1", 3, "areas"},
    {"HSET {s:1}:booking:%s areas FLOOR:1", 2, "areas"},
    {"HSET {s:1}:hold:%s status RELEASED", 1, "areas"}, /* ended without giving back */
    {"HSET {s:1}:user:bob %s 3", 1, "user_holds"},      /* 4 = BALC:1 + FLOOR:3 */
    {"HINCRBY {s:1}:user:dave booked -2", 0, "owner_counts"},
};

Test(show_audit, each_area_corruption_is_named_by_its_check)
{
    for (size_t i = 0; i < sizeof area_cases / sizeof area_cases[0]; i++) {
        seatd_test_redis_flushall();
        area_fixture_t f;
        build_areas(&f);
        const char *id = area_cases[i].ids == 1   ? f.only
                         : area_cases[i].ids == 2 ? f.booking
                         : area_cases[i].ids == 3 ? f.held
                                                  : NULL;
        corrupt(area_cases[i].cmd, id, NULL);
        seen_t s;
        seatd_audit_report_t rep;
        cr_assert_gt(audit(&s, &rep), 0, "case %zu (%s) found nothing", i, area_cases[i].cmd);
        cr_assert(has(&s, area_cases[i].check), "case %zu (%s): want %s, got%s", i,
                  area_cases[i].cmd, area_cases[i].check, s.checks);
    }
}

Test(show_audit, a_group_payment_audits_clean_and_one_show_paid_alone_is_named)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    char show2[SEATD_ID_MAX], gid[SEATD_ID_MAX], mid[SEATD_ID_MAX], pay[SEATD_ID_MAX];
    snprintf(show2, sizeof show2, "%lld", seatd_keys_show_id_in_slot(2, seatd_keys_show_slot("1")));
    cr_assert_eq(th_create_show(&t, "1", seats6, 60000), 0);
    cr_assert_eq(th_create_show(&t, show2, seats6, 60000), 0);
    const char *shows[] = {"1", show2}, *a1[] = {"A1"};
    cr_assert_eq(th_group_create(&t, shows, 2, gid), 0);
    cr_assert_eq(th_group_hold(&t, &r, gid, "dave", shows, 2, seats6, a1, 1, mid), 0);
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "dave", pay), 0);
    cr_assert_eq(th_book_confirm(&t, &r, pay), 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);

    seen_t s;
    seatd_audit_report_t rep;
    cr_assert_eq(audit(&s, &rep), 0, "violations:%s", s.checks);
    cr_assert_eq(rep.payments, 1);
    cr_assert_eq(rep.confirmed, 1, "show 1's booking; the payment has no seats of its own");
    cr_assert_eq(rep.booked_seats, 1);

    /* the second show's booking of the payment, failed behind its back */
    redisContext *c = seatd_test_redis_connect();
    char second[SEATD_ID_MAX];
    cr_assert_eq(th_payment_member(c, pay, show2, second), 0);
    redisFree(c);
    char key[128];
    snprintf(key, sizeof key, "{s:%s}:booking:%s", show2, second);
    corrupt("HSET %s status %s", key, "FAILED");
    audit(&s, &rep);
    cr_assert(has(&s, "payments"), "violations:%s", s.checks);
}
