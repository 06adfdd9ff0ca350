/* Race tests for lua/hold.lua: forked racers, each with its own loop, client and store,
 * released together from a barrier. */
#include <criterion/criterion.h>

#include "racer.h"
#include "store_harness.h"

static const char *const seats10[] = {"C1", "C2", "C3", "C4",  "C5", "C6",
                                      "C7", "C8", "C9", "C10", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(race_hold, .init = setup, .timeout = 60);

static void create_show(void)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats10, 60000), 0);
    cr_assert_eq(th_close(&t), 0);
}

/* Opens a store and warms its connection (library loaded) before the barrier. */
static int racer_open(th_t *t)
{
    th_res_t warm = {0};
    if (th_open(t) != 0)
        return -1;
    int rc = th_finish(t, &warm, seatd_store_show_get(t->store, "1", th_on_result, &warm));
    th_res_clear(&warm);
    return rc;
}

/* Exit codes: 0 won, 1 conflict naming C7 only, 2+ anything else. */
static int one_seat_racer(int i, void *arg)
{
    th_t t;
    th_res_t r = {0};
    char owner[16];
    const char *seats[] = {"C7", NULL};
    snprintf(owner, sizeof(owner), "user%d", i);
    if (racer_open(&t) != 0)
        return 10;
    seatd_test_racer_ready_and_wait();
    int rc = th_hold(&t, &r, "1", owner, seats, 0, 0, NULL);
    int code = rc == 0 ? 0 : (rc == SEATD_ECONFLICT && strcmp(r.detail, "C7") == 0) ? 1 : 2;
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(race_hold, one_seat_sixty_four_racers_exactly_one_wins)
{
    enum { N = 64 };
    create_show();
    int status[N], won = 0, lost = 0;
    cr_assert_eq(seatd_test_race(N, one_seat_racer, NULL, status, NULL, 30000), 0);
    for (int i = 0; i < N; i++) {
        cr_assert(status[i] == 0 || status[i] == 1, "racer %d exited %d", i, status[i]);
        won += status[i] == 0;
        lost += status[i] == 1;
    }
    cr_assert_eq(won, 1);
    cr_assert_eq(lost, N - 1);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:seat:*')"), 1);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:seat:C7"), 1);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 1);
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 6"), 1);
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:hold:*')"), 1);
    redisFree(c);
}

/* ---------------------------------------------------------------------- overlapping groups */

#define ROUNDS 1000

/* Sends one raw command on the racer's rds and copies an integer or string reply. */
typedef struct {
    int done;    /* callback ran */
    int err;     /* rds error */
    long long n; /* integer reply */
    char s[64];  /* string reply ("" for nil) */
} raw_t;

static void on_raw(const struct redisReply *reply, int err, void *data)
{
    raw_t *w = data;
    w->done = 1;
    w->err = err;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        w->n = reply->integer;
    if (reply && reply->type == REDIS_REPLY_STRING)
        snprintf(w->s, sizeof(w->s), "%.*s", (int)reply->len, reply->str);
}

static int raw(th_t *t, raw_t *w, const char *a0, const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    memset(w, 0, sizeof(*w));
    if (seatd_rds_callv(t->rds, a2 ? 3 : 2, argv, NULL, on_raw, w) < 0)
        return -1;
    if (seatd_test_loop_run_until(t->loop, &w->done, TH_WAIT_MS) < 0 || w->err)
        return -1;
    return 0;
}

static const char *const group_a[] = {"C5", "C6", "C7", NULL};
static const char *const group_b[] = {"C7", "C8", NULL};
static const int index_of[] = {['5'] = 4, ['6'] = 5, ['7'] = 6, ['8'] = 7};

/*
 * Racer 0 wants {C5,C6,C7}, racer 1 wants {C7,C8}, ROUNDS times each. After every attempt
 * the racer checks the all-or-nothing property on what it can see stably: a won hold owns
 * every seat key and held bit of its group; a lost hold left no key naming it, no hold
 * record, and was refused for C7 only. Then it releases. Exit 0 or the failing check.
 */
static int group_racer(int i, void *arg)
{
    th_t t;
    th_res_t r = {0};
    raw_t w;
    const char *const *group = i == 0 ? group_a : group_b;
    const char *owner = i == 0 ? "alice" : "bob";
    char key[SEATD_KEY_MAX], idx[8], hold_id[SEATD_ID_MAX];
    int wins = 0, conflicts = 0, code = 0;
    if (racer_open(&t) != 0)
        return 10;
    seatd_test_racer_ready_and_wait();
    for (int round = 0; round < ROUNDS && code == 0; round++) {
        int rc = th_hold(&t, &r, "1", owner, group, 0, 0, NULL);
        if (rc == 0) {
            wins++;
            snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
            for (int k = 0; group[k] && code == 0; k++) {
                snprintf(key, sizeof(key), "{s:1}:seat:%s", group[k]);
                snprintf(idx, sizeof(idx), "%d", index_of[(int)group[k][1]]);
                if (raw(&t, &w, "GET", key, NULL) || strcmp(w.s, hold_id) != 0)
                    code = 20;
                else if (raw(&t, &w, "GETBIT", "{s:1}:held", idx) || w.n != 1)
                    code = 21;
            }
            if (code == 0 && th_release(&t, &r, hold_id, owner) != 0)
                code = 22;
        } else if (rc == SEATD_ECONFLICT) {
            conflicts++;
            if (strcmp(r.detail, "C7") != 0)
                code = 30;
            for (int k = 0; group[k] && code == 0; k++) {
                if (strcmp(group[k], "C7") == 0)
                    continue;
                snprintf(key, sizeof(key), "{s:1}:seat:%s", group[k]);
                /* the seat is either free or held by the same hold that holds C7 */
                if (raw(&t, &w, "GET", key, NULL))
                    code = 31;
                else if (w.s[0] != '\0') {
                    char c7[64];
                    snprintf(c7, sizeof(c7), "%s", w.s);
                    if (raw(&t, &w, "GET", "{s:1}:seat:C7", NULL))
                        code = 32;
                    else if (strcmp(w.s, c7) != 0 && w.s[0] != '\0')
                        code = 33; /* two different holds share our group: partial state */
                }
            }
        } else {
            code = 40;
        }
    }
    char line[64];
    snprintf(line, sizeof(line), "%d %d", wins, conflicts);
    seatd_test_racer_report(line);
    th_res_clear(&r);
    if (th_close(&t) != 0 && code == 0)
        code = 11;
    return code;
}

Test(race_hold, overlapping_group_holds_are_never_partial)
{
    create_show();
    int status[2];
    char *reports[2];
    cr_assert_eq(seatd_test_race(2, group_racer, NULL, status, reports, 50000), 0);
    long wins = 0, conflicts = 0;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(status[i], 0, "racer %d failed check %d", i, status[i]);
        cr_assert_not_null(reports[i]);
        long w = 0, c = 0;
        cr_assert_eq(sscanf(reports[i], "%ld %ld", &w, &c), 2);
        wins += w;
        conflicts += c;
        free(reports[i]);
    }
    cr_assert_eq(wins + conflicts, 2 * ROUNDS, "every attempt won or was refused");
    cr_assert(wins >= 1, "somebody won sometimes");
    cr_log_info("overlapping groups: %ld wins, %ld conflicts", wins, conflicts);
    /* Every round ended released: no seat key, no held bit, no live hold remains, and every
     * hold record that exists is RELEASED (a refused request leaves no record). */
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:seat:*')"), 0);
    cr_assert_eq(th_int(c, "BITCOUNT {s:1}:held"), 0);
    cr_assert_eq(th_int(c, "ZCARD {s:1}:expiry"), 0);
    cr_assert_eq(th_int(c, "EVAL %s 0",
                        "local n = 0 for _, k in ipairs(redis.call('KEYS', '{s:1}:hold:*')) do "
                        "if redis.call('HGET', k, 'status') ~= 'RELEASED' then n = n + 1 end "
                        "end return n"),
                 0);
    cr_assert_eq(th_int(c, "EVAL %s 0", "return #redis.call('KEYS', '{s:1}:hold:*')"), wins,
                 "one hold record per win, none for a refusal");
    char v[32];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:1}:ver"), 1);
    cr_assert_eq(atol(v), 2 * wins, "one version per hold and per release");
    redisFree(c);
}
