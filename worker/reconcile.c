/* reconcile.c - settles PENDING_PAYMENT bookings and unconfirmed refunds; see reconcile.h. */
#include "reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "hints.h"
#include "keys.h"
#include "log.h"
#include "mem.h"
#include "metrics.h"
#include "payment.h"
#include "rds.h"
#include "store.h"

#define DUE_BATCH 20       /* due entries per show per tick */
#define HINT_PAGE "199"    /* hinted shows read per bucket per tick (ZRANGE 0..199) */
#define CATALOGUE_PAGE 100 /* catalogue shows checked per rescan */

struct seatd_reconcile_s {
    uv_timer_t timer;
    seatd_rds_t *rds;         /* borrowed */
    seatd_store_t *store;     /* borrowed */
    seatd_payment_t *payment; /* borrowed */
    seatd_reconcile_opts_t o;
    unsigned inflight; /* operations whose callback has not run yet */
    int closing;
    int timer_closed;
    unsigned long ticks;
    unsigned long settled;
    unsigned long deferred; /* lookups left pending within the charge horizon */
    long cursor;            /* next catalogue offset */
    long long pass_pending; /* entries left on the hinted shows, summed over this pass */
    int pass_counted;       /* this pass read the hint set: publish 'pass_pending' at its end */
};

/* One show being checked. */
typedef struct {
    seatd_reconcile_t *rc;
    char show[SEATD_ID_MAX];
    char score[32]; /* the hint's score as read, "" when found by the catalogue */
} check_t;

/* One booking being settled (a chain of gateway and store calls). */
typedef struct {
    seatd_reconcile_t *rc;
    char bid[SEATD_ID_MAX];
    char key[SEATD_ID_MAX + 8]; /* refund idempotency key */
    char charge[64];
    long long amount; /* charged amount (lookup) or refund to make (cancel) */
} job_t;

static void maybe_free(seatd_reconcile_t *rc)
{
    if (rc->closing && rc->timer_closed && rc->inflight == 0)
        free(rc);
}

/* Counts the end of one operation; may free 'rc'. */
static void op_done(seatd_reconcile_t *rc)
{
    if (--rc->inflight == 0 && rc->pass_counted && !rc->closing) {
        seatd_metrics_gauge_set(SEATD_GAUGE_PAYMENTS_PENDING, rc->pass_pending);
        rc->pass_counted = 0;
    }
    maybe_free(rc);
}

/* Bookkeeping for a call that returned 'code': 1 if it was started (its callback will run). */
static int started(seatd_reconcile_t *rc, int code)
{
    if (code < 0)
        return 0;
    rc->inflight++;
    return 1;
}

/* Returns an owned job for booking 'bid' (borrowed); freed by job_end() once started. */
static job_t *job_new(seatd_reconcile_t *rc, const char *bid)
{
    job_t *j = seatd_calloc(1, sizeof(*j));
    j->rc = rc;
    snprintf(j->bid, sizeof(j->bid), "%s", bid);
    return j;
}

static void job_end(job_t *j)
{
    seatd_reconcile_t *rc = j->rc;
    free(j);
    op_done(rc);
}

/* --------------------------------------------------------------------- settling a booking */

static void on_failed(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    if (res->err == 0 && strcmp(res->booking.status, "PENDING_PAYMENT") == 0) {
        /* Not charged yet, but within the charge horizon: look again next tick. */
        j->rc->deferred++;
        seatd_metrics_inc(SEATD_METRIC_RECONCILE_DEFERRED);
        seatd_log(SEATD_LOG_DEBUG, NULL, "reconcile: no charge yet, within the horizon",
                  "\"booking\":\"%s\"", j->bid);
    } else if (res->err == 0) {
        j->rc->settled++;
        seatd_metrics_inc(SEATD_METRIC_RECONCILE_FAILED);
        seatd_log(SEATD_LOG_INFO, NULL, "reconciled booking",
                  "\"booking\":\"%s\",\"status\":"
                  "\"FAILED\"",
                  j->bid);
    } else {
        seatd_log(SEATD_LOG_WARN, NULL, "reconcile: book_fail failed",
                  "\"booking\":\"%s\",\"err\":%d", j->bid, res->err);
    }
    job_end(j);
}

static void fail_refunded(job_t *j, long long refund)
{
    seatd_reconcile_t *rc = j->rc;
    if (!rc->closing &&
        started(rc, seatd_store_book_fail_refunded(rc->store, j->bid, "seats_lost_refunded", refund,
                                                   j->key, on_failed, j))) {
        op_done(rc); /* the refund step ends; the store call carries the job on */
        return;
    }
    job_end(j);
}

