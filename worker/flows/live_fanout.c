/*
 * live_fanout.c - bringing a show's watchers up to its version: the snapshot frame (cached per
 * version), the coalesced delta frame (built once per tick and starting version, shared by the
 * watchers that need the same range, compressed once for those that negotiated
 * permessage-deflate), and the coalescing tick that flushes the shows with unsent versions.
 * See live_internal.h.
 */
#include "flows/live_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/mem.h"

static const char *const status_name[] = {"available", "held", "booked", "unavailable"};

#define DEFLATE_MIN 256 /* shorter frames go uncompressed: not worth a deflate */

static void frame_reset(frame_t *f)
{
    seatd_buf_reset(&f->text);
    seatd_buf_reset(&f->z);
    f->z_state = 0;
}

void live__frame_free(frame_t *f)
{
    seatd_buf_free(&f->text);
    seatd_buf_free(&f->z);
    f->z_state = 0;
}

/* Sends 'f', compressed (once for every watcher) to a watcher that negotiated it. */
static void send_frame(watcher_t *w, frame_t *f)
{
    if (w->deflate && f->text.len >= DEFLATE_MIN) {
        if (f->z_state == 0) {
            seatd_buf_reset(&f->z);
            f->z_state = seatd_ws_deflate(f->text.data, f->text.len, &f->z) == 0 ? 1 : -1;
        }
        if (f->z_state == 1) {
            live__send_msg(w, f->z.data, f->z.len, 1);
            return;
        }
    }
    live__send_msg(w, f->text.data, f->text.len, 0);
}

/* The snapshot frame of 's' at its current version (cached per version). */
static frame_t *snapshot_frame(show_t *s)
{
    if (s->snap_ver == s->ver && s->snap.text.len > 0)
        return &s->snap;
    frame_reset(&s->snap);
    seatd_buf_t *b = &s->snap.text;
    seatd_buf_reserve(b, 64 + s->nseats * 24 + s->nareas * 64);
    seatd_buf_printf(b, "{\"type\":\"snapshot\",\"version\":%lld,\"seats\":{", s->ver);
    for (size_t i = 0; i < s->nseats; i++) /* ids match ^[A-Za-z0-9_-]+$: no escaping */
        seatd_buf_printf(b, "%s\"%s\":\"%s\"", i ? "," : "", s->ids[i], status_name[s->status[i]]);
    seatd_buf_puts(b, "}");
    if (s->nareas > 0) { /* area ids: the same grammar (live__areas_set) */
        seatd_buf_puts(b, ",\"areas\":{");
        for (size_t i = 0; i < s->nareas; i++)
            seatd_buf_printf(b, "%s\"%s\":{\"capacity\":%u,\"available\":%u}", i ? "," : "",
                             s->areas[i].id, (unsigned)s->areas[i].capacity,
                             (unsigned)s->areas[i].free);
        seatd_buf_puts(b, "}");
    }
    seatd_buf_puts(b, "}");
    s->snap_ver = s->ver;
    return &s->snap;
}

/* Builds the delta (from, ver] of 's' into 'out': every change in that range once, the last
 * status of each seat, in the order seats first changed, and the last free count of each area
 * that changed in it, in the show's order of areas ("areas", only when one did). Requires the
 * ring to cover it. */
static void delta_frame(show_t *s, long long from, seatd_buf_t *out)
{
    size_t first = (size_t)(s->ring_n - (size_t)(s->ver - from));
    /* 'seen' maps a seat to its slot in the output list (index + 1), reset afterwards. */
    seatd_live_t *lv = s->lv;
    if (lv->seen_cap < s->nseats) {
        free(lv->seen);
        lv->seen_cap = s->nseats;
        lv->seen = seatd_calloc(lv->seen_cap, sizeof(*lv->seen));
    }
    uint32_t *seen = lv->seen;
    uint32_t *order = NULL;
    uint8_t *last = NULL;
    size_t norder = 0, ocap = 0;
    uint32_t afree[SEATD_AREAS_MAX]; /* per area: its last free count, when 'achanged' */
    uint8_t achanged[SEATD_AREAS_MAX] = {0};
    int any_area = 0;
    for (size_t k = first; k < s->ring_n; k++) {
        const ring_entry_t *e = live__ring_at(s, k);
        for (uint32_t j = 0; j < e->na; j++) {
            uint32_t ai = e->idx[e->n + 2 * j];
            afree[ai] = e->idx[e->n + 2 * j + 1];
            achanged[ai] = 1;
            any_area = 1;
        }
        for (uint32_t i = 0; i < e->n; i++) {
            uint32_t idx = e->idx[i];
            if (seen[idx]) {
                last[seen[idx] - 1] = e->st[i];
                continue;
            }
            if (norder == ocap) {
                ocap = ocap ? ocap * 2 : 16;
                order = seatd_realloc(order, ocap * sizeof(*order));
                last = seatd_realloc(last, ocap);
            }
            order[norder] = idx;
            last[norder] = e->st[i];
            seen[idx] = (uint32_t)++norder;
        }
    }
    seatd_buf_printf(out, "{\"type\":\"delta\",\"fromVersion\":%lld,\"version\":%lld,\"changes\":[",
                     from + 1, s->ver);
    for (size_t i = 0; i < norder; i++) {
        seatd_buf_printf(out, "%s{\"seat\":\"%s\",\"status\":\"%s\"}", i ? "," : "",
                         s->ids[order[i]], status_name[last[i]]);
        seen[order[i]] = 0;
    }
    seatd_buf_puts(out, "]");
    if (any_area) {
        seatd_buf_puts(out, ",\"areas\":{");
        const char *sep = "";
        for (size_t ai = 0; ai < s->nareas; ai++) {
            if (!achanged[ai])
                continue;
            seatd_buf_printf(out, "%s\"%s\":%u", sep, s->areas[ai].id, (unsigned)afree[ai]);
            sep = ",";
        }
        seatd_buf_puts(out, "}");
    }
    seatd_buf_puts(out, "}");
    free(order);
    free(last);
}

