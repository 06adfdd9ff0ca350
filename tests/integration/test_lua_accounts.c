/* Integration tests for lua/accounts.lua through store.c against a real redis-server:
 * registration's email gate, refresh-token rotation, replay revoking the family, logout,
 * TTLs, the per-user indexes, and 100 concurrent refreshes of one token (forked racers
 * released from a barrier). */
#include <criterion/criterion.h>

#include "racer.h"
#include "store_harness.h"

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_accounts, .init = setup, .timeout = 60);

#define USER "u00112233445566778899"
#define DAY_MS (24LL * 3600 * 1000)

static int create_user(th_t *t, const char *id, const char *email, int admin)
{
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_email_claim(t->store, email, id, th_on_result, &r));
    th_res_clear(&r);
    if (rc != 0)
        return rc;
    seatd_user_args_t a = {.user_id = id,
                           .email = email,
                           .name = "Ann",
                           .hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$dGFn",
                           .admin = admin};
    rc = th_finish(t, &r, seatd_store_user_create(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

static int start(th_t *t, const char *fam, const char *hash, long long ttl_ms)
{
    th_res_t r = {0};
    int rc = th_finish(
        t, &r, seatd_store_session_start(t->store, USER, fam, hash, ttl_ms, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

static int refresh(th_t *t, const char *old_hash, const char *new_hash, th_res_t *r)
{
    return th_finish(
        t, r, seatd_store_session_refresh(t->store, USER, old_hash, new_hash, th_on_result, r));
}

/* Opens 't' with USER registered (not admin) and signed in once: family "f1", token "h1",
 * ending in 'ttl_ms'. */
static void open_signed_in(th_t *t, long long ttl_ms)
{
    cr_assert_eq(th_open(t), 0);
    cr_assert_eq(create_user(t, USER, "ann@example.com", 0), 0);
    cr_assert_eq(start(t, "f1", "h1", ttl_ms), 0);
}

/* One refresh: present token 'old', ask for 'next'; 'want' is the result (0 or a SEATD_E*),
 * 'detail' the error detail (NULL: not checked); a refresh that works answers USER and
 * 'family'. */
typedef struct {
    const char *old, *next;
    int want;
    const char *detail;
    const char *family;
} refresh_step_t;

static void refresh_steps(th_t *t, const refresh_step_t *steps, size_t n)
{
    th_res_t r = {0};
    for (size_t i = 0; i < n; i++) {
        const refresh_step_t *s = &steps[i];
        cr_assert_eq(refresh(t, s->old, s->next, &r), s->want, "%s -> %s", s->old, s->next);
        if (s->detail)
            cr_assert_str_eq(r.detail, s->detail, "%s -> %s", s->old, s->next);
        if (s->want == 0) {
            cr_assert_str_eq(th_get(&r, "userId"), USER);
            cr_assert_str_eq(th_get(&r, "familyId"), s->family);
        }
        th_res_clear(&r);
    }
}

Test(lua_accounts, an_email_is_claimed_once_and_the_user_is_readable)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_user(&t, USER, "ann@example.com", 1), 0);
    cr_assert_eq(th_finish(&t, &r,
                           seatd_store_email_claim(t.store, "ann@example.com",
                                                   "u99999999999999999999", th_on_result, &r)),
                 SEATD_EEMAILTAKEN);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_email_get(t.store, "ann@example.com", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "userId"), USER);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_user_get(t.store, USER, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "email"), "ann@example.com");
    cr_assert_str_eq(th_get(&r, "admin"), "1");
    th_res_clear(&r);
    /* A release by another user id leaves the claim; by its own it drops it. */
    cr_assert_eq(
        th_finish(&t, &r,
                  seatd_store_email_release(t.store, "ann@example.com", "uX", th_on_result, &r)),
        0);
    cr_assert_str_eq(th_get(&r, "removed"), "0");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_email_get(t.store, "nobody@example.com", th_on_result, &r)),
        0);
    cr_assert_str_eq(th_get(&r, "userId"), "");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_accounts, refresh_rotates_and_a_replay_revokes_the_family)
{
    th_t t;
    open_signed_in(&t, 60000);
    const refresh_step_t f1[] = {
        {"h1", "h2", 0, NULL, "f1"},
        {"h2", "h3", 0, NULL, "f1"}, /* the new one works */
        /* h1 again: a replay. 401 and the whole family is dead: h3 (the live one) too. */
        {"h1", "h4", SEATD_ETOKEN, "replayed", NULL},
        {"h3", "h5", SEATD_ETOKEN, NULL, NULL},
    };
    refresh_steps(&t, f1, sizeof(f1) / sizeof(f1[0]));
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "EXISTS {u:%s}:fam:f1", USER), 0);
    cr_assert_eq(th_int(c, "EXISTS {u:%s}:rt:h4", USER), 0);
    redisFree(c);
    /* Another login's family is untouched. */
    cr_assert_eq(start(&t, "f2", "g1", 60000), 0);
    const refresh_step_t f2[] = {
        {"g1", "g2", 0, NULL, "f2"},
        {"nope", "g3", SEATD_ETOKEN, NULL, NULL},
    };
    refresh_steps(&t, f2, sizeof(f2) / sizeof(f2[0]));
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_accounts, logout_revokes_the_family_and_tokens_carry_its_ttl)
{
    th_t t;
    th_res_t r = {0};
    open_signed_in(&t, 30 * DAY_MS);
    cr_assert_eq(refresh(&t, "h1", "h2", &r), 0);
    th_res_clear(&r);
    redisContext *c = seatd_test_redis_connect();
    long long fam_ttl = th_int(c, "PTTL {u:%s}:fam:f1", USER);
    long long tok_ttl = th_int(c, "PTTL {u:%s}:rt:h2", USER);
    cr_assert(fam_ttl > 30 * DAY_MS - 60000 && fam_ttl <= 30 * DAY_MS, "family ttl %lld", fam_ttl);
    cr_assert(tok_ttl > 0 && tok_ttl <= fam_ttl + 5, "token ttl %lld", tok_ttl);
    cr_assert(th_int(c, "PTTL {u:%s}:rt:h1", USER) > 0);   /* kept to spot a replay */
    cr_assert_eq(th_int(c, "PTTL {u:%s}:user", USER), -1); /* the account never expires */
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_session_revoke(t.store, USER, "h2", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "revoked"), "1");
    th_res_clear(&r);
    cr_assert_eq(refresh(&t, "h2", "h3", &r), SEATD_ETOKEN);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_session_revoke(t.store, USER, "h2", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "revoked"), "0"); /* twice: nothing left to revoke */
    th_res_clear(&r);
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_accounts, a_family_ends_at_its_ttl)
{
    th_t t;
    th_res_t r = {0};
    open_signed_in(&t, 200);
    th_sleep_ms(400);
    cr_assert_eq(refresh(&t, "h1", "h2", &r), SEATD_ETOKEN);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_accounts, a_session_needs_its_user)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(start(&t, "f1", "h1", 60000), SEATD_ENOTFOUND);
    cr_assert_eq(th_close(&t), 0);
}

