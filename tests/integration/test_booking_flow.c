/*
 * test_booking_flow.c - worker/flows/booking.c and the ledger walk (reconcile.h) against real
 * redis-servers and the real fake gateway: what a booking promises when a Redis primary can
 * lose its writes (docs/design.md "When the network splits").
 *
 *   - durable: a primary with one replica of its own (two redis-servers started here, the
 *     second REPLICAOF the first), the worker's client with WAIT 1. The replica is stopped
 *     (SIGSTOP) at the step under test, so that the primary takes the write and no replica
 *     acknowledges it: the flow must not charge after a begin that is not on a replica, and
 *     must not say CONFIRMED after a confirm that is not.
 *   - lost: a succeeded charge at the gateway whose booking does not exist (lost with its
 *     primary): the flow, asked by the request path or by the ledger walk, writes the booking
 *     down FAILED for its buyer and refunds the charge once.
 *   - unpriced: a show created before book_begin priced seats itself (no {s}:tiers, no
 *     tierNames in its meta): the flow stores its tiers from the layout once (counted on a
 *     MONITOR) and charges each seat at its tier's price.
 */
#include <criterion/criterion.h>
#include <signal.h>

#include "flows/booking.h"
#include "gateway_harness.h"
#include "clients/payment.h"
#include "flows/reconcile.h"
#include "store/functions.h"
#include "store_harness.h"

#define WAIT_MS 20000
#define AMOUNT 2400

/* ---------------------------------------------------------------------------------------
 * A primary and its replica, started for the test
 * --------------------------------------------------------------------------------------- */

static seatd_test_redis_t primary, replica;

static redisReply *on_port(int port, const char *fmt, ...)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err, "connect to %d", port);
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

static int info_has(int port, const char *needle)
{
    redisReply *r = on_port(port, "INFO replication");
    int yes = r && r->type == REDIS_REPLY_STRING && strstr(r->str, needle) != NULL;
    freeReplyObject(r);
    return yes;
}

static void pair_start(void)
{
    cr_assert_eq(seatd_test_redis_start(&primary), 0);
    cr_assert_eq(seatd_test_redis_start(&replica), 0);
    /* No 5 s wait for more replicas before the first (diskless) sync. */
    freeReplyObject(on_port(primary.port, "CONFIG SET repl-diskless-sync-delay 0"));
    freeReplyObject(on_port(replica.port, "REPLICAOF 127.0.0.1 %d", primary.port));
    for (int i = 0; i < 400 && !info_has(replica.port, "master_link_status:up"); i++)
        gw_sleep_ms(25);
    cr_assert(info_has(replica.port, "master_link_status:up"), "the replica is in sync");
}

static void pair_stop(void)
{
    if (replica.pid > 0)
        kill(replica.pid, SIGCONT);
    seatd_test_redis_stop(&replica);
    seatd_test_redis_stop(&primary);
}

/* th_open() on 'port' with WAIT 'wait_replicas' (1 s: a busy machine's replica acknowledges
 * late, a stopped one never) after durable commands. */
static void open_on(th_t *t, int port, int wait_replicas)
{
    memset(t, 0, sizeof(*t));
    t->loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {0};
    o.port = port;
    o.pool_size = 1;
    o.timeout_ms = 4000;
    o.wait_replicas = wait_replicas;
    o.wait_ms = 1000;
    t->rds = seatd_rds_new(t->loop, &o);
    cr_assert_not_null(t->rds);
    t->scripts = seatd_scripts_new(t->rds);
    t->store = seatd_store_new(t->scripts);
}

static seatd_payment_t *gateway_client(th_t *t)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw_port);
    seatd_payment_t *p = seatd_payment_new(t->loop, url, 10000);
    cr_assert_not_null(p);
    return p;
}

/* The end of one flow, copied out of its callback. */
typedef struct {
    int done;
    seatd_booking_outcome_t outcome;
    int err;
    int64_t amount;
    char booking_id[SEATD_ID_MAX];
} end_t;

static void on_end(const seatd_booking_end_t *end, void *data)
{
    end_t *e = data;
    e->done++;
    e->outcome = end->outcome;
    e->err = end->err;
    e->amount = end->amount;
    snprintf(e->booking_id, sizeof(e->booking_id), "%s", end->booking_id);
}

static void wait_end(th_t *t, end_t *e)
{
    cr_assert_eq(seatd_test_loop_run_until(t->loop, &e->done, WAIT_MS), 0);
    cr_assert_eq(e->done, 1, "the flow's callback ran once");
}

