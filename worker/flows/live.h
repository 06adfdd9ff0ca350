/*
 * live.h - the live seat map: WebSocket watchers per show, a snapshot, then versioned deltas.
 *
 * Protocol (server -> client text frames; the web page is written against exactly this):
 *   {"type":"snapshot","version":V,"seats":{"C7":"held","C8":"available",…},
 *    (a status is "available", "held", "booked", or "unavailable": kept for a sales channel
 *    and free, issue 30)
 *    "areas":{"FLOOR":{"capacity":5000,"available":4862},…}}
 *   {"type":"delta","fromVersion":F,"version":V,"changes":[{"seat":"C7","status":"held"},…],
 *    "areas":{"FLOOR":4862,…}}
 *   {"type":"queue","admittedThrough":A,"state":"OPEN"|"SOLD_OUT"|…,"waiting":W}
 *     (a queued show's waiting room, issue 15: sent to every watcher when lua/queue.lua
 *     publishes a change, outside the version sequence; the last one also to new watchers)
 * "areas" (standing areas, issue 30) only for a show that has them: a snapshot lists every
 * area with its capacity and free places; a delta only the areas whose free count changed in
 * F..V, each with its count after V (a version may change places alone: "changes" is then
 * empty, and it is a delta all the same). A show without areas has no "areas" member.
 * A delta covers every version F..V exactly once (coalesced: the last status of each seat in that
 * range, the last free count of each area); consecutive frames to one client chain (the next F is
 * the previous V + 1). A client that connects with ?since=S gets the delta S+1..V when this worker
 * still has those versions in its ring of the last 'ring' versions, nothing if S is the current
 * version, else a snapshot. However many versions arrive within one tick, a watcher that was up to
 * date at the last tick gets them as one delta (the ring keeps what a tick has not sent yet,
 * beyond 'ring' up to 'ring_burst'; past that, a snapshot). Client frames: pong and close are
 * handled; the text {"type":"resync"} asks for a fresh snapshot; anything else is ignored. Pings
 * every 'ping_ms'; no frame from the client for 'idle_ms' closes it (1001). Every frame, pongs and
 * pings included, counts against the connection's output budget (http_server.h): at half of it the
 * client's reading pauses (so pings it keeps sending queue no pongs and do not count as activity)
 * until the output drains below a quarter. A client whose unsent frames would pass
 * 'max_queue_frames' or the budget is too slow and is closed with 1008 (1013 "try again later"
 * would fit, but strict clients such as wslay reject that code as invalid).
 *
 * How versions stay exact: each show's scripts publish one message per version bump on the show's
 * channel ({"v":V,"c":[["C7","held"],…],"a":{"FLOOR":4862}}, "a" when an area's free count
 * changed; the seat-map read gives the areas' capacities and free counts, which the worker then
 * keeps up to date from "a", so a snapshot needs no read). A worker subscribes (pubsub.h) while it
 * has watchers of that show, reads the seat map only once Redis confirmed the subscription, and
 * applies the messages with a version above the map's in order. A gap in versions (a dropped
 * subscription, a missed message) triggers a fresh read, after which watchers that are behind get
 * a snapshot. Frames are built at most once per tick (every 'tick_ms') per show and starting
 * version, and shared by the watchers that need the same range.
 *
 * Lifecycle: seatd_live_new() -> seatd_live_accept() per upgraded request -> ... ->
 * seatd_live_close() (after the HTTP server drained: every watcher is closed by then), which
 * frees the object once its timers, subscriber and pending reads are done.
 * Loop and threads: one loop, one thread.
 */
#ifndef SEATD_LIVE_H
#define SEATD_LIVE_H

#include <stddef.h>

#include "base/errors.h"

struct uv_loop_s;
struct seatd_store_s;
struct seatd_layout_s;
typedef struct seatd_req_s seatd_req_t;
typedef struct seatd_live_s seatd_live_t;

typedef struct seatd_live_opts_s {
    const char *redis_host;    /* borrowed; for the pubsub connection ("127.0.0.1" if NULL) */
    int redis_port;            /* 6379 when 0 */
    const char *redis_unix;    /* borrowed; a unix socket path instead of host/port, or NULL */
    unsigned tick_ms;          /* coalescing tick; 50 when 0 */
    unsigned ping_ms;          /* ping period; 20000 when 0 */
    unsigned idle_ms;          /* close after this long without a client frame; 60000 when 0 */
    unsigned ring;             /* versions kept per show for ?since=; 256 when 0 */
    unsigned ring_burst;       /* versions kept per show for the next tick's delta, at most
                                  (past it, watchers get a snapshot); 65536 when 0 */
    unsigned max_queue_frames; /* unsent frames per client before 1008; 64 when 0 */
    size_t max_queue_bytes;    /* unsent bytes per client before 1008, when below the
                                  connection's output budget; 0: the budget */
    unsigned pass_slice;       /* watchers brought up to date per loop turn; 1000 when 0 */
} seatd_live_opts_t;

/* Returns an owned live map on 'loop' reading snapshots through 'store' (borrowed; must
 * outlive it). 'opts' is copied. The pubsub connection starts at once. */
seatd_live_t *seatd_live_new(struct uv_loop_s *loop, struct seatd_store_s *store,
                             const seatd_live_opts_t *opts);

/*
 * Upgrades 'r' (GET /v1/shows/{id}/seats/ws whose headers passed seatd_ws_check_upgrade)
 * into a watcher of 'show_id' (borrowed) with 'layout' (borrowed for the call; the seat ids
 * are copied). 'ws_key' is the Sec-WebSocket-Key (borrowed); 'since' is ?since= or -1;
 * 'deflate': the client offered permessage-deflate as ws_codec.h takes it (the 101 accepts it,
 * and frames of 256 bytes or more go compressed, each compressed once for all its watchers).
 * On success 'r' has been answered (101) and must not be touched. Returns 0, or an error
 * with 'r' untouched (the caller answers it): SEATD_ESHUTDOWN while closing, SEATD_EINVAL.
 */
SEATD_MUSTCHECK int seatd_live_accept(seatd_live_t *lv, seatd_req_t *r, const char *show_id,
                                      const struct seatd_layout_s *layout, const char *ws_key,
                                      long long since, int deflate);

typedef struct seatd_live_stats_s {
    size_t watchers;                /* open WebSocket connections */
    size_t shows;                   /* shows with watchers (or being torn down) */
    unsigned long long frames;      /* frames queued to clients */
    unsigned long long snapshots;   /* of which snapshots */
    unsigned long long resyncs;     /* seat-map reads after a gap or a reconnect */
    unsigned long long slow_closed; /* clients closed for being too slow */
} seatd_live_stats_t;
void seatd_live_get_stats(const seatd_live_t *lv, seatd_live_stats_t *out);

/* Starts the asynchronous teardown (see above). NULL is a no-op. */
void seatd_live_close(seatd_live_t *lv);

#endif