/* alice's index 'kind' ("holds", "bookings"): add 'id' (holds older than 'keep_ms' trimmed),
 * or list a page of 2 from 'cursor' (NULL: the newest). */
static int me_add(th_t *t, th_res_t *r, const char *kind, const char *id, long long keep_ms)
{
    th_res_clear(r);
    return th_finish(t, r,
                     seatd_store_me_add(t->store, "alice", kind, id, keep_ms, th_on_result, r));
}

static int me_list(th_t *t, th_res_t *r, const char *kind, const char *cursor)
{
    th_res_clear(r);
    return th_finish(t, r,
                     seatd_store_me_list(t->store, "alice", kind, cursor, 2, th_on_result, r));
}

Test(lua_accounts, the_index_lists_newest_first_in_pages_and_trims_old_holds)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    const char *ids[] = {"1-b0000000000000000000a", "1-b0000000000000000000b",
                         "1-b0000000000000000000c"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(me_add(&t, &r, "bookings", ids[i], 0), 0);
        th_res_clear(&r);
        th_sleep_ms(3);
    }
    cr_assert_eq(me_list(&t, &r, "bookings", NULL), 0);
    cr_assert_eq(r.nfields, 5); /* id, score, id, score, more */
    cr_assert_str_eq(r.values[0], ids[2]);
    cr_assert_str_eq(r.values[2], ids[1]);
    cr_assert_str_eq(th_get(&r, "more"), "1");
    char cursor[32];
    snprintf(cursor, sizeof(cursor), "%s", r.values[3]);
    th_res_clear(&r);
    cr_assert_eq(me_list(&t, &r, "bookings", cursor), 0);
    cr_assert_eq(r.nfields, 3);
    cr_assert_str_eq(r.values[0], ids[0]);
    cr_assert_str_eq(th_get(&r, "more"), "0");
    th_res_clear(&r);
    /* holds: an entry older than the retention goes on the next write */
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "ZADD {u:alice}:holds 1000 1-h00000000000000000001"), 1);
    redisFree(c);
    cr_assert_eq(me_add(&t, &r, "holds", "1-h00000000000000000002", DAY_MS), 0);
    th_res_clear(&r);
    c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "ZCARD {u:alice}:holds"), 1);
    redisFree(c);
    cr_assert_eq(me_list(&t, &r, "other", NULL), SEATD_EBADID);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* Entries filed in the same millisecond (two bookings of one buyer at once): the cursor names
 * the page's last entry, so no page skips or repeats one. A bare score read "below it", which
 * lost the other entries of that millisecond. Filing an id again keeps its place. */
