/* Integration tests for lua/hold.lua through store.c: all-or-nothing, validation,
 * idempotency and the per-user limit, against the runner's redis-server. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>

#include "domain/layout.h"
#include "racer.h"
#include "store_harness.h"

static const char *const seats10[] = {"C1", "C2", "C3", "C4",  "C5", "C6",
                                      "C7", "C8", "C9", "C10", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_hold, .init = setup, .timeout = 30);

Test(lua_hold, holds_free_seats_and_records_everything)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *want[] = {"C7", "C8", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), 0, "err %d %s", r.err, r.detail);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_str_eq(th_get(&r, "seatIds"), "C7,C8");
    cr_assert_str_eq(th_get(&r, "replayed"), "0");
    cr_assert_eq(th_get_ll(&r, "version"), 1);

    redisContext *c = seatd_test_redis_connect();
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:seat:C7"), 1);
    cr_assert_str_eq(v, hold_id);
    long long pttl = th_int(c, "PTTL {s:1}:seat:C8");
    cr_assert(pttl > 50000 && pttl <= 60000, "the show's hold TTL applies: %lld", pttl);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 2);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 6"), 1); /* C7 is index 6 */
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s status", hold_id), 1);
    cr_assert_str_eq(v, "HELD");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 1);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:user:alice %s", hold_id), 1);
    cr_assert_str_eq(v, "2");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, a_hold_naming_one_taken_seat_takes_nothing)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *first[] = {"C7", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", first, 0, 0, "k-a"), 0);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);

    const char *group[] = {"C5", "C6", "C7", "C8", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "bob", group, 0, 0, "k-b"), SEATD_ECONFLICT);
    cr_assert_str_eq(r.detail, "C7");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a rejected hold changed the keyspace");
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:idem:bob:k-b"), 0);
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, names_every_conflicting_seat)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *a[] = {"C2", "C4", NULL}, *b[] = {"C1", "C2", "C3", "C4", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a, 0, 0, NULL), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", b, 0, 0, NULL), SEATD_ECONFLICT);
    cr_assert_str_eq(r.detail, "C2 C4");
    cr_assert_eq(th_close(&t), 0);
    th_res_clear(&r);
}

typedef struct {
    const char *name;     /* behaviour */
    const char *show;     /* show id */
    const char *seats[4]; /* request */
    size_t n;             /* seats to send (may be 0) */
    int want;             /* expected error */
} bad_case_t;

Test(lua_hold, rejects_bad_requests_with_distinct_errors_and_changes_nothing)
{
    static const bad_case_t cases[] = {
        {"unknown seat", "1", {"C1", "Z9"}, 2, SEATD_EUNKNOWNSEAT},
        {"empty set", "1", {NULL}, 0, SEATD_EEMPTY},
        {"duplicate ids", "1", {"C1", "C1"}, 2, SEATD_EDUPSEAT},
        {"malformed id", "1", {"C1", "C{1}"}, 2, SEATD_EBADSEAT},
        {"unknown show", "77", {"C1"}, 1, SEATD_ENOSHOW},
    };
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *held[] = {"C9", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", held, 0, 0, NULL), 0);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const bad_case_t *k = &cases[i];
        const char *seats[5] = {0};
        for (size_t j = 0; j < k->n; j++)
            seats[j] = k->seats[j];
        int rc;
        if (k->n == 0) {
            char hold_id[SEATD_ID_MAX];
            cr_assert_eq(seatd_keys_new_id(hold_id, k->show, 'h'), 0);
            seatd_hold_args_t a = {k->show, hold_id, "bob", seats, 0, NULL, 0, 0, NULL, NULL, 0, 0};
            th_res_clear(&r);
            rc = th_finish(&t, &r, seatd_store_hold(t.store, &a, th_on_result, &r));
        } else {
            rc = th_hold(&t, &r, k->show, "bob", seats, 0, 0, NULL);
        }
        cr_expect_eq(rc, k->want, "%s: got %s", k->name, seatd_err_name(rc));
    }
    /* Too many: more than the library's hard cap of 100 seats per hold. */
    const char *many[102];
    char names[101][16];
    for (int i = 0; i < 101; i++) {
        snprintf(names[i], sizeof(names[i]), "X%d", i);
        many[i] = names[i];
    }
    many[101] = NULL;
    cr_expect_eq(th_hold(&t, &r, "1", "bob", many, 0, 0, NULL), SEATD_ETOOMANY);
    /* Malformed owner and idempotency key never reach Redis. */
    cr_expect_eq(th_hold(&t, &r, "1", "bo b", held, 0, 0, NULL), SEATD_EBADID);
    cr_expect_eq(th_hold(&t, &r, "1", "bob", held, 0, 0, "k}{"), SEATD_EBADID);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a rejected request changed the keyspace");
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, enforces_the_per_user_limit_over_holds_and_bookings)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *a[] = {"C1", "C2", NULL}, *b[] = {"C3", NULL}, *c3[] = {"C4", "C5", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", a, 0, 4, NULL), 0);
    char hold_a[SEATD_ID_MAX];
    snprintf(hold_a, sizeof(hold_a), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_a, "alice", 60000), 0);
    char booking[SEATD_ID_MAX];
    snprintf(booking, sizeof(booking), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_confirm(&t, &r, booking), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b, 0, 4, NULL), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", c3, 0, 4, NULL), SEATD_ELIMIT,
                 "2 booked + 1 "
                 "held + 2 asked > 4");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", c3, 0, 4, NULL), 0, "other users are not limited");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------- idempotency */

