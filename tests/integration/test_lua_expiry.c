/* Integration tests for hold expiry on Redis's clock: seat keys' PXAT deadline, lazy reaping
 * inside other scripts, and seatd_reap. A test that needs a hold to run out waits for Redis's
 * clock (TIME, the clock every script uses) to reach the hold's expiresAt, not for a number of
 * milliseconds on the test's own clock. */
#include <criterion/criterion.h>

#include "store_harness.h"

static const char *const seats4[] = {"A1", "A2", "A3", "A4", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_expiry, .init = setup, .timeout = 30);

#define SHORT_TTL 200
#define WAIT_LIMIT_MS 20000 /* for Redis's clock to reach a deadline: only a stuck clock fails */

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
    long long deadline = th_get_ll(&r, "expiresAt");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a1, SHORT_TTL, 0, NULL), SEATD_ECONFLICT);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_wait_redis_ms(c, deadline, WAIT_LIMIT_MS), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a1, 60000, 0, NULL), 0);
    cr_assert_eq(th_hold_get(&t, &r, first, "alice"), 0);
    cr_assert_str_eq(th_get(&r, "status"), "EXPIRED");
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
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_wait_redis_ms(c, th_get_ll(&r, "expiresAt"), WAIT_LIMIT_MS), 0);
    cr_assert_eq(th_book_confirm(&t, &r, booking), SEATD_EEXPIRED);
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
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a3, 4000, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX], booking[SEATD_ID_MAX];
    long long deadline = th_get_ll(&r, "expiresAt");
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    /* Half the TTL gone on Redis's clock; the other half (2 s) is for two calls. The exact
     * last millisecond is probed by the boundary tests below. */
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_wait_redis_ms(c, deadline - 2000, WAIT_LIMIT_MS), 0);
    redisFree(c);
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
    long long hold_deadline = th_get_ll(&r, "expiresAt");
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 30000), 0);
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    redisContext *c = seatd_test_redis_connect();
    cr_assert(th_int(c, "PTTL {s:1}:seat:A4") > 20000);
    cr_assert_eq(th_wait_redis_ms(c, hold_deadline, WAIT_LIMIT_MS), 0,
                 "the hold's own TTL ran out");
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
    cr_assert_eq(th_wait_redis_ms(c, th_get_ll(&r, "expiresAt"), WAIT_LIMIT_MS), 0);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1"), 0, "Redis expired the key");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 0"), 1, "the projection lags until reaped");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", a2, 60000, 0, NULL), 0);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 0"), 0, "reaped lazily by another hold");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 1"), 1);
    cr_assert_eq(th_get_ll(&r, "version"), 2, "the reaping and the hold share one delta");

    cr_assert_eq(th_hold(&t, &r, "1", "carol", a3, SHORT_TTL, 0, NULL), 0);
    cr_assert_eq(th_wait_redis_ms(c, th_get_ll(&r, "expiresAt"), WAIT_LIMIT_MS), 0);
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

/* ---------------------------------------------------------------------------------------
 * The boundary: a hold is expired AT expiresAt, not a millisecond later. No sleeps and no
 * timed assertion: each probe spins on Redis's TIME until the target millisecond and then
 * pipelines TIME, the call, TIME; only a probe whose two TIMEs both read the target counts
 * (the call's own TIME lies between them), a probe that missed it is retried with a fresh
 * hold. The probes are bounded in count and time.
 * --------------------------------------------------------------------------------------- */

#define PROBE_TRIES 400        /* attempts per probe series, each a fresh hold */
#define PROBE_HOLD_TTL 15      /* ms: short, so an attempt takes ~15 ms */
#define PROBE_DEADLINE_MS 8000 /* per series */

static long long time_of(const redisReply *t)
{
    return atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
}

