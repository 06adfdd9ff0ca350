/*
 * sweeper.h - releases due holds on time, in every worker, without a coordinator.
 *
 * Correctness never waits for the sweeper (an expired seat key is simply gone); the sweeper
 * makes the projection and the deltas follow promptly: an abandoned hold's seats turn
 * AVAILABLE, with their delta, within about one interval of the deadline.
 *
 * State lives in Redis, so any number of workers sweep safely and a restart loses nothing:
 *   seatd:due:{hN}  zset  show id -> the earliest deadline (epoch ms, Redis's clock) at which
 *                    the show may have a hold to reap (split into SEATD_HINT_BUCKETS keys by
 *                    the show's slot range, keys.h). A hint index, outside the shows' slots
 *                    (a hold script cannot write it: cross-slot), so the worker writes it:
 *   - the store, after a hold or a booking begun or failed (hints.h, seatd_hints_due; or
 *     seatd_sweeper_hint()), adds the show with score 0 (ZADD LT: "look at this show soon");
 *     fire and forget.
 *   - every interval, one FCALL seatd_sweep_claim per bucket takes the shows whose score is due and
 *     removes them (so exactly one worker reaps each); each is reaped with seatd_reap, whose
 *     reply names the show's next deadline, under which the show is filed again (ZADD LT; a
 *     hint that arrived meanwhile wins if earlier). Reaping is idempotent.
 *   - every 30 s one worker (a lease key seatd:sweep:rescan taken with SET NX PX under the
 *     worker's own token, and renewed every third of its time while the walk runs, so a
 *     long walk never shares the catalogue with a second walker) first prunes the catalogue
 *     (seatd_catalogue_prune: shows whose startsAt is more than the retention, 24 h by
 *     default, in the past leave seatd:shows and their seatd:due bucket), then walks seatd:shows in
 * pages and files every show with a non-empty expiry set under its first deadline, so a lost hint
 * (a worker that died between claim and filing, a hint that failed) costs at most one rescan
 * period. The walk grows with the shows on sale, not with every show created. Keyspace
 * notifications are not used: Redis emits `expired` late under load.
 *
 * Lifecycle: seatd_sweeper_new() -> seatd_sweeper_start() -> ... -> seatd_sweeper_close()
 * (before the Redis client closes; the object frees itself once its timer is closed and
 * its last Redis callback ran). Loop and threads: one loop, one thread.
 */
#ifndef SEATD_SWEEPER_H
#define SEATD_SWEEPER_H

#include "base/errors.h"
#include "store/hints.h" /* SEATD_KEY_DUE */

struct uv_loop_s;
struct seatd_rds_s;
struct seatd_scripts_s;
struct seatd_store_s;

typedef struct seatd_sweeper_s seatd_sweeper_t;

#define SEATD_KEY_RESCAN_LEASE "seatd:sweep:rescan"

/* Returns an owned sweeper using 'rds', 'scripts' and 'store' (borrowed; must outlive it)
 * every 'interval_ms' (250 when 0). */
seatd_sweeper_t *seatd_sweeper_new(struct uv_loop_s *loop, struct seatd_rds_s *rds,
                                   struct seatd_scripts_s *scripts, struct seatd_store_s *store,
                                   unsigned interval_ms);

/* The catalogue rescan's knobs; 0 (or, for 'retention_ms', a negative value) means the
 * default. */
typedef struct seatd_sweeper_rescan_s {
    long long retention_ms; /* a show leaves the catalogue this long after its start (24 h) */
    long long every_ms;     /* period between rescans (30 s) */
    long long lease_ms;     /* the lease time (25 s), renewed every third of it */
    int page;               /* shows per catalogue page and per prune call (500) */
    long long first_ms;     /* > 0: the first rescan this soon after the call (1 s after new) */
} seatd_sweeper_rescan_t;

/* Sets the rescan options ('ro' is copied). Call before seatd_sweeper_start(). */
void seatd_sweeper_set_rescan(seatd_sweeper_t *sw, const seatd_sweeper_rescan_t *ro);

/* Starts the periodic sweep (the first one after one interval). */
void seatd_sweeper_start(seatd_sweeper_t *sw);

/* Tells the sweepers that show 'show_id' (borrowed) has a new hold or deadline: it will be
 * reaped (and filed under its real next deadline) at the next sweep. Fire and forget. */
void seatd_sweeper_hint(seatd_sweeper_t *sw, const char *show_id);

typedef struct seatd_sweeper_stats_s {
    unsigned long long sweeps;  /* claims sent */
    unsigned long long reaps;   /* seatd_reap calls answered */
    unsigned long long reaped;  /* holds they ended */
    unsigned long long errors;  /* failed Redis calls */
    unsigned long long rescans; /* catalogue pages filed */
    unsigned long long pruned;  /* shows pruned from the catalogue */
    unsigned long long leases;  /* rescan leases taken or renewed */
    unsigned long long lag_ms;  /* since the last sweep ended whose claim and reaps all
                                   succeeded: about one interval while the sweeper keeps up,
                                   growing while Redis fails or is slow */
    /* Waiting rooms (issue 15): */
    unsigned long long queue_advances; /* seatd_queue_advance calls answered (the people they
                                          admit: metrics.h, QUEUE_ADMITTED_SWEEPER) */
    unsigned long long queue_rooms;    /* rooms advanced at the last whole tick */
    unsigned long long queue_waiting;  /* people waiting in them, as those calls answered */
} seatd_sweeper_stats_t;
void seatd_sweeper_get_stats(const seatd_sweeper_t *sw, seatd_sweeper_stats_t *out);

/* Stops sweeping and frees 'sw' asynchronously (see above). NULL is a no-op. */
void seatd_sweeper_close(seatd_sweeper_t *sw);

#endif
