/* Integration tests for worker/store/hold_batch.c and lua/hold.lua's seatd_hold_batch: the holds
 * of one show queued in one turn of the loop go to Redis as one call, each decided as its own
 * call would be, and each caller gets its own answer. Against the runner's redis-server. */
#include <criterion/criterion.h>

#include "store_harness.h"

static const char *const house[] = {"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(hold_batch, .init = setup, .timeout = 30);

/* FCALLs Redis has run since its stats were last reset (INFO commandstats). */
static long long fcalls(redisContext *c)
{
    redisReply *r = seatd_test_redis_command(c, "INFO commandstats");
    long long n = 0;
    const char *at = r && r->str ? strstr(r->str, "cmdstat_fcall:calls=") : NULL;
    if (at)
        n = atoll(at + strlen("cmdstat_fcall:calls="));
    freeReplyObject(r);
    return n;
}

typedef struct queued_s {
    char hold_id[SEATD_ID_MAX];
    const char *seat[2];
    th_res_t res;
} queued_t;

/* Queues a named hold of 'seat' for 'owner' (no loop turn in between). */
static void queue_hold(th_t *t, queued_t *q, const char *show, const char *owner, const char *seat,
                       const char *idem)
{
    q->seat[0] = seat;
    q->seat[1] = NULL;
    seatd_hold_args_t a;
    cr_assert_eq(th_hold_args(&a, q->hold_id, show, owner, q->seat, 1, idem, 0, 0), 0);
    a.request = "named";
    cr_assert_eq(seatd_store_hold(t->store, &a, th_on_result, &q->res), 0);
}

/* Queues hold 'i': owner "u<i>" wants seat house[i]. */
static void queue_nth(th_t *t, queued_t *q, int i)
{
    char owner[16];
    snprintf(owner, sizeof(owner), "u%d", i);
    queue_hold(t, &q[i], "1", owner, house[i], NULL);
}

static void wait_all(th_t *t, queued_t *q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(seatd_test_loop_run_until(t->loop, &q[i].res.done, TH_WAIT_MS), 0,
                     "hold %zu answered", i);
}

/* Opens 't' with batches of at most 'max' holds, 'in_flight' of a show at once (0: no limit),
 * and show "1" of 'house'; returns a connection to Redis whose stats were just reset. */
static redisContext *open_batched(th_t *t, unsigned max, unsigned in_flight)
{
    cr_assert_eq(th_open(t), 0);
    seatd_store_set_batching(t->store, t->loop, max, in_flight);
    cr_assert_eq(th_create_show(t, "1", house, 60000), 0);
    redisContext *c = seatd_test_redis_connect();
    freeReplyObject(seatd_test_redis_command(c, "CONFIG RESETSTAT"));
    return c;
}

/* Asserts that each of the 'n' holds of 'q' was made, and closes 'c' and 't'. */
static void all_made_then_close(th_t *t, redisContext *c, queued_t *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(q[i].res.err, 0, "hold %zu: err %d %s", i, q[i].res.err, q[i].res.detail);
        th_res_clear(&q[i].res);
    }
    redisFree(c);
    cr_assert_eq(th_close(t), 0);
}

