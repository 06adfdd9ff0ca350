/*
 * live.c - WebSocket watchers per show: snapshot, then coalesced versioned deltas; see live.h.
 *
 * Objects:
 *   - seatd_live_t: the shows by id (a chained hash), the pubsub connection, the tick timer
 *     (coalescing; runs only while some show has unsent versions), the housekeeping timer
 *     (pings, idle and close deadlines; once a second) and one shared read buffer.
 *   - show_t: one watched show: its seat ids (copied from the layout) with an id -> index
 *     hash, the seat statuses at version 'ver' (valid while 'synced'), a ring of the last
 *     versions' changes, the messages buffered while a seat-map read is in flight, and its
 *     watchers. Freed when its last watcher leaves and no read is in flight for it.
 *   - watcher_t: one WebSocket connection (a stream taken from http_server), its codec, the
 *     version the client has ('sent_ver', -1: needs a snapshot) and its unsent-frame count.
 *     Freed in the connection's on_closed hook.
 */
#include "flows/live.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/buf.h"
#include "http/http_request.h"
#include "http/http_server.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/pubsub.h"
#include "store/store.h"
#include "http/ws_codec.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define SHOW_BUCKETS 1024
#define READ_BUF 65536
#define MAX_CLIENT_MSG 4096 /* client messages are tiny commands */
#define MAX_BUFFERED 4096   /* messages kept while a seat-map read is in flight */
#define CLOSE_GRACE_MS 2000 /* after our close frame, how long to wait for the write */
#define RETRY_READ_MS 1000  /* a failed seat-map read is retried after this */

enum { ST_AVAILABLE, ST_HELD, ST_BOOKED };
static const char *const status_name[] = {"available", "held", "booked"};

typedef struct {
    long long v;   /* the version */
    uint32_t n;    /* changes */
    uint32_t *idx; /* owned: seat indexes */
    uint8_t *st;   /* owned: new statuses */
} ring_entry_t;

/* One frame as sent to many watchers: its text, and the same compressed once for those that
 * negotiated permessage-deflate (ws_codec.h). */
typedef struct {
    seatd_buf_t text; /* the JSON */
    seatd_buf_t z;    /* its compressed payload, made on first need */
    int z_state;      /* 0: not made yet, 1: made, -1: zlib failed (the text goes) */
} frame_t;

#define DEFLATE_MIN 256 /* shorter frames go uncompressed: not worth a deflate */

static void frame_reset(frame_t *f)
{
    seatd_buf_reset(&f->text);
    seatd_buf_reset(&f->z);
    f->z_state = 0;
}

static void frame_free(frame_t *f)
{
    seatd_buf_free(&f->text);
    seatd_buf_free(&f->z);
    f->z_state = 0;
}

typedef struct buffered_s {
    struct buffered_s *next; /* FIFO */
    char *msg;               /* owned payload */
    size_t len;
} buffered_t;

typedef struct watcher_s watcher_t;
typedef struct show_s show_t;

struct show_s {
    show_t *hnext;               /* hash chain */
    show_t *dnext;               /* the dirty list (when 'dirty') */
    seatd_live_t *lv;            /* owner */
    char id[SEATD_ID_MAX];       /* show id */
    char channel[SEATD_KEY_MAX]; /* {s:<id>}:ch */
    size_t nseats;               /* seats in the layout */
    char (*ids)[17];             /* owned: seat ids in index order */
    uint32_t *slots;             /* owned: open-addressing id hash of index + 1 (0 = empty) */
    size_t nslots;               /* a power of two >= 2 * nseats */
    uint8_t *status;             /* owned: ST_* per seat at 'ver' */
    long long ver;               /* version of 'status' */
    int synced;                  /* 'status' is the truth at 'ver' and messages apply in order */
    int subscribed;              /* Redis confirmed the subscription */
    int reading;                 /* a seat-map read is in flight */
    unsigned sub_gen;            /* bumped on every (re)subscription and loss: a read started
                                    under another generation may miss deltas and is redone */
    uint64_t retry_ms;           /* when to retry a failed read (0: none) */
    int dirty;                   /* on the dirty list: watchers may be behind */
    ring_entry_t *ring;          /* owned: 'ring_cap' slots, the versions (ver - ring_n, ver] */
    size_t ring_cap;             /* opts.ring, more while a burst is not yet sent (apply) */
    size_t ring_head;            /* slot of the oldest entry */
    size_t ring_n;               /* entries used */
    long long flushed_ver;       /* every watcher up to date was brought to this version at
                                    the last tick: the versions after it must stay */
    long long high_ver;          /* the highest version this show reached here: a read that
                                    answers less means Redis lost writes (on_seatmap) */
    int lost;                    /* the subscription was lost (Redis restarted, failed over,
                                    or the link broke) and no read has answered since */
    buffered_t *bhead, *btail;   /* messages received while not synced */
    size_t nbuffered;
    frame_t snap;        /* cached snapshot frame at 'snap_ver' */
    seatd_buf_t qframe;  /* the last waiting-room frame (queued shows), for new watchers */
    long long snap_ver;  /* -1: none */
    watcher_t *watchers; /* doubly linked */
    size_t nwatchers;
};

