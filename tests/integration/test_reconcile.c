/*
 * test_reconcile.c - worker/flows/reconcile.c against a real redis-server and a real HTTP gateway.
 *
 * One table: each gateway answer to "was booking B charged?" x each state the booking is in
 * when the reconciler asks -> the state it must end in. The answers come from real servers:
 *   - the fake gateway (deploy/gateway/gateway.js, started per test on a free port), given
 *     the charge beforehand with its own test tokens: tok_ok (charged), tok_declined
 *     (declined), nothing (not found), tok_slow still running (409 charge_in_progress);
 *   - a tiny HTTP server on the test's loop for what the fake gateway cannot be told to do:
 *     answer every request 500, or accept it and never answer (the client's timeout);
 *   - a port nobody listens on (the gateway is down).
 * The states: PENDING_PAYMENT (the usual case), the hold ran out meanwhile (still pending),
 * the entry a reconciler read just before the worker confirmed or failed the booking (put back
 * in {s}:pending by the test, which is what the reconciler sees in that race), and a booking
 * failed before the gateway heard of its charge (a worker failed it while its charge request
 * was on its way, then died: the charge lands after the failure, and only {s}:failed, the
 * watch of failed bookings until the charge horizon, still names the booking).
 * The charge horizon is past for every answer but "not found" (within it), so a failed
 * booking's watch is due and the gateway is asked about it.
 *
 * No sleeps: each row starts a reconciler after the setup and waits for two whole rounds
 * (one round issues one ZRANGE per bucket of the hint set, SEATD_HINT_BUCKETS, and the next
 * round starts only after every call of the previous one answered, so the first ZRANGE of a
 * third round proves two rounds ended), then
 * reads the booking, the hold, the show's sets and the gateway's books.
 */
#include <criterion/criterion.h>

#include "gateway_harness.h"
#include "clients/payment.h"
#include "flows/reconcile.h"
#include "store_harness.h"

#define WAIT_MS 30000 /* any wait: only an event that never comes reaches it */
#define AMOUNT 2400   /* what th_book_begin() books */

static void setup(void)
{
    seatd_test_redis_flushall();
    gw_start();
}

static void teardown(void)
{
    gw_stop();
}

TestSuite(reconcile, .init = setup, .fini = teardown, .timeout = 240);

/* ---------------------------------------------------------------------------------------
 * A gateway that misbehaves: every request answered 500, or accepted and never answered
 * --------------------------------------------------------------------------------------- */

#define BAD_CONNS 64

typedef struct bad_gw_s bad_gw_t;

typedef struct {
    uv_tcp_t tcp;
    bad_gw_t *gw;
    uv_write_t w;
    size_t seen;  /* bytes of the request head matched so far against "\r\n\r\n" */
    int answered; /* the 500 is written (or being written) */
    int slot;     /* index in gw->conns */
} bad_conn_t;

struct bad_gw_s {
    uv_tcp_t listener;
    int silent;                   /* 1: never answer; 0: answer 500 and close; 2: answer
                                     every request with a succeeded charge of amount 0 */
    int port;                     /* where it listens */
    int requests;                 /* request heads received */
    bad_conn_t *conns[BAD_CONNS]; /* open connections, closed at stop */
};

static const char answer_500[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                 "Content-Type: application/json\r\nContent-Length: 56\r\n"
                                 "Connection: close\r\n\r\n"
                                 "{\"error\":{\"type\":\"api_error\",\"code\":\"internal_error\"}}";

static const char answer_zero[] = "HTTP/1.1 200 OK\r\n"
                                  "Content-Type: application/json\r\nContent-Length: 51\r\n"
                                  "Connection: close\r\n\r\n"
                                  "{\"id\":\"ch_zero000\",\"status\":\"succeeded\",\"amount\":0}";

static void on_bad_closed(uv_handle_t *h)
{
    bad_conn_t *c = h->data;
    c->gw->conns[c->slot] = NULL;
    free(c);
}

static void on_refused_closed(uv_handle_t *h)
{
    free(h->data); /* never entered the table */
}

static void bad_close(bad_conn_t *c)
{
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_bad_closed);
}

static void on_bad_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static char slab[4096];
    *buf = uv_buf_init(slab, sizeof(slab));
}