static void on_lost_refund(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    if (res->outcome == SEATD_PAY_APPROVED) {
        fail_refunded(j, res->amount ? res->amount : j->amount);
        return;
    }
    if (res->outcome == SEATD_PAY_DECLINED && strcmp(res->code, "charge_already_refunded") == 0) {
        fail_refunded(j, j->amount);
        return;
    }
    seatd_log(SEATD_LOG_WARN, NULL, "reconcile: refund not confirmed; will retry",
              "\"booking\":\"%s\",\"code\":\"%s\"", j->bid, res->code);
    job_end(j);
}

static int refund_late(job_t *j);

static void on_late_recorded(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    if (res->err == 0 && strcmp(res->booking.refund_status, "pending") == 0) {
        if (refund_late(j))
            op_done(rc); /* this step ends; the refund carries the job on */
        return;          /* not started: refund_late ended the job, and this step with it */
    }
    job_end(j); /* already refunded, or not FAILED after all */
}

/* A charge landed for a booking already FAILED: the refund owed is written down first
 * (seatd_late_charge), then asked for; {s}:refunds keeps it until it is recorded. */
static void record_late_charge(job_t *j)
{
    seatd_reconcile_t *rc = j->rc;
    seatd_log(SEATD_LOG_WARN, NULL,
              "reconcile: a charge landed after the booking failed; refunding",
              "\"booking\":\"%s\",\"charge\":\"%s\"", j->bid, j->charge);
    if (!rc->closing &&
        started(rc, seatd_store_late_charge(rc->store, j->bid, j->charge, on_late_recorded, j))) {
        op_done(rc);
        return;
    }
    job_end(j);
}

static void on_confirmed(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    if (res->err == SEATD_ESTATE && res->nwords > 0 && strcmp(res->words[0], "FAILED") == 0) {
        record_late_charge(j);
        return;
    }
    if (res->err == SEATD_EEXPIRED) {
        /* Charged, but the seats are gone: give the whole charge back, once (by key). */
        snprintf(j->key, sizeof(j->key), "refund-%s", j->bid);
        if (!rc->closing &&
            started(rc, seatd_payment_refund(rc->payment, j->key, j->charge, j->amount,
                                             "seats_lost", on_lost_refund, j))) {
            op_done(rc);
            return;
        }
    } else if (res->err == 0) {
        rc->settled++;
        seatd_metrics_inc(SEATD_METRIC_RECONCILE_CONFIRMED);
        seatd_log(SEATD_LOG_INFO, NULL, "reconciled booking",
                  "\"booking\":\"%s\",\"status\":\"CONFIRMED\"", j->bid);
    }
    job_end(j);
}

static void on_lookup(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    int code = SEATD_ESHUTDOWN;
    if (!rc->closing) {
        switch (res->outcome) {
        case SEATD_PAY_APPROVED:
            snprintf(j->charge, sizeof(j->charge), "%s", res->charge_id);
            j->amount = res->amount;
            code = seatd_store_book_confirm(rc->store, j->bid, j->charge, on_confirmed, j);
            break;
        case SEATD_PAY_DECLINED:
            code = seatd_store_book_fail(rc->store, j->bid, res->code[0] ? res->code : "declined",
                                         on_failed, j);
            break;
        case SEATD_PAY_NOT_FOUND:
            /* Not final before the horizon: a charge sent late can still land until then. */
            code = seatd_store_book_fail_after(rc->store, j->bid, "payment_not_completed",
                                               rc->o.horizon_ms, on_failed, j);
            break;
        default:
            break; /* unknown, or still processing: next tick */
        }
    }
    if (started(rc, code)) {
        op_done(rc);
        return;
    }
    job_end(j);
}

/* ------------------------------------------------ a FAILED booking past the charge horizon */

static void on_late_cleared(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    if (res->err == 0)
        seatd_log(SEATD_LOG_DEBUG, NULL, "reconcile: no late charge past the horizon",
                  "\"booking\":\"%s\"", j->bid);
    job_end(j);
}

