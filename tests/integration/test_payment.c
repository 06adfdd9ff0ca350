/*
 * test_payment.c - worker/clients/payment.c against the real fake gateway
 * (deploy/gateway/gateway.js, run by payment_harness.h).
 *
 * Each test starts its own gateway (node, a free loopback port, a ledger in a fresh temp dir,
 * GATEWAY_SLOW_MS=1500) in .init and stops it in .fini, so tests share nothing. The client
 * runs on a fresh uv loop; every async test counts its callbacks, is bounded by a watchdog,
 * and ends with seatd_payment_close() and uv_loop_close() == 0. Gateway-side facts (how many
 * charges a key made, the Idempotent-Replayed header) are read with a blocking curl request.
 * Redis is not used. The reconciler against the same gateway is test_payment_reconcile.c.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "base/buf.h"
#include "base/errors.h"
#include "base/metrics.h"
#include "clients/payment.h"
#include "payment_harness.h"
/* ---------------------------------------------------------------------------------------- */
/* The loop, callback counting, the client                                                  */
/* ---------------------------------------------------------------------------------------- */

static uv_loop_t loop;
static seatd_payment_t *pay;

typedef struct got_s {
    int calls;                  /* how many times the callback fired */
    seatd_payment_result_t res; /* the last result */
} got_t;

static void on_result(const seatd_payment_result_t *res, void *data)
{
    got_t *g = data;
    g->calls++;
    g->res = *res;
    /* Return from uv_run() so wait_count() sees the count: a callback that runs in the timer
     * phase would otherwise leave UV_RUN_ONCE blocked in poll until the next event. */
    uv_stop(&loop);
}

static int watchdog_fired;

static void on_watchdog(uv_timer_t *t)
{
    watchdog_fired = 1;
    uv_stop(&loop);
}

/* Runs the loop until '*count' reaches 'want'; fails the test after 'timeout_ms'. */
static void wait_count(const int *count, int want, int timeout_ms)
{
    uv_timer_t wd;
    uv_timer_init(&loop, &wd);
    watchdog_fired = 0;
    uv_timer_start(&wd, on_watchdog, (uint64_t)timeout_ms, 0);
    while (*count < want && !watchdog_fired)
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&wd, NULL);
    uv_run(&loop, UV_RUN_NOWAIT); /* runs wd's close */
    cr_assert(!watchdog_fired, "watchdog: %d of %d callbacks after %d ms", *count, want,
              timeout_ms);
}

static int slept;

static void on_sleep(uv_timer_t *t)
{
    slept = 1;
    uv_stop(&loop);
}

/* Runs the loop for 'ms' milliseconds (in-flight transfers make progress meanwhile). */
static void loop_sleep(int ms)
{
    uv_timer_t t;
    uv_timer_init(&loop, &t);
    slept = 0;
    uv_timer_start(&t, on_sleep, (uint64_t)ms, 0);
    while (!slept)
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
}

/* Closes 'pay' and checks that the loop ends with nothing left open. */
static void close_client_and_loop(void)
{
    if (pay) {
        seatd_payment_close(pay);
        pay = NULL;
    }
    while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
        ; /* callbacks stop the loop; go on until nothing is left */
    cr_assert_eq(uv_loop_close(&loop), 0, "a uv handle leaked");
}

static void suite_init(void)
{
    gw_prepare("/tmp/seatd-pay-XXXXXX");
    snprintf(gw_url, sizeof(gw_url), "http://127.0.0.1:%d", gw_port);
    gw_spawn(SLOW_MS);
    cr_assert_eq(uv_loop_init(&loop), 0);
    pay = seatd_payment_new(&loop, gw_url, 3000);
    cr_assert_not_null(pay);
}

TestSuite(payment, .init = suite_init, .fini = suite_fini, .timeout = 30);

/* A second client on the same loop with a short timeout. */
static seatd_payment_t *short_client(int timeout_ms)
{
    seatd_payment_t *p = seatd_payment_new(&loop, gw_url, timeout_ms);
    cr_assert_not_null(p);
    return p;
}

static void charge(seatd_payment_t *p, const char *key, long long amount, const char *source,
                   got_t *g)
{
    cr_assert_eq(
        seatd_payment_charge(p, key, amount, "EUR", source, "2 seats, show 42", on_result, g), 0);
}