/* 1 when the ring holds every version after 'from'. */
static int ring_covers(const show_t *s, long long from)
{
    return from >= 0 && from <= s->ver && (long long)s->ring_n >= s->ver - from;
}

/* A delta frame shared by the watchers that need the same range (from, to]. */
typedef struct {
    frame_t *f;
    long long *from, *to;
} delta_cache_t;

/*
 * Brings one watcher up to its show's version: nothing, a delta or a snapshot. 'dc' caches
 * the last delta built (many watchers share a range; a pass spans loop turns, so the show's
 * version may have moved since it was built: the range is checked at both ends).
 */
static void flush_watcher(watcher_t *w, delta_cache_t *dc)
{
    show_t *s = w->show;
    if (s == NULL || !s->synced || w->closing)
        return;
    if (w->sent_ver == s->ver) {
        if (!w->greeted) { /* a ?since= of the current version: say it is, so the client
                            * knows its feed is live on a show where nothing happens */
            char frame[64];
            int n =
                snprintf(frame, sizeof(frame), "{\"type\":\"version\",\"version\":%lld}", s->ver);
            live__send_text(w, frame, (size_t)n);
            w->greeted = 1;
        }
        return;
    }
    w->greeted = 1;
    if (ring_covers(s, w->sent_ver) && w->sent_ver < s->ver) {
        if (*dc->from != w->sent_ver || *dc->to != s->ver) {
            frame_reset(dc->f);
            delta_frame(s, w->sent_ver, &dc->f->text);
            *dc->from = w->sent_ver;
            *dc->to = s->ver;
        }
        send_frame(w, dc->f);
    } else {
        w->lv->stats.snapshots++;
        send_frame(w, snapshot_frame(s));
    }
    w->sent_ver = s->ver;
}

/* Brings one watcher up to date on its own (a reconnect with ?since=, a resync): the delta
 * it may need is built into a buffer of this call. */
void live__flush_one(watcher_t *w)
{
    frame_t delta = {0}; /* empty buffers */
    long long from = -2, to = -2;
    delta_cache_t dc = {&delta, &from, &to};
    flush_watcher(w, &dc);
    live__frame_free(&delta);
}

/*
 * Passes. A tick (or a waiting-room frame) has every watcher of a show to bring up to date:
 * tens of thousands of writes on a hot show. Done in one loop turn they keep the loop from
 * the replies Redis has already sent, for longer than a command's deadline at 20,000 watchers
 * (bench/queue_sim.sh, issue 31); so a pass walks its show's watchers opts.pass_slice at a time,
 * one slice per loop turn (an idle handle: the loop polls for I/O between slices without
 * waiting), the shows with a pass in turn. Watchers that arrive during a pass are put at the list's
 * head, behind the cursor: they got their first frames when they connected. A watcher closed under
 * the cursor moves it on (live__pass_skip). At the end of a tick's pass every watcher has at least
 * the version the pass began with: the ring may forget what came before it.
 */
static void pass_begin(show_t *s, int deltas)
{
    s->pass_deltas = deltas;
    if (deltas)
        s->pass_from = s->ver;
    s->cursor = s->watchers;
}

/* Starts a pass over the watchers of 's' ('deltas': a tick's, bringing them to the version;
 * else only the waiting-room frame). One already under way is not restarted -- a show whose
 * room changes every sweep would then never reach the end of its list --: the watchers after
 * its cursor get the newest frames as it reaches them, and another pass follows it for those
 * before. */
