/*
 * Integration tests for sweeper.c (and seatd_sweep_claim / seatd_reap's "next"): an abandoned
 * hold's seat turns AVAILABLE in the projection after its deadline with no other request on
 * the show, also with 100,000 other holds live. Each test waits for the event (the held bit
 * clears, the sweeper's counters move) under a generous deadline that only fails when it
 * never comes; the lag after the deadline is printed, never asserted (a loaded machine is
 * slower, not wrong).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "store_harness.h"
#include "flows/sweeper.h"

static void sweeper_init(void)
{
    seatd_test_redis_flushall();
}

TestSuite(sweeper, .init = sweeper_init, .timeout = 150);

typedef struct {
    redisContext *rc;
    char key[64];         /* the held bitmap */
    long bit;             /* the seat's bit */
    long long cleared_ms; /* wall time the bit was seen cleared; 0 until then */
    int done;
} watch_t;

static void on_poll(uv_timer_t *tm)
{
    watch_t *w = tm->data;
    redisReply *r = seatd_test_redis_command(w->rc, "GETBIT %s %ld", w->key, w->bit);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        w->cleared_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        w->done = 1;
        uv_timer_stop(tm);
    }
    freeReplyObject(r);
}

/* Runs the loop (the sweeper with it) until the seat's held bit clears. Returns the lag
 * after 'deadline' in ms, or -1 after 'limit_ms'. */
static long long wait_cleared(th_t *t, const char *show, long bit, long long deadline, int limit_ms)
{
    watch_t w = {0};
    w.rc = seatd_test_redis_connect();
    snprintf(w.key, sizeof(w.key), "{s:%s}:held", show);
    w.bit = bit;
    uv_timer_t tm;
    uv_timer_init(t->loop, &tm);
    tm.data = &w;
    uv_timer_start(&tm, on_poll, 5, 5);
    int rc = seatd_test_loop_run_until(t->loop, &w.done, limit_ms);
    uv_timer_stop(&tm);
    uv_close((uv_handle_t *)&tm, NULL);
    uv_run(t->loop, UV_RUN_NOWAIT);
    redisFree(w.rc);
    return rc < 0 || !w.done ? -1 : w.cleared_ms - deadline;
}

static void on_barrier(const struct redisReply *reply, int err, void *data)
{
    (*(int *)data)++;
}

/* Shows filed in the sweeper's hint set (every bucket) with a score up to 'max'. */
static long long due_count(redisContext *rc, const char *max)
{
    long long n = 0;
    for (int b = 0; b < SEATD_HINT_BUCKETS; b++) {
        char key[SEATD_KEY_MAX];
        cr_assert_eq(seatd_keys_hint(key, SEATD_KEY_DUE, b), 0);
        n += th_int(rc, "ZCOUNT %s -inf %s", key, max);
    }
    return n;
}

/* Closes 'sw' and runs the loop until it has freed itself: after close it sends nothing new,
 * and a PING queued behind its in-flight calls on the harness's one connection answers only
 * after they all did; one more loop turn runs its timer's close callback. */
static void close_sweeper(th_t *t, seatd_sweeper_t *sw)
{
    seatd_sweeper_close(sw);
    int done = 0;
    const char *argv[] = {"PING"};
    cr_assert_eq(seatd_rds_callv(t->rds, 1, argv, NULL, on_barrier, &done), 0);
    cr_assert_eq(seatd_test_loop_run_until(t->loop, &done, TH_WAIT_MS), 0);
    uv_run(t->loop, UV_RUN_NOWAIT);
}

typedef struct {
    seatd_sweeper_t *sw;
    unsigned long long rescans, pruned, reaped; /* wanted at least */
} stats_wait_t;

static int stats_reached(void *data)
{
    stats_wait_t *w = data;
    seatd_sweeper_stats_t st;
    seatd_sweeper_get_stats(w->sw, &st);
    return st.rescans >= w->rescans && st.pruned >= w->pruned && st.reaped >= w->reaped;
}

/* Runs the loop until the sweeper's stats reach 'rescans' pages, 'pruned' shows and 'reaped'
 * holds. (A held bit seen cleared is not yet a counter moved: the poll can see Redis's change
 * before the loop has read the reply that reports it.) */