static void after_bad_write(uv_write_t *w, int status)
{
    bad_close(w->data);
}

static void on_bad_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    bad_conn_t *c = s->data;
    if (n < 0) {
        bad_close(c);
        return;
    }
    static const char end[] = "\r\n\r\n";
    for (ssize_t i = 0; i < n; i++) {
        c->seen = buf->base[i] == end[c->seen] ? c->seen + 1 : (buf->base[i] == '\r' ? 1 : 0);
        if (c->seen < 4)
            continue;
        c->seen = 0;
        c->gw->requests++;
        if (c->gw->silent != 1 && !c->answered) {
            c->answered = 1;
            uv_buf_t b = c->gw->silent == 2
                             ? uv_buf_init((char *)answer_zero, sizeof(answer_zero) - 1)
                             : uv_buf_init((char *)answer_500, sizeof(answer_500) - 1);
            c->w.data = c;
            if (uv_write(&c->w, s, &b, 1, after_bad_write) != 0)
                bad_close(c);
        }
    }
}

static void on_bad_connection(uv_stream_t *l, int status)
{
    bad_gw_t *gw = l->data;
    int slot = 0;
    while (slot < BAD_CONNS && gw->conns[slot])
        slot++;
    bad_conn_t *c = calloc(1, sizeof(*c));
    cr_assert_not_null(c);
    c->gw = gw;
    c->slot = slot;
    uv_tcp_init(l->loop, &c->tcp);
    c->tcp.data = c;
    if (status < 0 || slot == BAD_CONNS || uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_refused_closed);
        return;
    }
    gw->conns[slot] = c;
    uv_read_start((uv_stream_t *)&c->tcp, on_bad_alloc, on_bad_read);
}

static void bad_gw_start(bad_gw_t *gw, uv_loop_t *loop, int silent)
{
    memset(gw, 0, sizeof(*gw));
    gw->silent = silent;
    cr_assert_eq(uv_tcp_init(loop, &gw->listener), 0);
    gw->listener.data = gw;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    cr_assert_eq(uv_tcp_bind(&gw->listener, (const struct sockaddr *)&a, 0), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&gw->listener, 16, on_bad_connection), 0);
    int len = sizeof(a);
    cr_assert_eq(uv_tcp_getsockname(&gw->listener, (struct sockaddr *)&a, &len), 0);
    gw->port = ntohs(a.sin_port);
}

static void bad_gw_stop(bad_gw_t *gw)
{
    for (int i = 0; i < BAD_CONNS; i++)
        if (gw->conns[i])
            bad_close(gw->conns[i]);
    uv_close((uv_handle_t *)&gw->listener, NULL);
}

/* ---------------------------------------------------------------------------------------
 * The table
 * --------------------------------------------------------------------------------------- */

typedef enum {
    ANS_CHARGED,        /* the charge succeeded */
    ANS_DECLINED,       /* the card was declined (card_declined) */
    ANS_NOT_FOUND,      /* no charge under the key, within the charge horizon */
    ANS_NOT_FOUND_LATE, /* no charge under the key, past the charge horizon */
    ANS_PROCESSING,     /* 409 charge_in_progress: tok_slow still running */
    ANS_ERROR_5XX,      /* the gateway answers 500 */
    ANS_TIMEOUT,        /* the gateway never answers */
    ANS_DOWN,           /* nothing listens */
} answer_t;

typedef enum {
    BK_PENDING,   /* PENDING_PAYMENT, hold live */
    BK_EXPIRED,   /* PENDING_PAYMENT, and the hold's deadline passed meanwhile */
    BK_CONFIRMED, /* confirmed by the worker after the reconciler read the entry */
    BK_FAILED,    /* failed by the worker after the reconciler read the entry */
    BK_LATE,      /* failed before the charge landed (the gateway's answer comes after) */
    BK_STATES
} state_t;

typedef struct {
    answer_t answer;
    state_t state;
    const char *status; /* the booking's end status */
    const char *reason; /* its reason ("" : none) */
    long long refunded; /* refunded at the gateway (and recorded on the booking) */
    const char *hold;   /* the hold's end status, NULL: not checked */
    int deferred;       /* the reconciler reported a lookup deferred by the horizon */
    int watched;        /* still in {s}:failed: its charge may still land, or is unknown */
} row_t;