struct watcher_s {
    watcher_t *prev, *next;     /* the show's watchers */
    seatd_live_t *lv;           /* owner */
    show_t *show;               /* NULL once detached */
    uv_stream_t *stream;        /* borrowed from http_server until on_closed */
    seatd_ws_t *ws;             /* owned codec */
    long long sent_ver;         /* the version the client has; -1: needs a snapshot */
    int deflate;                /* permessage-deflate negotiated: large frames go compressed */
    int greeted;                /* a first frame went out (snapshot, delta or version) */
    unsigned frames_pending;    /* uv_writes without their callback */
    size_t bytes_pending;       /* bytes in those writes (also in the connection's output) */
    size_t budget;              /* the most 'bytes_pending' may reach (the output budget) */
    int paused;                 /* reading paused until the output drains (see output_check) */
    uint64_t last_rx_ms;        /* last frame (or bytes) from the client */
    uint64_t last_ping_ms;      /* last ping sent */
    uint64_t close_deadline_ms; /* hard close after this once our close frame is queued */
    int closing;                /* our close frame is queued (or the stream is being closed) */
    int hard_closed;            /* seatd_http_conn_close() was called */
};

typedef struct {
    uv_write_t req; /* embedded */
    watcher_t *w;   /* the writer */
    char *data;     /* owned; freed in after_write */
    size_t len;
} write_req_t;

struct seatd_live_s {
    uv_loop_t *loop;               /* borrowed */
    seatd_store_t *store;          /* borrowed */
    seatd_live_opts_t opts;        /* copied (strings dropped after the pubsub was created) */
    seatd_pubsub_t *ps;            /* owned */
    show_t *buckets[SHOW_BUCKETS]; /* shows by id */
    size_t nshows;
    show_t *dirty;          /* shows with versions not yet sent to every watcher */
    uv_timer_t tick;        /* coalescing */
    uv_timer_t house;       /* pings, idle, close deadlines, read retries */
    uint64_t last_flush_ms; /* when the tick last ran */
    char *rbuf;             /* owned: the shared read buffer */
    int rbuf_busy;          /* 'rbuf' is lent to a read */
    uint32_t *seen;         /* owned: scratch for delta_frame, all zero between uses */
    size_t seen_cap;        /* entries in 'seen' */
    unsigned inflight;      /* seat-map reads without their callback */
    int handles_open;       /* timers not yet closed */
    int closing;            /* seatd_live_close() was called */
    seatd_live_stats_t stats;
};

static void flush_show(show_t *s);
static void flush_watcher(watcher_t *w, frame_t *shared, long long *shared_v);
static void watcher_close(watcher_t *w, unsigned status, const char *reason);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void start_read(show_t *s);
static void maybe_free(seatd_live_t *lv);
static void on_tick(uv_timer_t *t);

static uint64_t now_ms(seatd_live_t *lv)
{
    return uv_now(lv->loop);
}

/* ---------------------------------------------------------------------------------------
 * Shows: lookup, seat ids, lifecycle
 * --------------------------------------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static show_t *show_find(seatd_live_t *lv, const char *id)
{
    for (show_t *s = lv->buckets[hash_str(id) % SHOW_BUCKETS]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static long seat_index(const show_t *s, const char *id)
{
    size_t mask = s->nslots - 1;
    for (size_t i = hash_str(id) & mask;; i = (i + 1) & mask) {
        uint32_t v = s->slots[i];
        if (v == 0)
            return -1;
        if (strcmp(s->ids[v - 1], id) == 0)
            return (long)(v - 1);
    }
}

static show_t *show_new(seatd_live_t *lv, const char *id, const seatd_layout_t *l)
{
    show_t *s = seatd_calloc(1, sizeof(*s));
    s->lv = lv;
    snprintf(s->id, sizeof(s->id), "%s", id);
    if (seatd_keys_show(s->channel, id, "ch") < 0)
        snprintf(s->channel, sizeof(s->channel), "{s:%s}:ch", id);
    s->nseats = seatd_layout_count(l);
    s->ids = seatd_calloc(s->nseats ? s->nseats : 1, sizeof(*s->ids));
    s->nslots = 16;
    while (s->nslots < 2 * s->nseats)
        s->nslots *= 2;
    s->slots = seatd_calloc(s->nslots, sizeof(*s->slots));
    for (size_t i = 0; i < s->nseats; i++) {
        snprintf(s->ids[i], sizeof(s->ids[i]), "%s", seatd_layout_seat(l, i)->id);
        size_t mask = s->nslots - 1;
        size_t j = hash_str(s->ids[i]) & mask;
        while (s->slots[j] != 0)
            j = (j + 1) & mask;
        s->slots[j] = (uint32_t)(i + 1);
    }
    s->status = seatd_calloc(s->nseats ? s->nseats : 1, 1);
    s->ring_cap = lv->opts.ring;
    s->ring = seatd_calloc(s->ring_cap, sizeof(*s->ring));
    s->snap_ver = -1;
    s->ver = -1;
    s->flushed_ver = -1;
    size_t b = hash_str(id) % SHOW_BUCKETS;
    s->hnext = lv->buckets[b];
    lv->buckets[b] = s;
    lv->nshows++;
    return s;
}

/* The k-th oldest entry of the ring. */
static ring_entry_t *ring_at(const show_t *s, size_t k)
{
    return &s->ring[(s->ring_head + k) % s->ring_cap];
}

static void ring_drop_oldest(show_t *s)
{
    ring_entry_t *old = ring_at(s, 0);
    free(old->idx);
    free(old->st);
    old->idx = NULL;
    old->st = NULL;
    s->ring_head = (s->ring_head + 1) % s->ring_cap;
    s->ring_n--;
}

/* Moves the entries into an array of 'cap' (>= ring_n) slots, oldest first. */
static void ring_resize(show_t *s, size_t cap)
{
    ring_entry_t *r = seatd_calloc(cap, sizeof(*r));
    for (size_t k = 0; k < s->ring_n; k++)
        r[k] = *ring_at(s, k);
    free(s->ring);
    s->ring = r;
    s->ring_cap = cap;
    s->ring_head = 0;
}