static void on_late_lookup(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    if (!rc->closing && res->outcome == SEATD_PAY_APPROVED) {
        /* The charge landed after the booking failed: refund it whole, on record first. */
        snprintf(j->charge, sizeof(j->charge), "%s", res->charge_id);
        j->amount = res->amount;
        record_late_charge(j);
        return;
    }
    if (!rc->closing &&
        (res->outcome == SEATD_PAY_NOT_FOUND || res->outcome == SEATD_PAY_DECLINED) &&
        started(rc, seatd_store_late_clear(rc->store, j->bid, on_late_cleared, j))) {
        op_done(rc); /* the lookup step ends; the store call carries the job on */
        return;
    }
    job_end(j); /* unknown, or still processing: next tick */
}

/* Asks the gateway for the charge of booking 'bid' (by the booking id, the charge's
 * idempotency key); 'cb' carries the job on. */
static void ask_gateway(seatd_reconcile_t *rc, const char *bid, seatd_payment_cb cb)
{
    job_t *j = job_new(rc, bid);
    if (!started(rc, seatd_payment_lookup(rc->payment, bid, cb, j)))
        free(j);
}

/* A PENDING_PAYMENT booking: confirm, refund or fail it by what the gateway says. */
static void settle(seatd_reconcile_t *rc, const char *bid)
{
    ask_gateway(rc, bid, on_lookup);
}

/* A FAILED booking past its charge horizon: did its charge land after all? The answer is
 * final unless it is unknown. */
static void watch_late(seatd_reconcile_t *rc, const char *bid)
{
    ask_gateway(rc, bid, on_late_lookup);
}

/* ------------------------------------------------------------ retrying a cancel's refund */

static void on_refund_recorded(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    if (res->err == 0) {
        j->rc->settled++;
        seatd_metrics_inc(SEATD_METRIC_RECONCILE_REFUNDED);
        seatd_log(SEATD_LOG_INFO, NULL, "reconciled refund", "\"booking\":\"%s\"", j->bid);
    }
    job_end(j);
}

static void on_cancel_refund(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    if (!rc->closing &&
        (res->outcome == SEATD_PAY_APPROVED ||
         (res->outcome == SEATD_PAY_DECLINED &&
          strcmp(res->code, "charge_already_refunded") == 0)) &&
        started(rc, seatd_store_refund_done(rc->store, j->bid, j->key, on_refund_recorded, j))) {
        op_done(rc);
        return;
    }
    job_end(j);
}

/* Refunds the whole charge 'j->charge' of a FAILED booking under "refund-<bookingId>" (the
 * key the worker uses for the same charge, so the gateway refunds once). Returns 1 when the
 * refund was started (its callback carries the job on), or 0 when it could not be (nothing
 * to refund, closing, or refused at once): then the job has ended here (job_end: the step
 * that called this one is done, and 'j' and perhaps the reconciler are gone). */
static int refund_late(job_t *j)
{
    seatd_reconcile_t *rc = j->rc;
    snprintf(j->key, sizeof(j->key), "refund-%s", j->bid);
    if (!rc->closing && j->amount > 0 &&
        started(rc, seatd_payment_refund(rc->payment, j->key, j->charge, j->amount, "charged_late",
                                         on_lost_refund, j)))
        return 1;
    job_end(j);
    return 0;
}

static void on_cancelled_booking(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    const seatd_booking_result_t *b = &res->booking;
    const char *st = b->status, *rs = b->refund_status, *ref = b->payment_ref;
    const char *late = b->late_charge;
    if (!rc->closing && res->err == 0 && strcmp(st, "FAILED") == 0 && strcmp(rs, "pending") == 0 &&
        late[0]) {
        /* A late charge recorded by seatd_late_charge: refund it whole. */
        j->amount = b->amount;
        snprintf(j->charge, sizeof(j->charge), "%s", late);
        if (refund_late(j))
            op_done(rc); /* the lookup step ends; the refund carries the job on */
        return;          /* not started: refund_late ended the job, and this step with it */
    }
    if (!rc->closing && res->err == 0 && strcmp(st, "CANCELLED") == 0 &&
        strcmp(rs, "pending") == 0 && ref[0]) {
        j->amount = b->refund;
        snprintf(j->charge, sizeof(j->charge), "%s", ref);
        snprintf(j->key, sizeof(j->key), "cancel-%s", j->bid);
        if (j->amount > 0 &&
            started(rc, seatd_payment_refund(rc->payment, j->key, j->charge, j->amount, "cancelled",
                                             on_cancel_refund, j))) {
            op_done(rc);
            return;
        }
    }
    job_end(j);
}

static void retry_refund(seatd_reconcile_t *rc, const char *bid)
{
    job_t *j = job_new(rc, bid);
    if (!started(rc, seatd_store_booking_get(rc->store, bid, NULL, on_cancelled_booking, j)))
        free(j);
}