static long long redis_ms(redisContext *c)
{
    redisReply *t = seatd_test_redis_command(c, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    long long ms = time_of(t);
    freeReplyObject(t);
    return ms;
}

/*
 * Runs 'argv' on 'c' at Redis time 'at' exactly. Returns the reply (owned) when the call ran
 * within that millisecond; NULL when the attempt missed it (Redis's clock was already past
 * 'at', or moved on during the pipeline).
 */
static redisReply *run_at(redisContext *c, long long at, int argc, const char **argv)
{
    long long now;
    while ((now = redis_ms(c)) < at)
        ;
    if (now != at)
        return NULL;
    redisAppendCommand(c, "TIME");
    redisAppendCommandArgv(c, argc, argv, NULL);
    redisAppendCommand(c, "TIME");
    redisReply *t1 = NULL, *rep = NULL, *t2 = NULL;
    cr_assert_eq(redisGetReply(c, (void **)&t1), REDIS_OK);
    cr_assert_eq(redisGetReply(c, (void **)&rep), REDIS_OK);
    cr_assert_eq(redisGetReply(c, (void **)&t2), REDIS_OK);
    int hit = time_of(t1) == at && time_of(t2) == at;
    freeReplyObject(t1);
    freeReplyObject(t2);
    if (!hit) {
        freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

/* The value of 'name' in a flat name/value reply, or "". */
static const char *field(const redisReply *rep, const char *name)
{
    for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2)
        if (strcmp(rep->element[i]->str, name) == 0)
            return rep->element[i + 1]->str;
    return "";
}

/* FCALL seatd_hold for 'seat' (bit 'bit') of show 1 as 'owner' with 'ttl' ms; writes the
 * hold id; returns its expiresAt (or -1 when refused). */
static long long fhold(redisContext *c, const char *owner, const char *seat, const char *bit,
                       long long ttl, char *hold_id)
{
    char hash[80], ttl_s[24];
    cr_assert_eq(th_str(c, hash, sizeof(hash), "HGET {s:1}:meta layoutHash"), 1);
    cr_assert_eq(seatd_keys_new_id(hold_id, "1", 'h'), 0);
    snprintf(ttl_s, sizeof(ttl_s), "%lld", ttl);
    const char *argv[] = {
        "FCALL", th_fn("seatd_hold"), "1", "{s:1}:meta", hold_id, owner, ttl_s, "0", "", hash, seat,
        bit};
    redisReply *rep = redisCommandArgv(c, 12, argv, NULL);
    cr_assert_not_null(rep);
    long long at = rep->type == REDIS_REPLY_ARRAY ? atoll(field(rep, "expiresAt")) : -1;
    freeReplyObject(rep);
    return at;
}

/* The kinds of probe the boundary tests run at a hold's expiresAt (or one ms before). */
enum { P_BOOK_BEGIN, P_BOOK_CONFIRM, P_SEAT_KEY, P_HOLD_GET, P_RELEASE, P_OTHER_HOLDS, P_REAP };

/*
 * One attempt: a fresh hold of A1 by alice (TTL PROBE_HOLD_TTL; for P_BOOK_CONFIRM also its
 * booking, whose window ends before the hold), then the probe at expiresAt + 'offset'.
 * Returns the probe's reply (owned), or NULL when it missed its millisecond.
 */
static redisReply *attempt(redisContext *c, int kind, long long offset)
{
    char hold_id[SEATD_ID_MAX], booking_id[SEATD_ID_MAX], other[SEATD_ID_MAX], hash[80];
    cr_assert_eq(th_str(c, hash, sizeof(hash), "HGET {s:1}:meta layoutHash"), 1);
    long long e = fhold(c, "alice", "A1", "0", PROBE_HOLD_TTL, hold_id);
    cr_assert(e > 0, "the seat is free again for every attempt");
    cr_assert_eq(seatd_keys_new_id(booking_id, "1", 'b'), 0);
    cr_assert_eq(seatd_keys_new_id(other, "1", 'h'), 0);
    if (kind == P_BOOK_CONFIRM) {
        const char *begin[] = {"FCALL",    th_fn("seatd_book_begin"),
                               "1",        "{s:1}:meta",
                               hold_id,    "alice",
                               booking_id, "2400",
                               "EUR",      "tok_ok",
                               "1"};
        redisReply *rep = redisCommandArgv(c, 11, begin, NULL);
        int began = rep && rep->type == REDIS_REPLY_ARRAY && atoll(field(rep, "expiresAt")) == e;
        freeReplyObject(rep);
        if (!began)
            return NULL; /* too slow to begin inside the hold: try again */
    }
    redisReply *rep = NULL;
    long long at = e + offset;
    switch (kind) {
    case P_BOOK_BEGIN: {
        const char *argv[] = {"FCALL",    th_fn("seatd_book_begin"),
                              "1",        "{s:1}:meta",
                              hold_id,    "alice",
                              booking_id, "2400",
                              "EUR",      "tok_ok",
                              "1"};
        rep = run_at(c, at, 11, argv);
        break;
    }
    case P_BOOK_CONFIRM: {
        const char *argv[] = {"FCALL", th_fn("seatd_book_confirm"), "1", "{s:1}:meta", booking_id,
                              "pay_1"};
        rep = run_at(c, at, 6, argv);
        break;
    }
    case P_SEAT_KEY: {
        const char *argv[] = {"GET", "{s:1}:seat:A1"};
        rep = run_at(c, at, 2, argv);
        break;
    }
    case P_HOLD_GET: {
        const char *argv[] = {"FCALL", th_fn("seatd_hold_get"), "1", "{s:1}:meta", hold_id,
                              "alice"};
        rep = run_at(c, at, 6, argv);
        break;
    }
    case P_RELEASE: {
        const char *argv[] = {"FCALL", th_fn("seatd_release"), "1", "{s:1}:meta", hold_id, "alice"};
        rep = run_at(c, at, 6, argv);
        break;
    }
    case P_OTHER_HOLDS: {
        const char *argv[] = {
            "FCALL", th_fn("seatd_hold"), "1", "{s:1}:meta", other, "bob", "1", "0", "", hash, "A1",
            "0"};
        rep = run_at(c, at, 12, argv);
        break;
    }
    case P_REAP: {
        const char *argv[] = {"FCALL", th_fn("seatd_reap"), "1", "{s:1}:meta", "100"};
        rep = run_at(c, at, 5, argv);
        break;
    }
    }
    /* Let every attempt end: the next one needs A1 free (bob's 1 ms hold, alice's booking
     * window of 1 ms, a confirmed booking). Spin on Redis's clock past both, reap, fail or
     * cancel the booking. */
    long long until = e + 2;
    while (redis_ms(c) < until)
        ;
    const char *reap[] = {"FCALL", th_fn("seatd_reap"), "1", "{s:1}:meta", "100"};
    freeReplyObject(redisCommandArgv(c, 5, reap, NULL));
    const char *fail[] = {"FCALL", th_fn("seatd_book_fail"), "1", "{s:1}:meta", booking_id, "x"};
    freeReplyObject(redisCommandArgv(c, 6, fail, NULL));
    const char *cancel[] = {"FCALL", th_fn("seatd_cancel"), "1", "{s:1}:meta", booking_id, "", "0"};
    freeReplyObject(redisCommandArgv(c, 7, cancel, NULL)); /* a confirmed probe's seat */
    return rep;
}

/* Runs attempts until 'want' probes landed on their millisecond (or the tries or the time
 * run out); calls 'check' on each. */
static void probe(int kind, long long offset, int want,
                  void (*check)(const redisReply *rep, long long offset))
{
    th_t t;
    const char *seats[] = {"A1", "A2", NULL};
    seatd_test_redis_flushall();
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    cr_assert_eq(th_close(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    long long stop = redis_ms(c) + PROBE_DEADLINE_MS;
    int landed = 0, tries = 0;
    for (; tries < PROBE_TRIES && landed < want && redis_ms(c) < stop; tries++) {
        redisReply *rep = attempt(c, kind, offset);
        if (rep == NULL)
            continue;
        landed++;
        check(rep, offset);
        freeReplyObject(rep);
    }
    /* Every probe that landed was checked; at least one must land (a loaded machine may
     * miss some milliseconds, never all of them). */
    cr_assert(landed >= 1, "none of %d tries hit its millisecond", tries);
    if (kind == P_BOOK_BEGIN && offset == 0)
        fprintf(stderr,
                "expiry: %d book_begin calls at exactly expiresAt, all refused (%d tries)\n",
                landed, tries);
    redisFree(c);
}

static int is_error(const redisReply *rep, const char *word)
{
    return rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, word, strlen(word)) == 0 &&
           rep->str[strlen(word)] == ' ';
}

static void check_book_begin(const redisReply *rep, long long offset)
{
    if (offset == 0)
        cr_assert(is_error(rep, "EXPIRED"), "book_begin AT expiresAt: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : field(rep, "status"));
    else
        cr_assert_str_eq(field(rep, "status"), "PENDING_PAYMENT",
                         "book_begin 1 ms before expiresAt: %s",
                         rep->type == REDIS_REPLY_ERROR ? rep->str : "?");
}

static void check_book_confirm(const redisReply *rep, long long offset)
{
    if (offset == 0)
        cr_assert(is_error(rep, "EXPIRED"), "book_confirm AT expiresAt: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : field(rep, "status"));
    else
        cr_assert_str_eq(field(rep, "status"), "CONFIRMED", "book_confirm 1 ms before: %s",
                         rep->type == REDIS_REPLY_ERROR ? rep->str : "?");
}

static void check_seat_key(const redisReply *rep, long long offset)
{
    if (offset == 0)
        cr_assert_eq(rep->type, REDIS_REPLY_NIL,
                     "the seat key still names the hold AT "
                     "expiresAt: %s",
                     rep->type == REDIS_REPLY_STRING ? rep->str : "?");
    else
        cr_assert_eq(rep->type, REDIS_REPLY_STRING, "the seat key is gone 1 ms early");
}

static void check_hold_get(const redisReply *rep, long long offset)
{
    cr_assert_str_eq(field(rep, "status"), offset == 0 ? "EXPIRED" : "HELD");
}

static void check_release(const redisReply *rep, long long offset)
{
    if (offset == 0)
        cr_assert(is_error(rep, "EXPIRED"), "release AT expiresAt: %s",
                  rep->type == REDIS_REPLY_ERROR ? rep->str : field(rep, "status"));
    else
        cr_assert_str_eq(field(rep, "status"), "RELEASED");
}

static void check_other_holds(const redisReply *rep, long long offset)
{
    if (offset == 0)
        cr_assert_eq(rep->type, REDIS_REPLY_ARRAY, "another buyer gets the seat AT expiresAt: %s",
                     rep->type == REDIS_REPLY_ERROR ? rep->str : "?");
    else
        cr_assert(is_error(rep, "CONFLICT"), "1 ms before, the seat is still held");
}

static void check_reap(const redisReply *rep, long long offset)
{
    cr_assert_str_eq(field(rep, "reaped"), offset == 0 ? "1" : "0");
}

Test(lua_expiry, book_begin_at_expires_at_is_refused_and_a_millisecond_before_accepted,
     .timeout = 120)
{
    probe(P_BOOK_BEGIN, 0, 30, check_book_begin); /* the finding: 23 of 30 were accepted */
    probe(P_BOOK_BEGIN, -1, 3, check_book_begin);
}

Test(lua_expiry, book_confirm_at_expires_at_is_refused_and_a_millisecond_before_accepted,
     .timeout = 120)
{
    probe(P_BOOK_CONFIRM, 0, 3, check_book_confirm);
    probe(P_BOOK_CONFIRM, -1, 3, check_book_confirm);
}

Test(lua_expiry, the_seat_key_no_longer_names_the_hold_at_expires_at, .timeout = 120)
{
    probe(P_SEAT_KEY, 0, 3, check_seat_key);
    probe(P_SEAT_KEY, -1, 3, check_seat_key);
}

Test(lua_expiry, at_expires_at_the_hold_reads_expired_cannot_be_released_and_is_reaped,
     .timeout = 120)
{
    probe(P_HOLD_GET, 0, 3, check_hold_get);
    probe(P_HOLD_GET, -1, 3, check_hold_get);
    probe(P_RELEASE, 0, 3, check_release);
    probe(P_RELEASE, -1, 3, check_release);
    probe(P_REAP, 0, 3, check_reap);
    probe(P_REAP, -1, 3, check_reap);
}

Test(lua_expiry, another_buyer_can_hold_the_seat_at_expires_at, .timeout = 120)
{
    probe(P_OTHER_HOLDS, 0, 3, check_other_holds);
    probe(P_OTHER_HOLDS, -1, 3, check_other_holds);
}