/* A show "1" of A1, A2 and a hold of both by alice; the hold's id in 'hold'. */
static void show_and_hold(th_t *t, char *hold, size_t cap)
{
    th_res_t r = {0};
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(t, "1", seats, 60000), 0);
    cr_assert_eq(th_hold(t, &r, "1", "alice", seats, 60000, 10, NULL), 0);
    snprintf(hold, cap, "%s", th_get(&r, "holdId"));
    th_res_clear(&r);
}

static seatd_booking_pay_args_t pay_args(const char *hold, const char *bid)
{
    return (seatd_booking_pay_args_t){.hold_id = hold,
                                      .owner = "alice",
                                      .booking_id = bid,
                                      .seat_ids = "A1,A2",
                                      .amount = AMOUNT,
                                      .currency = "EUR",
                                      .payment_method = "tok_ok",
                                      .payment_window_ms = 60000};
}

/* What each durable test works with: the worker's side on the primary (WAIT 1), the gateway
 * client, the flow's context, show "1" with a hold of A1, A2 by alice. */
typedef struct {
    th_t t;
    seatd_payment_t *pay;
    seatd_booking_ctx_t ctx;
    char hold[SEATD_ID_MAX];
} fx_t;

static void fx_open(fx_t *x)
{
    open_on(&x->t, primary.port, 1);
    x->pay = gateway_client(&x->t);
    x->ctx = (seatd_booking_ctx_t){
        .loop = x->t.loop, .store = x->t.store, .payment = x->pay, .horizon_ms = 60000};
    show_and_hold(&x->t, x->hold, sizeof(x->hold));
}

static void fx_close(fx_t *x)
{
    seatd_payment_close(x->pay);
    cr_assert_eq(th_close(&x->t), 0);
}

static void durable_setup(void)
{
    gw_start();
    pair_start();
}

static void durable_teardown(void)
{
    pair_stop();
    gw_stop();
}

TestSuite(booking_flow, .timeout = 120);

/* ---------------------------------------------------------------------------------------
 * Charge only what a failover cannot forget; say CONFIRMED only when it will stay so
 * --------------------------------------------------------------------------------------- */

Test(booking_flow, a_begin_no_replica_acknowledged_charges_nothing_and_frees_the_hold,
     .init = durable_setup, .fini = durable_teardown)
{
    fx_t x;
    fx_open(&x);
    char bid[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(bid, "1", 'b'), 0);

    cr_assert_eq(kill(replica.pid, SIGSTOP), 0); /* the primary is on its own */
    end_t e = {0};
    seatd_booking_pay_args_t a = pay_args(x.hold, bid);
    cr_assert_eq(seatd_booking_pay(&x.ctx, &a, on_end, &e), 0);
    wait_end(&x.t, &e);
    cr_assert_eq(kill(replica.pid, SIGCONT), 0);

    cr_assert_eq(e.outcome, SEATD_BOOKING_REFUSED, "outcome %s",
                 seatd_booking_outcome_name(e.outcome));
    cr_assert_eq(e.err, SEATD_ENOTDURABLE);
    cr_assert_eq(gw_lookup(bid, NULL), 404, "nothing was charged");
    redisReply *st = on_port(primary.port, "HGET {s:1}:booking:%s status", bid);
    cr_assert_str_eq(st->str, "FAILED", "the begun booking is failed again");
    freeReplyObject(st);
    st = on_port(primary.port, "HGET {s:1}:hold:%s status", x.hold);
    cr_assert_str_eq(st->str, "HELD", "the seats stay held for a retry");
    freeReplyObject(st);

    /* With the replica back, the same hold books: begin on a replica, charged, confirmed. */
    char bid2[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(bid2, "1", 'b'), 0);
    end_t e2 = {0};
    a.booking_id = bid2;
    cr_assert_eq(seatd_booking_pay(&x.ctx, &a, on_end, &e2), 0);
    wait_end(&x.t, &e2);
    cr_assert_eq(e2.outcome, SEATD_BOOKING_CONFIRMED, "outcome %s",
                 seatd_booking_outcome_name(e2.outcome));
    cr_assert_eq(gw_lookup(bid2, NULL), 200);
    fx_close(&x);
}