static void ring_clear(show_t *s)
{
    while (s->ring_n > 0)
        ring_drop_oldest(s);
    s->ring_head = 0;
    s->flushed_ver = s->ver; /* nothing older can be sent as a delta any more */
}

/* After a tick: back to the 'ring' versions kept for reconnects, and to its array. */
static void ring_trim(show_t *s)
{
    size_t keep = s->lv->opts.ring;
    while (s->ring_n > keep)
        ring_drop_oldest(s);
    if (s->ring_cap > keep)
        ring_resize(s, keep);
}

static void buffered_clear(show_t *s)
{
    while (s->bhead) {
        buffered_t *m = s->bhead;
        s->bhead = m->next;
        free(m->msg);
        free(m);
    }
    s->btail = NULL;
    s->nbuffered = 0;
}

/* Frees 's' if nobody watches it and no read is in flight for it; unsubscribes first. */
static void show_maybe_free(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (s->nwatchers > 0 || s->reading)
        return;
    if (lv->ps)
        seatd_pubsub_unsubscribe(lv->ps, s->channel);
    for (show_t **pp = &lv->buckets[hash_str(s->id) % SHOW_BUCKETS]; *pp; pp = &(*pp)->hnext) {
        if (*pp == s) {
            *pp = s->hnext;
            break;
        }
    }
    if (s->dirty) {
        for (show_t **pp = &lv->dirty; *pp; pp = &(*pp)->dnext) {
            if (*pp == s) {
                *pp = s->dnext;
                break;
            }
        }
    }
    lv->nshows--;
    ring_clear(s);
    buffered_clear(s);
    frame_free(&s->snap);
    seatd_buf_free(&s->qframe);
    free(s->ring);
    free(s->ids);
    free(s->slots);
    free(s->status);
    free(s);
}

/* ---------------------------------------------------------------------------------------
 * Applying deltas
 * --------------------------------------------------------------------------------------- */

static int parse_status(const char *st)
{
    if (strcmp(st, "available") == 0)
        return ST_AVAILABLE;
    if (strcmp(st, "held") == 0)
        return ST_HELD;
    if (strcmp(st, "booked") == 0)
        return ST_BOOKED;
    return -1;
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
static void mark_dirty(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (!s->dirty) {
        s->dirty = 1;
        s->dnext = lv->dirty;
        lv->dirty = s;
    }
    if (!uv_is_active((uv_handle_t *)&lv->tick) && !lv->closing) {
        uint64_t now = now_ms(lv), next = lv->last_flush_ms + tick_period_ms(lv);
        uv_timer_start(&lv->tick, on_tick, next > now ? next - now : 0, 0);
    }
}

/* Decodes {"v":V,"c":[["C7","held"],…]} into a ring entry. Returns 0 or -1. */
static int decode_delta(show_t *s, const char *msg, size_t len, ring_entry_t *e)
{
    cJSON *root = cJSON_ParseWithLength(msg, len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "v");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "c");
    if (!cJSON_IsNumber(v) || !(cJSON_IsArray(c) || cJSON_IsObject(c))) {
        cJSON_Delete(root);
        return -1;
    }
    /* cjson.encode turns an empty Lua table into {}: no changes. */
    int n = cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0;
    e->v = (long long)v->valuedouble;
    e->n = 0;
    e->idx = seatd_malloc(sizeof(*e->idx) * (size_t)(n ? n : 1));
    e->st = seatd_malloc((size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        const cJSON *pair = cJSON_GetArrayItem(c, i);
        const cJSON *seat = cJSON_GetArrayItem(pair, 0);
        const cJSON *st = cJSON_GetArrayItem(pair, 1);
        if (!cJSON_IsString(seat) || !cJSON_IsString(st))
            continue;
        long idx = seat_index(s, seat->valuestring);
        int code = parse_status(st->valuestring);
        if (idx < 0 || code < 0)
            continue; /* not in this layout: nothing to show */
        e->idx[e->n] = (uint32_t)idx;
        e->st[e->n] = (uint8_t)code;
        e->n++;
    }
    cJSON_Delete(root);
    return 0;
}

/*
 * Applies the entry of version ver + 1 (taken). A full ring drops its oldest version, unless
 * the next tick still has to send it to the watchers that were up to date at the last one:
 * then it grows (up to opts.ring_burst), so that a burst of more versions than 'ring' within
 * one tick — a busy on-sale, ticks of up to a second with many watchers — still reaches them
 * as one delta, not as a snapshot of the whole map each. ring_trim() shrinks it after the tick.
 */
static void apply(show_t *s, ring_entry_t *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        s->status[e->idx[i]] = e->st[i];
    s->ver = e->v;
    if (s->ver > s->high_ver)
        s->high_ver = s->ver;
    if (s->ring_n == s->ring_cap) {
        size_t most = s->lv->opts.ring_burst;
        if (ring_at(s, 0)->v > s->flushed_ver && s->ring_cap < most)
            ring_resize(s, s->ring_cap * 2 < most ? s->ring_cap * 2 : most);
        else
            ring_drop_oldest(s);
    }
    *ring_at(s, s->ring_n) = *e;
    s->ring_n++;
    mark_dirty(s);
}

/* A gap, a lost subscription or a bad message: the statuses are no longer the truth. */
static void desync(show_t *s, int read_now)
{
    s->synced = 0;
    ring_clear(s);
    if (read_now && s->subscribed)
        start_read(s);
}

static void buffer_msg(show_t *s, const char *msg, size_t len)
{
    if (s->nbuffered >= MAX_BUFFERED) {
        /* A read that takes this long is stuck: start over once it answers. */
        buffered_clear(s);
    }
    buffered_t *m = seatd_calloc(1, sizeof(*m));
    m->msg = seatd_strndup(msg, len);
    m->len = len;
    if (s->btail)
        s->btail->next = m;
    else
        s->bhead = m;
    s->btail = m;
    s->nbuffered++;
}

/* One delta message for a synced show. */
static void on_delta(show_t *s, const char *msg, size_t len)
{
    ring_entry_t e = {0};
    if (decode_delta(s, msg, len, &e) < 0) {
        seatd_log(SEATD_LOG_WARN, NULL, "live: malformed delta", "\"show\":\"%s\"", s->id);
        desync(s, 1);
        return;
    }
    if (e.v <= s->ver) { /* already in the snapshot */
        free(e.idx);
        free(e.st);
        return;
    }
    if (e.v != s->ver + 1) {
        seatd_log(SEATD_LOG_INFO, NULL, "live: version gap, reading the seat map",
                  "\"show\":\"%s\",\"have\":%lld,\"got\":%lld", s->id, s->ver, e.v);
        free(e.idx);
        free(e.st);
        buffer_msg(s, msg, len);
        desync(s, 1);
        return;
    }
    apply(s, &e);
}

/* ---------------------------------------------------------------------------------------
 * Reading the seat map (snapshot base)
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_live_t *lv;
    char id[SEATD_ID_MAX];
    unsigned gen; /* the show's sub_gen when the read started */
} read_op_t;

