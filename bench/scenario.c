/*
 * scenario.c - virtual users' wishes, counters and the report; see scenario.h.
 */
#include "scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *op_names[] = {
#define SEATD_BENCH_OP_STR(name, str) str,
    SEATD_BENCH_OP_MAP(SEATD_BENCH_OP_STR)
#undef SEATD_BENCH_OP_STR
};

const char *seatd_bench_op_name(int op)
{
    return op >= 0 && op < SEATD_BENCH_NOPS ? op_names[op] : "?";
}

uint64_t seatd_bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ================================ counters and report ================================== */

void seatd_bench_slot_merge(seatd_bench_slot_t *dst, const seatd_bench_slot_t *src)
{
    for (int op = 0; op < SEATD_BENCH_NOPS; op++) {
        seatd_hist_merge(&dst->lat[op], &src->lat[op]);
        for (int s = 0; s < SEATD_BENCH_NSTATUS; s++)
            dst->status[op][s] += src->status[op][s];
        dst->bytes[op] += src->bytes[op];
    }
    dst->wins += src->wins;
    dst->conflicts += src->conflicts;
    dst->seats_won += src->seats_won;
    dst->places_won += src->places_won;
    dst->area_wins += src->area_wins;
    dst->group_wins += src->group_wins;
    dst->group_conflicts += src->group_conflicts;
    dst->all_group_wins += src->all_group_wins;
    dst->bookings += src->bookings;
    dst->releases += src->releases;
    dst->conn_errors += src->conn_errors;
    dst->all_wins += src->all_wins;
    dst->all_bookings += src->all_bookings;
    if (src->elapsed_s > dst->elapsed_s)
        dst->elapsed_s = src->elapsed_s;
}

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

void seatd_bench_report(FILE *f, const seatd_bench_slot_t *t, double elapsed_s)
{
    if (elapsed_s <= 0)
        elapsed_s = 1e-9;
    uint64_t errors = t->conn_errors;
    for (int op = 0; op < SEATD_BENCH_NOPS; op++) {
        const seatd_hist_t *h = &t->lat[op];
        if (h->count == 0)
            continue;
        fprintf(f,
                "op=%s count=%llu per_s=%.0f mean_ms=%.3f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f "
                "p999_ms=%.3f max_ms=%.3f bytes_per_resp=%.0f\n",
                op_names[op], (unsigned long long)h->count, (double)h->count / elapsed_s,
                ms(h->sum_us) / (double)h->count, ms(seatd_hist_quantile(h, 0.50)),
                ms(seatd_hist_quantile(h, 0.90)), ms(seatd_hist_quantile(h, 0.99)),
                ms(seatd_hist_quantile(h, 0.999)), ms(h->max_us),
                (double)t->bytes[op] / (double)h->count);
        for (int s = 0; s < SEATD_BENCH_NSTATUS; s++) {
            if (t->status[op][s] == 0)
                continue;
            fprintf(f, "status op=%s code=%d count=%llu\n", op_names[op], s,
                    (unsigned long long)t->status[op][s]);
            /* Expected answers: hold 201/409, book 201, release 200/204, seat map 200/304. */
            int ok = ((op == SEATD_BENCH_OP_HOLD || op == SEATD_BENCH_OP_GHOLD) &&
                      (s == 201 || s == 409)) ||
                     (op == SEATD_BENCH_OP_BOOK && (s == 200 || s == 201)) ||
                     (op == SEATD_BENCH_OP_RELEASE && (s == 200 || s == 204)) ||
                     (op == SEATD_BENCH_OP_SEATMAP && (s == 200 || s == 304));
            if (!ok)
                errors += t->status[op][s];
        }
    }
    uint64_t attempts = t->wins + t->conflicts;
    fprintf(f,
            "holds attempts_per_s=%.0f wins_per_s=%.0f conflict_ratio=%.3f bookings_per_s=%.1f "
            "releases_per_s=%.1f errors=%llu elapsed_s=%.2f places_per_s=%.0f "
            "group_attempts_per_s=%.0f group_wins_per_s=%.0f\n",
            (double)attempts / elapsed_s, (double)t->wins / elapsed_s,
            attempts ? (double)t->conflicts / (double)attempts : 0.0,
            (double)t->bookings / elapsed_s, (double)t->releases / elapsed_s,
            (unsigned long long)errors, elapsed_s, (double)t->places_won / elapsed_s,
            (double)(t->group_wins + t->group_conflicts) / elapsed_s,
            (double)t->group_wins / elapsed_s);
    fprintf(f,
            "totals wins=%llu bookings=%llu measured_wins=%llu measured_bookings=%llu "
            "errors=%llu area_wins=%llu places_won=%llu group_wins=%llu "
            "measured_group_wins=%llu\n",
            (unsigned long long)t->all_wins, (unsigned long long)t->all_bookings,
            (unsigned long long)t->wins, (unsigned long long)t->bookings,
            (unsigned long long)errors, (unsigned long long)t->area_wins,
            (unsigned long long)t->places_won, (unsigned long long)t->all_group_wins,
            (unsigned long long)t->group_wins);
}

/* ====================================== answers ========================================= */

/* Copies the string value of JSON member 'name' of 'body' into 'out'; 0 or -1. A scan, not
 * a parser: enough for the flat answers of the hold and booking routes. */