#define PENDING "PENDING_PAYMENT"

static const row_t rows[] = {
    /* charged */
    {ANS_CHARGED, BK_PENDING, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_CHARGED, BK_EXPIRED, "FAILED", "seats_lost_refunded", AMOUNT, "EXPIRED", 0, 0},
    {ANS_CHARGED, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_CHARGED, BK_FAILED, "FAILED", "declined+charged_late_refunded", AMOUNT, "HELD", 0, 0},
    {ANS_CHARGED, BK_LATE, "FAILED", "declined+charged_late_refunded", AMOUNT, "HELD", 0, 0},
    /* declined */
    {ANS_DECLINED, BK_PENDING, "FAILED", "card_declined", 0, "HELD", 0, 0},
    {ANS_DECLINED, BK_EXPIRED, "FAILED", "card_declined", 0, "EXPIRED", 0, 0},
    {ANS_DECLINED, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_DECLINED, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 0},
    {ANS_DECLINED, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 0},
    /* not found, within the horizon: a charge still on its way may land */
    {ANS_NOT_FOUND, BK_PENDING, PENDING, "", 0, PENDING, 1, 0},
    {ANS_NOT_FOUND, BK_EXPIRED, PENDING, "", 0, NULL, 1, 0},
    {ANS_NOT_FOUND, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_NOT_FOUND, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_NOT_FOUND, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 1},
    /* not found, past the horizon: never charged */
    {ANS_NOT_FOUND_LATE, BK_PENDING, "FAILED", "payment_not_completed", 0, "HELD", 0, 0},
    {ANS_NOT_FOUND_LATE, BK_EXPIRED, "FAILED", "payment_not_completed", 0, "EXPIRED", 0, 0},
    {ANS_NOT_FOUND_LATE, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_NOT_FOUND_LATE, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 0},
    {ANS_NOT_FOUND_LATE, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 0},
    /* no answer yet: the next round asks again */
    {ANS_PROCESSING, BK_PENDING, PENDING, "", 0, PENDING, 0, 0},
    {ANS_PROCESSING, BK_EXPIRED, PENDING, "", 0, NULL, 0, 0},
    {ANS_PROCESSING, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_PROCESSING, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_PROCESSING, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_ERROR_5XX, BK_PENDING, PENDING, "", 0, PENDING, 0, 0},
    {ANS_ERROR_5XX, BK_EXPIRED, PENDING, "", 0, NULL, 0, 0},
    {ANS_ERROR_5XX, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_ERROR_5XX, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_ERROR_5XX, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_TIMEOUT, BK_PENDING, PENDING, "", 0, PENDING, 0, 0},
    {ANS_TIMEOUT, BK_EXPIRED, PENDING, "", 0, NULL, 0, 0},
    {ANS_TIMEOUT, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_TIMEOUT, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_TIMEOUT, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_DOWN, BK_PENDING, PENDING, "", 0, PENDING, 0, 0},
    {ANS_DOWN, BK_EXPIRED, PENDING, "", 0, NULL, 0, 0},
    {ANS_DOWN, BK_CONFIRMED, "CONFIRMED", "", 0, "BOOKED", 0, 0},
    {ANS_DOWN, BK_FAILED, "FAILED", "declined", 0, "HELD", 0, 1},
    {ANS_DOWN, BK_LATE, "FAILED", "declined", 0, "HELD", 0, 1},
};

static const char *const answer_names[] = {"charged",    "declined", "not found", "not found late",
                                           "processing", "5xx",      "timeout",   "down"};
static const char *const state_names[] = {"pending", "hold expired", "confirmed", "failed",
                                          "failed, then charged"};

/* ---------------------------------------------------------------------------------------
 * Running one row
 * --------------------------------------------------------------------------------------- */

/* Calls of ZRANGE so far (INFO commandstats): one per hint bucket per reconcile round here (no
 * sweeper runs, and no script this test calls uses ZRANGE). */