static int bit(const unsigned char *map, size_t len, size_t i)
{
    return i / 8 < len && (map[i / 8] >> (7 - i % 8)) & 1;
}

static void on_version_floor(const seatd_store_result_t *res, void *data)
{
    char *id = data;
    seatd_log(res->err ? SEATD_LOG_WARN : SEATD_LOG_INFO, NULL,
              res->err ? "live: lost versions not skipped" : "live: skipped past lost versions",
              "\"show\":\"%s\",\"version\":%lld", id,
              res->err ? -1LL : (long long)res->reap.version);
    free(id);
}

static void on_seatmap(const seatd_store_result_t *res, void *data)
{
    read_op_t *op = data;
    seatd_live_t *lv = op->lv;
    show_t *s = show_find(lv, op->id);
    unsigned op_gen = op->gen;
    free(op);
    lv->inflight--;
    if (s == NULL) {
        maybe_free(lv);
        return;
    }
    s->reading = 0;
    unsigned gen = op_gen;
    if (lv->closing || s->nwatchers == 0) {
        show_maybe_free(s);
        maybe_free(lv);
        return;
    }
    if (res->err) {
        seatd_log(SEATD_LOG_WARN, NULL, "live: seat map read failed",
                  "\"show\":\"%s\",\"error\":\"%s\"", s->id, seatd_err_name(res->err));
        if (res->err == SEATD_ENOSHOW) {
            for (watcher_t *w = s->watchers; w; w = w->next)
                watcher_close(w, SEATD_WS_CLOSE_POLICY, "no such show");
            return;
        }
        s->retry_ms = now_ms(lv) + RETRY_READ_MS;
        return;
    }
    if (!s->subscribed)
        return; /* the subscription dropped meanwhile: read again when it is back */
    if (gen != s->sub_gen) {
        /* Started before the subscription was lost and made again: deltas published in
         * between reached nobody, so this map may be stale. Read again. */
        start_read(s);
        return;
    }
    const seatd_seatmap_result_t *sm = &res->seatmap;
    if (sm->version < s->high_ver || (s->lost && s->high_ver > 0 && sm->version == s->high_ver)) {
        /* Redis lost writes (a restart short of its last second, a failover): the watchers
         * get this map as a snapshot (their version is not behind it), and the version moves
         * past the lost ones, so that a client that reconnects with ?since= of a lost version
         * is not told it missed nothing once the show is back at that number. After a lost
         * link, the same version may be another history's already (new writes reached it
         * before this read): it is moved past too; when nothing was lost, the watchers get
         * one snapshot more. */
        long long seen = s->high_ver;
        s->high_ver = sm->version;
        for (watcher_t *w = s->watchers; w; w = w->next)
            w->sent_ver = -1;
        char *id = seatd_strdup(s->id);
        if (seatd_store_version_floor(lv->store, s->id, seen, on_version_floor, id) < 0)
            free(id);
    }
    if (sm->version > s->high_ver)
        s->high_ver = sm->version;
    s->lost = 0;
    for (size_t i = 0; i < s->nseats; i++)
        s->status[i] = bit(sm->booked, sm->booked_len, i) ? ST_BOOKED
                       : bit(sm->held, sm->held_len, i)   ? ST_HELD
                                                          : ST_AVAILABLE;
    s->ver = sm->version;
    s->synced = 1;
    ring_clear(s);
    /* Messages that arrived during the read: older ones are in the map, newer ones apply. */
    buffered_t *m = s->bhead;
    s->bhead = s->btail = NULL;
    s->nbuffered = 0;
    while (m) {
        buffered_t *next = m->next;
        if (s->synced)
            on_delta(s, m->msg, m->len);
        else
            buffer_msg(s, m->msg, m->len); /* a gap re-read is in flight: keep for it */
        free(m->msg);
        free(m);
        m = next;
    }
    mark_dirty(s); /* watchers waiting for a snapshot */
}

