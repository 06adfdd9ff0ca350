/*
 * hist.c - log-linear latency buckets; see hist.h.
 */
#include "hist.h"

int seatd_hist_index(uint64_t us)
{
    if (us < 64)
        return (int)us;
    int msb = 63 - __builtin_clzll(us);
    if (msb > SEATD_HIST_MAX_MSB)
        return SEATD_HIST_BUCKETS - 1;
    int shift = msb - 5; /* us >> shift is in [32, 64) */
    return 64 + (msb - 6) * SEATD_HIST_SUB + (int)((us >> shift) - 32);
}

uint64_t seatd_hist_bucket_low(int i)
{
    if (i < 64)
        return (uint64_t)i;
    int msb = 6 + (i - 64) / SEATD_HIST_SUB;
    uint64_t m = 32 + (uint64_t)((i - 64) % SEATD_HIST_SUB);
    return m << (msb - 5);
}

void seatd_hist_add(seatd_hist_t *h, uint64_t us)
{
    h->b[seatd_hist_index(us)]++;
    h->count++;
    h->sum_us += us;
    if (us > h->max_us)
        h->max_us = us;
}

void seatd_hist_merge(seatd_hist_t *dst, const seatd_hist_t *src)
{
    for (int i = 0; i < SEATD_HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum_us += src->sum_us;
    if (src->max_us > dst->max_us)
        dst->max_us = src->max_us;
}

uint64_t seatd_hist_quantile(const seatd_hist_t *h, double q)
{
    if (h->count == 0)
        return 0;
    /* The rank of the value we want, 1-based: ceil(q * count), at least 1. */
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < SEATD_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t hi = i + 1 < SEATD_HIST_BUCKETS ? seatd_hist_bucket_low(i + 1) - 1 : h->max_us;
            return hi < h->max_us ? hi : h->max_us;
        }
    }
    return h->max_us;
}
