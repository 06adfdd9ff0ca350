/*
 * live_internal.h - what the files of the live seat map share: its objects, their limits, and
 * the functions one file calls in another. Not an interface: include it only from flows/live*.c;
 * everything else goes through live.h.
 *
 * Objects:
 *   - seatd_live_t: the shows by id (a chained hash), the pubsub connection, the tick timer
 *     (coalescing; runs only while some show has unsent versions), the housekeeping timer
 *     (pings, idle and close deadlines; once a second) and one shared read buffer.
 *   - show_t: one watched show: its seat ids (copied from the layout) with an id -> index
 *     hash, the seat statuses and standing areas' free counts at version 'ver' (valid while
 *     'synced'), a ring of the last versions' changes (seats and areas), the messages
 *     buffered while a seat-map read is in flight, and its watchers. Freed when its last
 *     watcher leaves and no read is in flight for it.
 *   - watcher_t: one WebSocket connection (a stream taken from http_server), its codec, the
 *     version the client has ('sent_ver', -1: needs a snapshot) and its unsent-frame count.
 *     Freed in the connection's on_closed hook.
 *
 * The files: live.c (the object: new, stats, close), live_show.c (a show's seats, its ring of
 * versions, applying deltas), live_sync.c (keeping a show in step with Redis: seat-map reads,
 * pub/sub events), live_fanout.c (snapshot and delta frames, the coalescing tick),
 * live_watcher.c (one WebSocket client: accept, writes, slow consumers, reads, closing).
 */
#ifndef SEATD_LIVE_INTERNAL_H
#define SEATD_LIVE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"
#include "clients/pubsub.h"
#include "domain/areas.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "flows/live.h"
#include "http/ws_codec.h"
#include "store/store.h"

#define SHOW_BUCKETS 1024
#define READ_BUF 65536
#define MAX_CLIENT_MSG 4096 /* client messages are tiny commands */
#define MAX_BUFFERED 4096   /* messages kept while a seat-map read is in flight */
#define CLOSE_GRACE_MS 2000 /* after our close frame, how long to wait for the write */
#define RETRY_READ_MS 1000  /* a failed seat-map read is retried after this */

/* A seat's status as the feed shows it; ST_UNAVAILABLE: kept for a sales channel and free
 * (issue 30). */
enum { ST_AVAILABLE, ST_HELD, ST_BOOKED, ST_UNAVAILABLE };

typedef struct {
    long long v;   /* the version */
    uint32_t n;    /* seat changes */
    uint8_t na;    /* area changes (at most SEATD_AREAS_MAX) */
    uint32_t *idx; /* owned: the n seat indexes, then na pairs (area index, its free count) */
    uint8_t *st;   /* owned: the seats' new statuses */
} ring_entry_t;

/* A standing area of a show (issue 30), as the last seat-map read named it (its id is
 * written into frames as it is; 'free' is at the show's 'ver'). */
typedef seatd_area_free_t area_t;

/* One frame as sent to many watchers: its text, and the same compressed once for those that
 * negotiated permessage-deflate (ws_codec.h). */
typedef struct {
    seatd_buf_t text; /* the JSON */
    seatd_buf_t z;    /* its compressed payload, made on first need */
    int z_state;      /* 0: not made yet, 1: made, -1: zlib failed (the text goes) */
} frame_t;

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
    area_t *areas;               /* owned: its standing areas at 'ver'; NULL when it has none */
    size_t nareas;               /* entries in 'areas' (at most SEATD_AREAS_MAX) */
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
    frame_t snap;       /* cached snapshot frame at 'snap_ver' */
    seatd_buf_t qframe; /* the last waiting-room frame (queued shows), for new watchers */
    unsigned qgen;      /* bumped with every waiting-room frame (watcher_t.qgen) */
    /* A pass (live_fanout.c): its watchers brought up to date a slice per loop turn. */
    show_t *pnext;           /* lv->passing (when 'in_pass') */
    int in_pass;             /* on lv->passing */
    int pass_deltas;         /* a tick's pass: watchers go to the version, not only 'qgen' */
    long long pass_from;     /* 'ver' when the tick's pass began: every watcher has it after */
    int again, again_deltas; /* another pass (a tick's) was asked for during this one */
    watcher_t *cursor;       /* the pass's next watcher; NULL once it reached the list's end */
    frame_t pass_delta;      /* the delta shared by the pass's watchers ... */
    long long pass_delta_from, pass_delta_to; /* ... covering (from, to] */
    long long snap_ver;                       /* -1: none */
    watcher_t *watchers;                      /* doubly linked */
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
    unsigned qgen;              /* the show's waiting-room frame it has (show_t.qgen) */
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
    uv_idle_t pass_idle;    /* runs the passes' next slices while 'passing' is not empty */
    show_t *passing;        /* shows with a pass in progress */
    uint64_t last_flush_ms; /* when the tick last ran */
    char *rbuf;             /* owned: the shared read buffer */
    int rbuf_busy;          /* 'rbuf' is lent to a read */
    uint32_t *seen;         /* owned: scratch for delta_frame, all zero between uses */
    size_t seen_cap;        /* entries in 'seen' */
    unsigned inflight;      /* seat-map reads without their callback */
    int handles_open;       /* timers and the idle handle not yet closed */
    int closing;            /* seatd_live_close() was called */
    seatd_live_stats_t stats;
};

static inline uint64_t live__now_ms(seatd_live_t *lv)
{
    return uv_now(lv->loop);
}

/* ---------------------------------------------------------------- live.c */

void live__maybe_free(seatd_live_t *lv);

/* ---------------------------------------------------------------- live_show.c */

show_t *live__show_find(seatd_live_t *lv, const char *id);
show_t *live__show_new(seatd_live_t *lv, const char *id, const seatd_layout_t *l);
void live__show_maybe_free(show_t *s);
ring_entry_t *live__ring_at(const show_t *s, size_t k);
void live__ring_clear(show_t *s);
void live__ring_trim(show_t *s);
void live__buffered_clear(show_t *s);
void live__areas_set(show_t *s, const char *text);
void live__desync(show_t *s, int read_now);
void live__buffer_msg(show_t *s, const char *msg, size_t len);
void live__on_delta(show_t *s, const char *msg, size_t len);

/* ---------------------------------------------------------------- live_sync.c */

void live__start_read(show_t *s);
void live__on_pubsub(int event, const char *channel, const char *payload, size_t len, void *data);

/* ---------------------------------------------------------------- live_fanout.c */

void live__frame_free(frame_t *f);
void live__mark_dirty(show_t *s);
void live__flush_one(watcher_t *w);
void live__pass_queue(show_t *s);
void live__pass_forget(show_t *s);
void live__pass_skip(show_t *s, watcher_t *w);
void live__on_pass_idle(uv_idle_t *h);

/* ---------------------------------------------------------------- live_watcher.c */

void live__watcher_close(watcher_t *w, unsigned status, const char *reason);
void live__send_msg(watcher_t *w, const char *data, size_t len, int compressed);
void live__send_text(watcher_t *w, const char *text, size_t len);
void live__on_house(uv_timer_t *t);

#endif
