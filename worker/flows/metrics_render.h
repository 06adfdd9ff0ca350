/*
 * metrics_render.h - the whole /metrics document of a worker, in Prometheus text format.
 *
 * It sits above every module it reads: the counters, gauges and histograms of the metrics
 * leaf (metrics.h), the per-route request counts and latency histograms kept in the route
 * table's rows (router.h), and the figures the Redis client, the live seat map, the sweeper,
 * the payment client and the HTTP server keep about themselves (their *_get_stats()). Those
 * modules never include this one. Single-threaded; nothing to create or free.
 */
#ifndef SEATD_METRICS_RENDER_H
#define SEATD_METRICS_RENDER_H

#include "base/buf.h"

struct seatd_app_s;

/* Appends the whole /metrics document for 'app' (borrowed; any of its modules may be NULL,
 * their figures then read 0) to 'out'. */
void seatd_metrics_render(const struct seatd_app_s *app, seatd_buf_t *out);

#endif