static long long zrange_calls(redisContext *c)
{
    redisReply *r = seatd_test_redis_command(c, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    const char *p = strstr(r->str, "cmdstat_zrange:calls=");
    long long n = p ? atoll(p + strlen("cmdstat_zrange:calls=")) : 0;
    freeReplyObject(r);
    return n;
}

typedef struct {
    redisContext *c;
    long long want; /* ZRANGE calls to reach */
} rounds_wait_t;

static int rounds_reached(void *data)
{
    rounds_wait_t *w = data;
    return zrange_calls(w->c) >= w->want;
}

/* Runs the loop until the ZRANGE count reaches 'want'. */
static void wait_rounds(th_t *t, redisContext *c, long long want)
{
    rounds_wait_t w = {.c = c, .want = want};
    int rc = seatd_test_loop_poll_until(t->loop, rounds_reached, &w, 5, WAIT_MS);
    cr_assert_eq(rc, 0, "two reconcile rounds ended");
}

/* Whether the fake gateway reports charge 'data' (a booking id) in progress (409). */
static int gateway_processing(void *data)
{
    return gw_lookup(data, NULL) == 409;
}

static void on_slow_charge(const seatd_payment_result_t *res, void *data)
{
    (*(int *)data)++;
}

static void on_ping(const struct redisReply *reply, int err, void *data)
{
    (*(int *)data)++;
}

/* Runs the loop until every call queued on 't's one Redis connection so far has answered. */
static void drain_redis(th_t *t)
{
    int done = 0;
    const char *argv[] = {"PING"};
    cr_assert_eq(seatd_rds_callv(t->rds, 1, argv, NULL, on_ping, &done), 0);
    cr_assert_eq(seatd_test_loop_run_until(t->loop, &done, WAIT_MS), 0);
}

static void run_row(const row_t *row)
{
    const char *what_a = answer_names[row->answer], *what_s = state_names[row->state];
    seatd_test_redis_flushall();
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_log_set_level(SEATD_LOG_ERROR); /* the lookups that fail here on purpose warn */
    redisContext *c = seatd_test_redis_connect();
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);

    /* The booking, PENDING_PAYMENT. A hold that is to run out gets 200 ms and a payment
     * window shorter than that (the booking keeps the hold's deadline). */
    int expire = row->state == BK_EXPIRED;
    cr_assert_eq(th_hold(&t, &r, "1", "alice", seats, expire ? 200 : 60000, 10, NULL), 0);
    char hold[SEATD_ID_MAX], bid[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold, "alice", expire ? 10 : 600000), 0);
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    long long deadline = th_get_ll(&r, "expiresAt");
    if (row->state == BK_LATE) /* failed first: it leaves {s}:pending for {s}:failed */
        cr_assert_eq(th_book_fail(&t, &r, bid), 0); /* reason "declined" */

    /* What the gateway knows about it. */
    seatd_payment_t *slow = NULL;
    int slow_done = 0;
    switch (row->answer) {
    case ANS_CHARGED:
        cr_assert_eq(gw_charge(bid, "tok_ok"), 201);
        break;
    case ANS_DECLINED:
        cr_assert_eq(gw_charge(bid, "tok_declined"), 402);
        break;
    case ANS_PROCESSING: {
        char url[64];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw_port);
        slow = seatd_payment_new(t.loop, url, 600000);
        cr_assert_not_null(slow);
        cr_assert_eq(seatd_payment_charge(slow, bid, AMOUNT, "EUR", "tok_slow", NULL,
                                          on_slow_charge, &slow_done),
                     0);
        int rc = seatd_test_loop_poll_until(t.loop, gateway_processing, (void *)bid, 20, WAIT_MS);
        cr_assert_eq(rc, 0, "the gateway is processing the charge");
        break;
    }
    default:
        break;
    }

    /* The state the booking is in when the reconciler acts on it. */
    if (row->state == BK_CONFIRMED || row->state == BK_FAILED) {
        if (row->state == BK_CONFIRMED)
            cr_assert_eq(th_book_confirm(&t, &r, bid), 0);
        else
            cr_assert_eq(th_book_fail(&t, &r, bid), 0); /* reason "declined" */
        /* The entry as the reconciler read it, before the worker settled the booking. */
        cr_assert_eq(th_int(c, "ZADD {s:1}:pending 0 %s", bid), 1);
    }
    if (expire)
        cr_assert_eq(th_wait_redis_ms(c, deadline, WAIT_MS), 0, "the hold ran out");
    char hint[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_PENDING_SHOWS, "1"), 0);
    freeReplyObject(seatd_test_redis_command(c, "ZINCRBY %s 1 1", hint)); /* the worker's hint */

    /* The gateway the reconciler talks to. */
    bad_gw_t bad;
    int use_bad = row->answer == ANS_ERROR_5XX || row->answer == ANS_TIMEOUT;
    char url[64];
    if (use_bad) {
        bad_gw_start(&bad, t.loop, row->answer == ANS_TIMEOUT);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", bad.port);
    } else if (row->answer == ANS_DOWN) {
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", free_port());
    } else {
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw_port);
    }
    seatd_payment_t *pay = seatd_payment_new(t.loop, url, row->answer == ANS_TIMEOUT ? 300 : 10000);
    cr_assert_not_null(pay);

    /* Two whole rounds. */
    seatd_reconcile_opts_t o = {.interval_ms = 10,
                                .min_age_ms = 0,
                                .rescan_every = 1000000,
                                .horizon_ms = row->answer == ANS_NOT_FOUND ? 600000 : 0};
    long long base = zrange_calls(c);
    seatd_reconcile_t *rec = seatd_reconcile_new(t.loop, t.rds, t.store, pay, &o);
    cr_assert_not_null(rec);
    wait_rounds(&t, c, base + 2 * SEATD_HINT_BUCKETS + 1);
    unsigned long deferred = seatd_reconcile_deferred(rec);
    seatd_reconcile_close(rec);
    seatd_payment_close(pay); /* a lookup still hanging ends now, with "shutdown" */
    if (slow)
        seatd_payment_close(slow);
    drain_redis(&t);
    uv_run(t.loop, UV_RUN_NOWAIT);
    if (use_bad) {
        cr_assert_geq(bad.requests, 2, "%s/%s: asked in each round", what_a, what_s);
        bad_gw_stop(&bad);
    }

    /* The end state. */
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", bid), 1);
    cr_assert_str_eq(v, row->status, "%s/%s: booking %s, want %s", what_a, what_s, v, row->status);
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s reason", bid);
    cr_assert_str_eq(v, row->reason, "%s/%s: reason %s", what_a, what_s, v);
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refund", bid);
    cr_assert_eq(atoll(v), row->refunded, "%s/%s: refund recorded %s", what_a, what_s, v);
    if (row->refunded) {
        th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refundStatus", bid);
        cr_assert_str_eq(v, "succeeded", "%s/%s", what_a, what_s);
        cr_assert_eq(th_int(c, "ZSCORE {s:1}:refunds %s", bid), -1000, "no refund left owed");
    }
    if (row->hold) {
        cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s status", hold), 1);
        cr_assert_str_eq(v, row->hold, "%s/%s: hold %s, want %s", what_a, what_s, v, row->hold);
    }
    if (strcmp(row->status, "CONFIRMED") == 0)
        cr_assert_eq(th_int(c, "BITCOUNT {s:1}:booked"), 2, "%s/%s", what_a, what_s);
    else
        cr_assert_eq(th_int(c, "BITCOUNT {s:1}:booked"), 0, "%s/%s", what_a, what_s);
    if (row->state == BK_PENDING || row->state == BK_EXPIRED) {
        redisReply *z = seatd_test_redis_command(c, "ZSCORE {s:1}:pending %s", bid);
        int still = z && z->type != REDIS_REPLY_NIL;
        freeReplyObject(z);
        cr_assert_eq(still, strcmp(row->status, PENDING) == 0,
                     "%s/%s: in {s}:pending exactly while pending", what_a, what_s);
    }
    if (row->deferred)
        cr_assert_geq(deferred, 1, "%s/%s: the horizon deferred it", what_a, what_s);
    redisReply *z = seatd_test_redis_command(c, "ZSCORE {s:1}:failed %s", bid);
    int watched = z && z->type != REDIS_REPLY_NIL;
    freeReplyObject(z);
    cr_assert_eq(watched, row->watched, "%s/%s: in {s}:failed %d, want %d", what_a, what_s, watched,
                 row->watched);
    if (row->answer <= ANS_PROCESSING) {
        long long refunded = -1;
        int st = gw_lookup(bid, &refunded);
        if (st == 200)
            cr_assert_eq(refunded, row->refunded, "%s/%s: refunded at the gateway", what_a, what_s);
        cr_assert_eq(gw_refunds_of(bid), row->refunded ? 1 : 0, "%s/%s: refunded once", what_a,
                     what_s);
    }
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0, "%s/%s: nothing left open", what_a, what_s);
}

