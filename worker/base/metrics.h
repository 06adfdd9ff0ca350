/*
 * metrics.h - the process's own counters, gauges and histograms (a leaf: libc and buf only).
 *
 * Every figure is declared once in a table: counters in SEATD_METRIC_MAP, gauges in
 * SEATD_GAUGE_MAP, latency histograms in SEATD_HISTOGRAM_MAP (name, metric family, labels,
 * help). Code where the event happens bumps them: seatd_metrics_inc(SEATD_METRIC_<NAME>),
 * seatd_metrics_gauge_set(SEATD_GAUGE_<NAME>, v), seatd_metrics_observe(SEATD_HIST_<NAME>, s).
 * seatd_metrics_render_tables() writes the three tables as Prometheus text; the whole
 * /metrics document (route stats, Redis, live, sweeper, HTTP figures pulled from the modules
 * that keep them) is assembled above every module, in metrics_render.h.
 *
 * Single-threaded: plain process-wide variables, one set per worker (Prometheus sums or
 * takes the max over the workers). Nothing to create or free.
 */
#ifndef SEATD_METRICS_H
#define SEATD_METRICS_H

#include <stddef.h>

#include "base/buf.h"

/* The rows of seatd_payments_total for one gateway operation ('op' its label value), one per
 * outcome: SEATD_METRIC_PAY_<OP>_APPROVED, _DECLINED, _UNKNOWN, _NOT_FOUND. */