Test(booking_flow, a_confirm_no_replica_acknowledged_is_pending_not_confirmed,
     .init = durable_setup, .fini = durable_teardown)
{
    fx_t x;
    th_res_t r = {0};
    fx_open(&x);
    int rc = th_book_begin(&x.t, &r, "1", x.hold, "alice", 60000);
    cr_assert_eq(rc, 0, "a durable begin: %s", seatd_err_name(rc));
    char bid[SEATD_ID_MAX];
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(gw_charge(bid, "tok_ok"), 201);

    cr_assert_eq(kill(replica.pid, SIGSTOP), 0);
    seatd_payment_result_t paid = {.outcome = SEATD_PAY_APPROVED, .amount = AMOUNT};
    snprintf(paid.charge_id, sizeof(paid.charge_id), "ch_test1");
    end_t e = {0};
    cr_assert_eq(seatd_booking_settle(&x.ctx, bid, &paid, NULL, on_end, &e), 0);
    wait_end(&x.t, &e);
    cr_assert_eq(kill(replica.pid, SIGCONT), 0);
    cr_assert_eq(e.outcome, SEATD_BOOKING_PENDING, "not CONFIRMED: a failover could undo it (%s)",
                 seatd_booking_outcome_name(e.outcome));
    /* The replica, in sync again, has the booking PENDING_PAYMENT in {s}:pending or already
     * CONFIRMED: never lost, and settled by reconciliation wherever it survives. */
    th_res_clear(&r);
    fx_close(&x);
}

Test(booking_flow, durable_steps_with_the_replica_in_sync_confirm_at_once, .init = durable_setup,
     .fini = durable_teardown)
{
    fx_t x;
    fx_open(&x);
    char bid[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(bid, "1", 'b'), 0);
    end_t e = {0};
    seatd_booking_pay_args_t a = pay_args(x.hold, bid);
    cr_assert_eq(seatd_booking_pay(&x.ctx, &a, on_end, &e), 0);
    wait_end(&x.t, &e);
    cr_assert_eq(e.outcome, SEATD_BOOKING_CONFIRMED);
    redisReply *st = on_port(replica.port, "HGET {s:1}:booking:%s status", bid);
    cr_assert(st && st->type == REDIS_REPLY_STRING && strcmp(st->str, "CONFIRMED") == 0,
              "the replica has the confirmation before the buyer is told");
    freeReplyObject(st);
    fx_close(&x);
}

Test(booking_flow, a_cancellation_no_replica_acknowledged_refunds_nothing_yet,
     .init = durable_setup, .fini = durable_teardown)
{
    fx_t x;
    fx_open(&x);
    char bid[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(bid, "1", 'b'), 0);
    end_t e = {0};
    seatd_booking_pay_args_t a = pay_args(x.hold, bid);
    cr_assert_eq(seatd_booking_pay(&x.ctx, &a, on_end, &e), 0);
    wait_end(&x.t, &e);
    cr_assert_eq(e.outcome, SEATD_BOOKING_CONFIRMED);

    cr_assert_eq(kill(replica.pid, SIGSTOP), 0);
    end_t c = {0};
    cr_assert_eq(seatd_booking_cancel(&x.ctx, bid, "alice", on_end, &c), 0);
    wait_end(&x.t, &c);
    cr_assert_eq(kill(replica.pid, SIGCONT), 0);
    cr_assert_eq(c.outcome, SEATD_BOOKING_REFUSED, "%s", seatd_booking_outcome_name(c.outcome));
    cr_assert_eq(c.err, SEATD_ENOTDURABLE);
    cr_assert_eq(gw_refunds_of(bid), 0, "no refund before the cancellation is on a replica");

    /* Cancelling again, the replica back: the cancellation answers the same, refunded once. */
    end_t c2 = {0};
    cr_assert_eq(seatd_booking_cancel(&x.ctx, bid, "alice", on_end, &c2), 0);
    wait_end(&x.t, &c2);
    cr_assert_eq(c2.outcome, SEATD_BOOKING_CANCELLED, "%s", seatd_booking_outcome_name(c2.outcome));
    cr_assert_eq(gw_refunds_of(bid), 1);
    fx_close(&x);
}

/* ---------------------------------------------------------------------------------------
 * Every charge ends CONFIRMED or refunded, visibly to its buyer
 * --------------------------------------------------------------------------------------- */

static void lost_setup(void)
{
    seatd_test_redis_flushall();
    gw_start();
}

static void lost_teardown(void)
{
    gw_stop();
}

/* th_open() on the runner's redis-server, a gateway client in '*pay' and a flow's context. */
static seatd_booking_ctx_t open_with_gateway(th_t *t, seatd_payment_t **pay)
{
    cr_assert_eq(th_open(t), 0);
    *pay = gateway_client(t);
    return (seatd_booking_ctx_t){
        .loop = t->loop, .store = t->store, .payment = *pay, .horizon_ms = 60000};
}