static void pass_start(show_t *s, int deltas)
{
    seatd_live_t *lv = s->lv;
    if (s->in_pass) {
        s->again = 1;
        s->again_deltas |= deltas;
        return;
    }
    s->in_pass = 1;
    s->pass_delta_from = s->pass_delta_to = -2; /* no delta built yet */
    s->pnext = lv->passing;
    lv->passing = s;
    pass_begin(s, deltas);
    if (!lv->closing)
        uv_idle_start(&lv->pass_idle, live__on_pass_idle);
}

/* Takes 's' off the passes (it is done, or being freed). */
void live__pass_forget(show_t *s)
{
    if (!s->in_pass)
        return;
    for (show_t **pp = &s->lv->passing; *pp; pp = &(*pp)->pnext)
        if (*pp == s) {
            *pp = s->pnext;
            break;
        }
    s->in_pass = 0;
    s->pass_deltas = 0;
    s->again = s->again_deltas = 0;
    s->cursor = NULL;
    s->pnext = NULL;
    live__frame_free(&s->pass_delta);
}

void live__pass_skip(show_t *s, watcher_t *w)
{
    if (s->cursor == w)
        s->cursor = w->next;
}

/* The end of a pass: the ring may forget what every watcher has; the next pass, if one was
 * asked for meanwhile. */
static void pass_done(show_t *s)
{
    if (s->pass_deltas && s->synced) {
        if (s->pass_from > s->flushed_ver)
            s->flushed_ver = s->pass_from;
        live__ring_trim(s);
    }
    if (s->again) {
        int deltas = s->again_deltas;
        s->again = s->again_deltas = 0;
        pass_begin(s, deltas);
        return;
    }
    live__pass_forget(s);
}

/* Up to 'budget' watchers of 's': returns how many were taken. */
static size_t pass_slice(show_t *s, size_t budget)
{
    delta_cache_t dc = {&s->pass_delta, &s->pass_delta_from, &s->pass_delta_to};
    size_t n = 0;
    while (s->cursor && n < budget) {
        watcher_t *w = s->cursor;
        s->cursor = w->next; /* first: a slow client may be closed by the writes below */
        n++;
        if (w->closing)
            continue;
        if (w->qgen != s->qgen && s->qframe.len > 0) {
            w->qgen = s->qgen;
            live__send_text(w, s->qframe.data, s->qframe.len);
        }
        if (s->pass_deltas)
            flush_watcher(w, &dc);
    }
    return n;
}

void live__on_pass_idle(uv_idle_t *h)
{
    seatd_live_t *lv = h->data;
    size_t budget = lv->opts.pass_slice;
    for (show_t *s = lv->passing, *next; s && budget > 0; s = next) {
        next = s->pnext; /* pass_done() may take 's' off the list */
        budget -= pass_slice(s, budget);
        if (s->cursor == NULL)
            pass_done(s);
    }
    if (lv->passing == NULL)
        uv_idle_stop(&lv->pass_idle);
}

/* A new waiting-room frame (live_sync.c): to every watcher, in a pass. */
void live__pass_queue(show_t *s)
{
    s->qgen++;
    pass_start(s, 0);
}

static void on_tick(uv_timer_t *t)
{
    seatd_live_t *lv = t->data;
    lv->last_flush_ms = live__now_ms(lv);
    show_t *list = lv->dirty;
    lv->dirty = NULL;
    for (show_t *s = list, *next; s; s = next) {
        next = s->dnext;
        s->dirty = 0;
        s->dnext = NULL;
        pass_start(s, 1);
    }
    live__on_pass_idle(&lv->pass_idle); /* the first slice at once */
}

/*
 * The coalescing period: opts.tick_ms while this worker has few watchers, longer with many,
 * so that a busy show costs the worker (and nginx, which relays every frame) at most about
 * FRAMES_PER_S frames a second however many people watch: 500 watchers get a frame every
 * 250 ms, 2,000 every second (TICK_MAX_MS). Every change still arrives, coalesced.
 */
#define FRAMES_PER_S 2000
#define TICK_MAX_MS 1000

static uint64_t tick_period_ms(const seatd_live_t *lv)
{
    uint64_t t = (uint64_t)lv->stats.watchers * 1000 / FRAMES_PER_S;
    if (t < lv->opts.tick_ms)
        t = lv->opts.tick_ms;
    return t < TICK_MAX_MS ? t : TICK_MAX_MS;
}

/* Marks 's' as having versions some watchers have not been sent, and arms the tick: at once
 * when the last tick is at least one tick old, else when the tick period is up. */
void live__mark_dirty(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (!s->dirty) {
        s->dirty = 1;
        s->dnext = lv->dirty;
        lv->dirty = s;
    }
    if (!uv_is_active((uv_handle_t *)&lv->tick) && !lv->closing) {
        uint64_t now = live__now_ms(lv), next = lv->last_flush_ms + tick_period_ms(lv);
        uv_timer_start(&lv->tick, on_tick, next > now ? next - now : 0, 0);
    }
}