Test(lua_accounts, pages_neither_skip_nor_repeat_entries_of_one_millisecond)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(th_int(c, "ZADD {u:alice}:bookings 5000 1-b0000000000000000000a 5000 "
                           "1-b0000000000000000000b 5000 1-b0000000000000000000c 4000 "
                           "1-b0000000000000000000d 6000 1-b0000000000000000000e"),
                 5);
    redisFree(c);
    const char *order[] = {"1-b0000000000000000000e", "1-b0000000000000000000c",
                           "1-b0000000000000000000b", "1-b0000000000000000000a",
                           "1-b0000000000000000000d"};
    char cursor[96] = "";
    size_t seen = 0;
    for (int page = 0; page < 3; page++) {
        cr_assert_eq(me_list(&t, &r, "bookings", page ? cursor : NULL), 0);
        size_t n = (r.nfields - 1) / 2;
        for (size_t i = 0; i < n; i++) {
            cr_assert(seen < 5, "page %d repeats or invents an entry", page);
            cr_assert_str_eq(r.values[2 * i], order[seen], "entry %zu", seen);
            seen++;
        }
        cr_assert_str_eq(th_get(&r, "more"), page < 2 ? "1" : "0");
        snprintf(cursor, sizeof(cursor), "%s.%s", r.values[2 * n - 1], r.values[2 * n - 2]);
        th_res_clear(&r);
    }
    cr_assert_eq(seen, 5, "every entry listed once");
    /* an id filed again keeps its score, so a reader's page boundary does not move */
    cr_assert_eq(me_add(&t, &r, "bookings", "1-b0000000000000000000d", 0), 0);
    cr_assert_str_eq(th_get(&r, "score"), "4000");
    th_res_clear(&r);
    cr_assert_eq(me_list(&t, &r, "bookings", "5000.x y"), SEATD_EINVAL);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ------------------------------------------------------------ 100 concurrent refreshes */

/* Exit codes: 0 refreshed, 1 TOKEN (401), 2+ anything else. */
static int refresh_racer(int i, void *arg)
{
    (void)arg;
    th_t t;
    th_res_t r = {0};
    char next[32];
    snprintf(next, sizeof(next), "next%d", i);
    if (th_open(&t) != 0)
        return 10;
    /* warm the connection (and the library) before the barrier */
    if (th_finish(&t, &r, seatd_store_user_get(t.store, USER, th_on_result, &r)) != 0)
        return 12;
    th_res_clear(&r);
    seatd_test_racer_ready_and_wait();
    int rc = refresh(&t, "h1", next, &r);
    int code = rc == 0 ? 0 : rc == SEATD_ETOKEN ? 1 : 2;
    if (rc == 0)
        seatd_test_racer_report(next);
    th_res_clear(&r);
    if (th_close(&t) != 0)
        return 11;
    return code;
}