/* --------------------------------------------------------------------- checking a show */

static void on_hint_cleared(const seatd_store_result_t *res, void *data)
{
    check_t *c = data;
    seatd_reconcile_t *rc = c->rc;
    free(c);
    op_done(rc);
}

static void on_due(const seatd_store_result_t *res, void *data)
{
    check_t *c = data;
    seatd_reconcile_t *rc = c->rc;
    if (res->err == 0 && !rc->closing) {
        if (c->score[0])
            rc->pass_pending += res->pending.remaining;
        for (size_t i = 0; i < res->pending.nbookings; i++)
            settle(rc, res->pending.bookings[i]);
        for (size_t i = 0; i < res->pending.nrefunds; i++)
            retry_refund(rc, res->pending.refunds[i]);
        for (size_t i = 0; i < res->pending.nlate; i++)
            watch_late(rc, res->pending.late[i]);
        if (c->score[0] && res->pending.remaining == 0 &&
            started(rc, seatd_store_hint_clear(rc->store, c->show, c->score, on_hint_cleared, c))) {
            op_done(rc);
            return;
        }
    }
    free(c);
    op_done(rc);
}

static void check_show(seatd_reconcile_t *rc, const char *show, const char *score)
{
    if (!seatd_keys_valid_show_id(show))
        return;
    check_t *c = seatd_calloc(1, sizeof(*c));
    c->rc = rc;
    snprintf(c->show, sizeof(c->show), "%s", show);
    snprintf(c->score, sizeof(c->score), "%s", score ? score : "");
    if (!started(rc, seatd_store_pending_due(rc->store, show, rc->o.min_age_ms, rc->o.horizon_ms,
                                             DUE_BATCH, on_due, c)))
        free(c);
}

static void on_hints(const struct redisReply *reply, int err, void *data)
{
    seatd_reconcile_t *rc = data;
    size_t n = err ? 0 : seatd_rds_reply_elements(reply);
    rc->pass_counted = !err;
    for (size_t i = 0; i + 1 < n && !rc->closing; i += 2) {
        const char *show = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
        const char *score = seatd_rds_reply_str(seatd_rds_reply_element(reply, i + 1), NULL);
        if (show && score)
            check_show(rc, show, score);
    }
    op_done(rc);
}

static void on_catalogue(const struct redisReply *reply, int err, void *data)
{
    seatd_reconcile_t *rc = data;
    size_t n = err ? 0 : seatd_rds_reply_elements(reply);
    for (size_t i = 0; i < n && !rc->closing; i++) {
        const char *show = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
        if (show)
            check_show(rc, show, NULL);
    }
    rc->cursor = n < CATALOGUE_PAGE ? 0 : rc->cursor + (long)n;
    op_done(rc);
}

static void on_tick(uv_timer_t *t)
{
    seatd_reconcile_t *rc = t->data;
    if (rc->closing || rc->inflight > 0)
        return; /* one pass at a time */
    rc->ticks++;
    rc->pass_pending = 0;
    rc->pass_counted = 0;
    seatd_metrics_inc(SEATD_METRIC_RECONCILE_RUN);
    for (int b = 0; b < SEATD_HINT_BUCKETS; b++) { /* every bucket of the hint set */
        char key[SEATD_KEY_MAX];
        if (seatd_keys_hint(key, SEATD_KEY_PENDING_SHOWS, b) < 0)
            continue;
        const char *hargv[] = {"ZRANGE", key, "0", HINT_PAGE, "WITHSCORES"};
        started(rc, seatd_rds_callv(rc->rds, 5, hargv, NULL, on_hints, rc));
    }
    if (rc->ticks % (unsigned long)rc->o.rescan_every == 0) {
        char from[24], to[24];
        snprintf(from, sizeof(from), "%ld", rc->cursor);
        snprintf(to, sizeof(to), "%ld", rc->cursor + CATALOGUE_PAGE - 1);
        const char *cargv[] = {"ZRANGE", SEATD_KEY_CATALOGUE, from, to};
        started(rc, seatd_rds_callv(rc->rds, 4, cargv, NULL, on_catalogue, rc));
    }
}

/* --------------------------------------------------------------------- lifecycle */

