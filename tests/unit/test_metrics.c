/* Unit tests for metrics.c: the counter, gauge and histogram tables and their text. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/buf.h"
#include "base/errors.h"
#include "base/metrics.h"

/* The rendered tables, owned by the caller (seatd_buf_free). */
static seatd_buf_t render(void)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_metrics_render_tables(&b);
    seatd_buf_puts(&b, ""); /* never NULL data */
    return b;
}

Test(metrics, counts_and_renders_counters_by_family)
{
    seatd_metrics_inc(SEATD_METRIC_HOLD_CREATED);
    seatd_metrics_inc(SEATD_METRIC_HOLD_CREATED);
    seatd_metrics_inc(SEATD_METRIC_HOLD_CONFLICT);
    seatd_metrics_inc(SEATD_METRIC__COUNT); /* out of range: ignored */
    seatd_metrics_inc(-1);
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_HOLD_CREATED), 2);
    seatd_buf_t b = render();
    cr_assert_not_null(strstr(b.data, "seatd_holds_total{outcome=\"created\"} 2\n"));
    cr_assert_not_null(strstr(b.data, "seatd_holds_total{outcome=\"conflict\"} 1\n"));
    cr_assert_not_null(strstr(b.data, "seatd_holds_total{outcome=\"sales_closed\"} 0\n"));
    cr_assert_not_null(strstr(b.data, "seatd_reconcile_runs_total 0\n"));
    /* Each family has exactly one TYPE line, the first row's help. */
    const char *first = strstr(b.data, "# TYPE seatd_holds_total counter");
    cr_assert_not_null(first);
    cr_assert_null(strstr(first + 1, "# TYPE seatd_holds_total counter"));
    cr_assert_not_null(strstr(b.data, "# HELP seatd_holds_total Hold attempts by outcome\n"));
    cr_assert_not_null(strstr(b.data,
                              "# TYPE seatd_payments_total counter\n"
                              "seatd_payments_total{op=\"charge\",outcome=\"approved\"} 0\n"));
    seatd_buf_free(&b);
}

Test(metrics, gauges_keep_the_last_value)
{
    seatd_metrics_gauge_set(SEATD_GAUGE_PAYMENTS_PENDING, 7);
    seatd_metrics_gauge_set(SEATD_GAUGE_PAYMENTS_PENDING, 3);
    cr_assert_eq(seatd_metrics_gauge_get(SEATD_GAUGE_PAYMENTS_PENDING), 3);
    seatd_buf_t b = render();
    cr_assert_not_null(strstr(b.data, "# TYPE seatd_payments_pending gauge\n"
                                      "seatd_payments_pending 3\n"));
    seatd_buf_free(&b);
}

Test(metrics, histograms_are_cumulative_with_sum_and_count)
{
    seatd_metrics_observe(SEATD_HIST_REDIS_RTT, 0.0002); /* <= 0.00025 */
    seatd_metrics_observe(SEATD_HIST_REDIS_RTT, 0.003);  /* <= 0.005 */
    seatd_metrics_observe(SEATD_HIST_REDIS_RTT, 60);     /* only +Inf */
    seatd_metrics_observe(SEATD_HIST_REDIS_RTT, -1);     /* counts as 0 */
    seatd_metrics_observe(SEATD_HIST_PAY_CHARGE, 0.05);
    seatd_metrics_observe(SEATD_HIST__COUNT, 1); /* ignored */
    cr_assert_eq(seatd_metrics_observations(SEATD_HIST_REDIS_RTT), 4);
    seatd_buf_t b = render();
    cr_assert_not_null(strstr(b.data, "# TYPE seatd_redis_rtt_seconds histogram\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_bucket{le=\"0.0001\"} 1\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_bucket{le=\"0.00025\"} 2\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_bucket{le=\"0.005\"} 3\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_bucket{le=\"10\"} 3\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_bucket{le=\"+Inf\"} 4\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_sum 60.003200\n"));
    cr_assert_not_null(strstr(b.data, "seatd_redis_rtt_seconds_count 4\n"));
    /* A labelled family: the bucket label joins the row's labels; one TYPE line. */
    cr_assert_not_null(
        strstr(b.data, "seatd_payment_duration_seconds_bucket{op=\"charge\",le=\"0.05\"} 1\n"));
    cr_assert_not_null(strstr(b.data, "seatd_payment_duration_seconds_count{op=\"charge\"} 1\n"));
    cr_assert_not_null(strstr(b.data, "seatd_payment_duration_seconds_count{op=\"refund\"} 0\n"));
    const char *first = strstr(b.data, "# TYPE seatd_payment_duration_seconds histogram");
    cr_assert_not_null(first);
    cr_assert_null(strstr(first + 1, "# TYPE seatd_payment_duration_seconds"));
    seatd_buf_free(&b);
}

Test(metrics, maps_hold_and_booking_errors_to_outcomes)
{
    static const struct {
        int err, hold, booking;
    } cases[] = {
        {0, SEATD_METRIC_HOLD_CREATED, SEATD_METRIC_BOOKING_ERROR},
        {SEATD_ECONFLICT, SEATD_METRIC_HOLD_CONFLICT, SEATD_METRIC_BOOKING_REJECTED},
        {SEATD_ESALESCLOSED, SEATD_METRIC_HOLD_SALES_CLOSED, SEATD_METRIC_BOOKING_SALES_CLOSED},
        {SEATD_ELIMIT, SEATD_METRIC_HOLD_LIMIT, SEATD_METRIC_BOOKING_REJECTED},
        {SEATD_ERATELIMIT, SEATD_METRIC_HOLD_RATE_LIMITED, SEATD_METRIC_BOOKING_REJECTED},
        {SEATD_EQUEUEREQUIRED, SEATD_METRIC_HOLD_QUEUE_REQUIRED, SEATD_METRIC_BOOKING_REJECTED},
        {SEATD_EEXPIRED, SEATD_METRIC_HOLD_REJECTED, SEATD_METRIC_BOOKING_EXPIRED},
        {SEATD_EUNKNOWNSEAT, SEATD_METRIC_HOLD_REJECTED, SEATD_METRIC_BOOKING_REJECTED},
        {SEATD_ETIMEOUT, SEATD_METRIC_HOLD_ERROR, SEATD_METRIC_BOOKING_ERROR},
        {SEATD_EUNAVAILABLE, SEATD_METRIC_HOLD_ERROR, SEATD_METRIC_BOOKING_ERROR},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(seatd_metrics_hold_outcome(cases[i].err), cases[i].hold, "hold err %d",
                     cases[i].err);
        if (cases[i].err)
            cr_assert_eq(seatd_metrics_booking_outcome(cases[i].err), cases[i].booking,
                         "booking err %d", cases[i].err);
    }
}
