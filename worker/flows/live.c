/*
 * live.c - the live seat map's object: its creation with the pubsub connection and the two
 * timers, its statistics, and the teardown that frees it once its timers, subscriber, reads
 * and watchers are done. The protocol is in live.h; the objects and how the work is divided
 * among the live*.c files, in live_internal.h.
 */
#include "flows/live_internal.h"

#include <stdlib.h>

#include "base/mem.h"
#include "http/http_server.h"

/* ---------------------------------------------------------------------------------------
 * API
 * --------------------------------------------------------------------------------------- */

/* An option left 0 takes its default (live.h). */
static void or_default(unsigned *v, unsigned d)
{
    if (*v == 0)
        *v = d;
}

seatd_live_t *seatd_live_new(uv_loop_t *loop, seatd_store_t *store, const seatd_live_opts_t *opts)
{
    seatd_live_t *lv = seatd_calloc(1, sizeof(*lv));
    lv->loop = loop;
    lv->store = store;
    lv->opts = *opts;
    lv->opts.redis_host = lv->opts.redis_unix = NULL;
    or_default(&lv->opts.tick_ms, 50);
    or_default(&lv->opts.pass_slice, 1000);
    or_default(&lv->opts.ping_ms, 20000);
    or_default(&lv->opts.idle_ms, 60000);
    or_default(&lv->opts.ring, 256);
    or_default(&lv->opts.ring_burst, 65536);
    or_default(&lv->opts.max_queue_frames, 64);
    if (lv->opts.ring_burst < lv->opts.ring)
        lv->opts.ring_burst = lv->opts.ring;
    lv->ps = seatd_pubsub_new(loop, opts->redis_host, opts->redis_port, opts->redis_unix,
                              live__on_pubsub, lv);
    lv->rbuf = seatd_malloc(READ_BUF);
    uv_timer_init(loop, &lv->tick);
    lv->tick.data = lv;
    uv_timer_init(loop, &lv->house);
    lv->house.data = lv;
    uv_idle_init(loop, &lv->pass_idle);
    lv->pass_idle.data = lv;
    lv->handles_open = 3;
    uv_timer_start(&lv->house, live__on_house, 1000, 1000);
    uv_unref((uv_handle_t *)&lv->house); /* housekeeping alone never keeps the loop alive */
    return lv;
}

void seatd_live_get_stats(const seatd_live_t *lv, seatd_live_stats_t *out)
{
    *out = lv->stats;
    out->shows = lv->nshows;
}

static void on_timer_closed(uv_handle_t *h)
{
    seatd_live_t *lv = h->data;
    lv->handles_open--;
    live__maybe_free(lv);
}

void live__maybe_free(seatd_live_t *lv)
{
    if (!lv->closing || lv->handles_open > 0 || lv->inflight > 0 || lv->stats.watchers > 0)
        return;
    /* Shows without watchers are freed as their reads answer; drop any left. */
    for (size_t b = 0; b < SHOW_BUCKETS; b++)
        while (lv->buckets[b])
            live__show_maybe_free(lv->buckets[b]);
    free(lv->rbuf);
    free(lv->seen);
    free(lv);
}

void seatd_live_close(seatd_live_t *lv)
{
    if (lv == NULL || lv->closing)
        return;
    lv->closing = 1;
    for (size_t b = 0; b < SHOW_BUCKETS; b++)
        for (show_t *s = lv->buckets[b]; s; s = s->hnext)
            for (watcher_t *w = s->watchers; w; w = w->next)
                if (!w->hard_closed) {
                    w->hard_closed = 1;
                    seatd_http_conn_close(w->stream);
                }
    seatd_pubsub_close(lv->ps);
    lv->ps = NULL;
    uv_close((uv_handle_t *)&lv->tick, on_timer_closed);
    uv_close((uv_handle_t *)&lv->house, on_timer_closed);
    uv_close((uv_handle_t *)&lv->pass_idle, on_timer_closed);
}