/* A succeeded charge under booking id 'bid' with the buyer as metadata, as the flow makes it. */
static void charge_with_meta(const char *bid)
{
    char body[320];
    snprintf(body, sizeof(body),
             "{\"amount\":%d,\"currency\":\"EUR\",\"source\":\"tok_ok\",\"metadata\":"
             "{\"idempotencyKey\":\"%s\",\"owner\":\"alice\",\"holdId\":\"1-h77\","
             "\"seatIds\":\"A1,A2\"}}",
             AMOUNT, bid);
    cr_assert_eq(gw_call("POST", "/v1/charges", bid, body, NULL), 201);
}

static void assert_lost_and_refunded(redisContext *c, const char *bid)
{
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", bid), 1);
    cr_assert_str_eq(v, "FAILED");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refundStatus", bid);
    cr_assert_str_eq(v, "succeeded");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s owner", bid);
    cr_assert_str_eq(v, "alice", "the buyer can read it (GET /v1/bookings/{id})");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refund", bid);
    cr_assert_eq(atoll(v), AMOUNT);
    long long refunded = 0;
    cr_assert_eq(gw_lookup(bid, &refunded), 200);
    cr_assert_eq(refunded, AMOUNT, "the whole charge is back");
    cr_assert_eq(gw_refunds_of(bid), 1, "refunded once");
    cr_assert_eq(th_int(c, "ZCARD {s:1}:refunds"), 0, "no refund left owed");
}