Test(lua_accounts, one_hundred_concurrent_refreshes_of_one_token_exactly_one_wins)
{
    enum { N = 100 };
    th_t t;
    open_signed_in(&t, 60000);
    cr_assert_eq(th_close(&t), 0);
    int status[N], won = 0, lost = 0, winner = -1;
    char *reports[N] = {0};
    cr_assert_eq(seatd_test_race(N, refresh_racer, NULL, status, reports, 40000), 0);
    for (int i = 0; i < N; i++) {
        cr_assert(status[i] == 0 || status[i] == 1, "racer %d exited %d", i, status[i]);
        if (status[i] == 0)
            winner = i;
        won += status[i] == 0;
        lost += status[i] == 1;
    }
    cr_assert_eq(won, 1);
    cr_assert_eq(lost, N - 1);
    /* The store agrees: h1 was rotated once, only the winner's token was ever stored (no
     * loser got one), and the 99 others presented a used token after the rotation: a replay
     * by the rules, so the family is revoked and the winner's new token is dead too. */
    redisContext *c = seatd_test_redis_connect();
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {u:%s}:rt:h1 used", USER), 1);
    cr_assert_str_eq(v, "1");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {u:%s}:rt:%s fam", USER, reports[winner]), 1);
    cr_assert_str_eq(v, "f1");
    cr_assert_eq(
        th_int(c, "EVAL %s 1 {u:%s}:user", "return #redis.call('KEYS', '{u:*}:rt:*')", USER), 2);
    cr_assert_eq(th_int(c, "EXISTS {u:%s}:fam:f1", USER), 0);
    redisFree(c);
    for (int i = 0; i < N; i++)
        free(reports[i]);
}

/* An idempotency record: claimed for one fingerprint, refused for another, and once settled
 * a replay of the same fingerprint reads the outcome; a settle with another fingerprint (or
 * of no record) changes nothing; the record keeps its expiry. */
static int idem(th_t *t, th_res_t *r, const char *key, const char *fp, const char *outcome)
{
    th_res_clear(r);
    if (outcome == NULL)
        return th_finish(
            t, r, seatd_store_idem_claim(t->store, USER, "book", key, fp, 60000, th_on_result, r));
    return th_finish(
        t, r, seatd_store_idem_settle(t->store, USER, "book", key, fp, outcome, th_on_result, r));
}

Test(lua_accounts, an_idempotency_record_is_claimed_once_and_replays_its_settled_outcome)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    th_res_t r = {0};
    cr_assert_eq(idem(&t, &r, "k-1", "1-h1 tok_x", NULL), 0);
    cr_assert_null(th_get(&r, "outcome"));
    cr_assert_eq(idem(&t, &r, "k-1", "1-h2 tok_x", NULL), SEATD_EIDEMMISMATCH);
    cr_assert_eq(idem(&t, &r, "k-1", "1-h2 tok_x", "1-bz"), 0);    /* not its fingerprint */
    cr_assert_eq(idem(&t, &r, "k-none", "1-h1 tok_x", "1-bz"), 0); /* no record */
    cr_assert_eq(idem(&t, &r, "k-1", "1-h1 tok_x", NULL), 0);
    cr_assert_null(th_get(&r, "outcome"), "a settle for another body left it unsettled");
    cr_assert_eq(idem(&t, &r, "k-1", "1-h1 tok_x", "1-b7"), 0);
    cr_assert_eq(idem(&t, &r, "k-1", "1-h1 tok_x", NULL), 0);
    cr_assert_str_eq(th_get(&r, "outcome"), "1-b7");
    cr_assert_eq(idem(&t, &r, "k-1", "1-h2 tok_x", NULL), SEATD_EIDEMMISMATCH, "still its body");
    cr_assert_eq(idem(&t, &r, "k-1", "1-h1\ntok_x", "1-b8"), SEATD_EINVAL);
    th_res_clear(&r);
    redisContext *c = seatd_test_redis_connect();
    long long ttl = th_int(c, "PTTL {u:%s}:idem:book:k-1", USER);
    cr_assert(ttl > 50000 && ttl <= 60000, "the claim's expiry kept: %lld", ttl);
    cr_assert_eq(th_int(c, "EXISTS {u:%s}:idem:book:k-none", USER), 0, "no record made");
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}