Test(hold_batch, a_turn_of_holds_is_one_call_and_each_gets_its_own_answer)
{
    th_t t;
    redisContext *c = open_batched(&t, 32, 0);

    /* six buyers race for A1 in one turn; six others each want a seat nobody else wants */
    queued_t q[12];
    memset(q, 0, sizeof(q));
    for (int i = 0; i < 6; i++) {
        char owner[16];
        snprintf(owner, sizeof(owner), "racer%d", i);
        queue_hold(&t, &q[i], "1", owner, "A1", NULL);
    }
    for (int i = 0; i < 6; i++) {
        char owner[16];
        snprintf(owner, sizeof(owner), "loner%d", i);
        queue_hold(&t, &q[6 + i], "1", owner, house[2 + i], NULL);
    }
    wait_all(&t, q, 12);
    cr_assert_eq(fcalls(c), 1, "twelve holds of one show in one turn: one call");

    int winners = 0, conflicts = 0;
    const char *a1_winner = NULL;
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(q[i].res.done, 1);
        if (q[i].res.err == 0) {
            winners++;
            a1_winner = q[i].hold_id;
            cr_assert_str_eq(th_get(&q[i].res, "holdId"), q[i].hold_id, "its own hold");
        } else {
            cr_assert_eq(q[i].res.err, SEATD_ECONFLICT, "racer %d: err %d %s", i, q[i].res.err,
                         q[i].res.detail);
            conflicts++;
        }
    }
    cr_assert_eq(winners, 1);
    cr_assert_eq(conflicts, 5);
    /* a refusal's alternatives come from the maps the batch answers once, as it leaves them:
     * A3-A8 went to the loners in the same batch, so only A2 and A9 are free */
    for (int i = 0; i < 6; i++) {
        if (q[i].res.err == 0)
            continue;
        int alts = 0;
        for (const char *at = strstr(q[i].res.detail, "alt="); at; at = strstr(at + 4, "alt=")) {
            cr_assert(strncmp(at, "alt=A2", 6) == 0 || strncmp(at, "alt=A9", 6) == 0,
                      "racer %d: %s", i, q[i].res.detail);
            alts++;
        }
        cr_assert_gt(alts, 0, "racer %d has alternatives: %s", i, q[i].res.detail);
    }
    cr_assert_eq(q[0].res.err, 0, "the first queued is decided first");
    for (int i = 6; i < 12; i++) {
        cr_assert_eq(q[i].res.err, 0, "loner %d: err %d %s", i, q[i].res.err, q[i].res.detail);
        cr_assert_str_eq(th_get(&q[i].res, "holdId"), q[i].hold_id);
        cr_assert_str_eq(th_get(&q[i].res, "seatIds"), house[2 + i - 6]);
    }
    /* Redis agrees: A1 names the one winner, seven seats held, seven versions */
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:seat:A1"), 1);
    cr_assert_str_eq(v, a1_winner);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 7);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 7);
    long long versions[7], nv = 0;
    for (int i = 0; i < 12; i++)
        if (q[i].res.err == 0)
            versions[nv++] = atoll(th_get(&q[i].res, "version"));
    for (int i = 1; i < nv; i++)
        cr_assert_gt(versions[i], versions[i - 1], "each win its own version, in order");
    for (int i = 0; i < 12; i++)
        th_res_clear(&q[i].res);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(hold_batch, a_full_batch_goes_at_once_and_the_rest_at_the_end_of_the_turn)
{
    th_t t;
    redisContext *c = open_batched(&t, 4, 0);
    queued_t q[9];
    memset(q, 0, sizeof(q));
    for (int i = 0; i < 9; i++)
        queue_nth(&t, q, i);
    wait_all(&t, q, 9);
    cr_assert_eq(fcalls(c), 3, "4 + 4 + 1");
    all_made_then_close(&t, c, q, 9);
}

/* Three holds queued one loop turn apart while Redis is paused (so nothing comes back in
 * between): with 'in_flight' 1 the first goes alone and the two that arrive while it is on its
 * way go together when it returns; with no limit each turn sends its own call. Returns the
 * FCALLs Redis ran. */
static long long calls_for_holds_a_turn_apart(unsigned in_flight)
{
    th_t t;
    redisContext *c = open_batched(&t, 32, in_flight);
    freeReplyObject(seatd_test_redis_command(c, "CLIENT PAUSE 300 ALL"));
    queued_t q[3];
    memset(q, 0, sizeof(q));
    for (int i = 0; i < 3; i++) {
        queue_nth(&t, q, i);
        uv_run(t.loop, UV_RUN_NOWAIT); /* one turn: what may go is written to Redis */
        cr_assert_eq(q[i].res.done, 0, "Redis is paused: nothing is answered yet");
    }
    wait_all(&t, q, 3);
    long long n = fcalls(c);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 3);
    all_made_then_close(&t, c, q, 3);
    return n;
}

Test(hold_batch, holds_that_arrive_while_a_batch_is_on_its_way_go_together_when_it_returns)
{
    cr_assert_eq(calls_for_holds_a_turn_apart(1), 2, "A1 alone, then A2 and A3 together");
}

Test(hold_batch, without_a_limit_each_turn_sends_its_own_call)
{
    cr_assert_eq(calls_for_holds_a_turn_apart(0), 3);
}

/* The batcher is replaced (freed) while one batch is on its way and another waits for it: the
 * waiting one is answered SHUTDOWN at once, the one on its way is answered by Redis as usual
 * when it returns, to a batcher that is gone (ASan builds check that nothing of it is touched),
 * and Redis holds exactly that one seat. */
Test(hold_batch, a_batcher_freed_with_a_batch_on_its_way_answers_both)
{
    th_t t;
    redisContext *c = open_batched(&t, 32, 1);
    freeReplyObject(seatd_test_redis_command(c, "CLIENT PAUSE 300 ALL"));
    queued_t q[2];
    memset(q, 0, sizeof(q));
    queue_nth(&t, q, 0);
    uv_run(t.loop, UV_RUN_NOWAIT); /* A1's batch goes */
    queue_nth(&t, q, 1);           /* A2 waits for it */
    seatd_store_set_batching(t.store, t.loop, 32, 1);
    cr_assert_eq(q[1].res.done, 1, "the waiting hold is answered when its batcher goes");
    cr_assert_eq(q[1].res.err, SEATD_ESHUTDOWN);
    cr_assert_eq(q[0].res.done, 0, "Redis is paused");
    wait_all(&t, q, 1);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1);
    th_res_clear(&q[1].res);
    all_made_then_close(&t, c, q, 1);
}

