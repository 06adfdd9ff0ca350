/* reconcile.c - settles PENDING_PAYMENT bookings and unconfirmed refunds; see reconcile.h. */
#include "flows/reconcile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "flows/booking.h"
#include "store/hints.h"
#include "domain/keys.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "clients/payment.h"
#include "clients/rds.h"
#include "store/store.h"

#define LEDGER_PAGE 100         /* charges asked for per page of the ledger */
#define LEDGER_PAGES_PER_RUN 20 /* pages walked at most per period */
#define DUE_BATCH 20            /* due entries per show per tick */
#define HINT_PAGE "199"         /* hinted shows read per bucket per tick (ZRANGE 0..199) */
#define CATALOGUE_PAGE 100      /* catalogue shows checked per rescan */

struct seatd_reconcile_s {
    uv_timer_t timer;
    uv_timer_t ledger_timer;  /* the ledger walk's period */
    seatd_rds_t *rds;         /* borrowed */
    seatd_store_t *store;     /* borrowed */
    seatd_payment_t *payment; /* borrowed */
    seatd_booking_ctx_t flow; /* the booking flow every settlement goes through */
    seatd_reconcile_opts_t o;
    unsigned inflight; /* operations whose callback has not run yet (the walk's included) */
    unsigned walk_ops; /* of which the ledger walk's */
    int closing;
    int timer_closed;
    int ledger_timer_closed;
    int walking;                  /* a walk of the ledger is under way */
    unsigned long ledger_refunds; /* charges the walk refunded */
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

/* One booking being looked at: a gateway lookup or a read, then the booking flow. */
typedef struct {
    seatd_reconcile_t *rc;
    char bid[SEATD_ID_MAX];
} job_t;

static void maybe_free(seatd_reconcile_t *rc)
{
    if (rc->closing && rc->timer_closed && rc->ledger_timer_closed && rc->inflight == 0)
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

/* A step of 'j' that returned 'code' carries the job on (1: its callback will run), or the
 * job ends here (0). Callers do not start steps once the reconciler is closing. */
static int job_step(job_t *j, int code)
{
    if (started(j->rc, code)) {
        op_done(j->rc); /* the step that called this one ends; the new one carries the job */
        return 1;
    }
    job_end(j);
    return 0;
}

/* --------------------------------------------------------------------- settling a booking */

/* The booking flow ended (flows/booking.h): counted and logged by what it did. */
static void on_settled(const seatd_booking_end_t *end, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    static const int metric[] = {
        [SEATD_BOOKING_CONFIRMED] = SEATD_METRIC_RECONCILE_CONFIRMED,
        [SEATD_BOOKING_PENDING] = SEATD_METRIC_RECONCILE_PENDING,
        [SEATD_BOOKING_DECLINED] = SEATD_METRIC_RECONCILE_FAILED,
        [SEATD_BOOKING_REFUNDED] = SEATD_METRIC_RECONCILE_REFUNDED,
        [SEATD_BOOKING_REFUND_OWED] = SEATD_METRIC_RECONCILE_PENDING,
        [SEATD_BOOKING_FAILED] = SEATD_METRIC_RECONCILE_FAILED,
        [SEATD_BOOKING_DEFERRED] = SEATD_METRIC_RECONCILE_DEFERRED,
        [SEATD_BOOKING_REPLAYED] = SEATD_METRIC_RECONCILE_PENDING,
        [SEATD_BOOKING_REFUSED] = SEATD_METRIC_RECONCILE_PENDING,
        [SEATD_BOOKING_CANCELLED] = SEATD_METRIC_RECONCILE_REFUNDED,
    };
    seatd_metrics_inc(metric[end->outcome]);
    switch (end->outcome) {
    case SEATD_BOOKING_CONFIRMED:
    case SEATD_BOOKING_DECLINED:
    case SEATD_BOOKING_REFUNDED:
    case SEATD_BOOKING_FAILED:
    case SEATD_BOOKING_CANCELLED:
        rc->settled++;
        seatd_log(SEATD_LOG_INFO, NULL, "reconciled booking",
                  "\"booking\":\"%s\",\"outcome\":\"%s\"", j->bid,
                  seatd_booking_outcome_name(end->outcome));
        break;
    case SEATD_BOOKING_DEFERRED:
        rc->deferred++; /* not charged yet, within the horizon: next tick */
        break;
    default:
        break; /* still pending: next tick */
    }
    job_end(j);
}

/* What the gateway says of a PENDING_PAYMENT booking's charge settles it (the flow). */
static void on_lookup(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    if (j->rc->closing) {
        job_end(j);
        return;
    }
    job_step(j, seatd_booking_settle(&j->rc->flow, j->bid, res, NULL, on_settled, j));
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

/* A charge that landed after its booking failed is settled by the flow (its confirm finds the
 * booking FAILED: the refund is written down, then made); none landed: the watch ends. */
static void on_late_lookup(const seatd_payment_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    if (rc->closing) {
        job_end(j);
        return;
    }
    if (res->outcome == SEATD_PAY_APPROVED) {
        job_step(j, seatd_booking_settle(&rc->flow, j->bid, res, NULL, on_settled, j));
        return;
    }
    if (res->outcome == SEATD_PAY_NOT_FOUND || res->outcome == SEATD_PAY_DECLINED) {
        job_step(j, seatd_store_late_clear(rc->store, j->bid, on_late_cleared, j));
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

/* ------------------------------------------------- refunds owed: late charges, cancellations */

static void on_refund_owed(const seatd_store_result_t *res, void *data)
{
    job_t *j = data;
    seatd_reconcile_t *rc = j->rc;
    const seatd_booking_result_t *b = &res->booking;
    const char *ref = b->payment_ref;
    int refund_owed = res->err == 0 && b->refund_state == SEATD_REFUND_ST_PENDING;
    if (rc->closing) {
        job_end(j);
        return;
    }
    if (refund_owed && b->state == SEATD_BOOKING_ST_FAILED && b->late_charge[0]) {
        /* A late charge or a lost booking's charge, on record: the flow refunds it whole. */
        job_step(j, seatd_booking_refund_owed(&rc->flow, j->bid, b->late_charge, b->amount,
                                              on_settled, j));
        return;
    }
    if (refund_owed && b->state == SEATD_BOOKING_ST_CANCELLED && ref[0] && b->refund > 0) {
        /* A cancellation's refund by the show's policy, under "cancel-<bookingId>". */
        job_step(j, seatd_booking_refund_cancel(&rc->flow, j->bid, ref, b->refund, on_settled, j));
        return;
    }
    job_end(j);
}

static void retry_refund(seatd_reconcile_t *rc, const char *bid)
{
    job_t *j = job_new(rc, bid);
    if (!started(rc, seatd_store_booking_get(rc->store, bid, NULL, on_refund_owed, j)))
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
            ask_gateway(rc, res->pending.bookings[i], on_lookup);
        for (size_t i = 0; i < res->pending.nrefunds; i++)
            retry_refund(rc, res->pending.refunds[i]);
        for (size_t i = 0; i < res->pending.nlate; i++)
            ask_gateway(rc, res->pending.late[i], on_late_lookup);
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
    if (rc->closing || rc->inflight > rc->walk_ops)
        return; /* one pass at a time (the ledger walk goes at its own pace) */
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

/* ---------------------------------------------------------------------------------------
 * The ledger walk: the gateway's charges, oldest first, from the cursor on. A succeeded
 * charge, not refunded whole, at least the grace period old, whose booking is missing or
 * neither CONFIRMED nor CANCELLED, is settled by the booking flow: confirmed if it still can
 * be, refunded otherwise (a missing booking is written down FAILED first, so that its buyer
 * sees the refund). The cursor moves past a charge once nothing is owed on it.
 * --------------------------------------------------------------------------------------- */

typedef struct walk_s walk_t;

/* One charge of a page, copied out of the gateway's answer. */
typedef struct {
    walk_t *w;
    char id[64];            /* "ch_…" */
    char bid[SEATD_ID_MAX]; /* its idempotency key: the booking id */
    char owner[65], hold[SEATD_ID_MAX], currency[8];
    char *seats; /* owned */
    long long amount, refunded;
    int done; /* nothing is owed on it (any more) */
} walk_item_t;

struct walk_s {
    seatd_reconcile_t *rc;
    walk_item_t *items;
    size_t n;      /* items on this page */
    size_t looked; /* items looked at (the rest are younger than the grace period) */
    size_t left;   /* lookups still running */
    int has_more;
    int pages; /* pages walked in this run */
};

static void walk_next_page(seatd_reconcile_t *rc, const char *after, int pages);

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts the end of one walk operation; may free 'rc'. */
static void walk_op_done(seatd_reconcile_t *rc)
{
    rc->walk_ops--;
    op_done(rc);
}

static int walk_started(seatd_reconcile_t *rc, int code)
{
    if (!started(rc, code))
        return 0;
    rc->walk_ops++;
    return 1;
}

static void walk_end_run(seatd_reconcile_t *rc)
{
    rc->walking = 0;
}

static void walk_free(walk_t *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->items[i].seats);
    free(w->items);
    free(w);
}

static void on_cursor_set(const struct redisReply *reply, int err, void *data)
{
    seatd_reconcile_t *rc = data;
    (void)reply;
    (void)err;
    walk_op_done(rc);
}

/* Every lookup of the page is back: the cursor moves past the charges settled in a row, and
 * the next page follows when this one was settled whole. */
static void walk_page_done(walk_t *w)
{
    seatd_reconcile_t *rc = w->rc;
    size_t k = 0;
    while (k < w->looked && w->items[k].done)
        k++;
    char after[64] = "";
    if (k > 0) {
        snprintf(after, sizeof(after), "%s", w->items[k - 1].id);
        const char *argv[] = {"SET", SEATD_KEY_LEDGER_CURSOR, after};
        walk_started(rc, seatd_rds_callv(rc->rds, 3, argv, NULL, on_cursor_set, rc));
    }
    int more =
        !rc->closing && k == w->n && w->n > 0 && w->has_more && w->pages < LEDGER_PAGES_PER_RUN;
    int pages = w->pages;
    walk_free(w);
    if (more)
        walk_next_page(rc, after, pages);
    else
        walk_end_run(rc);
}

/* Item 'it' is settled ('done': nothing is owed on it any more) or left for the next run; the
 * page ends with its last item (which frees 'it'). */
static void walk_item_end(walk_item_t *it, int done)
{
    walk_t *w = it->w;
    it->done = done;
    if (--w->left == 0)
        walk_page_done(w);
}

static void on_walk_settled(const seatd_booking_end_t *end, void *data)
{
    walk_item_t *it = data;
    seatd_reconcile_t *rc = it->w->rc;
    int done = end->outcome == SEATD_BOOKING_CONFIRMED || end->outcome == SEATD_BOOKING_REFUNDED;
    if (end->outcome == SEATD_BOOKING_REFUNDED) {
        rc->ledger_refunds++;
        seatd_metrics_inc(SEATD_METRIC_LEDGER_REFUNDED);
        seatd_log(SEATD_LOG_WARN, NULL, "ledger walk: charge refunded, its booking not confirmed",
                  "\"booking\":\"%s\",\"charge\":\"%s\",\"owner\":\"%s\",\"amount\":%lld", it->bid,
                  it->id, it->owner, it->amount);
    } else if (end->outcome == SEATD_BOOKING_CONFIRMED) {
        seatd_log(SEATD_LOG_WARN, NULL, "ledger walk: a charged booking confirmed",
                  "\"booking\":\"%s\",\"charge\":\"%s\"", it->bid, it->id);
    }
    walk_item_end(it, done);
    walk_op_done(rc);
}

/* The charges of one page whose bookings are of one show: their statuses are read in one call. */
typedef struct {
    size_t n;
    walk_item_t *items[LEDGER_PAGE];
} walk_batch_t;

/* What the store has of a charge's booking decides: CONFIRMED or CANCELLED owe nothing here;
 * missing (""), PENDING_PAYMENT or FAILED go through the flow with the charge as the gateway
 * lists it. */
static void walk_item_status(walk_item_t *it, const char *st)
{
    seatd_reconcile_t *rc = it->w->rc;
    seatd_metrics_inc(SEATD_METRIC_LEDGER_CHARGES);
    seatd_booking_state_t state = seatd_store_booking_state(st);
    if (state == SEATD_BOOKING_ST_CONFIRMED || state == SEATD_BOOKING_ST_CANCELLED) {
        walk_item_end(it, 1);
        return;
    }
    if (rc->closing) {
        walk_item_end(it, 0);
        return;
    }
    seatd_payment_result_t paid = {
        .outcome = SEATD_PAY_APPROVED, .amount = it->amount, .refunded = it->refunded};
    snprintf(paid.charge_id, sizeof(paid.charge_id), "%s", it->id);
    seatd_booking_meta_t meta = {
        .owner = it->owner, .hold_id = it->hold, .seat_ids = it->seats, .currency = it->currency};
    if (!walk_started(rc,
                      seatd_booking_settle(&rc->flow, it->bid, &paid, &meta, on_walk_settled, it)))
        walk_item_end(it, 0);
}

/* A batch's statuses are back; a Redis failure leaves its charges for the next run. (The
 * flow's callbacks never run inside the call that starts them, so the page, which ends with
 * its last item, outlives this loop until its last item.) */
static void on_walk_statuses(const seatd_store_result_t *res, void *data)
{
    walk_batch_t *b = data;
    seatd_reconcile_t *rc = b->items[0]->w->rc;
    int ok = res->err == 0 && res->statuses.n == b->n;
    for (size_t i = 0; i < b->n; i++)
        if (ok)
            walk_item_status(b->items[i], res->statuses.status[i]);
        else
            walk_item_end(b->items[i], 0);
    free(b);
    walk_op_done(rc);
}

/* Reads, in one call, the statuses of the bookings of the items of 'w' marked in 'todo' whose
 * show is that of item 'first' (marked), and unmarks them; each is counted in 'left' when the
 * call starts, or left not done for the next run. (No callback runs before on_page returns.) */
static void walk_ask_show(walk_t *w, size_t first, unsigned char *todo)
{
    char show[SEATD_ID_MAX], other[SEATD_ID_MAX];
    const char *ids[LEDGER_PAGE];
    if (seatd_keys_parse_id(w->items[first].bid, 'b', show) < 0)
        return; /* (checked by walk_item_init) */
    walk_batch_t *b = seatd_calloc(1, sizeof(*b));
    for (size_t i = first; i < w->looked; i++) {
        if (!todo[i] || seatd_keys_parse_id(w->items[i].bid, 'b', other) < 0 ||
            strcmp(other, show) != 0)
            continue;
        todo[i] = 0;
        ids[b->n] = w->items[i].bid;
        b->items[b->n++] = &w->items[i];
    }
    if (walk_started(
            w->rc, seatd_store_bookings_status(w->rc->store, show, b->n, ids, on_walk_statuses, b)))
        w->left += b->n;
    else
        free(b);
}

/* Copies charge 'c' into item 'it'; 1 if it must be looked at (a succeeded charge of a seatd
 * booking not refunded whole), 0 if nothing can be owed on it. */
static int walk_item_init(walk_item_t *it, walk_t *w, const seatd_payment_charge_t *c)
{
    char show[SEATD_ID_MAX];
    it->w = w;
    snprintf(it->id, sizeof(it->id), "%s", c->id);
    snprintf(it->bid, sizeof(it->bid), "%s", c->key);
    snprintf(it->owner, sizeof(it->owner), "%s", seatd_payment_charge_meta(c, "owner"));
    snprintf(it->hold, sizeof(it->hold), "%s", seatd_payment_charge_meta(c, "holdId"));
    snprintf(it->currency, sizeof(it->currency), "%s", c->currency);
    it->seats = seatd_strdup(seatd_payment_charge_meta(c, "seatIds"));
    it->amount = c->amount;
    it->refunded = c->refunded;
    return c->succeeded && c->amount > 0 && c->refunded < c->amount &&
           strlen(c->key) < sizeof(it->bid) && seatd_keys_parse_id(it->bid, 'b', show) == 0 &&
           seatd_keys_valid_sub(it->owner[0] ? it->owner : "-");
}

static void on_page(const seatd_payment_result_t *res, void *data)
{
    walk_t *w = data;
    seatd_reconcile_t *rc = w->rc;
    if (rc->closing || res->outcome != SEATD_PAY_APPROVED || res->page == NULL) {
        if (res->outcome == SEATD_PAY_DECLINED) {
            /* The gateway does not know the cursor (its ledger was started afresh): walk it
             * again from its first charge. */
            const char *argv[] = {"DEL", SEATD_KEY_LEDGER_CURSOR};
            walk_started(rc, seatd_rds_callv(rc->rds, 2, argv, NULL, on_cursor_set, rc));
        }
        walk_free(w);
        walk_end_run(rc);
        walk_op_done(rc);
        return;
    }
    const seatd_payment_page_t *page = res->page;
    long long young = wall_ms() - rc->o.ledger_grace_ms;
    w->n = page->n < LEDGER_PAGE ? page->n : LEDGER_PAGE; /* (a gateway may send more) */
    w->items = seatd_calloc(w->n ? w->n : 1, sizeof(*w->items));
    w->has_more = page->has_more || page->n > w->n;
    unsigned char todo[LEDGER_PAGE] = {0}; /* its booking's status is to be read */
    for (size_t i = 0; i < w->n; i++) {
        const seatd_payment_charge_t *c = &page->charges[i];
        walk_item_t *it = &w->items[i];
        int owed = walk_item_init(it, w, c);
        if (owed && c->created_ms > young)
            break; /* the normal path may still be settling it, and everything after it */
        w->looked = i + 1;
        if (!owed || rc->closing)
            it->done = !rc->closing;
        else
            todo[i] = 1;
    }
    for (size_t i = 0; i < w->looked; i++)
        if (todo[i])
            walk_ask_show(w, i, todo);
    if (w->left == 0)
        walk_page_done(w);
    walk_op_done(rc);
}

/* Asks the gateway for the charges after 'after' ("" from the first). */
static void walk_next_page(seatd_reconcile_t *rc, const char *after, int pages)
{
    walk_t *w = seatd_calloc(1, sizeof(*w));
    w->rc = rc;
    w->pages = pages + 1;
    if (!walk_started(rc, seatd_payment_list(rc->payment, after, LEDGER_PAGE, on_page, w))) {
        free(w);
        walk_end_run(rc);
    }
}

static void on_cursor(const struct redisReply *reply, int err, void *data)
{
    seatd_reconcile_t *rc = data;
    const char *after = err ? NULL : seatd_rds_reply_str(reply, NULL);
    if (err || rc->closing)
        walk_end_run(rc);
    else
        walk_next_page(rc, after && strncmp(after, "ch_", 3) == 0 ? after : "", 0);
    walk_op_done(rc);
}

/* The lease is this worker's for the period (or another worker walks: nothing to do). */
/* Starts a walk from the cursor; 0 if it could not start. */
static int walk_from_cursor(seatd_reconcile_t *rc)
{
    const char *argv[] = {"GET", SEATD_KEY_LEDGER_CURSOR};
    return walk_started(rc, seatd_rds_callv(rc->rds, 2, argv, NULL, on_cursor, rc));
}

static void on_lease(const struct redisReply *reply, int err, void *data)
{
    seatd_reconcile_t *rc = data;
    const char *ok = err ? NULL : seatd_rds_reply_str(reply, NULL);
    if (rc->closing || ok == NULL || strcmp(ok, "OK") != 0 || !walk_from_cursor(rc))
        walk_end_run(rc);
    walk_op_done(rc);
}

/* One worker walks the ledger per period: the first to take the lease (SET NX PX, expiring
 * with the period), so that N workers cost the gateway and Redis what one does. Every step is
 * idempotent, so two walkers (a lease that ran out under a slow walk) are merely wasteful. */
static void on_ledger_tick(uv_timer_t *t)
{
    seatd_reconcile_t *rc = t->data;
    if (rc->closing || rc->walking)
        return;
    rc->walking = 1;
    char px[24];
    snprintf(px, sizeof(px), "%lld",
             (long long)(rc->o.ledger_interval_ms > 0 ? rc->o.ledger_interval_ms : 1000));
    const char *argv[] = {"SET", SEATD_KEY_LEDGER_LEASE, "1", "NX", "PX", px};
    if (!walk_started(rc, seatd_rds_callv(rc->rds, 6, argv, NULL, on_lease, rc)))
        rc->walking = 0;
}

/* --------------------------------------------------------------------- lifecycle */

seatd_reconcile_t *seatd_reconcile_new(uv_loop_t *loop, seatd_rds_t *rds, seatd_store_t *store,
                                       seatd_payment_t *payment, const seatd_reconcile_opts_t *opts)
{
    if (loop == NULL || rds == NULL || store == NULL || payment == NULL || opts == NULL ||
        opts->interval_ms <= 0 || opts->min_age_ms < 0 || opts->rescan_every < 1 ||
        opts->horizon_ms < 0 || opts->ledger_interval_ms < 0 || opts->ledger_grace_ms < 0)
        return NULL;
    seatd_reconcile_t *rc = seatd_calloc(1, sizeof(*rc));
    rc->rds = rds;
    rc->store = store;
    rc->payment = payment;
    rc->o = *opts;
    rc->flow = (seatd_booking_ctx_t){
        .loop = loop, .store = store, .payment = payment, .horizon_ms = opts->horizon_ms};
    if (rc->o.ledger_grace_ms <= 0)
        rc->o.ledger_grace_ms = opts->horizon_ms;
    uv_timer_init(loop, &rc->timer);
    rc->timer.data = rc;
    uv_timer_start(&rc->timer, on_tick, (uint64_t)opts->interval_ms, (uint64_t)opts->interval_ms);
    uv_timer_init(loop, &rc->ledger_timer);
    rc->ledger_timer.data = rc;
    if (opts->ledger_interval_ms > 0)
        uv_timer_start(&rc->ledger_timer, on_ledger_tick, (uint64_t)opts->ledger_interval_ms,
                       (uint64_t)opts->ledger_interval_ms);
    return rc;
}

static void on_timer_closed(uv_handle_t *h)
{
    seatd_reconcile_t *rc = h->data;
    if (h == (uv_handle_t *)&rc->timer)
        rc->timer_closed = 1;
    else
        rc->ledger_timer_closed = 1;
    maybe_free(rc);
}

void seatd_reconcile_close(seatd_reconcile_t *rc)
{
    if (rc == NULL || rc->closing)
        return;
    rc->closing = 1;
    uv_timer_stop(&rc->timer);
    uv_timer_stop(&rc->ledger_timer);
    uv_close((uv_handle_t *)&rc->timer, on_timer_closed);
    uv_close((uv_handle_t *)&rc->ledger_timer, on_timer_closed);
}

void seatd_reconcile_walk_ledger(seatd_reconcile_t *rc)
{
    if (rc == NULL || rc->closing || rc->walking)
        return;
    rc->walking = 1; /* without the lease: the caller asks for this walk */
    if (!walk_from_cursor(rc))
        rc->walking = 0;
}

unsigned long seatd_reconcile_ledger_refunds(const seatd_reconcile_t *rc)
{
    return rc ? rc->ledger_refunds : 0;
}

int seatd_reconcile_walking(const seatd_reconcile_t *rc)
{
    return rc ? rc->walking : 0;
}

unsigned long seatd_reconcile_settled(const seatd_reconcile_t *rc)
{
    return rc ? rc->settled : 0;
}

unsigned long seatd_reconcile_deferred(const seatd_reconcile_t *rc)
{
    return rc ? rc->deferred : 0;
}

void seatd_reconcile_hint(seatd_rds_t *rds, const char *show_id)
{
    seatd_hints_pending(rds, show_id);
}
