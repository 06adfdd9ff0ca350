/*
 * hints.h - the hint indexes that tell the background workers where to look.
 *
 *   seatd:due:{hN}           zset  show id -> earliest deadline (ms) to look at (sweeper.h); a
 *                                  hint is ZADD LT with score 0: "look at this show soon".
 *   seatd:pending_shows:{hN} zset  show id -> hint count (reconcile.h); a hint is ZINCRBY 1,
 *                                  so a reconciler drops the entry only if no hint came since
 *                                  it read it.
 *   seatd:queues:{hN}        zset  show id -> sales close (ms): waiting rooms someone joined
 *                                  (issue 15), advanced by the sweepers.
 * Each is split into SEATD_HINT_BUCKETS keys; a show's hints go to the bucket of its own slot
 * range (keys.h), so on a cluster they sit on the shard that owns the show.
 *
 * These keys live outside every show's slot, so a show's script cannot write them; the store
 * files them (store.h, seatd_store_set_hints) right after the operation that creates the need:
 * a hold, a booking begun or failed (a new or moved deadline: seatd:due), a booking begun or
 * a cancellation whose refund is still owed (seatd:pending_shows). Fire and forget: a hint
 * that is lost costs at most one catalogue rescan period (the sweeper's and the reconciler's
 * safety nets). Loop and threads: those of 'rds'.
 */
#ifndef SEATD_HINTS_H
#define SEATD_HINTS_H

struct seatd_rds_s;

/* Hints the sweepers that show 'show_id' (borrowed) has a new hold or deadline. A NULL 'rds'
 * or an invalid id does nothing. */
void seatd_hints_due(struct seatd_rds_s *rds, const char *show_id);

/* Hints the reconcilers that show 'show_id' (borrowed) has a booking to settle or a refund
 * to confirm. A NULL 'rds' or an invalid id does nothing. */
void seatd_hints_pending(struct seatd_rds_s *rds, const char *show_id);

/* Files show 'show_id' (borrowed) in its bucket of seatd:queues (keys.h) with score 'close_ms' (its
 * sales close): its waiting room has people in it, and every sweeper advances it (sweeper.h) until
 * then. A NULL 'rds' or an invalid id does nothing. */
void seatd_hints_queue(struct seatd_rds_s *rds, const char *show_id, long long close_ms);

#endif