/* Two requests with one idempotency key in one batch: one hold, the second answer a replay of
 * the first; a third with the key and other seats is refused (IDEM_MISMATCH). */
Test(hold_batch, an_idempotency_key_repeated_within_a_batch_replays_the_first_answer)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    seatd_store_set_batching(t.store, t.loop, 32, 0);
    cr_assert_eq(th_create_show(&t, "1", house, 60000), 0);
    queued_t q[3];
    memset(q, 0, sizeof(q));
    queue_hold(&t, &q[0], "1", "alice", "A5", "k-1");
    queue_hold(&t, &q[1], "1", "alice", "A5", "k-1");
    queue_hold(&t, &q[2], "1", "alice", "A6", "k-1");
    wait_all(&t, q, 3);
    cr_assert_eq(q[0].res.err, 0);
    cr_assert_str_eq(th_get(&q[0].res, "replayed"), "0");
    cr_assert_eq(q[1].res.err, 0, "err %d %s", q[1].res.err, q[1].res.detail);
    cr_assert_str_eq(th_get(&q[1].res, "replayed"), "1");
    cr_assert_str_eq(th_get(&q[1].res, "holdId"), th_get(&q[0].res, "holdId"));
    cr_assert_eq(q[2].res.err, SEATD_EIDEMMISMATCH, "err %d %s", q[2].res.err, q[2].res.detail);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1);
    redisFree(c);
    for (int i = 0; i < 3; i++)
        th_res_clear(&q[i].res);
    cr_assert_eq(th_close(&t), 0);
}

/* A batch whose shape is wrong decides nothing, even for its well-formed requests. */
Test(hold_batch, a_malformed_batch_is_refused_whole_and_writes_nothing)
{
    th_t t;
    redisContext *c;
    char hash[80];
    cr_assert_eq(th_open_raw_show(&t, house, 60000, &c, hash, sizeof(hash)), 0);
    char version[32] = "", now[32] = "";
    th_str(c, version, sizeof(version), "GET {s:1}:ver");
    const char *bad[] = {
        /* n says 2, one request follows */
        "FCALL %s 1 {s:1}:meta 2 10 0 1-h%032d u1 0 0 %s %s named 1 A1 0",
        /* a request's count runs past the end */
        "FCALL %s 1 {s:1}:meta 1 11 0 1-h%032d u1 0 0 %s %s named 1 A1 0",
        /* an admitted request without KEYS[2] */
        "FCALL %s 1 {s:1}:meta 1 10 1 1-h%032d u1 0 0 %s %s named 1 A1 0",
        /* more requests than a batch may have */
        "FCALL %s 1 {s:1}:meta 65 10 0 1-h%032d u1 0 0 %s %s named 1 A1 0",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redisReply *r = seatd_test_redis_command(c, bad[i], th_fn("seatd_hold_batch"), 7, "", hash);
        cr_assert(r != NULL && r->type == REDIS_REPLY_ERROR, "case %zu refused", i);
        cr_assert(strncmp(r->str, "INVAL", 5) == 0, "case %zu: %s", i, r->str);
        freeReplyObject(r);
    }
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1"), 0);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 0);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 0);
    th_str(c, now, sizeof(now), "GET {s:1}:ver");
    cr_assert_str_eq(now, version, "no version written");
    /* the same request well formed holds the seat */
    redisReply *r = seatd_test_redis_command(
        c, "FCALL %s 1 {s:1}:meta 1 10 0 1-h%032d u1 0 0 %s %s named 1 A1 0",
        th_fn("seatd_hold_batch"), 7, "", hash);
    cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY, "the one answer is a hold");
    freeReplyObject(r);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:A1"), 1);
    /* a refusal in a batch is one text, and the batch's maps follow */
    r = seatd_test_redis_command(c,
                                 "FCALL %s 1 {s:1}:meta 1 10 0 1-h%032d u2 0 0 %s %s named 1 A1 0",
                                 th_fn("seatd_hold_batch"), 8, "", hash);
    cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->element[0]->str, "refused 0\nCONFLICT A1\nA1");
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->element[1]->elements, 4, "booked, its map, held, its map");
    cr_assert_str_eq(r->element[1]->element[2]->str, "held");
    cr_assert_eq((unsigned char)r->element[1]->element[3]->str[0], 0x80, "A1 is bit 0");
    freeReplyObject(r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}