static void start_read(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (s->reading || lv->closing)
        return;
    read_op_t *op = seatd_calloc(1, sizeof(*op));
    op->lv = lv;
    snprintf(op->id, sizeof(op->id), "%s", s->id);
    op->gen = s->sub_gen;
    lv->stats.resyncs++;
    s->retry_ms = 0;
    if (seatd_store_seatmap(lv->store, s->id, on_seatmap, op) < 0) {
        free(op);
        s->retry_ms = now_ms(lv) + RETRY_READ_MS;
        return;
    }
    s->reading = 1;
    lv->inflight++;
}

/* ---------------------------------------------------------------------------------------
 * Pub/sub events
 * --------------------------------------------------------------------------------------- */

/* "{s:42}:ch" -> "42" into 'out'. */
static int channel_show(const char *channel, char *out, size_t n)
{
    if (strncmp(channel, "{s:", 3) != 0)
        return -1;
    const char *end = strchr(channel, '}');
    if (end == NULL || (size_t)(end - channel - 3) >= n || strcmp(end, "}:ch") != 0)
        return -1;
    memcpy(out, channel + 3, (size_t)(end - channel - 3));
    out[end - channel - 3] = '\0';
    return 0;
}

static void send_text(watcher_t *w, const char *text, size_t len);

/*
 * A queued show's waiting room changed (lua/queue.lua publishes {"q":1,"a":A,"s":S,"w":W} on
 * the show's channel, outside the version sequence): one small frame for every watcher at
 * once, whatever their seat-map state, so a sold-out reaches every waiter with one publish.
 * The frame is kept for watchers who connect later.
 */
static void on_queue_msg(show_t *s, const char *msg, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(msg, len);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "s");
    const cJSON *wn = cJSON_GetObjectItemCaseSensitive(root, "w");
    if (!cJSON_IsNumber(a) || !cJSON_IsString(st) || !cJSON_IsNumber(wn) ||
        strspn(st->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != strlen(st->valuestring) ||
        strlen(st->valuestring) > 16) {
        cJSON_Delete(root);
        return;
    }
    seatd_buf_reset(&s->qframe);
    seatd_buf_printf(&s->qframe,
                     "{\"type\":\"queue\",\"admittedThrough\":%lld,\"state\":\"%s\","
                     "\"waiting\":%lld}",
                     (long long)a->valuedouble, st->valuestring, (long long)wn->valuedouble);
    cJSON_Delete(root);
    for (watcher_t *w = s->watchers, *next; w; w = next) {
        next = w->next; /* a slow client may be closed (but stays listed until on_closed) */
        send_text(w, s->qframe.data, s->qframe.len);
    }
}

static void on_pubsub(int event, const char *channel, const char *payload, size_t len, void *data)
{
    seatd_live_t *lv = data;
    char id[SEATD_ID_MAX];
    if (channel_show(channel, id, sizeof(id)) < 0)
        return;
    show_t *s = show_find(lv, id);
    if (s == NULL)
        return;
    switch (event) {
    case SEATD_PUBSUB_SUBSCRIBED:
        s->subscribed = 1;
        s->sub_gen++;
        desync(s, 0);
        buffered_clear(s); /* the read that follows covers everything before now */
        start_read(s);
        break;
    case SEATD_PUBSUB_LOST:
        s->lost = 1;
        s->subscribed = 0;
        s->sub_gen++;
        desync(s, 0);
        buffered_clear(s);
        break;
    case SEATD_PUBSUB_MESSAGE:
        if (len > 6 && memcmp(payload, "{\"q\":1,", 7) == 0)
            on_queue_msg(s, payload, len);
        else if (s->synced)
            on_delta(s, payload, len);
        else if (s->subscribed)
            buffer_msg(s, payload, len);
        break;
    }
}

/* ---------------------------------------------------------------------------------------
 * Writing frames
 * --------------------------------------------------------------------------------------- */

static void after_write(uv_write_t *req, int status)
{
    write_req_t *wr = container_of(req, write_req_t, req);
    watcher_t *w = wr->w;
    w->frames_pending--;
    w->bytes_pending -= wr->len;
    seatd_http_conn_output_written(w->stream, wr->len);
    free(wr->data);
    free(wr);
    if (w->hard_closed)
        return;
    if (status < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
        return;
    }
    if (w->paused && !w->closing && w->bytes_pending < w->budget / 4) {
        w->paused = 0; /* below the low-water mark: read the client again */
        if (uv_read_start(w->stream, on_alloc, on_read) < 0) {
            w->hard_closed = 1;
            seatd_http_conn_close(w->stream);
            return;
        }
    }
    if (w->closing && w->frames_pending == 0 && seatd_ws_close_sent(w->ws)) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
    }
}

/* Moves the codec's output to the socket. */
static void pump(watcher_t *w)
{
    if (w->hard_closed)
        return;
    seatd_buf_t out = SEATD_BUF_INIT;
    if (seatd_ws_output(w->ws, &out) == 0) {
        seatd_buf_free(&out);
        return;
    }
    /* At once when nothing is queued ahead and the socket takes it all (the usual case):
     * libuv's queued write turns POLLOUT on and off, an epoll_ctl per frame per watcher. */
    if (w->frames_pending == 0) {
        uv_buf_t now = uv_buf_init(out.data, (unsigned)out.len);
        int n = uv_try_write(w->stream, &now, 1);
        if (n == (int)out.len) {
            seatd_buf_free(&out);
            if (w->closing && seatd_ws_close_sent(w->ws)) { /* as after_write() */
                w->hard_closed = 1;
                seatd_http_conn_close(w->stream);
            }
            return;
        }
        if (n < 0 && n != UV_EAGAIN) {
            seatd_buf_free(&out);
            w->hard_closed = 1;
            seatd_http_conn_close(w->stream);
            return;
        }
        if (n > 0) { /* the rest waits for the socket */
            memmove(out.data, out.data + n, out.len - (size_t)n);
            out.len -= (size_t)n;
        }
    }
    write_req_t *wr = seatd_malloc(sizeof(*wr));
    wr->w = w;
    wr->data = seatd_buf_steal(&out, &wr->len);
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)wr->len);
    if (uv_write(&wr->req, w->stream, &b, 1, after_write) < 0) {
        free(wr->data);
        free(wr);
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
        return;
    }
    w->frames_pending++;
    w->bytes_pending += wr->len;
    seatd_http_conn_output_queued(w->stream, wr->len);
}