static void run_rows(answer_t answer)
{
    int n = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].answer == answer) {
            run_row(&rows[i]);
            n++;
        }
    cr_assert_eq(n, BK_STATES, "one row per booking state");
}

/* ---------------------------------------------------------------------------------------
 * One test per gateway answer, every booking state in each
 * --------------------------------------------------------------------------------------- */

Test(reconcile, a_charge_confirms_a_pending_booking_and_is_refunded_when_the_seats_are_gone)
{
    run_rows(ANS_CHARGED);
}

Test(reconcile, a_declined_charge_fails_a_pending_booking_and_leaves_a_settled_one)
{
    run_rows(ANS_DECLINED);
}

Test(reconcile, no_charge_within_the_horizon_leaves_the_booking_pending)
{
    run_rows(ANS_NOT_FOUND);
}

Test(reconcile, no_charge_past_the_horizon_fails_the_booking_as_never_completed)
{
    run_rows(ANS_NOT_FOUND_LATE);
}

Test(reconcile, a_charge_still_processing_leaves_the_booking_pending)
{
    run_rows(ANS_PROCESSING);
}

Test(reconcile, a_gateway_answering_5xx_leaves_the_booking_pending)
{
    run_rows(ANS_ERROR_5XX);
}

Test(reconcile, a_gateway_that_never_answers_leaves_the_booking_pending)
{
    run_rows(ANS_TIMEOUT);
}