Test(booking_flow, a_charge_whose_booking_is_gone_is_refunded_once_and_shown_to_its_buyer,
     .init = lost_setup, .fini = lost_teardown)
{
    th_t t;
    seatd_payment_t *pay;
    seatd_booking_ctx_t ctx = open_with_gateway(&t, &pay);
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    char bid[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(bid, "1", 'b'), 0);
    charge_with_meta(bid);

    seatd_payment_result_t paid = {.outcome = SEATD_PAY_APPROVED, .amount = AMOUNT};
    cr_assert_eq(gw_lookup(bid, NULL), 200);
    cJSON *j = NULL;
    char path[160];
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", bid);
    cr_assert_eq(gw_call("GET", path, NULL, NULL, &j), 200);
    snprintf(paid.charge_id, sizeof(paid.charge_id), "%s",
             cJSON_GetObjectItemCaseSensitive(j, "id")->valuestring);
    cJSON_Delete(j);
    seatd_booking_meta_t meta = {.owner = "alice", .hold_id = "1-h77", .seat_ids = "A1,A2"};
    for (int round = 0; round < 2; round++) { /* a second settler changes nothing */
        end_t e = {0};
        cr_assert_eq(seatd_booking_settle(&ctx, bid, &paid, &meta, on_end, &e), 0);
        wait_end(&t, &e);
        cr_assert_eq(e.outcome, SEATD_BOOKING_REFUNDED, "round %d: %s", round,
                     seatd_booking_outcome_name(e.outcome));
    }
    redisContext *c = seatd_test_redis_connect();
    assert_lost_and_refunded(c, bid);
    th_res_t r = {0};
    cr_assert_eq(
        th_finish(&t, &r, seatd_store_booking_get(t.store, bid, "alice", th_on_result, &r)), 0,
        "its buyer reads it: not a 404");
    th_res_clear(&r);
    redisFree(c);
    seatd_payment_close(pay);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------------------------
 * The ledger walk
 * --------------------------------------------------------------------------------------- */

static int walk_over(void *data)
{
    return !seatd_reconcile_walking(data);
}

/* A reconciler that only walks the ledger when told (walk_once), with a 400 ms grace for a
 * charge's booking to confirm. */
static seatd_reconcile_t *ledger_walker(th_t *t, seatd_payment_t *pay)
{
    seatd_reconcile_opts_t o = {.interval_ms = 3600000,
                                .min_age_ms = 3600000,
                                .rescan_every = 1000000,
                                .horizon_ms = 600000,
                                .ledger_interval_ms = 3600000,
                                .ledger_grace_ms = 400};
    seatd_reconcile_t *rec = seatd_reconcile_new(t->loop, t->rds, t->store, pay, &o);
    cr_assert_not_null(rec);
    return rec;
}

static void walk_once(th_t *t, seatd_reconcile_t *rec)
{
    seatd_reconcile_walk_ledger(rec);
    cr_assert(seatd_reconcile_walking(rec), "a walk started");
    cr_assert_eq(seatd_test_loop_poll_until(t->loop, walk_over, rec, 5, WAIT_MS), 0);
}

Test(booking_flow, the_ledger_walk_refunds_charges_without_a_confirmed_booking_after_the_grace,
     .init = lost_setup, .fini = lost_teardown)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_payment_t *pay = gateway_client(&t);
    const char *seats[] = {"A1", "A2", NULL};
    const char *seats_b[] = {"A3", NULL};
    redisContext *c = seatd_test_redis_connect();

    /* 1: a confirmed booking with its charge (nothing owed). */
    const char *all[] = {"A1", "A2", "A3", NULL};
    cr_assert_eq(th_create_show(&t, "1", all, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "bob", seats, 60000, 10, NULL), 0);
    char hold[SEATD_ID_MAX], confirmed[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold, "bob", 60000), 0);
    snprintf(confirmed, sizeof(confirmed), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(gw_charge(confirmed, "tok_ok"), 201);
    cr_assert_eq(th_book_confirm(&t, &r, confirmed), 0);
    /* 2: a charge whose booking is gone. */
    char lost[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(lost, "1", 'b'), 0);
    charge_with_meta(lost);
    /* 3: a declined charge (nothing owed). */
    char declined[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(declined, "1", 'b'), 0);
    cr_assert_eq(gw_charge(declined, "tok_declined"), 402);
    gw_sleep_ms(600);
    /* 4: a young charge of a pending booking: within the grace, the walk stops before it. */
    cr_assert_eq(th_hold(&t, &r, "1", "carol", seats_b, 60000, 10, NULL), 0);
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold, "carol", 60000), 0);
    char young[SEATD_ID_MAX];
    snprintf(young, sizeof(young), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(gw_charge(young, "tok_ok"), 201);

    seatd_reconcile_t *rec = ledger_walker(&t, pay);
    walk_once(&t, rec);
    cr_assert_eq(seatd_reconcile_ledger_refunds(rec), 1, "the lost booking's charge, only");
    assert_lost_and_refunded(c, lost);
    long long refunded = -1;
    cr_assert_eq(gw_lookup(confirmed, &refunded), 200);
    cr_assert_eq(refunded, 0, "a confirmed booking's charge stands");
    char v[128];
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", young);
    cr_assert_str_eq(v, "PENDING_PAYMENT", "a young charge is left to the request path");
    char cursor[64];
    cr_assert_eq(th_str(c, cursor, sizeof(cursor), "GET seatd:ledger:cursor"), 1);

    /* Past the grace, the young one is settled as the gateway lists it: its seats are still
     * held for it, so it is confirmed, not refunded. Walking again changes nothing more. */
    gw_sleep_ms(500);
    walk_once(&t, rec);
    walk_once(&t, rec);
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", young);
    cr_assert_str_eq(v, "CONFIRMED");
    cr_assert_eq(seatd_reconcile_ledger_refunds(rec), 1);
    cr_assert_eq(gw_refunds_of(lost), 1, "still refunded once");
    char cursor2[64];
    cr_assert_eq(th_str(c, cursor2, sizeof(cursor2), "GET seatd:ledger:cursor"), 1);
    cr_assert_str_neq(cursor, cursor2, "the cursor moved past the settled charge");

    seatd_reconcile_close(rec);
    seatd_payment_close(pay);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------------------------
 * A show created before seats were priced in Redis (issue 29)
 * --------------------------------------------------------------------------------------- */

#define OLD_SHOW "29"
#define STANDARD 1200
#define PREMIUM 3100

/* Show OLD_SHOW of A1, A2 (tier "standard") and B1, B2 ("premium"), created as today, then
 * stripped of what create_show did not write before seats were priced in Redis: the seats'
 * tier letters {s}:tiers and the meta's tierNames. */
static void old_show(th_t *t, redisContext *c)
{
    const char *seats[] = {"A1", "A2", "B1", "B2", NULL};
    const char *tiers[] = {"standard", "standard", "premium", "premium"};
    char layout[1024];
    size_t off =
        (size_t)snprintf(layout, sizeof(layout), "{\"showId\":\"%s\",\"seats\":[", OLD_SHOW);
    for (size_t i = 0; seats[i]; i++)
        off += (size_t)snprintf(layout + off, sizeof(layout) - off,
                                "%s{\"id\":\"%s\",\"row\":\"%c\",\"number\":%zu,"
                                "\"tier\":\"%s\",\"x\":%zu,\"y\":0}",
                                i ? "," : "", seats[i], seats[i][0], i, tiers[i], i);
    snprintf(layout + off, sizeof(layout) - off, "]}");
    char prices[96];
    snprintf(prices, sizeof(prices), "{\"standard\":%d,\"premium\":%d}", STANDARD, PREMIUM);
    seatd_show_args_t a = {.show_id = OLD_SHOW,
                           .title = "An old show",
                           .starts_at_ms = 1800000000000LL,
                           .hold_ttl_ms = 60000,
                           .price_tiers_json = prices,
                           .layout_json = layout,
                           .seat_ids = seats,
                           .nseats = 4};
    th_res_t r = {0};
    cr_assert_eq(th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r)), 0);
    th_res_clear(&r);
    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:" OLD_SHOW "}:tiers"), 1);
    cr_assert_str_eq(v, "aabb", "created with its tiers, as every show is now");
    cr_assert_eq(th_int(c, "DEL {s:" OLD_SHOW "}:tiers"), 1);
    cr_assert_eq(th_int(c, "HDEL {s:" OLD_SHOW "}:meta tierNames"), 1);
}