/* Queues our close frame; the stream is closed once it is written (or after a grace). */
static void watcher_close(watcher_t *w, unsigned status, const char *reason)
{
    if (w->closing || w->hard_closed)
        return;
    w->closing = 1;
    w->close_deadline_ms = now_ms(w->lv) + CLOSE_GRACE_MS;
    if (seatd_ws_close(w->ws, status, reason) == 0)
        pump(w);
    if (w->frames_pending == 0 && !w->hard_closed) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
    }
}

static void close_slow(watcher_t *w)
{
    seatd_live_t *lv = w->lv;
    lv->stats.slow_closed++;
    seatd_http_conn_output_note(w->stream, 1);
    seatd_log(SEATD_LOG_INFO, NULL, "live: closing a slow client",
              "\"show\":\"%s\",\"frames\":%u,\"bytes\":%zu", w->show ? w->show->id : "",
              w->frames_pending, w->bytes_pending);
    watcher_close(w, SEATD_WS_CLOSE_POLICY, "too slow"); /* see live.h on 1013 */
}

/*
 * The output budget, after anything was queued (data frames, pongs, pings): a client whose
 * unsent bytes passed the budget is closed; at half the budget its reading pauses (so pings
 * it keeps sending queue no pongs) until the output drains below a quarter (after_write).
 */
static void output_check(watcher_t *w)
{
    if (w->closing || w->hard_closed)
        return;
    if (w->bytes_pending > w->budget) {
        close_slow(w);
        return;
    }
    if (!w->paused && w->bytes_pending >= w->budget / 2) {
        w->paused = 1;
        uv_read_stop(w->stream);
        seatd_http_conn_output_note(w->stream, 0);
    }
}

/* Sends one text message ('compressed': its permessage-deflate payload), or closes a client
 * that cannot keep up. */
static void send_msg(watcher_t *w, const char *data, size_t len, int compressed)
{
    seatd_live_t *lv = w->lv;
    if (w->closing || w->hard_closed)
        return;
    if (w->frames_pending >= lv->opts.max_queue_frames || w->bytes_pending + len > w->budget) {
        close_slow(w);
        return;
    }
    int rc = compressed ? seatd_ws_send_deflated(w->ws, SEATD_WS_TEXT, data, len)
                        : seatd_ws_send(w->ws, SEATD_WS_TEXT, data, len);
    if (rc < 0)
        return;
    lv->stats.frames++;
    pump(w);
    output_check(w);
}

static void send_text(watcher_t *w, const char *text, size_t len)
{
    send_msg(w, text, len, 0);
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
            send_msg(w, f->z.data, f->z.len, 1);
            return;
        }
    }
    send_msg(w, f->text.data, f->text.len, 0);
}

/* The snapshot frame of 's' at its current version (cached per version). */
static frame_t *snapshot_frame(show_t *s)
{
    if (s->snap_ver == s->ver && s->snap.text.len > 0)
        return &s->snap;
    frame_reset(&s->snap);
    seatd_buf_t *b = &s->snap.text;
    seatd_buf_reserve(b, 64 + s->nseats * 24);
    seatd_buf_printf(b, "{\"type\":\"snapshot\",\"version\":%lld,\"seats\":{", s->ver);
    for (size_t i = 0; i < s->nseats; i++) /* ids match ^[A-Za-z0-9_-]+$: no escaping */
        seatd_buf_printf(b, "%s\"%s\":\"%s\"", i ? "," : "", s->ids[i], status_name[s->status[i]]);
    seatd_buf_puts(b, "}}");
    s->snap_ver = s->ver;
    return &s->snap;
}

/* Builds the delta (from, ver] of 's' into 'out': every change in that range once, the last
 * status of each seat, in the order seats first changed. Requires the ring to cover it. */
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
    for (size_t k = first; k < s->ring_n; k++) {
        const ring_entry_t *e = ring_at(s, k);
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
    seatd_buf_puts(out, "]}");
    free(order);
    free(last);
}

/* 1 when the ring holds every version after 'from'. */
static int ring_covers(const show_t *s, long long from)
{
    return from >= 0 && from <= s->ver && (long long)s->ring_n >= s->ver - from;
}

/*
 * Brings one watcher up to its show's version: nothing, a delta or a snapshot. 'shared' and
 * '*shared_v' cache the last delta built during this flush (many watchers share a range).
 */
static void flush_watcher(watcher_t *w, frame_t *shared, long long *shared_v)
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
            send_text(w, frame, (size_t)n);
            w->greeted = 1;
        }
        return;
    }
    w->greeted = 1;
    if (ring_covers(s, w->sent_ver) && w->sent_ver < s->ver) {
        if (*shared_v != w->sent_ver) {
            frame_reset(shared);
            delta_frame(s, w->sent_ver, &shared->text);
            *shared_v = w->sent_ver;
        }
        send_frame(w, shared);
    } else {
        w->lv->stats.snapshots++;
        send_frame(w, snapshot_frame(s));
    }
    w->sent_ver = s->ver;
}