static void charge_and_wait(seatd_payment_t *p, const char *key, long long amount,
                            const char *source, got_t *g)
{
    int before = g->calls;
    charge(p, key, amount, source, g);
    wait_count(&g->calls, before + 1, 10000);
}

static void lookup_and_wait(const char *key, got_t *g)
{
    int before = g->calls;
    cr_assert_eq(seatd_payment_lookup(pay, key, on_result, g), 0);
    wait_count(&g->calls, before + 1, 10000);
}

static void refund_and_wait(const char *key, const char *charge_id, long long amount, got_t *g)
{
    int before = g->calls;
    cr_assert_eq(seatd_payment_refund(pay, key, charge_id, amount, "seat moved", on_result, g), 0);
    wait_count(&g->calls, before + 1, 10000);
}

/* ---------------------------------------------------------------------------------------- */
/* Charges                                                                                  */
/* ---------------------------------------------------------------------------------------- */

Test(payment, approves_tok_ok_with_a_charge_id)
{
    got_t g = {0};
    charge_and_wait(pay, "42-b0001", 2400, "tok_ok", &g);
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(g.res.outcome, SEATD_PAY_APPROVED, "code %s", g.res.code);
    cr_assert_eq(g.res.http_status, 201);
    cr_assert_eq(strncmp(g.res.charge_id, "ch_", 3), 0, "charge id '%s'", g.res.charge_id);
    cr_assert_eq(g.res.amount, 2400);
    cr_assert_eq(stat_of("42-b0001", "charges"), 1);
    /* Counted by operation and outcome, its time in the gateway histogram. */
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_PAY_CHARGE_APPROVED), 1);
    cr_assert_eq(seatd_metrics_observations(SEATD_HIST_PAY_CHARGE), 1);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

Test(payment, declines_tok_declined_with_card_declined)
{
    got_t g = {0};
    charge_and_wait(pay, "42-b0002", 2400, "tok_declined", &g);
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(g.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_eq(g.res.http_status, 402);
    cr_assert_str_eq(g.res.code, "card_declined");
    cr_assert_eq(strncmp(g.res.charge_id, "ch_", 3), 0);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

Test(payment, declines_tok_insufficient_funds_with_insufficient_funds)
{
    got_t g = {0};
    charge_and_wait(pay, "42-b0003", 2400, "tok_insufficient_funds", &g);
    cr_assert_eq(g.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_eq(g.res.http_status, 402);
    cr_assert_str_eq(g.res.code, "insufficient_funds");
    /* The failed charge is on record: a lookup says DECLINED, not NOT_FOUND. */
    got_t l = {0};
    lookup_and_wait("42-b0003", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_str_eq(l.res.code, "insufficient_funds");
    cr_assert_str_eq(l.res.charge_id, g.res.charge_id);
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_PAY_CHARGE_DECLINED), 1);
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_PAY_LOOKUP_DECLINED), 1);
    cr_assert_eq(seatd_metrics_observations(SEATD_HIST_PAY_LOOKUP), 1);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(l.calls, 1);
}

