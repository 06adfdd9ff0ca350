/*
 * test_payment_reconcile.c - the reconciler (worker/flows/reconcile.c) against the real fake
 * gateway (payment_harness.h) and a real Redis (issue 9): the charge horizon and late charges.
 *
 * Each test starts its own gateway in .init and stops it in .fini, and flushes Redis first.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/metrics.h"
#include "clients/payment.h"
#include "flows/reconcile.h"
#include "payment_harness.h"
#include "store_harness.h"
static void reconcile_init(void)
{
    seatd_test_redis_flushall();
    gw_prepare("/tmp/seatd-rec-XXXXXX");
    snprintf(gw_url, sizeof(gw_url), "http://127.0.0.1:%d", gw_port);
    gw_spawn(SLOW_MS);
}

TestSuite(payment_reconcile, .init = reconcile_init, .fini = suite_fini, .timeout = 30);

typedef struct {
    th_t t;
    seatd_payment_t *pay;
    seatd_reconcile_t *rc;
} rec_t;

/* A show "1", alice's hold on A1 and a booking begun on it (2400, never charged yet). */
static void rec_open(rec_t *x, int64_t horizon_ms, char *bid)
{
    static const char *const seats[] = {"A1", "A2", NULL};
    th_res_t r = {0};
    cr_assert_eq(th_open(&x->t), 0);
    cr_assert_eq(th_create_show(&x->t, "1", seats, 600000), 0);
    const char *mine[] = {"A1", NULL};
    cr_assert_eq(th_hold(&x->t, &r, "1", "alice", mine, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&x->t, &r, "1", hold_id, "alice", 600000), 0);
    snprintf(bid, SEATD_ID_MAX, "%s", th_get(&r, "bookingId"));
    th_res_clear(&r);
    x->pay = seatd_payment_new(x->t.loop, gw_url, 3000);
    cr_assert_not_null(x->pay);
    seatd_reconcile_opts_t o = {
        .interval_ms = 20, .min_age_ms = 0, .rescan_every = 1, .horizon_ms = horizon_ms};
    x->rc = seatd_reconcile_new(x->t.loop, x->t.rds, x->t.store, x->pay, &o);
    cr_assert_not_null(x->rc);
}

static void rec_close(rec_t *x)
{
    seatd_reconcile_close(x->rc);
    seatd_payment_close(x->pay);
    cr_assert_eq(th_close(&x->t), 0, "nothing leaked on the loop");
}

/* Runs the loop until the reconciler's 'counter' (settled or deferred) reaches 'want'. */
typedef struct {
    rec_t *x;
    unsigned long (*counter)(const seatd_reconcile_t *);
    unsigned long want;
} rec_wait_t;

static int rec_reached(void *data)
{
    rec_wait_t *w = data;
    return w->counter(w->x->rc) >= w->want;
}

static void rec_run_until(rec_t *x, unsigned long (*counter)(const seatd_reconcile_t *),
                          unsigned long want, int timeout_ms)
{
    rec_wait_t w = {.x = x, .counter = counter, .want = want};
    int rc = seatd_test_loop_poll_until(x->t.loop, rec_reached, &w, 5, timeout_ms);
    cr_assert_eq(rc, 0, "the reconciler did not get there (%lu of %lu)", counter(x->rc), want);
}

/* rec_run_until() conditions on the pending-payments gauge (metrics.h). */
static unsigned long pending_gauge(const seatd_reconcile_t *rc)
{
    return (unsigned long)seatd_metrics_gauge_get(SEATD_GAUGE_PAYMENTS_PENDING);
}

static unsigned long settled_and_none_pending(const seatd_reconcile_t *rc)
{
    return seatd_reconcile_settled(rc) >= 1 &&
           seatd_metrics_gauge_get(SEATD_GAUGE_PAYMENTS_PENDING) == 0;
}

static void rec_booking(rec_t *x, th_res_t *r, const char *bid)
{
    th_res_clear(r);
    cr_assert_eq(
        th_finish(&x->t, r, seatd_store_booking_get(x->t.store, bid, NULL, th_on_result, r)), 0);
}

typedef struct {
    int calls;
    seatd_payment_result_t res;
} rec_got_t;

static void on_rec_pay(const seatd_payment_result_t *res, void *data)
{
    rec_got_t *g = data;
    g->calls++;
    g->res = *res;
}