int seatd_bench_json_str(const char *body, const char *name, char *out, size_t cap)
{
    char pat[40];
    snprintf(pat, sizeof pat, "\"%s\"", name);
    const char *q = strstr(body, pat);
    if (!q)
        return -1;
    q += strlen(pat);
    while (*q == ' ' || *q == ':')
        q++;
    if (*q++ != '"')
        return -1;
    size_t n = 0;
    while (*q && *q != '"' && n + 1 < cap)
        out[n++] = *q++;
    out[n] = '\0';
    return *q == '"' ? 0 : -1;
}

/* ==================================== randomness ======================================= */

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void seatd_bench_rng_seed(seatd_bench_rng_t *r, uint64_t seed)
{
    /* splitmix64 spreads one seed over the four words. */
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r->s[i] = z ^ (z >> 31);
    }
}

uint64_t seatd_bench_rng_next(seatd_bench_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double seatd_bench_rng_unit(seatd_bench_rng_t *r)
{
    return (double)(seatd_bench_rng_next(r) >> 11) * 0x1.0p-53;
}

int64_t seatd_bench_rng_range(seatd_bench_rng_t *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(seatd_bench_rng_unit(r) * (double)(hi - lo + 1));
}

int64_t seatd_bench_rng_exponential(seatd_bench_rng_t *r, int64_t lo, int64_t hi, double param)
{
    /* pgbench getExponentialRand(): inverse transform of an exponential cut at 'hi'. */
    double cut = exp(-param);
    double uniform = 1.0 - seatd_bench_rng_unit(r); /* (0, 1] */
    double rand = -log(cut + (1.0 - cut) * uniform) / param;
    return lo + (int64_t)((double)(hi - lo + 1) * rand);
}

int64_t seatd_bench_rng_gaussian(seatd_bench_rng_t *r, int64_t lo, int64_t hi, double param)
{
    /* pgbench getGaussianRand(): Box-Muller, rejecting draws beyond +-param stddevs. */
    double stdev;
    do {
        double rand1 = 1.0 - seatd_bench_rng_unit(r);
        double rand2 = 1.0 - seatd_bench_rng_unit(r);
        stdev = sqrt(-2.0 * log(rand1)) * sin(2.0 * M_PI * rand2);
    } while (stdev < -param || stdev >= param);
    double rand = (stdev + param) / (param * 2.0);
    return lo + (int64_t)((double)(hi - lo + 1) * rand);
}

/* ======================================= seats ========================================= */

void seatd_bench_row_label(int row, char *out)
{
    if (row < 26) {
        out[0] = (char)('A' + row);
        out[1] = '\0';
    } else {
        out[0] = (char)('A' + row / 26 - 1);
        out[1] = (char)('A' + row % 26);
        out[2] = '\0';
    }
}

void seatd_bench_seat_id(int i, char *out)
{
    char row[4];
    seatd_bench_row_label(i / SEATD_BENCH_PER_ROW, row);
    snprintf(out, 8, "%s%d", row, i % SEATD_BENCH_PER_ROW + 1);
}

int seatd_bench_pick(seatd_bench_rng_t *r, int *idx)
{
    int64_t p = seatd_bench_rng_range(r, 1, 100);
    int n = p <= 40 ? 1 : p <= 80 ? 2 : p <= 90 ? 3 : 4;
    int64_t row = seatd_bench_rng_exponential(r, 0, SEATD_BENCH_ROWS - 1, 4.0);
    int64_t col = seatd_bench_rng_gaussian(r, 0, SEATD_BENCH_PER_ROW - n, 2.5);
    for (int k = 0; k < n; k++)
        idx[k] = (int)(row * SEATD_BENCH_PER_ROW + col + k);
    return n;
}

char *seatd_bench_show_json(const char *title, int hold_ttl_s, const char *extra)
{
    size_t more = extra && extra[0] == '{' && extra[1] != '}' ? strlen(extra) : 0;
    size_t cap = 256 + more + (size_t)SEATD_BENCH_SEATS * 96;
    char *out = malloc(cap);
    if (!out)
        abort();
    size_t len = (size_t)snprintf(out, cap,
                                  "{\"title\":\"%s\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                                  "\"holdTtlSeconds\":%d,"
                                  "\"priceTiers\":{\"standard\":1200,\"premium\":1800},"
                                  "%.*s%s\"seats\":[",
                                  title, hold_ttl_s, more ? (int)(more - 2) : 0,
                                  more ? extra + 1 : "", more ? "," : "");
    for (int i = 0; i < SEATD_BENCH_SEATS; i++) {
        char id[8], row[4];
        int rown = i / SEATD_BENCH_PER_ROW, num = i % SEATD_BENCH_PER_ROW + 1;
        seatd_bench_seat_id(i, id);
        seatd_bench_row_label(rown, row);
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"id\":\"%s\",\"row\":\"%s\",\"number\":%d,\"tier\":\"%s\","
                                "\"x\":%d,\"y\":%d}",
                                i ? "," : "", id, row, num, rown < 10 ? "premium" : "standard", num,
                                rown + 1);
    }
    snprintf(out + len, cap - len, "]}");
    return out;
}