/* Brings one watcher up to date on its own (a reconnect with ?since=, a resync): the delta
 * it may need is built into a buffer of this call. */
static void flush_one(watcher_t *w)
{
    frame_t delta = {0}; /* empty buffers */
    long long delta_v = -2;
    flush_watcher(w, &delta, &delta_v);
    frame_free(&delta);
}

static void flush_show(show_t *s)
{
    frame_t shared = {0};
    long long shared_v = -2;
    for (watcher_t *w = s->watchers, *next; w; w = next) {
        next = w->next; /* a slow client may be closed (but stays listed until on_closed) */
        flush_watcher(w, &shared, &shared_v);
    }
    frame_free(&shared);
    if (s->synced) {
        s->flushed_ver = s->ver;
        ring_trim(s);
    }
}

static void on_tick(uv_timer_t *t)
{
    seatd_live_t *lv = t->data;
    lv->last_flush_ms = now_ms(lv);
    show_t *list = lv->dirty;
    lv->dirty = NULL;
    for (show_t *s = list, *next; s; s = next) {
        next = s->dnext;
        s->dirty = 0;
        s->dnext = NULL;
        flush_show(s);
    }
}

/* ---------------------------------------------------------------------------------------
 * Watchers: reading, housekeeping, closing
 * --------------------------------------------------------------------------------------- */

static void on_ws_msg(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len, unsigned status,
                      void *user)
{
    watcher_t *w = user;
    if (opcode == SEATD_WS_TEXT && w->show && len < 256) {
        char cmd[256];
        memcpy(cmd, data, len);
        cmd[len] = '\0';
        if (strstr(cmd, "\"resync\"")) {
            w->sent_ver = -1;
            if (w->show->synced)
                flush_one(w);
        }
    }
    /* Pongs only refresh last_rx_ms (done on every read); pings were answered by the codec;
     * a close was answered by the codec: the stream is closed once that is written. */
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    watcher_t *w = seatd_http_conn_owner((uv_stream_t *)h);
    seatd_live_t *lv = w->lv;
    if (lv->rbuf_busy) { /* never nested on one loop, but stay correct if it were */
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    lv->rbuf_busy = 1;
    *buf = uv_buf_init(lv->rbuf, READ_BUF);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    watcher_t *w = seatd_http_conn_owner(stream);
    seatd_live_t *lv = w->lv;
    if (buf->base == lv->rbuf)
        lv->rbuf_busy = 0;
    if (nread == 0 || w->hard_closed)
        return;
    if (nread < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        return;
    }
    w->last_rx_ms = now_ms(lv);
    int rc = seatd_ws_feed(w->ws, buf->base, (size_t)nread);
    if (seatd_ws_close_received(w->ws) || rc < 0) {
        w->closing = 1;
        w->close_deadline_ms = now_ms(lv) + CLOSE_GRACE_MS;
        uv_read_stop(stream);
    }
    pump(w); /* pongs, the answering close */
    output_check(w);
    if (w->closing && w->frames_pending == 0 && !w->hard_closed) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
    }
}

static void on_house(uv_timer_t *t)
{
    seatd_live_t *lv = t->data;
    uint64_t now = now_ms(lv);
    for (size_t b = 0; b < SHOW_BUCKETS; b++) {
        for (show_t *s = lv->buckets[b]; s; s = s->hnext) {
            if (s->retry_ms && now >= s->retry_ms && s->subscribed && !s->synced)
                start_read(s);
            for (watcher_t *w = s->watchers, *next; w; w = next) {
                next = w->next;
                if (w->hard_closed)
                    continue;
                if (w->closing) {
                    if (now >= w->close_deadline_ms) {
                        w->hard_closed = 1;
                        seatd_http_conn_close(w->stream);
                    }
                    continue;
                }
                if (now - w->last_rx_ms >= lv->opts.idle_ms) {
                    watcher_close(w, SEATD_WS_CLOSE_GOING_AWAY, "no pong");
                    continue;
                }
                if (now - w->last_ping_ms >= lv->opts.ping_ms) {
                    w->last_ping_ms = now;
                    if (seatd_ws_send(w->ws, SEATD_WS_PING, "", 0) == 0) {
                        pump(w);
                        output_check(w);
                    }
                }
            }
        }
    }
}

/* The connection is closed: detach from the show, free. */
static void on_watcher_closed(void *data)
{
    watcher_t *w = data;
    seatd_live_t *lv = w->lv;
    show_t *s = w->show;
    if (s) {
        if (w->prev)
            w->prev->next = w->next;
        else
            s->watchers = w->next;
        if (w->next)
            w->next->prev = w->prev;
        s->nwatchers--;
        show_maybe_free(s);
    }
    lv->stats.watchers--;
    seatd_ws_free(w->ws);
    free(w);
    maybe_free(lv);
}

static void on_watcher_drain(void *data)
{
    watcher_t *w = data;
    watcher_close(w, SEATD_WS_CLOSE_GOING_AWAY, "server shutting down");
}

/* ---------------------------------------------------------------------------------------
 * API
 * --------------------------------------------------------------------------------------- */

