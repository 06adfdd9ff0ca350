/*
 * hist.h - latency histograms with log-linear buckets (HDR-style), for the benchmarks.
 *
 * Values are microseconds. Below 64 us every value has its own bucket; above, each power of
 * two is split into 32 buckets, so a reported percentile is within ~3% of the true value.
 * A histogram is a plain struct of counters: it can live in shared memory written by one
 * forked load process and read by the parent after waitpid(), and histograms merge by adding.
 *
 * Pure: no I/O, no allocation. Not thread-safe (one writer).
 */
#ifndef SEATD_BENCH_HIST_H
#define SEATD_BENCH_HIST_H

#include <stdint.h>

#define SEATD_HIST_SUB 32     /* buckets per power of two */
#define SEATD_HIST_MAX_MSB 36 /* ~19 hours in us: the cap */
#define SEATD_HIST_BUCKETS (64 + (SEATD_HIST_MAX_MSB - 5) * SEATD_HIST_SUB)

typedef struct seatd_hist_s {
    uint64_t count;                 /* values recorded */
    uint64_t sum_us;                /* their sum, for the mean */
    uint64_t max_us;                /* the largest value recorded */
    uint64_t b[SEATD_HIST_BUCKETS]; /* bucket counters */
} seatd_hist_t;

/* Records one value of 'us' microseconds (capped at the largest bucket). */
void seatd_hist_add(seatd_hist_t *h, uint64_t us);

/* Adds every counter of 'src' (borrowed) to 'dst'. */
void seatd_hist_merge(seatd_hist_t *dst, const seatd_hist_t *src);

/* The value at quantile 'q' (0..1) in microseconds: the upper edge of the bucket holding it,
 * capped at max_us. 0 for an empty histogram. */
uint64_t seatd_hist_quantile(const seatd_hist_t *h, double q);

/* Bucket index of 'us', and the smallest value of bucket 'i' (exposed for the self-check). */
int seatd_hist_index(uint64_t us);
uint64_t seatd_hist_bucket_low(int i);

#endif