Test(
    payment_reconcile,
    a_booking_the_gateway_does_not_know_stays_pending_until_the_horizon_and_a_late_charge_confirms_it)
{
    rec_t x;
    char bid[SEATD_ID_MAX];
    th_res_t r = {0};
    rec_open(&x, 600000, bid);
    seatd_reconcile_hint(x.t.rds, "1");

    /* Looked up twice, "not found" both times: before issue 9 the first answer failed it. */
    rec_run_until(&x, seatd_reconcile_deferred, 2, 10000);
    rec_booking(&x, &r, bid);
    cr_assert_str_eq(th_get(&r, "status"), "PENDING_PAYMENT",
                     "a charge can still land: the booking is not failed yet");
    /* A finished pass counts the one booking pending on the hinted show. */
    rec_run_until(&x, pending_gauge, 1, 10000);
    cr_assert_eq(seatd_metrics_gauge_get(SEATD_GAUGE_PAYMENTS_PENDING), 1);
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_RECONCILE_DEFERRED),
                 seatd_reconcile_deferred(x.rc));
    cr_assert_geq(seatd_metrics_get(SEATD_METRIC_RECONCILE_RUN), 1);
    /* Each deferral followed a lookup that found nothing (one may be on its way to one). */
    cr_assert_geq(seatd_metrics_get(SEATD_METRIC_PAY_LOOKUP_NOT_FOUND),
                  seatd_reconcile_deferred(x.rc));

    /* The worker's charge lands late (it was still on its way): the next look confirms. */
    rec_got_t g = {0};
    cr_assert_eq(seatd_payment_charge(x.pay, bid, 2400, "EUR", "tok_ok", "late", on_rec_pay, &g),
                 0);
    cr_assert_eq(seatd_test_loop_run_until(x.t.loop, &g.calls, 10000), 0);
    cr_assert_eq(g.res.outcome, SEATD_PAY_APPROVED);
    rec_run_until(&x, seatd_reconcile_settled, 1, 10000);
    rec_booking(&x, &r, bid);
    cr_assert_str_eq(th_get(&r, "status"), "CONFIRMED");
    cr_assert_eq(stat_of(bid, "charges"), 1);
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_RECONCILE_CONFIRMED),
                 seatd_reconcile_settled(x.rc));
    /* Settled: a later pass finds nothing pending. */
    rec_run_until(&x, settled_and_none_pending, 1, 10000);
    th_res_clear(&r);
    rec_close(&x);
}

Test(payment_reconcile, past_the_horizon_a_booking_never_charged_fails)
{
    rec_t x;
    char bid[SEATD_ID_MAX];
    th_res_t r = {0};
    rec_open(&x, 300, bid);
    seatd_reconcile_hint(x.t.rds, "1");
    rec_run_until(&x, seatd_reconcile_settled, 1, 10000);
    rec_booking(&x, &r, bid);
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_str_eq(th_get(&r, "reason"), "payment_not_completed");
    cr_assert_geq(th_get_ll(&r, "failedAt") - th_get_ll(&r, "createdAt"), 300,
                  "failed only once the horizon had passed (Redis clock)");
    th_res_clear(&r);
    rec_close(&x);
}

Test(payment_reconcile, a_charge_recorded_late_on_a_failed_booking_is_refunded_once)
{
    rec_t x;
    char bid[SEATD_ID_MAX];
    th_res_t r = {0};
    rec_open(&x, 600000, bid);
    /* The booking failed while its charge was on the way; the charge then landed and its
     * worker wrote the refund down (seatd_late_charge) but died before asking for it. */
    rec_got_t g = {0};
    cr_assert_eq(seatd_payment_charge(x.pay, bid, 2400, "EUR", "tok_ok", "late", on_rec_pay, &g),
                 0);
    cr_assert_eq(seatd_test_loop_run_until(x.t.loop, &g.calls, 10000), 0);
    cr_assert_eq(g.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(th_book_fail(&x.t, &r, bid), 0);
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&x.t, &r,
                  seatd_store_late_charge(x.t.store, bid, g.res.charge_id, th_on_result, &r)),
        0);
    cr_assert_str_eq(th_get(&r, "refundStatus"), "pending");
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&x.t, &r,
                  seatd_store_late_charge(x.t.store, bid, g.res.charge_id, th_on_result, &r)),
        0, "idempotent");

    seatd_reconcile_hint(x.t.rds, "1");
    rec_run_until(&x, seatd_reconcile_settled, 1, 10000);
    rec_booking(&x, &r, bid);
    cr_assert_str_eq(th_get(&r, "status"), "FAILED");
    cr_assert_str_eq(th_get(&r, "refundStatus"), "succeeded");
    cr_assert_eq(th_get_ll(&r, "refund"), 2400);
    th_res_clear(&r);
    cr_assert_eq(stat_of(bid, "refunds"), 1, "the charge was refunded once");
    cr_assert_eq(stat_of(bid, "refundedAmount"), 2400, "in full");
    /* Nothing is left to settle: the booking left {s}:refunds. */
    th_res_clear(&r);
    cr_assert_eq(
        th_finish(&x.t, &r, seatd_store_pending_due(x.t.store, "1", 0, -1, 20, th_on_result, &r)),
        0);
    cr_assert_eq(th_get_ll(&r, "remaining"), 0);
    th_res_clear(&r);
    rec_close(&x);
}