static int idem_racer(int i, void *arg)
{
    th_t t;
    th_res_t r = {0};
    const char *seats[] = {"C3", "C4", NULL};
    if (th_open(&t) != 0)
        return 10;
    th_res_t warm = {0};
    /* Warm the connection (and the library check) before the barrier. */
    if (th_finish(&t, &warm, seatd_store_show_get(t.store, "1", th_on_result, &warm)) != 0)
        return 11;
    th_res_clear(&warm);
    seatd_test_racer_ready_and_wait();
    int rc = th_hold(&t, &r, "1", "alice", seats, 0, 0, "same-key");
    char line[256];
    snprintf(line, sizeof(line), "%s %s %s %s", th_get(&r, "holdId") ? th_get(&r, "holdId") : "-",
             th_get(&r, "expiresAt") ? th_get(&r, "expiresAt") : "-",
             th_get(&r, "version") ? th_get(&r, "version") : "-",
             th_get(&r, "replayed") ? th_get(&r, "replayed") : "-");
    seatd_test_racer_report(line);
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 12;
    return rc == 0 ? 0 : 1;
}

Test(lua_hold, concurrent_retries_with_one_key_make_one_hold_and_one_answer)
{
    enum { N = 50 };
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    cr_assert_eq(th_close(&t), 0);

    int status[N];
    char *reports[N];
    cr_assert_eq(seatd_test_race(N, idem_racer, NULL, status, reports, 20000), 0);
    int replayed = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(status[i], 0, "racer %d exited %d", i, status[i]);
        cr_assert_not_null(reports[i]);
        char *last = strrchr(reports[i], ' ');
        replayed += strcmp(last, " 1") == 0;
        *last = '\0'; /* compare the answer without the replayed flag */
        cr_assert_str_eq(reports[i], reports[0], "answers differ");
    }
    cr_assert_eq(replayed, N - 1);
    for (int i = 0; i < N; i++)
        free(reports[i]);

    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:hold:*')"), 1);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 2);
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:ver"), 1);
    cr_assert_str_eq(v, "1");
    redisFree(c);

    cr_assert_eq(th_open(&t), 0);
    const char *other[] = {"C5", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", other, 0, 0, "same-key"), SEATD_EIDEMMISMATCH);
    const char *same[] = {"C3", "C4", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "bob", same, 0, 0, "same-key"), SEATD_ECONFLICT,
                 "keys are per user");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, replays_the_first_answer_even_after_the_hold_changed)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    const char *seats[] = {"C1", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", seats, 0, 0, "k1"), 0);
    char hold_id[SEATD_ID_MAX], expires[32];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    snprintf(expires, sizeof(expires), "%s", th_get(&r, "expiresAt"));
    cr_assert_eq(th_release(&t, &r, hold_id, "alice"), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", seats, 0, 0, "k1"), 0);
    cr_assert_str_eq(th_get(&r, "holdId"), hold_id);
    cr_assert_str_eq(th_get(&r, "expiresAt"), expires);
    cr_assert_str_eq(th_get(&r, "replayed"), "1");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* FCALL seatd_hold on show 1 for one seat 'seat' at bit 'bit', straight to Redis on 'c'
 * (hold id 'id', 'owner', the show's TTL, no limit, no idempotency key, layout 'hash').
 * Returns the reply (owned). */
static redisReply *hold_raw(redisContext *c, const char *id, const char *owner, const char *hash,
                            const char *seat, const char *bit)
{
    const char *argv[] = {
        "FCALL", th_fn("seatd_hold"), "1", "{s:1}:meta", id, owner, "0", "0", "", hash, seat, bit};
    return redisCommandArgv(c, 12, argv, NULL);
}

Test(lua_hold, refuses_bits_from_another_layout_or_out_of_range_and_changes_nothing)
{
    th_t t;
    redisContext *c;
    char hash[80], other[80];
    cr_assert_eq(th_open_raw_show(&t, seats10, 60000, &c, hash, sizeof(hash)), 0);
    snprintf(other, sizeof(other), "%s", hash);
    other[0] = other[0] == 'a' ? 'b' : 'a';
    char *before = th_snapshot(c);
    static const struct {
        const char *hash_kind, *seat, *bit, *why;
    } cases[] = {
        {"other", "C1", "0", "a worker with another layout"},
        {"same", "C1", "10", "a bit past seatCount"},
        {"same", "C1", "-1", "a negative bit"},
        {"same", "C1", "1.5", "a fractional bit"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *h = strcmp(cases[i].hash_kind, "same") == 0 ? hash : other;
        char hold_id[SEATD_ID_MAX];
        cr_assert_eq(seatd_keys_new_id(hold_id, "1", 'h'), 0);
        redisReply *rep = hold_raw(c, hold_id, "bob", h, cases[i].seat, cases[i].bit);
        cr_assert(rep != NULL && rep->type == REDIS_REPLY_ERROR, "%s was accepted", cases[i].why);
        cr_expect(strncmp(rep->str, "INVAL", 5) == 0, "%s: %s", cases[i].why, rep->str);
        freeReplyObject(rep);
    }
    /* Two seats claiming one bit. */
    const char *argv[] = {"FCALL",
                          th_fn("seatd_hold"),
                          "1",
                          "{s:1}:meta",
                          "1-h00000000000000000009",
                          "bob",
                          "0",
                          "0",
                          "",
                          hash,
                          "C1",
                          "0",
                          "C2",
                          "0"};
    redisReply *rep = redisCommandArgv(c, 14, argv, NULL);
    cr_assert(rep != NULL && rep->type == REDIS_REPLY_ERROR);
    cr_expect(strncmp(rep->str, "INVAL", 5) == 0, "%s", rep->str);
    freeReplyObject(rep);
    /* ... among nine seats (the script keeps a table of the bits seen past eight), and with
     * the pairs out of order (the script sorts them) */
    static const char *const nine[][18] = {
        {"C1", "0", "C2", "1", "C3", "2", "C4", "3", "C5", "4", "C6", "5", "C7", "6", "C8", "7",
         "C9", "7"},
        {"C9", "8", "C2", "1", "C3", "2", "C4", "3", "C5", "4", "C6", "5", "C7", "6", "C8", "7",
         "C1", "8"},
    };
    for (size_t k = 0; k < 2; k++) {
        const char *many[10 + 18];
        memcpy(many, argv, 10 * sizeof(*many));
        memcpy(many + 10, nine[k], sizeof(nine[k]));
        rep = redisCommandArgv(c, 28, many, NULL);
        cr_assert(rep != NULL && rep->type == REDIS_REPLY_ERROR, "case %zu accepted", k);
        cr_expect(strncmp(rep->str, "INVAL", 5) == 0, "case %zu: %s", k, rep->str);
        freeReplyObject(rep);
    }
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused hold changed the keyspace");
    free(before);
    free(after);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

/* The worker sends the pairs sorted by seat id; pairs out of order are sorted by the script:
 * the hold, its seat list and its bits come out the same. */
Test(lua_hold, pairs_out_of_order_are_sorted_before_the_hold_is_made)
{
    th_t t;
    redisContext *c;
    char hash[80];
    cr_assert_eq(th_open_raw_show(&t, seats10, 60000, &c, hash, sizeof(hash)), 0);
    const char *argv[] = {"FCALL",
                          th_fn("seatd_hold"),
                          "1",
                          "{s:1}:meta",
                          "1-h00000000000000000007",
                          "bob",
                          "0",
                          "0",
                          "",
                          hash,
                          "C3",
                          "2",
                          "C1",
                          "0",
                          "C2",
                          "1"};
    redisReply *rep = redisCommandArgv(c, 16, argv, NULL);
    cr_assert(rep != NULL && rep->type == REDIS_REPLY_ARRAY, "%s", rep && rep->str ? rep->str : "");
    const char *seat_ids = NULL;
    for (size_t i = 0; i + 1 < rep->elements; i += 2)
        if (strcmp(rep->element[i]->str, "seatIds") == 0)
            seat_ids = rep->element[i + 1]->str;
    cr_assert_str_eq(seat_ids, "C1,C2,C3");
    freeReplyObject(rep);
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:1-h00000000000000000007 bits"), 1);
    cr_assert_str_eq(v, "0,1,2");
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 3);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

/* The hold id is the worker's fresh random id; the script checks it last, only on a hold it is
 * about to make (a refusal does not pay for it). A reused id is still never written over:
 * on free seats it is INVAL and nothing changes; on a taken seat the refusal comes first. */
Test(lua_hold, a_reused_hold_id_is_refused_and_writes_nothing)
{
    th_t t;
    redisContext *c;
    char hash[80];
    cr_assert_eq(th_open_raw_show(&t, seats10, 60000, &c, hash, sizeof(hash)), 0);
    const char *id = "1-h000000000000000000a1";
    redisReply *rep = hold_raw(c, id, "alice", hash, "C1", "0");
    cr_assert(rep != NULL && rep->type == REDIS_REPLY_ARRAY, "the first hold is made");
    freeReplyObject(rep);
    char *before = th_snapshot(c);

    rep = hold_raw(c, id, "bob", hash, "C2", "1");
    cr_assert(rep != NULL && rep->type == REDIS_REPLY_ERROR, "a reused id on a free seat");
    cr_assert_str_eq(rep->str, "INVAL hold id in use");
    freeReplyObject(rep);
    rep = hold_raw(c, id, "bob", hash, "C1", "0");
    cr_assert(rep != NULL && rep->type == REDIS_REPLY_ERROR, "a reused id on a taken seat");
    cr_assert_str_eq(rep->str, "CONFLICT C1");
    freeReplyObject(rep);

    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a refused hold changed the keyspace");
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s owner", id), 1);
    cr_assert_str_eq(v, "alice", "the first hold is untouched");
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C2"), 0);
    free(before);
    free(after);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, a_worker_holding_a_stale_layout_writes_no_bits)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    /* This process now believes show 1 has the seats in another order: C1 would be bit 9. */
    cJSON *arr = cJSON_CreateArray();
    for (int i = 9; i >= 0; i--) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", seats10[i]);
        cJSON_AddStringToObject(o, "row", "C");
        cJSON_AddNumberToObject(o, "number", i + 1);
        cJSON_AddItemToArray(arr, o);
    }
    seatd_layout_t *stale = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, NULL, &stale, NULL, 0), 0);
    cJSON_Delete(arr);
    seatd_layout_cache_put("1", stale);
    redisContext *c = seatd_test_redis_connect();
    char *before = th_snapshot(c);
    const char *want[] = {"C1", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), SEATD_EINVAL);
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before, "a stale layout wrote something");
    free(before);
    free(after);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, a_worker_without_the_layout_reads_the_shared_one_and_keeps_the_bits_on_the_hold)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    seatd_layout_cache_clear();
    const char *want[] = {"C7", "C10", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", want, 0, 0, NULL), 0, "err %d %s", r.err, r.detail);
    cr_assert(seatd_layout_cache_get("1") != NULL, "the layout read is cached");
    redisContext *c = seatd_test_redis_connect();
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s bits", th_get(&r, "holdId")), 1);
    cr_assert_str_eq(v, "9,6", "bits aligned with the sorted seats C10,C7");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 6"), 1);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 9"), 1);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 2);
    redisFree(c);

    seatd_layout_cache_clear();
    const char *unknown[] = {"C1", "Z9", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", unknown, 0, 0, NULL), SEATD_EUNKNOWNSEAT);
    cr_assert_str_eq(r.detail, "Z9");
    seatd_layout_cache_clear();
    cr_assert_eq(th_hold(&t, &r, "77", "alice", want, 0, 0, NULL), SEATD_ENOSHOW);
    cr_assert_eq(r.done, 1, "the callback ran once");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------------------------
 * Sales close at the show's start (or its salesCloseAt), on Redis's clock.
 * --------------------------------------------------------------------------------------- */

static long long redis_now_ms(redisContext *c)
{
    redisReply *t = seatd_test_redis_command(c, "TIME");
    cr_assert(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    long long ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    return ms;
}

/* Spins on Redis's clock (no sleep) until it reads at least 'at'; bounded by 10 s. */
static void wait_for_redis_ms(redisContext *c, long long at)
{
    long long stop = redis_now_ms(c) + 10000;
    long long now;
    while ((now = redis_now_ms(c)) < at)
        cr_assert(now < stop, "Redis's clock did not reach %lld", at);
}

Test(lua_hold, sales_close_at_the_start_holds_end_there_and_nothing_is_written_after)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    redisContext *c = seatd_test_redis_connect();
    const char *c1[] = {"C1", NULL}, *c2[] = {"C2", NULL}, *c3[] = {"C3", NULL};
    long long starts = redis_now_ms(c) + 300;
    cr_assert_eq(th_int(c, "HSET {s:1}:meta startsAt %lld", starts), 0);
    /* Before the start: a hold of 60 s ends at the start, not after it. */
    cr_assert_eq(th_hold(&t, &r, "1", "alice", c2, 0, 0, NULL), 0, "err %d", r.err);
    cr_assert_eq(th_get_ll(&r, "expiresAt"), starts, "a hold never outlives the sales");
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_int(c, "PEXPIRETIME {s:1}:seat:C2"), starts - 1);
    /* An expired hold to reap: reaping is a write the closed path must not do either. It is
     * the last hold made before the close, so no open-path call can reap it first (a hold
     * reaps what has expired, and 5 ms may pass before the next call on a busy machine). */
    cr_assert_eq(th_hold(&t, &r, "1", "carol", c1, 5, 0, NULL), 0);
    long long carol_until = th_get_ll(&r, "expiresAt");
    wait_for_redis_ms(c, starts > carol_until ? starts : carol_until);

    char *before = th_snapshot(c);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", c3, 0, 0, NULL), SEATD_ESALESCLOSED);
    cr_assert_eq(atoll(r.detail), starts, "the close instant: %s", r.detail);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", c3, 0, 0, "key-1"), SEATD_ESALESCLOSED);
    cr_assert_eq(th_book_begin(&t, &r, "1", hold_id, "alice", 30000), SEATD_ESALESCLOSED);
    char *after = th_snapshot(c);
    cr_assert_str_eq(before, after, "nothing written, not even reaping");
    free(before);
    free(after);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 0"), 1, "carol's expired hold was not reaped");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_hold, a_sales_close_before_the_start_is_kept_by_create_show_and_closes_sales)
{
    th_t t;
    th_res_t r = {0};
    redisContext *c;
    char hash[80];
    cr_assert_eq(th_open_raw_show(&t, seats10, 60000, &c, hash, sizeof(hash)), 0);
    /* create_show.lua copies extra's salesCloseAt into the meta, and refuses one after the
     * start or not an integer. */
    long long close = redis_now_ms(c) + 300;
    char extra[96];
    snprintf(extra, sizeof(extra), "{\"screen\":\"2\",\"salesCloseAt\":%lld}", close);
    redisReply *rep = seatd_test_redis_command(c,
                                               "FCALL %s 1 {s:2}:meta T 1800000000000 "
                                               "60000 {\"standard\":1200} %s %s 10",
                                               th_fn("seatd_create_show"), hash, extra);
    cr_assert(rep && rep->type == REDIS_REPLY_ARRAY, "%s", rep ? rep->str : "");
    freeReplyObject(rep);
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:2}:meta salesCloseAt"), 1);
    cr_assert_eq(atoll(v), close);
    const char *bad[] = {"{\"salesCloseAt\":1800000000001}", "{\"salesCloseAt\":\"soon\"}",
                         "{\"salesCloseAt\":1.5}", "{\"salesCloseAt\":-5}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rep = seatd_test_redis_command(c,
                                       "FCALL %s 1 {s:3}:meta T 1800000000000 60000 "
                                       "{\"standard\":1200} %s %s 10",
                                       th_fn("seatd_create_show"), hash, bad[i]);
        cr_assert(rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "INVAL", 5) == 0, "%s",
                  bad[i]);
        freeReplyObject(rep);
        cr_assert_eq(th_int(c, "EXISTS {s:3}:meta"), 0);
    }
    /* seatd_show_get reports it; a show without one reports "" (sales close at startsAt). */
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_get(t.store, "2", th_on_result, &r)), 0);
    cr_assert_eq(th_get_ll(&r, "salesCloseAt"), close);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_get(t.store, "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "salesCloseAt"), "");

    /* Show 1 gets a cutoff well before its start: holds end there, then are refused. */
    cr_assert_eq(th_int(c, "HSET {s:1}:meta salesCloseAt %lld", close), 1);
    const char *c4[] = {"C4", NULL}, *c5[] = {"C5", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", c4, 0, 0, NULL), 0);
    cr_assert_eq(th_get_ll(&r, "expiresAt"), close);
    wait_for_redis_ms(c, close);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", c5, 0, 0, NULL), SEATD_ESALESCLOSED);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C5"), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
