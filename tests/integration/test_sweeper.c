/*
 * Integration tests for sweeper.c (and seatd_sweep_claim / seatd_reap's "next"): an abandoned
 * hold's seat turns AVAILABLE in the projection within a second of its deadline with no other
 * request on the show, also with 100,000 other holds live. The lag figures are printed.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "store_harness.h"
#include "sweeper.h"

static void sweeper_init(void)
{
    seatd_test_redis_flushall();
}

TestSuite(sweeper, .init = sweeper_init, .timeout = 150);

typedef struct {
    redisContext *rc;
    char key[64];        /* the held bitmap */
    long bit;            /* the seat's bit */
    long long cleared_ms; /* wall time the bit was seen cleared; 0 until then */
    int done;
} watch_t;

static void on_poll(uv_timer_t *tm)
{
    watch_t *w = tm->data;
    redisReply *r = redisCommand(w->rc, "GETBIT %s %ld", w->key, w->bit);
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
static long long wait_cleared(th_t *t, const char *show, long bit, long long deadline,
                              int limit_ms)
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

static void on_elapsed(uv_timer_t *tm)
{
    *(int *)tm->data = 1;
}

/* Runs the loop for 'ms' milliseconds. */
static void run_for(th_t *t, int ms)
{
    int done = 0;
    uv_timer_t tm;
    uv_timer_init(t->loop, &tm);
    tm.data = &done;
    uv_timer_start(&tm, on_elapsed, (uint64_t)ms, 0);
    while (!done)
        uv_run(t->loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&tm, NULL);
    uv_run(t->loop, UV_RUN_NOWAIT);
}

static void close_sweeper(th_t *t, seatd_sweeper_t *sw)
{
    seatd_sweeper_close(sw);
    run_for(t, 300); /* its in-flight calls finish and it frees itself */
}

Test(sweeper, releases_an_abandoned_hold_within_a_second_of_its_deadline)
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
    seatd_sweeper_hint(sw, "1"); /* what the worker's finish hook does after a hold */

    long long lag = wait_cleared(&t, "1", 1, deadline, 5000);
    fprintf(stderr, "sweeper: expiry lag %lld ms after the deadline (1 hold live)\n", lag);
    cr_assert_geq(lag, 0, "cleared at all, and never before the deadline");
    cr_assert_lt(lag, 1000, "lag %lld ms", lag);
    seatd_sweeper_stats_t st;
    seatd_sweeper_get_stats(sw, &st);
    cr_assert_geq(st.reaped, 1);
    redisContext *rc = seatd_test_redis_connect();
    cr_assert_eq(th_int(rc, "ZCARD seatd:due"), 0, "nothing left to sweep for the show");
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
    long long lag = wait_cleared(&t, "1", 0, deadline, 5000);
    cr_assert_geq(lag, 0);
    cr_assert_lt(lag, 3000, "found by the rescan, lag %lld ms", lag);
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

Test(sweeper, keeps_its_deadline_with_100k_other_holds_live)
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
            seatd_hold_args_t a = {.show_id = id, .hold_id = hold_id, .owner = owner,
                                   .seat_ids = one, .nseats = 1, .ttl_ms = 600000,
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
        redisReply *z = redisCommand(rc, "ZADD seatd:due LT 0 %s", id); /* the hint */
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
    for (int i = 0; i < 100 && (th_int(rc, "ZCOUNT seatd:due -inf 1") > 0 ||
                                th_int(rc, "ZCARD seatd:due") != SHOWS);
         i++)
        run_for(&t, 100);
    cr_assert_eq(th_int(rc, "ZCOUNT seatd:due -inf 1"), 0);
    cr_assert_eq(th_int(rc, "ZCARD seatd:due"), SHOWS);

    const char *last[] = {names[HOLDS_PER_SHOW], NULL};
    cr_assert_eq(th_hold(&t, &r, "500", "late", last, 700, 8, NULL), 0);
    long long deadline = th_get_ll(&r, "expiresAt");
    seatd_sweeper_hint(sw, "500");
    long long lag = wait_cleared(&t, "500", HOLDS_PER_SHOW, deadline, 5000);
    fprintf(stderr, "sweeper: expiry lag %lld ms after the deadline (%d other holds live)\n", lag,
            b.done);
    cr_assert_geq(lag, 0);
    cr_assert_lt(lag, 1000, "lag %lld ms", lag);
    cr_assert_eq(th_int(rc, "ZCARD {s:500}:expiry"), HOLDS_PER_SHOW, "only the short hold went");

    redisFree(rc);
    close_sweeper(&t, sw);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