/* A MONITOR of the runner's redis-server: what the flow sends, counted by Function name. */
static redisContext *monitor_open(void)
{
    redisContext *m = seatd_test_redis_connect();
    redisReply *r = redisCommand(m, "MONITOR");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "MONITOR");
    freeReplyObject(r);
    return m;
}

/* Reads monitor 'm' up to a marker sent now, and closes it; counts the FCALLs of 'fn[i]' in
 * 'n[i]' ('nfn' names). */
static void monitor_count(redisContext *m, const char *const *fn, int *n, int nfn)
{
    redisContext *c = seatd_test_redis_connect();
    freeReplyObject(redisCommand(c, "ECHO seatd-monitor-end"));
    redisFree(c);
    for (int i = 0; i < nfn; i++)
        n[i] = 0;
    for (;;) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(m, (void **)&r), REDIS_OK, "a MONITOR line");
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        int end = strstr(r->str, "\"seatd-monitor-end\"") != NULL;
        for (int i = 0; i < nfn && strstr(r->str, "\"FCALL\""); i++) {
            char quoted[64];
            snprintf(quoted, sizeof(quoted), "\"FCALL\" \"%s\"", fn[i]);
            n[i] += strstr(r->str, quoted) != NULL;
        }
        freeReplyObject(r);
        if (end)
            break;
    }
    redisFree(m);
}

/* The charge the gateway took for booking 'bid' (minor units), or -1. */
static long long gw_amount(const char *bid)
{
    char path[160];
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", bid);
    cJSON *j = NULL;
    cr_assert_eq(gw_call("GET", path, NULL, NULL, &j), 200, "charged under %s", bid);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "amount");
    long long v = cJSON_IsNumber(a) ? (long long)a->valuedouble : -1;
    cJSON_Delete(j);
    return v;
}

/* Holds 'seats' for 'owner' on OLD_SHOW and books them through the flow, priced in Redis;
 * the booking id in 'bid' (SEATD_ID_MAX). Counts the book_begin and show_tiers_put calls
 * (-1 on a cluster: not counted). */
