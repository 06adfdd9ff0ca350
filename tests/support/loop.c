/*
 * loop.c - a libuv loop with a watchdog for tests; see loop.h.
 *
 * The loop is embedded in a struct that also holds the watchdog timer, so the header can hand
 * out a plain uv_loop_t and find the timer again with container_of arithmetic.
 */
#include "loop.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#define FREE_GRACE_MS 2000

typedef struct test_loop_s {
    uv_loop_t loop;      /* first member: the pointer handed out */
    uv_timer_t watchdog; /* fails run_until, bounds free */
    int fired;           /* the watchdog fired during the current run */
} test_loop_t;

static test_loop_t *from_loop(uv_loop_t *loop)
{
    return (test_loop_t *)((char *)loop - offsetof(test_loop_t, loop));
}

static void on_watchdog(uv_timer_t *t)
{
    test_loop_t *w = t->data;
    w->fired = 1;
    uv_stop(&w->loop);
}

uv_loop_t *seatd_test_loop_new(void)
{
    test_loop_t *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    if (uv_loop_init(&w->loop) != 0)
        abort();
    uv_timer_init(&w->loop, &w->watchdog);
    w->watchdog.data = w;
    uv_unref((uv_handle_t *)&w->watchdog);
    return &w->loop;
}

int seatd_test_loop_run_until(uv_loop_t *loop, const int *done, int timeout_ms)
{
    test_loop_t *w = from_loop(loop);
    w->fired = 0;
    uv_ref((uv_handle_t *)&w->watchdog);
    uv_timer_start(&w->watchdog, on_watchdog, (uint64_t)timeout_ms, 0);
    while (!*done && !w->fired)
        uv_run(loop, UV_RUN_ONCE);
    uv_timer_stop(&w->watchdog);
    uv_unref((uv_handle_t *)&w->watchdog);
    if (!*done) {
        fprintf(stderr, "loop: watchdog fired after %d ms\n", timeout_ms);
        return -1;
    }
    return 0;
}

typedef struct {
    uv_timer_t timer;
    int (*cond)(void *data);
    void *data;
    int done;
} poll_t;

static void on_poll(uv_timer_t *t)
{
    poll_t *p = t->data;
    if (p->cond(p->data)) {
        p->done = 1;
        uv_timer_stop(t);
    }
}

int seatd_test_loop_poll_until(uv_loop_t *loop, int (*cond)(void *data), void *data, int period_ms,
                               int timeout_ms)
{
    poll_t p = {.cond = cond, .data = data};
    uv_timer_init(loop, &p.timer);
    p.timer.data = &p;
    uv_timer_start(&p.timer, on_poll, (uint64_t)period_ms, (uint64_t)period_ms);
    int rc = seatd_test_loop_run_until(loop, &p.done, timeout_ms);
    uv_close((uv_handle_t *)&p.timer, NULL);
    uv_run(loop, UV_RUN_NOWAIT); /* the close completes before 'p' goes */
    return rc;
}

static void on_walk_close(uv_handle_t *h, void *arg)
{
    test_loop_t *w = arg;
    if (uv_is_closing(h))
        return;
    if (h != (uv_handle_t *)&w->watchdog) {
        w->fired++; /* reused as the count of handles someone left open */
        fprintf(stderr, "loop: closing a leftover %s handle\n", uv_handle_type_name(h->type));
    }
    uv_close(h, NULL);
}

int seatd_test_loop_free(uv_loop_t *loop)
{
    if (!loop)
        return 0;
    test_loop_t *w = from_loop(loop);
    /* Let pending closes (and teardowns that need a few loop turns) finish; the unref'd
     * watchdog stops a loop that would otherwise never end because of a leaked handle. */
    w->fired = 0;
    uv_timer_start(&w->watchdog, on_watchdog, FREE_GRACE_MS, 0);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_timer_stop(&w->watchdog);
    w->fired = 0;
    uv_walk(loop, on_walk_close, w);
    uv_run(loop, UV_RUN_DEFAULT);
    int leaked = w->fired;
    int rc = uv_loop_close(loop);
    if (rc == 0)
        free(w);
    return leaked ? UV_EBUSY : rc;
}