Test(payment, declines_an_unknown_token_as_invalid_source)
{
    got_t g = {0};
    charge_and_wait(pay, "42-b0004", 2400, "tok_stolen_card", &g);
    cr_assert_eq(g.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_str_eq(g.res.code, "invalid_source");
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

Test(payment, rejects_invalid_arguments_without_calling_back)
{
    got_t g = {0};
    cr_assert_eq(seatd_payment_charge(pay, "", 2400, "EUR", "tok_ok", NULL, on_result, &g),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_payment_charge(pay, "bad key", 2400, "EUR", "tok_ok", NULL, on_result, &g),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_payment_charge(pay, "k", 0, "EUR", "tok_ok", NULL, on_result, &g),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_payment_charge(pay, "k", 1000000001LL, "EUR", "tok_ok", NULL, on_result, &g),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_payment_charge(pay, "k", 2400, "eur", "tok_ok", NULL, on_result, &g),
                 SEATD_EINVAL);
    cr_assert_eq(
        seatd_payment_charge(pay, "k", 2400, "EUR", "4242 4242 4242 4242", NULL, on_result, &g),
        SEATD_EINVAL);
    cr_assert_eq(seatd_payment_charge(pay, "k", 2400, "EUR", "tok_ok", NULL, NULL, &g),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_payment_refund(pay, "k", "re_abc", 100, NULL, on_result, &g), SEATD_EINVAL);
    cr_assert_eq(seatd_payment_refund(pay, "k", "ch_abc", -1, NULL, on_result, &g), SEATD_EINVAL);
    cr_assert_eq(seatd_payment_lookup(pay, "k/../x", on_result, &g), SEATD_EINVAL);
    cr_assert_null(seatd_payment_new(&loop, "ftp://127.0.0.1", 1000));
    cr_assert_null(seatd_payment_new(&loop, gw_url, 0));
    close_client_and_loop();
    cr_assert_eq(g.calls, 0);
    cr_assert_eq(stat_of(NULL, "charges"), 0);
}

Test(payment, slow_charge_past_the_timeout_is_unknown_then_lookup_finds_it_approved)
{
    seatd_payment_t *quick = short_client(200);
    got_t g = {0};
    charge_and_wait(quick, "42-b0005", 2400, "tok_slow", &g);
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(g.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(g.res.http_status, 0);
    /* While the gateway still processes it, a lookup cannot tell either. */
    got_t l = {0};
    lookup_and_wait("42-b0005", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_UNKNOWN, "outcome %d", l.res.outcome);
    cr_assert_eq(l.res.http_status, 409);
    /* Ask again until the gateway has finished (GATEWAY_SLOW_MS after the charge began). */
    for (int i = 0; i < 100 && l.res.outcome == SEATD_PAY_UNKNOWN; i++) {
        loop_sleep(100);
        lookup_and_wait("42-b0005", &l);
    }
    cr_assert_eq(l.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(l.res.amount, 2400);
    cr_assert_eq(l.res.refunded, 0);
    cr_assert_eq(strncmp(l.res.charge_id, "ch_", 3), 0);
    seatd_payment_close(quick);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

Test(payment, hung_charge_is_unknown_at_the_timeout_then_lookup_finds_it_approved)
{
    seatd_payment_t *quick = short_client(300);
    got_t g = {0};
    charge(quick, "42-b0006", 2400, "tok_hang", &g);
    wait_count(&g.calls, 1, 5000); /* the client's timeout, not the gateway, ends it */
    cr_assert_eq(g.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(g.res.http_status, 0);
    got_t l = {0};
    lookup_and_wait("42-b0006", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(l.res.amount, 2400);
    seatd_payment_close(quick);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(l.calls, 1);
}

Test(payment, error_after_charge_is_unknown_then_lookup_finds_it_approved)
{
    got_t g = {0};
    charge_and_wait(pay, "42-b0007", 2400, "tok_error_after_charge", &g);
    cr_assert_eq(g.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(g.res.http_status, 500);
    cr_assert_str_eq(g.res.code, "internal_error");
    got_t l = {0};
    lookup_and_wait("42-b0007", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(stat_of("42-b0007", "charges"), 1);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

Test(payment, lookup_of_an_unused_key_is_not_found)
{
    got_t l = {0};
    lookup_and_wait("42-b0008", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_NOT_FOUND);
    cr_assert_eq(l.res.http_status, 404);
    close_client_and_loop();
    cr_assert_eq(l.calls, 1);
}

Test(payment, replayed_charges_with_one_key_make_one_charge)
{
    /* Three at once, then one more: one charge, every answer names it. */
    got_t g[4];
    memset(g, 0, sizeof(g));
    int calls = 0;
    for (int i = 0; i < 3; i++)
        charge(pay, "42-b0009", 2400, "tok_ok", &g[i]);
    for (int i = 0; i < 3; i++)
        wait_count(&g[i].calls, 1, 10000);
    charge_and_wait(pay, "42-b0009", 2400, "tok_ok", &g[3]);
    for (int i = 0; i < 4; i++) {
        calls += g[i].calls;
        cr_assert_eq(g[i].res.outcome, SEATD_PAY_APPROVED, "answer %d: code %s", i, g[i].res.code);
        cr_assert_str_eq(g[i].res.charge_id, g[0].res.charge_id);
    }
    cr_assert_eq(calls, 4);
    cr_assert_eq(stat_of("42-b0009", "charges"), 1);
    cr_assert_eq(stat_of(NULL, "charges"), 1);
    /* The gateway marks replays. */
    raw_t r;
    raw("/v1/charges", "42-b0009",
        "{\"amount\":2400,\"currency\":\"EUR\",\"source\":\"tok_ok\","
        "\"description\":\"2 seats, show 42\",\"metadata\":{\"idempotencyKey\":\"42-b0009\"}}",
        &r);
    cr_assert_eq(r.status, 201);
    cr_assert_eq(r.replayed, 1);
    cr_assert_not_null(strstr(r.body.data, g[0].res.charge_id));
    seatd_buf_free(&r.body);
    close_client_and_loop();
}

Test(payment, same_key_with_another_amount_is_unknown_422_and_charges_nothing_more)
{
    got_t a = {0}, b = {0};
    charge_and_wait(pay, "42-b0010", 2400, "tok_ok", &a);
    cr_assert_eq(a.res.outcome, SEATD_PAY_APPROVED);
    charge_and_wait(pay, "42-b0010", 9900, "tok_ok", &b);
    cr_assert_eq(b.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(b.res.http_status, 422);
    cr_assert_str_eq(b.res.code, "idempotency_key_reused");
    cr_assert_eq(stat_of("42-b0010", "charges"), 1);
    close_client_and_loop();
    cr_assert_eq(a.calls + b.calls, 2);
}

Test(payment, replay_while_the_first_is_in_flight_is_unknown_409)
{
    got_t first = {0}, second = {0};
    charge(pay, "42-b0011", 2400, "tok_slow", &first);
    /* Until a lookup says the first is being processed (GATEWAY_SLOW_MS = 1500). */
    got_t l = {0};
    for (int i = 0; i < 1000 && l.res.http_status != 409; i++) {
        loop_sleep(5);
        lookup_and_wait("42-b0011", &l);
    }
    cr_assert_eq(l.res.http_status, 409, "the first is being processed");
    charge_and_wait(pay, "42-b0011", 2400, "tok_slow", &second);
    cr_assert_eq(second.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(second.res.http_status, 409);
    wait_count(&first.calls, 1, 5000);
    cr_assert_eq(first.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(stat_of("42-b0011", "charges"), 1);
    close_client_and_loop();
    cr_assert_eq(first.calls, 1);
    cr_assert_eq(second.calls, 1);
}

Test(payment, gateway_down_is_unknown_without_an_answer)
{
    gw_halt();
    got_t g = {0};
    charge_and_wait(pay, "42-b0012", 2400, "tok_ok", &g);
    cr_assert_eq(g.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_eq(g.res.http_status, 0);
    cr_assert(g.res.code[0] != '\0');
    cr_assert_eq(seatd_metrics_get(SEATD_METRIC_PAY_CHARGE_UNKNOWN), 1);
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Refunds                                                                                  */
/* ---------------------------------------------------------------------------------------- */

Test(payment, partial_then_remainder_refund_succeed_and_over_refunds_are_refused)
{
    got_t c = {0};
    charge_and_wait(pay, "42-b0013", 2400, "tok_ok", &c);
    cr_assert_eq(c.res.outcome, SEATD_PAY_APPROVED);
    const char *ch = c.res.charge_id;

    got_t r = {0};
    refund_and_wait("42-b0013:r1", ch, 3000, &r); /* more than the charge */
    cr_assert_eq(r.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_eq(r.res.http_status, 400);
    cr_assert_str_eq(r.res.code, "amount_too_large");

    refund_and_wait("42-b0013:r2", ch, 1000, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_APPROVED, "code %s", r.res.code);
    cr_assert_eq(r.res.amount, 1000);
    cr_assert_eq(r.res.refunded, 1000);
    cr_assert_str_eq(r.res.charge_id, ch);

    refund_and_wait("42-b0013:r3", ch, 1401, &r); /* 1 more than what is left */
    cr_assert_eq(r.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_str_eq(r.res.code, "amount_too_large");

    refund_and_wait("42-b0013:r4", ch, 0, &r); /* the rest */
    cr_assert_eq(r.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(r.res.amount, 1400);
    cr_assert_eq(r.res.refunded, 2400);

    refund_and_wait("42-b0013:r5", ch, 1, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_str_eq(r.res.code, "charge_already_refunded");

    /* A replayed refund answers its first result and refunds nothing more. */
    refund_and_wait("42-b0013:r2", ch, 1000, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(r.res.amount, 1000);
    cr_assert_eq(r.res.refunded, 1000);

    got_t l = {0};
    lookup_and_wait("42-b0013", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(l.res.refunded, 2400);
    cr_assert_eq(stat_of("42-b0013", "refunds"), 2);
    cr_assert_eq(stat_of("42-b0013", "refundedAmount"), 2400);
    close_client_and_loop();
    cr_assert_eq(r.calls, 6);
}

Test(payment, refund_of_a_declined_charge_is_refused)
{
    got_t c = {0}, r = {0};
    charge_and_wait(pay, "42-b0014", 2400, "tok_declined", &c);
    cr_assert_eq(c.res.outcome, SEATD_PAY_DECLINED);
    refund_and_wait("42-b0014:r1", c.res.charge_id, 0, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_DECLINED);
    cr_assert_str_eq(r.res.code, "charge_not_refundable");
    cr_assert_eq(stat_of(NULL, "refunds"), 0);
    close_client_and_loop();
    cr_assert_eq(r.calls, 1);
}

Test(payment, refund_of_an_unknown_charge_is_not_found)
{
    got_t r = {0};
    refund_and_wait("42-b0015:r1", "ch_000000000000000000000000", 100, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_NOT_FOUND);
    cr_assert_eq(r.res.http_status, 404);
    close_client_and_loop();
    cr_assert_eq(r.calls, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Durability and teardown                                                                  */
/* ---------------------------------------------------------------------------------------- */

Test(payment, gateway_restart_keeps_the_ledger_and_replays_answer_the_first_result)
{
    got_t a = {0}, r = {0};
    charge_and_wait(pay, "42-b0016", 2400, "tok_ok", &a);
    cr_assert_eq(a.res.outcome, SEATD_PAY_APPROVED);
    refund_and_wait("42-b0016:r1", a.res.charge_id, 400, &r);
    cr_assert_eq(r.res.outcome, SEATD_PAY_APPROVED);

    gw_halt();
    gw_spawn(SLOW_MS); /* same port, same ledger */

    got_t b = {0};
    charge_and_wait(pay, "42-b0016", 2400, "tok_ok", &b);
    cr_assert_eq(b.res.outcome, SEATD_PAY_APPROVED, "code %s", b.res.code);
    cr_assert_str_eq(b.res.charge_id, a.res.charge_id);
    got_t l = {0};
    lookup_and_wait("42-b0016", &l);
    cr_assert_eq(l.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(l.res.refunded, 400);
    refund_and_wait("42-b0016:r1", a.res.charge_id, 400, &r); /* replayed, not repeated */
    cr_assert_eq(r.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(r.res.refunded, 400);
    cr_assert_eq(stat_of(NULL, "charges"), 1);
    cr_assert_eq(stat_of(NULL, "refunds"), 1);

    raw_t raw_r;
    raw("/v1/charges", "42-b0016",
        "{\"amount\":2400,\"currency\":\"EUR\",\"source\":\"tok_ok\","
        "\"description\":\"2 seats, show 42\",\"metadata\":{\"idempotencyKey\":\"42-b0016\"}}",
        &raw_r);
    cr_assert_eq(raw_r.status, 201);
    cr_assert_eq(raw_r.replayed, 1);
    seatd_buf_free(&raw_r.body);
    close_client_and_loop();
    cr_assert_eq(a.calls + b.calls + l.calls + r.calls, 5);
}

Test(payment, close_with_a_request_in_flight_fires_its_callback_once)
{
    got_t g = {0};
    charge(pay, "42-b0017", 2400, "tok_hang", &g);
    /* Until the gateway has recorded it: sent, and hanging (tok_hang never answers). */
    for (int i = 0; i < 1000 && stat_of("42-b0017", "charges") < 1; i++)
        loop_sleep(5);
    cr_assert_eq(stat_of("42-b0017", "charges"), 1, "sent, and hanging");
    cr_assert_eq(g.calls, 0);
    seatd_payment_close(pay);
    got_t late = {0};
    cr_assert_eq(
        seatd_payment_charge(pay, "42-b0018", 2400, "EUR", "tok_ok", NULL, on_result, &late),
        SEATD_ESHUTDOWN);
    pay = NULL;
    close_client_and_loop();
    cr_assert_eq(g.calls, 1);
    cr_assert_eq(g.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_str_eq(g.res.code, "shutdown");
    cr_assert_eq(late.calls, 0);
}

static got_t inner_first, inner_other;

static void on_result_then_close(const seatd_payment_result_t *res, void *data)
{
    on_result(res, data);
    seatd_payment_close(pay);
    seatd_payment_close(pay); /* a second close is a no-op */
}

Test(payment, close_from_inside_a_callback_abandons_the_rest_once)
{
    memset(&inner_first, 0, sizeof(inner_first));
    memset(&inner_other, 0, sizeof(inner_other));
    charge(pay, "42-b0019", 2400, "tok_hang", &inner_other);
    cr_assert_eq(seatd_payment_charge(pay, "42-b0020", 2400, "EUR", "tok_ok", NULL,
                                      on_result_then_close, &inner_first),
                 0);
    wait_count(&inner_first.calls, 1, 10000);
    pay = NULL; /* closed by the callback */
    close_client_and_loop();
    cr_assert_eq(inner_first.calls, 1);
    cr_assert_eq(inner_first.res.outcome, SEATD_PAY_APPROVED);
    cr_assert_eq(inner_other.calls, 1);
    cr_assert_eq(inner_other.res.outcome, SEATD_PAY_UNKNOWN);
    cr_assert_str_eq(inner_other.res.code, "shutdown");
}

/* ---------------------------------------------------------------------------------------- */
/* The gateway's own validation (raw requests)                                              */
/* ---------------------------------------------------------------------------------------- */

Test(payment, gateway_refuses_malformed_charges_with_400_and_records_nothing)
{
    static const struct {
        const char *key;  /* Idempotency-Key, or NULL for none */
        const char *json; /* the body */
        const char *code; /* the expected error code */
    } cases[] = {
        {NULL, "{\"amount\":100,\"currency\":\"EUR\",\"source\":\"tok_ok\"}",
         "missing_idempotency_key"},
        {"v1", "{\"amount\":0,\"currency\":\"EUR\",\"source\":\"tok_ok\"}", "invalid_amount"},
        {"v2", "{\"amount\":1.5,\"currency\":\"EUR\",\"source\":\"tok_ok\"}", "invalid_amount"},
        {"v3", "{\"amount\":1000000001,\"currency\":\"EUR\",\"source\":\"tok_ok\"}",
         "invalid_amount"},
        {"v4", "{\"amount\":100,\"currency\":\"eur\",\"source\":\"tok_ok\"}", "invalid_currency"},
        {"v5", "{\"amount\":100,\"currency\":\"EUR\"}", "invalid_source_format"},
        {"v6", "{\"amount\":100,", "invalid_json"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        raw_t r;
        raw("/v1/charges", cases[i].key, cases[i].json, &r);
        cr_assert_eq(r.status, 400, "case %zu: status %ld", i, r.status);
        cr_assert_not_null(strstr(r.body.data, cases[i].code), "case %zu: %s", i, r.body.data);
        seatd_buf_free(&r.body);
    }
    /* A body over 16 KiB. */
    seatd_buf_t big = SEATD_BUF_INIT;
    seatd_buf_puts(&big,
                   "{\"amount\":100,\"currency\":\"EUR\",\"source\":\"tok_ok\",\"description\":\"");
    for (int i = 0; i < 17 * 1024; i++)
        seatd_buf_puts(&big, "x");
    seatd_buf_puts(&big, "\"}");
    raw_t r;
    raw("/v1/charges", "v7", big.data, &r);
    seatd_buf_free(&big);
    cr_assert_eq(r.status, 400);
    cr_assert_not_null(strstr(r.body.data, "body_too_large"));
    seatd_buf_free(&r.body);
    /* A 400 is not stored: the corrected request under the same key goes through. */
    raw("/v1/charges", "v1", "{\"amount\":100,\"currency\":\"EUR\",\"source\":\"tok_ok\"}", &r);
    cr_assert_eq(r.status, 201);
    cr_assert_eq(r.replayed, 0);
    seatd_buf_free(&r.body);
    cr_assert_eq(stat_of(NULL, "charges"), 1);
    close_client_and_loop();
}