static void wait_stats(th_t *t, seatd_sweeper_t *sw, unsigned long long rescans,
                       unsigned long long pruned, unsigned long long reaped, int limit_ms)
{
    stats_wait_t w = {.sw = sw, .rescans = rescans, .pruned = pruned, .reaped = reaped};
    int rc = seatd_test_loop_poll_until(t->loop, stats_reached, &w, 5, limit_ms);
    seatd_sweeper_stats_t st;
    seatd_sweeper_get_stats(sw, &st);
    cr_assert_eq(rc, 0, "sweeper stats: %llu pages, %llu pruned, %llu reaped", st.rescans,
                 st.pruned, st.reaped);
}

Test(sweeper, releases_an_abandoned_hold_after_its_deadline_without_any_request)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    seatd_sweeper_t *sw = seatd_sweeper_new(t.loop, t.rds, t.scripts, t.store, 250);
    seatd_sweeper_start(sw);
    const char *a2[] = {"A2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "u1", a2, 700, 8, NULL), 0);
    long long deadline = th_get_ll(&r, "expiresAt");
    seatd_sweeper_hint(sw, "1"); /* what the store files after a hold (hints.h) */

    long long lag = wait_cleared(&t, "1", 1, deadline, 20000);
    fprintf(stderr, "sweeper: expiry lag %lld ms after the deadline (1 hold live)\n", lag);
    cr_assert_geq(lag, 0, "cleared at all, and never before the deadline");
    wait_stats(&t, sw, 0, 0, 1, 20000); /* and the sweeper counted the hold it reaped */
    redisContext *rc = seatd_test_redis_connect();
    cr_assert_eq(due_count(rc, "+inf"), 0, "nothing left to sweep for the show");
    redisFree(rc);
    close_sweeper(&t, sw);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(sweeper, finds_holds_nobody_hinted_by_rescanning_the_catalogue)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    const char *seats[] = {"A1", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "u1", seats, 300, 8, NULL), 0);
    long long deadline = th_get_ll(&r, "expiresAt");
    /* No hint: a worker restarted, or the hint was lost. The first rescan runs ~1 s in. */
    seatd_sweeper_t *sw = seatd_sweeper_new(t.loop, t.rds, t.scripts, t.store, 250);
    seatd_sweeper_start(sw);
    long long lag = wait_cleared(&t, "1", 0, deadline, 20000);
    cr_assert_geq(lag, 0, "cleared at all, and never before the deadline");
    wait_stats(&t, sw, 1, 0, 1, 20000); /* found by the catalogue rescan, and reaped */
    close_sweeper(&t, sw);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

typedef struct {
    int done, failed, queued;
} batch_t;

static void on_bulk_hold(const seatd_store_result_t *res, void *data)
{
    batch_t *b = data;
    b->done++;
    if (res->err)
        b->failed++;
}

#define SHOWS 1000
#define HOLDS_PER_SHOW 100

typedef struct {
    uv_timer_t timer;
    redisContext *rc;
    int shows; /* every one of them must be filed */
    int done;
} due_wait_t;

static void on_due_poll(uv_timer_t *tm)
{
    due_wait_t *w = tm->data;
    if (due_count(w->rc, "1") == 0 && due_count(w->rc, "+inf") == w->shows) {
        w->done = 1;
        uv_timer_stop(tm);
    }
}

/* Runs the loop (the sweeper with it) until every hinted show is filed under a real deadline
 * (none left at score 0 or 1, all 'w->shows' present). */
static void wait_due_filed(th_t *t, due_wait_t *w, int limit_ms)
{
    uv_timer_init(t->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, on_due_poll, 20, 20);
    int rc = seatd_test_loop_run_until(t->loop, &w->done, limit_ms);
    uv_close((uv_handle_t *)&w->timer, NULL);
    uv_run(t->loop, UV_RUN_NOWAIT);
    cr_assert_eq(rc, 0, "the sweeper filed every hinted show");
}