static end_t book_priced(th_t *t, const seatd_booking_ctx_t *ctx, const char *owner,
                         const char *const *seats, char *bid, int *begins, int *tiers_puts)
{
    th_res_t r = {0};
    cr_assert_eq(th_hold(t, &r, OLD_SHOW, owner, seats, 60000, 10, NULL), 0);
    char hold[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    th_res_clear(&r);
    cr_assert_eq(seatd_keys_new_id(bid, OLD_SHOW, 'b'), 0);
    seatd_booking_pay_args_t a = {.hold_id = hold,
                                  .owner = owner,
                                  .booking_id = bid,
                                  .amount = SEATD_BOOK_PRICE_IN_STORE,
                                  .currency = "EUR",
                                  .payment_method = "tok_ok",
                                  .payment_window_ms = 60000};
    /* One node's MONITOR: on a cluster the show may live on another one (not counted). */
    redisContext *m = seatd_test_redis_is_cluster() ? NULL : monitor_open();
    end_t e = {0};
    cr_assert_eq(seatd_booking_pay(ctx, &a, on_end, &e), 0);
    wait_end(t, &e);
    const char *fn[] = {th_fn(SEATD_FN_BOOK_BEGIN), th_fn(SEATD_FN_SHOW_TIERS_PUT)};
    int n[2] = {-1, -1};
    if (m)
        monitor_count(m, fn, n, 2);
    *begins = n[0];
    *tiers_puts = n[1];
    return e;
}

Test(booking_flow, a_show_created_before_seats_were_priced_gets_its_tiers_once_and_books,
     .init = lost_setup, .fini = lost_teardown)
{
    th_t t;
    seatd_payment_t *pay;
    seatd_booking_ctx_t ctx = open_with_gateway(&t, &pay);
    redisContext *c = seatd_test_redis_connect();
    old_show(&t, c);

    /* One seat of each tier: book_begin answers UNPRICED, the flow stores the tiers from the
     * layout and begins again, priced. */
    const char *first[] = {"A1", "B1", NULL};
    char bid[SEATD_ID_MAX];
    int begins = 0, puts = 0;
    end_t e = book_priced(&t, &ctx, "alice", first, bid, &begins, &puts);
    cr_assert_eq(e.outcome, SEATD_BOOKING_CONFIRMED, "outcome %s (%s)",
                 seatd_booking_outcome_name(e.outcome), seatd_err_name(e.err));
    if (!seatd_test_redis_is_cluster()) {
        cr_assert_eq(puts, 1, "the tiers stored once");
        cr_assert_eq(begins, 2, "UNPRICED, then begun");
    }
    cr_assert_eq(e.amount, STANDARD + PREMIUM);
    cr_assert_eq(gw_amount(bid), STANDARD + PREMIUM, "charged each seat at its tier's price");
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "GET {s:" OLD_SHOW "}:tiers"), 1, "tiers stored");
    cr_assert_str_eq(v, "aabb");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:" OLD_SHOW "}:meta tierNames"), 1);
    cr_assert_str_eq(v, "standard,premium");
    th_str(c, v, sizeof(v), "HGET {s:" OLD_SHOW "}:booking:%s status", bid);
    cr_assert_str_eq(v, "CONFIRMED");
    th_str(c, v, sizeof(v), "HGET {s:" OLD_SHOW "}:booking:%s amount", bid);
    cr_assert_eq(atoll(v), STANDARD + PREMIUM);

    /* The next booking on the show is priced at the first begin. */
    const char *second[] = {"A2", "B2", NULL};
    char bid2[SEATD_ID_MAX];
    e = book_priced(&t, &ctx, "bob", second, bid2, &begins, &puts);
    cr_assert_eq(e.outcome, SEATD_BOOKING_CONFIRMED, "outcome %s (%s)",
                 seatd_booking_outcome_name(e.outcome), seatd_err_name(e.err));
    if (!seatd_test_redis_is_cluster()) {
        cr_assert_eq(begins, 1, "begun at once: not UNPRICED again");
        cr_assert_eq(puts, 0, "the tiers are not stored again");
    }
    cr_assert_eq(gw_amount(bid2), STANDARD + PREMIUM);

    redisFree(c);
    seatd_payment_close(pay);
    cr_assert_eq(th_close(&t), 0);
}

/* ---------------------------------------------------------------------------------------
 * One payment for a group hold (issue 30)
 * --------------------------------------------------------------------------------------- */

/* Shows "1" and another of its slot (seats A1-A2, 1200 each), a group of both, and a group
 * hold of A1 in both for alice: its id into 'mid', the second show into 'show2'. */
static void group_held(th_t *t, char *mid, char *show2)
{
    const char *seats[] = {"A1", "A2", NULL};
    snprintf(show2, SEATD_ID_MAX, "%lld", seatd_keys_show_id_in_slot(2, seatd_keys_show_slot("1")));
    cr_assert_eq(th_create_show(t, "1", seats, 60000), 0);
    cr_assert_eq(th_create_show(t, show2, seats, 60000), 0);
    const char *shows[] = {"1", show2};
    char gid[SEATD_ID_MAX];
    cr_assert_eq(th_group_create(t, shows, 2, gid), 0);
    th_res_t r = {0};
    const char *a1[] = {"A1"};
    cr_assert_eq(th_group_hold(t, &r, gid, "alice", shows, 2, seats, a1, 1, mid), 0, "err %d %s",
                 r.err, r.detail);
    th_res_clear(&r);
}