Test(reconcile, a_gateway_that_is_down_leaves_the_booking_pending)
{
    run_rows(ANS_DOWN);
}

/* ---------------------------------------------------------------------------------------
 * A charge that lands after its booking failed, and nobody is left to see it
 * --------------------------------------------------------------------------------------- */

/* Runs a reconciler with charge horizon 'horizon_ms' against the fake gateway for two whole
 * rounds. */
static void reconcile_two_rounds(th_t *t, redisContext *c, long long horizon_ms)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw_port);
    seatd_payment_t *pay = seatd_payment_new(t->loop, url, 10000);
    cr_assert_not_null(pay);
    seatd_reconcile_opts_t o = {
        .interval_ms = 10, .min_age_ms = 0, .rescan_every = 1000000, .horizon_ms = horizon_ms};
    long long base = zrange_calls(c);
    seatd_reconcile_t *rec = seatd_reconcile_new(t->loop, t->rds, t->store, pay, &o);
    cr_assert_not_null(rec);
    wait_rounds(t, c, base + 2 * SEATD_HINT_BUCKETS + 1);
    seatd_reconcile_close(rec);
    seatd_payment_close(pay);
    drain_redis(t);
    uv_run(t->loop, UV_RUN_NOWAIT);
}

Test(reconcile, a_charge_landing_after_its_booking_failed_is_refunded_once_the_horizon_passed)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_log_set_level(SEATD_LOG_ERROR);
    redisContext *c = seatd_test_redis_connect();
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", seats, 60000, 10, NULL), 0);
    char hold[SEATD_ID_MAX], bid[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold, "alice", 600000), 0);
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    char hint[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_PENDING_SHOWS, "1"), 0);
    freeReplyObject(seatd_test_redis_command(c, "ZINCRBY %s 1 1", hint)); /* the worker's hint */

    /* The booking is failed while its charge request is still on its way; the worker that
     * sent it dies; then the charge lands. No worker records it, and the booking is no
     * longer in {s}:pending. */
    cr_assert_eq(th_book_fail(&t, &r, bid), 0);
    char v[128];
    cr_assert_eq(th_str(c, v, sizeof(v), "ZSCORE {s:1}:pending %s", bid), 0, "not pending");
    cr_assert_eq(gw_charge(bid, "tok_ok"), 201);

    /* Within the charge horizon: watched, not asked about yet, nothing refunded. */
    reconcile_two_rounds(&t, c, 600000);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", bid), 1);
    cr_assert_str_eq(v, "FAILED");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refund", bid), 0);
    cr_assert_eq(th_str(c, v, sizeof(v), "ZSCORE {s:1}:failed %s", bid), 1, "watched");
    cr_assert_eq(gw_refunds_of(bid), 0);

    /* Past it: asked about by its idempotency key, found charged, refunded whole, once. Two
     * reconcilers in a row (as many workers run one each) refund it once. */
    for (int i = 0; i < 2; i++)
        reconcile_two_rounds(&t, c, 0);
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", bid), 1);
    cr_assert_str_eq(v, "FAILED");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s reason", bid);
    cr_assert_str_eq(v, "declined+charged_late_refunded");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refund", bid);
    cr_assert_eq(atoll(v), AMOUNT, "the refund is recorded on the booking: %s", v);
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s refundStatus", bid);
    cr_assert_str_eq(v, "succeeded");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s lateCharge", bid);
    cr_assert(strncmp(v, "ch_", 3) == 0, "the late charge is named: %s", v);
    cr_assert_eq(th_str(c, v, sizeof(v), "ZSCORE {s:1}:failed %s", bid), 0, "not watched");
    cr_assert_eq(th_str(c, v, sizeof(v), "ZSCORE {s:1}:refunds %s", bid), 0, "nothing owed");
    long long refunded = -1;
    cr_assert_eq(gw_lookup(bid, &refunded), 200);
    cr_assert_eq(refunded, AMOUNT, "refunded in full at the gateway");
    cr_assert_eq(gw_refunds_of(bid), 1, "refunded once");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:hold:%s status", hold), 1);
    cr_assert_str_eq(v, "HELD", "the seats stay the buyer's until the hold ends");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* A charge found late whose refund cannot even be asked for (the gateway says it charged 0;
 * or the payment client refuses the call at once: too many in flight, a charge id it does not
 * take) ends that booking's turn, and only that: the reconciler's count of calls in flight was
 * decremented twice there, wrapped around, and no round ever ran again. */