#define SEATD_PAY_METRIC_ROWS(XX, OP, op, help)                                                    \
    XX(PAY_##OP##_APPROVED, "seatd_payments_total", "op=\"" op "\",outcome=\"approved\"", help)    \
    XX(PAY_##OP##_DECLINED, "seatd_payments_total", "op=\"" op "\",outcome=\"declined\"", "")      \
    XX(PAY_##OP##_UNKNOWN, "seatd_payments_total", "op=\"" op "\",outcome=\"unknown\"", "")        \
    XX(PAY_##OP##_NOT_FOUND, "seatd_payments_total", "op=\"" op "\",outcome=\"not_found\"", "")

/* XX(enum name, metric family, labels, help) - rows of one family must be adjacent; the
 * first row of a family carries its help. */
#define SEATD_METRIC_MAP(XX)                                                                       \
    XX(HOLD_CREATED, "seatd_holds_total", "outcome=\"created\"", "Hold attempts by outcome")       \
    XX(HOLD_REPLAYED, "seatd_holds_total", "outcome=\"replayed\"", "")                             \
    XX(HOLD_CONFLICT, "seatd_holds_total", "outcome=\"conflict\"", "")                             \
    XX(HOLD_SALES_CLOSED, "seatd_holds_total", "outcome=\"sales_closed\"", "")                     \
    XX(HOLD_LIMIT, "seatd_holds_total", "outcome=\"seat_limit\"", "")                              \
    XX(HOLD_RATE_LIMITED, "seatd_holds_total", "outcome=\"rate_limited\"", "")                     \
    XX(HOLD_QUEUE_REQUIRED, "seatd_holds_total", "outcome=\"queue_required\"", "")                 \
    XX(HOLD_REJECTED, "seatd_holds_total", "outcome=\"rejected\"", "")                             \
    XX(HOLD_ERROR, "seatd_holds_total", "outcome=\"error\"", "")                                   \
    XX(HOLD_RELEASED, "seatd_holds_released_total", "", "Holds released by their owner")           \
    XX(HOLD_INDEX_ERROR, "seatd_holds_unindexed_total", "",                                        \
       "Holds made but not filed in the buyer's index (GET /v1/me/holds)")                         \
    XX(BOOKING_INDEX_ERROR, "seatd_bookings_unindexed_total", "",                                  \
       "Bookings begun whose entry in the buyer's index (GET /v1/me/bookings) was not written "    \
       "(seatd-notify files it from the outbox once the booking is confirmed)")                    \
    XX(STORE_FORGOTTEN_FAILED, "seatd_store_forgotten_total", "",                                  \
       "Writes nobody waits for (a counter given back, an index entry removed, a claim "           \
       "released) that failed; each is logged with its error")                                     \
    XX(DECLINE_CAP_UNCHECKED, "seatd_decline_cap_unchecked_total", "",                             \
       "Bookings begun without the per-user decline cap: its shard could not be reached")          \
    XX(BOOKING_CONFIRMED, "seatd_bookings_total", "outcome=\"confirmed\"",                         \
       "Booking attempts by outcome")                                                              \
    XX(BOOKING_DECLINED, "seatd_bookings_total", "outcome=\"declined\"", "")                       \
    XX(BOOKING_PENDING, "seatd_bookings_total", "outcome=\"pending\"", "")                         \
    XX(BOOKING_LOST, "seatd_bookings_total", "outcome=\"seats_lost\"", "")                         \
    XX(BOOKING_EXPIRED, "seatd_bookings_total", "outcome=\"hold_expired\"", "")                    \
    XX(BOOKING_SALES_CLOSED, "seatd_bookings_total", "outcome=\"sales_closed\"", "")               \
    XX(BOOKING_REJECTED, "seatd_bookings_total", "outcome=\"rejected\"", "")                       \
    XX(BOOKING_ERROR, "seatd_bookings_total", "outcome=\"error\"", "")                             \
    SEATD_PAY_METRIC_ROWS(XX, CHARGE, "charge",                                                    \
                          "Payment gateway requests by operation and outcome")                     \
    SEATD_PAY_METRIC_ROWS(XX, LOOKUP, "lookup", "")                                                \
    SEATD_PAY_METRIC_ROWS(XX, REFUND, "refund", "")                                                \
    SEATD_PAY_METRIC_ROWS(XX, LIST, "list", "")                                                    \
    XX(RECONCILE_RUN, "seatd_reconcile_runs_total", "", "Payment reconciler passes started")       \
    XX(RECONCILE_CONFIRMED, "seatd_reconcile_bookings_total", "outcome=\"confirmed\"",             \
       "Bookings the reconciler looked at, by what it did")                                        \
    XX(RECONCILE_FAILED, "seatd_reconcile_bookings_total", "outcome=\"failed\"", "")               \
    XX(RECONCILE_REFUNDED, "seatd_reconcile_bookings_total", "outcome=\"refunded\"", "")           \
    XX(RECONCILE_DEFERRED, "seatd_reconcile_bookings_total", "outcome=\"deferred\"", "")           \
    XX(RECONCILE_PENDING, "seatd_reconcile_bookings_total", "outcome=\"pending\"", "")             \
    XX(LEDGER_CHARGES, "seatd_ledger_charges_total", "outcome=\"checked\"",                        \
       "Gateway charges the ledger walk looked at: checked (a CONFIRMED booking or nothing "       \
       "owed), "                                                                                   \
       "refunded (no booking, or one not CONFIRMED, past the grace period)")                       \
    XX(LEDGER_REFUNDED, "seatd_ledger_charges_total", "outcome=\"refunded\"", "")                  \
    XX(BOOKING_NOT_DURABLE, "seatd_bookings_not_durable_total", "step=\"begin\"",                  \
       "Bookings whose step was not on a replica in time (--redis-wait-replicas): begin (nothing " \
       "charged, 503) and confirm (answered 202 PENDING_PAYMENT, settled by reconciliation)")      \
    XX(CONFIRM_NOT_DURABLE, "seatd_bookings_not_durable_total", "step=\"confirm\"", "")            \
    XX(SEATMAP_REDIS_READ, "seatd_seatmap_redis_reads_total", "",                                  \
       "Seat-status reads that went to Redis (the rest came from the worker's cache)")             \
    XX(LAYOUT_FETCH, "seatd_layout_fetches_total", "result=\"fetched\"",                           \
       "Layout lookups that missed the worker's cache: Redis reads, and waiters on one")           \
    XX(LAYOUT_COALESCED, "seatd_layout_fetches_total", "result=\"coalesced\"", "")                 \
    XX(SEATMAP_304, "seatd_seatmap_total", "result=\"not_modified\"", "Seat map reads by result")  \
    XX(SEATMAP_200, "seatd_seatmap_total", "result=\"full\"", "")                                  \
    XX(HOLD_COMP_RELEASED, "seatd_hold_compensations_total", "outcome=\"released\"",               \
       "Holds answered 5xx, by what their compensation found")                                     \
    XX(HOLD_COMP_ABSENT, "seatd_hold_compensations_total", "outcome=\"absent\"", "")               \
    XX(HOLD_COMP_KEPT, "seatd_hold_compensations_total", "outcome=\"kept\"", "")                   \
    XX(HOLD_COMP_DROPPED, "seatd_hold_compensations_total", "outcome=\"dropped\"", "")             \
    XX(QUEUE_JOINED, "seatd_queue_joins_total", "outcome=\"placed\"",                              \
       "Waiting-room joins by outcome: a new place, or the place the user already had")            \
    XX(QUEUE_REJOINED, "seatd_queue_joins_total", "outcome=\"already_placed\"", "")                \
    XX(QUEUE_ADMITTED, "seatd_queue_admitted_total", "by=\"request\"",                             \
       "People admitted from waiting rooms: by a join or a place read this worker served, or "     \
       "by its sweeper's advances")                                                                \
    XX(QUEUE_ADMITTED_SWEEPER, "seatd_queue_admitted_total", "by=\"sweeper\"", "")

/* XX(enum name, metric family, labels, help) - gauges: the last value set. */
#define SEATD_GAUGE_MAP(XX)                                                                        \
    XX(PAYMENTS_PENDING, "seatd_payments_pending", "",                                             \
       "Bookings pending payment or refund on the shows hinted to the reconciler, as counted by "  \
       "this worker's last reconcile pass (every worker counts all of them: take the max)")

/* XX(enum name, metric family, labels, help) - histograms in seconds over
 * seatd_metrics_bounds; rows of one family adjacent, as above. */
#define SEATD_HISTOGRAM_MAP(XX)                                                                    \
    XX(REDIS_RTT, "seatd_redis_rtt_seconds", "",                                                   \
       "Redis round-trip time of answered commands (send to reply)")                               \
    XX(PAY_CHARGE, "seatd_payment_duration_seconds", "op=\"charge\"",                              \
       "Payment gateway request time by operation (timeouts included)")                            \
    XX(PAY_LOOKUP, "seatd_payment_duration_seconds", "op=\"lookup\"", "")                          \
    XX(PAY_REFUND, "seatd_payment_duration_seconds", "op=\"refund\"", "")                          \
    XX(PAY_LIST, "seatd_payment_duration_seconds", "op=\"list\"", "")

enum seatd_metric_e {
#define SEATD_METRIC_ENUM(name, family, labels, help) SEATD_METRIC_##name,
    SEATD_METRIC_MAP(SEATD_METRIC_ENUM)
#undef SEATD_METRIC_ENUM
        SEATD_METRIC__COUNT
};

enum seatd_gauge_e {
#define SEATD_GAUGE_ENUM(name, family, labels, help) SEATD_GAUGE_##name,
    SEATD_GAUGE_MAP(SEATD_GAUGE_ENUM)
#undef SEATD_GAUGE_ENUM
        SEATD_GAUGE__COUNT
};

enum seatd_hist_e {
#define SEATD_HIST_ENUM(name, family, labels, help) SEATD_HIST_##name,
    SEATD_HISTOGRAM_MAP(SEATD_HIST_ENUM)
#undef SEATD_HIST_ENUM
        SEATD_HIST__COUNT
};

/* Upper bounds (seconds) of the histogram buckets, ascending; +Inf is implicit. */
#define SEATD_METRICS_BUCKETS 16
extern const double seatd_metrics_bounds[SEATD_METRICS_BUCKETS];

/* Adds one to counter 'm' (SEATD_METRIC_*); out of range is ignored. */
void seatd_metrics_inc(int m);
/* Adds 'n' (negative: nothing) to counter 'm'; out of range is ignored. */
void seatd_metrics_add(int m, long long n);
/* The current value of counter 'm' (tests), 0 when out of range. */
unsigned long long seatd_metrics_get(int m);

/* Sets gauge 'g' (SEATD_GAUGE_*) to 'value'; out of range is ignored. */
void seatd_metrics_gauge_set(int g, long long value);
/* The current value of gauge 'g' (tests), 0 when out of range. */
long long seatd_metrics_gauge_get(int g);

/* Records one observation of 'seconds' in histogram 'h' (SEATD_HIST_*); negative values
 * count as 0, out of range 'h' is ignored. */
void seatd_metrics_observe(int h, double seconds);
/* Observations so far in histogram 'h' (tests), 0 when out of range. */
unsigned long long seatd_metrics_observations(int h);

/* The counter a hold attempt that ended with 'err' (0 or a negative SEATD_E*) counts under:
 * created, conflict, sales_closed, seat_limit, rate_limited, rejected (other 4xx) or error. */
int seatd_metrics_hold_outcome(int err);

/* The counter a booking that could not begin ('err', a negative SEATD_E*) counts under:
 * hold_expired, sales_closed, rejected (other 4xx) or error. */
int seatd_metrics_booking_outcome(int err);

/* Appends every counter, gauge and histogram of the tables above, with one HELP and TYPE
 * line per family, to 'out' (Prometheus text format 0.0.4). */
void seatd_metrics_render_tables(seatd_buf_t *out);

#endif