seatd_live_t *seatd_live_new(uv_loop_t *loop, seatd_store_t *store, const seatd_live_opts_t *opts)
{
    seatd_live_t *lv = seatd_calloc(1, sizeof(*lv));
    lv->loop = loop;
    lv->store = store;
    lv->opts = *opts;
    lv->opts.redis_host = lv->opts.redis_unix = NULL;
    if (!lv->opts.tick_ms)
        lv->opts.tick_ms = 50;
    if (!lv->opts.ping_ms)
        lv->opts.ping_ms = 20000;
    if (!lv->opts.idle_ms)
        lv->opts.idle_ms = 60000;
    if (!lv->opts.ring)
        lv->opts.ring = 256;
    if (!lv->opts.ring_burst)
        lv->opts.ring_burst = 65536;
    if (lv->opts.ring_burst < lv->opts.ring)
        lv->opts.ring_burst = lv->opts.ring;
    if (!lv->opts.max_queue_frames)
        lv->opts.max_queue_frames = 64;
    lv->ps =
        seatd_pubsub_new(loop, opts->redis_host, opts->redis_port, opts->redis_unix, on_pubsub, lv);
    lv->rbuf = seatd_malloc(READ_BUF);
    uv_timer_init(loop, &lv->tick);
    lv->tick.data = lv;
    uv_timer_init(loop, &lv->house);
    lv->house.data = lv;
    lv->handles_open = 2;
    uv_timer_start(&lv->house, on_house, 1000, 1000);
    uv_unref((uv_handle_t *)&lv->house); /* housekeeping alone never keeps the loop alive */
    return lv;
}

int seatd_live_accept(seatd_live_t *lv, seatd_req_t *r, const char *show_id,
                      const seatd_layout_t *layout, const char *ws_key, long long since,
                      int deflate)
{
    if (lv->closing)
        return SEATD_ESHUTDOWN;
    char accept[SEATD_WS_ACCEPT_LEN + 1];
    if (seatd_ws_accept_key(ws_key, accept) < 0)
        return SEATD_EINVAL;
    char id[SEATD_ID_MAX]; /* 'show_id' may live in 'r', which the takeover frees */
    if (snprintf(id, sizeof(id), "%s", show_id) >= (int)sizeof(id))
        return SEATD_EINVAL;
    show_id = id;
    watcher_t *w = seatd_calloc(1, sizeof(*w));
    w->lv = lv;
    w->sent_ver = since >= 0 ? since : -1;
    seatd_http_owner_t owner = {on_watcher_drain, on_watcher_closed, w};
    seatd_buf_t leftover = SEATD_BUF_INIT;
    uv_stream_t *stream = NULL;
    int rc = seatd_req_take_connection(r, &owner, &stream, &leftover);
    if (rc < 0) {
        free(w);
        seatd_buf_free(&leftover);
        return rc;
    }
    /* From here on the watcher is the connection's owner: every path ends in on_closed. */
    w->stream = stream;
    w->budget = seatd_http_conn_output_budget(stream);
    if (lv->opts.max_queue_bytes && lv->opts.max_queue_bytes < w->budget)
        w->budget = lv->opts.max_queue_bytes;
    w->ws = seatd_ws_new(0, MAX_CLIENT_MSG, on_ws_msg, w);
    if (deflate) {
        seatd_ws_set_deflate(w->ws);
        w->deflate = 1;
    }
    w->last_rx_ms = w->last_ping_ms = now_ms(lv);
    lv->stats.watchers++;

    show_t *s = show_find(lv, show_id);
    if (s == NULL) {
        s = show_new(lv, show_id, layout);
        if (seatd_pubsub_subscribe(lv->ps, s->channel) < 0)
            seatd_log(SEATD_LOG_WARN, NULL, "live: cannot subscribe", "\"show\":\"%s\"", s->id);
    }
    w->show = s;
    w->next = s->watchers;
    if (s->watchers)
        s->watchers->prev = w;
    s->watchers = w;
    s->nwatchers++;

    char head[320];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
                     accept,
                     deflate ? "Sec-WebSocket-Extensions: " SEATD_WS_DEFLATE_RESPONSE "\r\n" : "");
    write_req_t *wr = seatd_malloc(sizeof(*wr));
    wr->w = w;
    wr->data = seatd_strndup(head, (size_t)n);
    wr->len = (size_t)n;
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)wr->len);
    if (uv_write(&wr->req, stream, &b, 1, after_write) < 0) {
        free(wr->data);
        free(wr);
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        seatd_buf_free(&leftover);
        return 0;
    }
    w->frames_pending++;
    w->bytes_pending += wr->len;
    seatd_http_conn_output_queued(stream, wr->len);
    if (uv_read_start(stream, on_alloc, on_read) < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        seatd_buf_free(&leftover);
        return 0;
    }
    if (leftover.len > 0) { /* client frames pipelined behind the upgrade request */
        if (seatd_ws_feed(w->ws, leftover.data, leftover.len) < 0 || seatd_ws_close_received(w->ws))
            w->closing = 1;
        pump(w);
        output_check(w);
    }
    seatd_buf_free(&leftover);
    if (w->closing) {
        w->close_deadline_ms = now_ms(lv) + CLOSE_GRACE_MS;
        return 0;
    }
    if (s->synced)
        flush_one(w);
    if (s->qframe.len > 0) /* a queued show: where its waiting room stands */
        send_text(w, s->qframe.data, s->qframe.len);
    return 0;
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
    maybe_free(lv);
}

static void maybe_free(seatd_live_t *lv)
{
    if (!lv->closing || lv->handles_open > 0 || lv->inflight > 0 || lv->stats.watchers > 0)
        return;
    /* Shows without watchers are freed as their reads answer; drop any left. */
    for (size_t b = 0; b < SHOW_BUCKETS; b++)
        while (lv->buckets[b])
            show_maybe_free(lv->buckets[b]);
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
}