Test(reconcile, a_late_charge_whose_refund_cannot_start_does_not_stop_the_rounds)
{
    seatd_test_redis_flushall();
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    seatd_log_set_level(SEATD_LOG_ERROR);
    redisContext *c = seatd_test_redis_connect();
    const char *seats[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats, 60000), 0);
    cr_assert_eq(th_hold(&t, &r, "1", "alice", seats, 60000, 10, NULL), 0);
    char hold[SEATD_ID_MAX], bid[SEATD_ID_MAX];
    snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_book_begin(&t, &r, "1", hold, "alice", 600000), 0);
    snprintf(bid, sizeof(bid), "%s", th_get(&r, "bookingId"));
    cr_assert_eq(th_book_fail(&t, &r, bid), 0); /* FAILED: watched for a late charge */
    th_res_clear(&r);
    char hint[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show_hint(hint, SEATD_KEY_PENDING_SHOWS, "1"), 0);
    freeReplyObject(seatd_test_redis_command(c, "ZINCRBY %s 1 1", hint));

    bad_gw_t gw;
    bad_gw_start(&gw, t.loop, 2);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", gw.port);
    seatd_payment_t *pay = seatd_payment_new(t.loop, url, 10000);
    cr_assert_not_null(pay);
    seatd_reconcile_opts_t o = {
        .interval_ms = 10, .min_age_ms = 0, .rescan_every = 1000000, .horizon_ms = 0};
    long long base = zrange_calls(c);
    seatd_reconcile_t *rec = seatd_reconcile_new(t.loop, t.rds, t.store, pay, &o);
    cr_assert_not_null(rec);
    wait_rounds(&t, c, base + 4 * SEATD_HINT_BUCKETS + 1); /* rounds go on after it */
    seatd_reconcile_close(rec);
    seatd_payment_close(pay);
    drain_redis(&t);
    uv_run(t.loop, UV_RUN_NOWAIT);
    cr_assert_geq(gw.requests, 2, "the gateway was asked again in later rounds");
    bad_gw_stop(&gw);

    char v[64];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s status", bid), 1);
    cr_assert_str_eq(v, "FAILED");
    th_str(c, v, sizeof(v), "HGET {s:1}:booking:%s lateCharge", bid);
    cr_assert_str_eq(v, "ch_zero000", "the late charge is on record");
    redisFree(c);
    cr_assert_eq(th_close(&t), 0);
}
