/*
 * metrics.h - process counters and the Prometheus text rendering of /metrics.
 *
 * Counters are declared once in SEATD_METRIC_MAP (name, labels, help) and bumped with
 * seatd_metrics_inc(SEATD_METRIC_<NAME>). Per-route request counts and latency histograms
 * live in the route table's rows (router.h) and Redis figures in the rds client's stats;
 * seatd_metrics_render() walks all three. Single-threaded: plain counters, one per process
 * (Prometheus sums the workers).
 */
#ifndef SEATD_METRICS_H
#define SEATD_METRICS_H

#include <stddef.h>

#include "buf.h"

struct seatd_app_s;

/* XX(enum name, metric family, labels, help) - rows of one family must be adjacent. */
#define SEATD_METRIC_MAP(XX)                                                                       \
    XX(HOLD_CREATED, "seatd_holds_total", "outcome=\"created\"", "Hold attempts by outcome")       \
    XX(HOLD_REPLAYED, "seatd_holds_total", "outcome=\"replayed\"", "")                             \
    XX(HOLD_CONFLICT, "seatd_holds_total", "outcome=\"conflict\"", "")                             \
    XX(HOLD_REJECTED, "seatd_holds_total", "outcome=\"rejected\"", "")                             \
    XX(HOLD_ERROR, "seatd_holds_total", "outcome=\"error\"", "")                                   \
    XX(HOLD_RELEASED, "seatd_holds_released_total", "", "Holds released by their owner")           \
    XX(BOOKING_CONFIRMED, "seatd_bookings_total", "outcome=\"confirmed\"",                         \
       "Booking attempts by outcome")                                                              \
    XX(BOOKING_DECLINED, "seatd_bookings_total", "outcome=\"declined\"", "")                       \
    XX(BOOKING_PENDING, "seatd_bookings_total", "outcome=\"pending\"", "")                         \
    XX(BOOKING_LOST, "seatd_bookings_total", "outcome=\"seats_lost\"", "")                         \
    XX(BOOKING_ERROR, "seatd_bookings_total", "outcome=\"error\"", "")                             \
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
    XX(HOLD_COMP_DROPPED, "seatd_hold_compensations_total", "outcome=\"dropped\"", "")

enum seatd_metric_e {
#define SEATD_METRIC_ENUM(name, family, labels, help) SEATD_METRIC_##name,
    SEATD_METRIC_MAP(SEATD_METRIC_ENUM)
#undef SEATD_METRIC_ENUM
        SEATD_METRIC__COUNT
};

/* Adds one to counter 'm'. */
void seatd_metrics_inc(int m);
/* The current value of counter 'm' (tests). */
unsigned long long seatd_metrics_get(int m);

/* Appends the whole /metrics document for 'app' (borrowed) to 'out'. */
void seatd_metrics_render(const struct seatd_app_s *app, seatd_buf_t *out);

#endif
