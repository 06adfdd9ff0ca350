/* metrics.c - the counter, gauge and histogram tables; see metrics.h. */
#include "base/metrics.h"

#include <stdio.h>
#include <string.h>

#include "base/errors.h"

typedef struct {
    const char *family; /* metric family name */
    const char *labels; /* 'k="v",…' or "" */
    const char *help;   /* the family's help text (first row of a family) */
} metric_row_t;

typedef struct {
    unsigned long long count;                          /* observations (the +Inf bucket) */
    double sum;                                        /* of the observed seconds */
    unsigned long long buckets[SEATD_METRICS_BUCKETS]; /* cumulative: seconds <= bound[i] */
} hist_t;

#define SEATD_METRIC_ROW(name, family, labels, help) {family, labels, help},
static const metric_row_t counter_rows[] = {SEATD_METRIC_MAP(SEATD_METRIC_ROW)};
static const metric_row_t gauge_rows[] = {SEATD_GAUGE_MAP(SEATD_METRIC_ROW)};
static const metric_row_t hist_rows[] = {SEATD_HISTOGRAM_MAP(SEATD_METRIC_ROW)};
#undef SEATD_METRIC_ROW

/* From 100 us (a Redis round trip on loopback) to 10 s (a payment timeout). */
const double seatd_metrics_bounds[SEATD_METRICS_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0,
};

static unsigned long long counters[SEATD_METRIC__COUNT];
static long long gauges[SEATD_GAUGE__COUNT];
static hist_t hists[SEATD_HIST__COUNT];

void seatd_metrics_inc(int m)
{
    if (m >= 0 && m < SEATD_METRIC__COUNT)
        counters[m]++;
}

void seatd_metrics_add(int m, long long n)
{
    if (m >= 0 && m < SEATD_METRIC__COUNT && n > 0)
        counters[m] += (unsigned long long)n;
}

unsigned long long seatd_metrics_get(int m)
{
    return (m >= 0 && m < SEATD_METRIC__COUNT) ? counters[m] : 0;
}

void seatd_metrics_gauge_set(int g, long long value)
{
    if (g >= 0 && g < SEATD_GAUGE__COUNT)
        gauges[g] = value;
}

long long seatd_metrics_gauge_get(int g)
{
    return (g >= 0 && g < SEATD_GAUGE__COUNT) ? gauges[g] : 0;
}

void seatd_metrics_observe(int h, double seconds)
{
    if (h < 0 || h >= SEATD_HIST__COUNT)
        return;
    if (!(seconds > 0)) /* negative, or NaN */
        seconds = 0;
    hist_t *x = &hists[h];
    for (int i = 0; i < SEATD_METRICS_BUCKETS; i++)
        if (seconds <= seatd_metrics_bounds[i])
            x->buckets[i]++;
    x->sum += seconds;
    x->count++;
}

unsigned long long seatd_metrics_observations(int h)
{
    return (h >= 0 && h < SEATD_HIST__COUNT) ? hists[h].count : 0;
}

int seatd_metrics_hold_outcome(int err)
{
    switch (err) {
    case 0:
        return SEATD_METRIC_HOLD_CREATED;
    case SEATD_ECONFLICT:
    case SEATD_ENOBLOCK:    /* best available: nothing free fits */
    case SEATD_EORPHANSEAT: /* the seats are free but would strand one */
        return SEATD_METRIC_HOLD_CONFLICT;
    case SEATD_ESALESCLOSED:
        return SEATD_METRIC_HOLD_SALES_CLOSED;
    case SEATD_ELIMIT:
        return SEATD_METRIC_HOLD_LIMIT;
    case SEATD_ERATELIMIT:
        return SEATD_METRIC_HOLD_RATE_LIMITED;
    case SEATD_EQUEUEREQUIRED:
        return SEATD_METRIC_HOLD_QUEUE_REQUIRED;
    default:
        return seatd_err_http_status(err) < 500 ? SEATD_METRIC_HOLD_REJECTED
                                                : SEATD_METRIC_HOLD_ERROR;
    }
}

int seatd_metrics_booking_outcome(int err)
{
    switch (err) {
    case SEATD_EEXPIRED:
        return SEATD_METRIC_BOOKING_EXPIRED;
    case SEATD_ESALESCLOSED:
        return SEATD_METRIC_BOOKING_SALES_CLOSED;
    default:
        return seatd_err_http_status(err) < 500 ? SEATD_METRIC_BOOKING_REJECTED
                                                : SEATD_METRIC_BOOKING_ERROR;
    }
}

/* "# HELP" and "# TYPE" when row 'i' of 'rows' starts a new family. */
static void family_header(seatd_buf_t *out, const metric_row_t *rows, int i, const char *type)
{
    if (i > 0 && strcmp(rows[i].family, rows[i - 1].family) == 0)
        return;
    seatd_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", rows[i].family, rows[i].help,
                     rows[i].family, type);
}

/* One sample line: family[suffix]{labels[,extra]} value. */
static void sample(seatd_buf_t *out, const metric_row_t *row, const char *suffix, const char *extra,
                   const char *value)
{
    const char *sep = row->labels[0] && extra[0] ? "," : "";
    if (row->labels[0] || extra[0])
        seatd_buf_printf(out, "%s%s{%s%s%s} %s\n", row->family, suffix, row->labels, sep, extra,
                         value);
    else
        seatd_buf_printf(out, "%s%s %s\n", row->family, suffix, value);
}

void seatd_metrics_render_tables(seatd_buf_t *out)
{
    char v[64], le[48];
    for (int i = 0; i < SEATD_METRIC__COUNT; i++) {
        family_header(out, counter_rows, i, "counter");
        snprintf(v, sizeof(v), "%llu", counters[i]);
        sample(out, &counter_rows[i], "", "", v);
    }
    for (int i = 0; i < SEATD_GAUGE__COUNT; i++) {
        family_header(out, gauge_rows, i, "gauge");
        snprintf(v, sizeof(v), "%lld", gauges[i]);
        sample(out, &gauge_rows[i], "", "", v);
    }
    for (int i = 0; i < SEATD_HIST__COUNT; i++) {
        const hist_t *x = &hists[i];
        family_header(out, hist_rows, i, "histogram");
        for (int b = 0; b < SEATD_METRICS_BUCKETS; b++) {
            snprintf(le, sizeof(le), "le=\"%g\"", seatd_metrics_bounds[b]);
            snprintf(v, sizeof(v), "%llu", x->buckets[b]);
            sample(out, &hist_rows[i], "_bucket", le, v);
        }
        snprintf(v, sizeof(v), "%llu", x->count);
        sample(out, &hist_rows[i], "_bucket", "le=\"+Inf\"", v);
        snprintf(v, sizeof(v), "%.6f", x->sum);
        sample(out, &hist_rows[i], "_sum", "", v);
        snprintf(v, sizeof(v), "%llu", x->count);
        sample(out, &hist_rows[i], "_count", "", v);
    }
}