/* The status of the booking of show 'show' in payment 'pay', and its id into 'id'. */
static void member_status(redisContext *c, const char *pay, const char *show, char *id,
                          char *status)
{
    cr_assert_eq(th_payment_member(c, pay, show, id), 0, "show %s in payment %s", show, pay);
    cr_assert_eq(th_str(c, status, 32, "HGET {s:%s}:booking:%s status", show, id), 1);
}

Test(booking_flow, a_group_payment_is_one_charge_confirmed_whole_and_refunded_show_by_show,
     .init = lost_setup, .fini = lost_teardown)
{
    th_t t;
    seatd_payment_t *pay;
    seatd_booking_ctx_t ctx = open_with_gateway(&t, &pay);
    char mid[SEATD_ID_MAX], show2[SEATD_ID_MAX], pid[SEATD_ID_MAX];
    group_held(&t, mid, show2);
    cr_assert_eq(seatd_keys_new_id(pid, "1", 'b'), 0);
    seatd_booking_pay_args_t a = pay_args(mid, pid);
    a.amount = SEATD_BOOK_PRICE_IN_STORE;
    a.seat_ids = NULL;
    end_t e = {0};
    cr_assert_eq(seatd_booking_pay(&ctx, &a, on_end, &e), 0);
    wait_end(&t, &e);
    cr_assert_eq(e.outcome, SEATD_BOOKING_CONFIRMED, "%s", seatd_booking_outcome_name(e.outcome));
    cr_assert_eq(e.amount, 2400, "A1 in two shows, 1200 each");
    long long refunded = -1;
    cr_assert_eq(gw_lookup(pid, &refunded), 200, "one charge, under the payment's id");
    cr_assert_eq(refunded, 0);
    redisContext *c = seatd_test_redis_connect();
    char m1[SEATD_ID_MAX], m2[SEATD_ID_MAX], st[32];
    member_status(c, pid, "1", m1, st);
    cr_assert_str_eq(st, "CONFIRMED");
    member_status(c, pid, show2, m2, st);
    cr_assert_str_eq(st, "CONFIRMED");
    cr_assert_eq(gw_lookup(m1, NULL), 404, "no charge of a show's booking of its own");

    /* each show's booking is cancelled by its own policy, refunded out of the one charge */
    const char *members[] = {m1, m2};
    for (int i = 0; i < 2; i++) {
        end_t x = {0};
        cr_assert_eq(seatd_booking_cancel(&ctx, members[i], "alice", on_end, &x), 0);
        wait_end(&t, &x);
        cr_assert_eq(x.outcome, SEATD_BOOKING_CANCELLED, "%s",
                     seatd_booking_outcome_name(x.outcome));
        cr_assert_eq(gw_lookup(pid, &refunded), 200);
        cr_assert_eq(refunded, 1200 * (i + 1), "after %d cancellation(s)", i + 1);
    }
    redisFree(c);
    seatd_payment_close(pay);
    cr_assert_eq(th_close(&t), 0);
}

Test(booking_flow, a_group_payment_charged_but_not_confirmed_is_confirmed_whole_by_the_ledger,
     .init = lost_setup, .fini = lost_teardown)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_payment_t *pay = gateway_client(&t);
    char mid[SEATD_ID_MAX], show2[SEATD_ID_MAX], pid[SEATD_ID_MAX];
    group_held(&t, mid, show2);
    /* the worker began the payment and charged it, then died before the confirm */
    cr_assert_eq(th_pay_begin(&t, &r, "1", mid, "alice", pid), 0);
    th_res_clear(&r);
    cr_assert_eq(gw_charge(pid, "tok_ok"), 201);
    gw_sleep_ms(600);
    seatd_reconcile_t *rec = ledger_walker(&t, pay);
    walk_once(&t, rec);
    redisContext *c = seatd_test_redis_connect();
    char id[SEATD_ID_MAX], st[32];
    cr_assert_eq(th_str(c, st, sizeof(st), "HGET {s:1}:booking:%s status", pid), 1);
    cr_assert_str_eq(st, "CONFIRMED", "the payment");
    member_status(c, pid, "1", id, st);
    cr_assert_str_eq(st, "CONFIRMED", "show 1's booking");
    member_status(c, pid, show2, id, st);
    cr_assert_str_eq(st, "CONFIRMED", "the second show's booking");
    cr_assert_eq(th_int(c, "GETBIT {s:%s}:booked 0", show2), 1);
    cr_assert_eq(seatd_reconcile_ledger_refunds(rec), 0, "nothing refunded");
    redisFree(c);
    seatd_reconcile_close(rec);
    seatd_payment_close(pay);
    cr_assert_eq(th_close(&t), 0);
}