Test(sweeper, releases_an_abandoned_hold_with_100k_other_holds_live)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    static char names[HOLDS_PER_SHOW + 1][8];
    const char *seats[HOLDS_PER_SHOW + 2];
    for (int i = 0; i <= HOLDS_PER_SHOW; i++) {
        snprintf(names[i], sizeof(names[i]), "S%d", i + 1);
        seats[i] = names[i];
    }
    seats[HOLDS_PER_SHOW + 1] = NULL;
    redisContext *rc = seatd_test_redis_connect();
    for (int s = 1; s <= SHOWS; s++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", s);
        cr_assert_eq(th_create_show(&t, id, seats, 600000), 0);
    }
    /* 100,000 one-seat holds with a 10-minute TTL, pipelined 4,000 at a time. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    batch_t b = {0};
    for (int s = 1; s <= SHOWS; s++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", s);
        for (int i = 0; i < HOLDS_PER_SHOW; i++) {
            char hold_id[SEATD_ID_MAX], owner[32];
            cr_assert_eq(seatd_keys_new_id(hold_id, id, 'h'), 0);
            snprintf(owner, sizeof(owner), "u%d", i);
            const char *one[] = {names[i]};
            seatd_hold_args_t a = {.show_id = id,
                                   .hold_id = hold_id,
                                   .owner = owner,
                                   .seat_ids = one,
                                   .nseats = 1,
                                   .ttl_ms = 600000,
                                   .max_per_user = 8};
            cr_assert_eq(seatd_store_hold(t.store, &a, on_bulk_hold, &b), 0);
            b.queued++;
            /* The first hold of a show reads its layout into the store's cache; let it land
             * so the other 99 take the fast path instead of each reading the layout again. */
            if (i == 0)
                while (b.done < b.queued)
                    uv_run(t.loop, UV_RUN_ONCE);
            if (b.queued - b.done >= 4000)
                while (b.queued - b.done > 1000)
                    uv_run(t.loop, UV_RUN_ONCE);
        }
        char due[SEATD_KEY_MAX];
        cr_assert_eq(seatd_keys_show_hint(due, SEATD_KEY_DUE, id), 0);
        redisReply *z = seatd_test_redis_command(rc, "ZADD %s LT 0 %s", due, id); /* the hint */
        freeReplyObject(z);
    }
    while (b.done < b.queued)
        uv_run(t.loop, UV_RUN_ONCE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(b.failed, 0);
    long long live = 0, sampled = 0;
    for (int s = 1; s <= SHOWS; s += 111, sampled++)
        live += th_int(rc, "ZCARD {s:%d}:expiry", s);
    cr_assert_eq(live, sampled * HOLDS_PER_SHOW, "sampled shows hold their live holds");
    fprintf(stderr, "sweeper: %d holds created in %.1f s\n", b.done,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);

    seatd_sweeper_t *sw = seatd_sweeper_new(t.loop, t.rds, t.scripts, t.store, 250);
    seatd_sweeper_start(sw);
    /* Let the sweepers file every hinted show under its real (10-minute) deadline. */
    due_wait_t dw = {.rc = rc, .shows = SHOWS};
    wait_due_filed(&t, &dw, 60000);
    cr_assert_eq(due_count(rc, "1"), 0);
    cr_assert_eq(due_count(rc, "+inf"), SHOWS);

    const char *last[] = {names[HOLDS_PER_SHOW], NULL};
    cr_assert_eq(th_hold(&t, &r, "500", "late", last, 700, 8, NULL), 0);
    long long deadline = th_get_ll(&r, "expiresAt");
    seatd_sweeper_hint(sw, "500");
    long long lag = wait_cleared(&t, "500", HOLDS_PER_SHOW, deadline, 20000);
    fprintf(stderr, "sweeper: expiry lag %lld ms after the deadline (%d other holds live)\n", lag,
            b.done);
    cr_assert_geq(lag, 0, "cleared at all, and never before the deadline");
    cr_assert_eq(th_int(rc, "ZCARD {s:500}:expiry"), HOLDS_PER_SHOW, "only the short hold went");

    redisFree(rc);
    close_sweeper(&t, sw);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------- catalogue hygiene (issue 9) */

static long long redis_now_ms(redisContext *c)
{
    redisReply *r = seatd_test_redis_command(c, "TIME");
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

Test(sweeper, a_show_past_its_start_and_retention_leaves_the_scan_sets_and_the_listing)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    const char *seats[] = {"A1", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0); /* upcoming */
    cr_assert_eq(th_create_show(&t, "2", seats, 60000), 0);
    cr_assert_eq(th_create_show(&t, "3", seats, 60000), 0);
    redisContext *c = seatd_test_redis_connect();
    long long now = redis_now_ms(c);
    /* Show 2 started two minutes ago (retention: one minute); show 3 a second ago. */
    freeReplyObject(seatd_test_redis_command(c, "ZADD seatd:shows %lld 2", now - 120000));
    freeReplyObject(seatd_test_redis_command(c, "HSET {s:2}:meta startsAt %lld", now - 120000));
    freeReplyObject(seatd_test_redis_command(c, "ZADD seatd:shows %lld 3", now - 1000));
    freeReplyObject(seatd_test_redis_command(c, "HSET {s:3}:meta startsAt %lld", now - 1000));
    char due2[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(due2, SEATD_KEY_DUE, "2"), 0);
    freeReplyObject(
        seatd_test_redis_command(c, "ZADD %s %lld 2", due2, now + 600000)); /* a stale hint */

    /* The listing is upcoming shows only, pruned or not. */
    cr_assert_eq(th_finish(&t, &r, seatd_store_list_shows(t.store, 0, 10, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "total"), "1");
    cr_assert_str_eq(th_get(&r, "id"), "1");
    cr_assert_eq(r.nfields, 2);

    seatd_sweeper_t *sw = seatd_sweeper_new(t.loop, t.rds, t.scripts, t.store, 20);
    seatd_sweeper_rescan_t ro = {.retention_ms = 60000, .first_ms = 10, .every_ms = 600000};
    seatd_sweeper_set_rescan(sw, &ro);
    seatd_sweeper_start(sw);
    wait_stats(&t, sw, 1, 1, 0, 20000); /* pruned, then one page walked */

    cr_assert_eq(th_int(c, "ZCARD seatd:shows"), 2);
    cr_assert_eq(th_int(c, "EXISTS {s:2}:meta"), 1, "the show itself stays");
    redisReply *x = seatd_test_redis_command(c, "ZSCORE seatd:shows 2");
    cr_assert_eq(x->type, REDIS_REPLY_NIL, "show 2 left the catalogue");
    freeReplyObject(x);
    x = seatd_test_redis_command(c, "ZSCORE %s 2", due2);
    cr_assert_eq(x->type, REDIS_REPLY_NIL, "and the sweeper's hint set");
    freeReplyObject(x);
    x = seatd_test_redis_command(c, "ZSCORE seatd:shows 3");
    cr_assert_neq(x->type, REDIS_REPLY_NIL, "a show within its retention stays scanned");
    freeReplyObject(x);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_get(t.store, "2", th_on_result, &r)), 0,
                 "GET /v1/shows/2 still answers");
    redisFree(c);
    close_sweeper(&t, sw);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(sweeper, renews_its_rescan_lease_while_a_long_walk_runs)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    redisContext *c = seatd_test_redis_connect();
    for (int i = 1; i <= 400; i++)
        freeReplyObject(seatd_test_redis_command(c, "ZADD seatd:shows 1900000000000 %d", i));
    /* One show per page, one page per 10 ms tick: the walk outlasts a 1 s lease at least
     * three times over (400 pages need >= 4 s of ticks). The lease is renewed every third of
     * it, so only a loop stalled for two thirds of a second could lose it. */
    seatd_sweeper_t *sw = seatd_sweeper_new(t.loop, t.rds, t.scripts, t.store, 10);
    seatd_sweeper_rescan_t ro = {
        .retention_ms = -1, .first_ms = 10, .every_ms = 600000, .lease_ms = 1000, .page = 1};
    seatd_sweeper_set_rescan(sw, &ro);
    seatd_sweeper_start(sw);
    wait_stats(&t, sw, 200, 0, 0, 60000); /* >= 2 s (two leases) into the walk */

    redisReply *x = seatd_test_redis_command(c, "PTTL seatd:sweep:rescan");
    cr_assert(x->type == REDIS_REPLY_INTEGER && x->integer > 0,
              "the lease is still held deep into the walk (PTTL %lld)", x->integer);
    freeReplyObject(x);
    x = seatd_test_redis_command(c, "FCALL %s 1 seatd:sweep:rescan take someone-else 1000",
                                 th_fn("seatd_lease"));
    cr_assert(x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
                  strcmp(x->element[1]->str, "0") == 0,
              "a second walker cannot take it");
    freeReplyObject(x);
    seatd_sweeper_stats_t st;
    seatd_sweeper_get_stats(sw, &st);
    cr_assert_geq(st.leases, 3, "taken once, renewed since (%llu)", st.leases);
    redisFree(c);
    close_sweeper(&t, sw);
    cr_assert_eq(th_close(&t), 0);
}