seatd_reconcile_t *seatd_reconcile_new(uv_loop_t *loop, seatd_rds_t *rds, seatd_store_t *store,
                                       seatd_payment_t *payment, const seatd_reconcile_opts_t *opts)
{
    if (loop == NULL || rds == NULL || store == NULL || payment == NULL || opts == NULL ||
        opts->interval_ms <= 0 || opts->min_age_ms < 0 || opts->rescan_every < 1 ||
        opts->horizon_ms < 0)
        return NULL;
    seatd_reconcile_t *rc = seatd_calloc(1, sizeof(*rc));
    rc->rds = rds;
    rc->store = store;
    rc->payment = payment;
    rc->o = *opts;
    uv_timer_init(loop, &rc->timer);
    rc->timer.data = rc;
    uv_timer_start(&rc->timer, on_tick, (uint64_t)opts->interval_ms, (uint64_t)opts->interval_ms);
    return rc;
}

static void on_timer_closed(uv_handle_t *h)
{
    seatd_reconcile_t *rc = h->data;
    rc->timer_closed = 1;
    maybe_free(rc);
}

void seatd_reconcile_close(seatd_reconcile_t *rc)
{
    if (rc == NULL || rc->closing)
        return;
    rc->closing = 1;
    uv_timer_stop(&rc->timer);
    uv_close((uv_handle_t *)&rc->timer, on_timer_closed);
}

unsigned long seatd_reconcile_settled(const seatd_reconcile_t *rc)
{
    return rc ? rc->settled : 0;
}

unsigned long seatd_reconcile_deferred(const seatd_reconcile_t *rc)
{
    return rc ? rc->deferred : 0;
}

/* ---------------------------------------------------------------------------------------
 * Waiting for a payment in flight to settle (a retried POST /v1/bookings)
 * --------------------------------------------------------------------------------------- */

typedef struct settle_wait_s {
    uv_timer_t timer;     /* first member: the handle is the allocation */
    seatd_store_t *store; /* borrowed */
    char booking_id[SEATD_ID_MAX];
    uint64_t until_ms;     /* loop time */
    int (*wanted)(void *); /* may be NULL */
    seatd_store_cb cb;
    void *data;
} settle_wait_t;

static void settle_wait_free(uv_handle_t *h)
{
    free(h);
}

/* Runs the callback once with 'res' and closes the wait. */
static void settle_wait_end(settle_wait_t *w, const seatd_store_result_t *res)
{
    w->cb(res, w->data);
    uv_close((uv_handle_t *)&w->timer, settle_wait_free);
}

static void on_settle_read(const seatd_store_result_t *res, void *data);

static void on_settle_timer(uv_timer_t *t)
{
    settle_wait_t *w = (settle_wait_t *)t;
    int rc = SEATD_EUNAVAILABLE;
    if (w->wanted == NULL || w->wanted(w->data))
        rc = seatd_store_booking_get(w->store, w->booking_id, NULL, on_settle_read, w);
    if (rc < 0) {
        seatd_store_result_t res = {.err = rc, .detail = ""};
        settle_wait_end(w, &res);
    }
}

static void on_settle_read(const seatd_store_result_t *res, void *data)
{
    settle_wait_t *w = data;
    if (res->err == 0 && strcmp(res->booking.status, "PENDING_PAYMENT") == 0 &&
        uv_now(w->timer.loop) < w->until_ms) {
        uv_timer_start(&w->timer, on_settle_timer, SEATD_RECONCILE_WAIT_POLL_MS, 0);
        return;
    }
    settle_wait_end(w, res);
}

int seatd_reconcile_wait_settled(uv_loop_t *loop, seatd_store_t *store, const char *booking_id,
                                 uint64_t until_ms, int (*wanted)(void *data), seatd_store_cb cb,
                                 void *data)
{
    char show[SEATD_ID_MAX];
    if (loop == NULL || store == NULL || cb == NULL ||
        seatd_keys_parse_id(booking_id, 'b', show) < 0)
        return SEATD_EINVAL;
    settle_wait_t *w = seatd_calloc(1, sizeof(*w));
    w->store = store;
    snprintf(w->booking_id, sizeof(w->booking_id), "%s", booking_id);
    w->until_ms = until_ms;
    w->wanted = wanted;
    w->cb = cb;
    w->data = data;
    uv_timer_init(loop, &w->timer);
    uv_timer_start(&w->timer, on_settle_timer, SEATD_RECONCILE_WAIT_POLL_MS, 0);
    return 0;
}

void seatd_reconcile_hint(seatd_rds_t *rds, const char *show_id)
{
    seatd_hints_pending(rds, show_id);
}
