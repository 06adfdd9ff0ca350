/* booking.c - the money path of a booking, once; see booking.h. */
#include "flows/booking.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "domain/keys.h"
#include "domain/layout.h"
#include "flows/layout_fetch.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "clients/payment.h"
#include "domain/seatmap.h"
#include "store/store.h"

#define DESC_SEATS_MAX 80           /* seat ids quoted in a charge's description */
#define SEATD_BOOKING_PRICED_MAX 21 /* shows priced for one begin: a group's, and one more */

/* One booking on its way through the flow. */
typedef struct flow_s {
    seatd_booking_ctx_t ctx; /* a copy; its pointers borrowed */
    seatd_booking_cb cb;
    void *data;
    char booking_id[SEATD_ID_MAX];
    char show_id[SEATD_ID_MAX];
    char hold_id[SEATD_ID_MAX];
    char owner[65];
    char currency[8];
    char method[SEATD_PAY_SOURCE_MAX];
    char *seat_ids;                     /* owned; "" when unknown */
    char *members;                      /* a group payment's bookings (store.h), owned; "" */
    size_t member_at;                   /* the next member to file in the buyer's index */
    char charge_id[64];                 /* the charge being settled */
    char decline[64];                   /* the gateway's decline code */
    char refund_key[SEATD_ID_MAX + 8];  /* "refund-<bookingId>": one refund per booking */
    char cancel_key[SEATD_ID_MAX + 8];  /* "cancel-<bookingId>": a cancellation's refund */
    int64_t amount;                     /* charged (or to charge), minor units */
    int64_t window_ms, cap, cap_window; /* book_begin's payment window and decline cap */
    int priced;                         /* shows whose seat tiers were stored for this begin */
    char pricing[SEATD_ID_MAX];         /* the show whose seat tiers are being stored */
    int keep_attempt;                   /* booking.h seatd_booking_end_t */
    int cancelling;                     /* a cancellation: its refund is "cancel-<id>" */
    int in_call;                        /* the public call that started the flow runs */
    int deferred;                       /* it ended during that call: 'timer' delivers it */
    seatd_booking_outcome_t d_outcome;  /* the deferred end */
    int d_err;
    uv_timer_t timer; /* delivers an end reached before the starting call returned */
} flow_t;

static const char *const outcome_names[] = {
    "confirmed", "pending",  "declined", "refunded", "refund_owed",
    "failed",    "deferred", "replayed", "refused",  "cancelled",
};

const char *seatd_booking_outcome_name(seatd_booking_outcome_t o)
{
    return (unsigned)o < sizeof(outcome_names) / sizeof(outcome_names[0]) ? outcome_names[o] : "?";
}

/* Returns a flow for booking 'booking_id' (its show parsed from it), or NULL if the id is bad. */
static flow_t *flow_new(const seatd_booking_ctx_t *ctx, const char *booking_id, seatd_booking_cb cb,
                        void *data)
{
    char show[SEATD_ID_MAX];
    if (ctx == NULL || ctx->loop == NULL || ctx->store == NULL || ctx->payment == NULL ||
        cb == NULL || booking_id == NULL || seatd_keys_parse_id(booking_id, 'b', show) < 0)
        return NULL;
    flow_t *f = seatd_calloc(1, sizeof(*f));
    f->ctx = *ctx;
    f->cb = cb;
    f->data = data;
    snprintf(f->booking_id, sizeof(f->booking_id), "%s", booking_id);
    snprintf(f->show_id, sizeof(f->show_id), "%s", show);
    snprintf(f->refund_key, sizeof(f->refund_key), "refund-%s", booking_id);
    snprintf(f->cancel_key, sizeof(f->cancel_key), "cancel-%s", booking_id);
    f->seat_ids = seatd_strdup("");
    f->members = seatd_strdup("");
    f->in_call = 1; /* until the public call returns (returned()) */
    return f;
}

static void flow_free(flow_t *f)
{
    free(f->members);
    free(f->seat_ids);
    free(f);
}

/* Runs the flow's callback once with 'outcome'. */
static void deliver(flow_t *f, seatd_booking_outcome_t outcome, int err,
                    const seatd_store_result_t *res)
{
    seatd_booking_end_t end = {
        .outcome = outcome,
        .err = outcome == SEATD_BOOKING_REFUSED ? err : 0,
        .res = res,
        .booking_id = f->booking_id,
        .decline_code = outcome == SEATD_BOOKING_DECLINED ? f->decline : "",
        .version = outcome == SEATD_BOOKING_CONFIRMED && res ? res->booking.version : 0,
        .amount = f->amount > 0 ? f->amount : 0,
        .seat_ids = f->seat_ids,
        .members = f->members,
        .keep_attempt = f->keep_attempt,
    };
    f->cb(&end, f->data);
}

/* Ends the flow: runs its callback once with 'outcome', then frees it. An end reached while the
 * public call that started the flow still runs (a step refused at once, an UNKNOWN charge) is
 * delivered on the next loop turn instead: a callback never runs before its caller returned
 * (STYLE rule 18). Only ends without a store result ('res' NULL) are reached that way. */
static void finish(flow_t *f, seatd_booking_outcome_t outcome, int err,
                   const seatd_store_result_t *res)
{
    if (f->in_call) {
        f->deferred = 1;
        f->d_outcome = outcome;
        f->d_err = err;
        return;
    }
    deliver(f, outcome, err, res);
    flow_free(f);
}

static void on_deferred_closed(uv_handle_t *h)
{
    flow_free(h->data);
}

static void on_deferred(uv_timer_t *t)
{
    flow_t *f = t->data;
    deliver(f, f->d_outcome, f->d_err, NULL);
    uv_close((uv_handle_t *)&f->timer, on_deferred_closed);
}

/* The public call that started flow 'f' returns 0: an end the flow reached during it is
 * delivered on the next loop turn (finish). */
static int returned(flow_t *f)
{
    f->in_call = 0;
    if (f->deferred) {
        uv_timer_init(f->ctx.loop, &f->timer);
        f->timer.data = f;
        uv_timer_start(&f->timer, on_deferred, 0, 0);
    }
    return 0;
}

/* Logs a step that failed to start ('rc') or answered an error; the flow goes on. */
static void log_step(const flow_t *f, int level, const char *msg, int err)
{
    seatd_log(level, NULL, msg, "\"booking\":\"%s\",\"charge\":\"%s\",\"error\":\"%s\"",
              f->booking_id, f->charge_id, seatd_err_name(err));
}

/* A step that failed with 'err' leaves the booking PENDING for reconciliation to settle: it
 * is logged as 'msg' and the flow ends. */
static void end_pending(flow_t *f, const char *msg, int err)
{
    log_step(f, SEATD_LOG_WARN, msg, err);
    finish(f, SEATD_BOOKING_PENDING, 0, NULL);
}

/* ------------------------------------------------------------------- refunds (written once) */

/* The refund of 'f' is made (or was made before): the booking says so. */
static void on_refund_recorded(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err)
        log_step(f, SEATD_LOG_WARN, "refund made, not recorded yet; reconciliation records it",
                 res->err);
    finish(f, f->cancelling ? SEATD_BOOKING_CANCELLED : SEATD_BOOKING_REFUNDED, 0, NULL);
}

/* Records the refund: a charge not confirmed is back whole (the booking FAILED, refund,
 * refundStatus "succeeded"; it leaves {s}:pending, {s}:refunds and {s}:failed); a
 * cancellation's refund is confirmed (refundStatus "succeeded"). */
static void record_refund(flow_t *f)
{
    int rc = f->cancelling ? seatd_store_refund_done(f->ctx.store, f->booking_id, f->cancel_key,
                                                     on_refund_recorded, f)
                           : seatd_store_book_fail_refunded(f->ctx.store, f->booking_id,
                                                            "seats_lost_refunded", f->amount,
                                                            f->refund_key, on_refund_recorded, f);
    if (rc < 0) {
        log_step(f, SEATD_LOG_WARN, "refund made, not recorded yet; reconciliation records it", rc);
        finish(f, f->cancelling ? SEATD_BOOKING_CANCELLED : SEATD_BOOKING_REFUNDED, 0, NULL);
    }
}

static void on_refund(const seatd_payment_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->outcome == SEATD_PAY_APPROVED ||
        (res->outcome == SEATD_PAY_DECLINED && strcmp(res->code, "charge_already_refunded") == 0)) {
        record_refund(f);
        return;
    }
    /* Still owed and on record (PENDING_PAYMENT, FAILED or CANCELLED in {s}:refunds):
     * reconciliation asks again by the same key. */
    seatd_log(SEATD_LOG_ERROR, NULL, "refund not confirmed; reconciliation will retry",
              "\"booking\":\"%s\",\"charge\":\"%s\",\"code\":\"%s\"", f->booking_id, f->charge_id,
              res->code);
    finish(f, SEATD_BOOKING_REFUND_OWED, 0, NULL);
}

/* Refunds 'f->amount' of charge 'f->charge_id': the whole charge of a booking not confirmed,
 * under "refund-<bookingId>", or a cancellation's refund by the show's policy, under
 * "cancel-<bookingId>". Every caller sends the very same request (key, charge, amount,
 * reason), so the gateway refunds once and replays the rest. */
static void refund(flow_t *f)
{
    int rc = seatd_payment_refund(
        f->ctx.payment, f->cancelling ? f->cancel_key : f->refund_key, f->charge_id, f->amount,
        f->cancelling ? "cancelled" : "booking_not_confirmed", on_refund, f);
    if (rc < 0) {
        log_step(f, SEATD_LOG_ERROR, "refund not sent; reconciliation will retry", rc);
        finish(f, SEATD_BOOKING_REFUND_OWED, 0, NULL);
    }
}

/* ------------------------------------------------------------------------------- settling */

/* A refund owed is on record (seatd_late_charge or seatd_book_lost answered): make it. */
static void on_refund_on_record(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    const seatd_booking_result_t *b = &res->booking;
    if (res->err) {
        /* Not written down where a failover keeps it (ENOTDURABLE), Redis did not answer, or
         * the booking is not FAILED (STATE: it is being settled on its own path): nothing is
         * refunded now; the charge is looked at again (the booking's own entry, or the
         * ledger walk). */
        end_pending(f, "refund owed not recorded; not refunded yet", res->err);
    } else if (b->state != SEATD_BOOKING_ST_FAILED) {
        finish(f, SEATD_BOOKING_PENDING, 0, NULL); /* it exists after all, and is not FAILED */
    } else if (b->refund_state != SEATD_REFUND_ST_PENDING) {
        finish(f, SEATD_BOOKING_REFUNDED, 0, NULL); /* refunded already */
    } else {
        refund(f);
    }
}

/* The charge landed for a booking already FAILED: the refund is written down first. */
static void record_late_charge(flow_t *f)
{
    seatd_log(SEATD_LOG_WARN, NULL, "a charge landed after the booking failed; refunding",
              "\"booking\":\"%s\",\"charge\":\"%s\"", f->booking_id, f->charge_id);
    int rc =
        seatd_store_late_charge(f->ctx.store, f->booking_id, f->charge_id, on_refund_on_record, f);
    if (rc < 0)
        end_pending(f, "late charge not recorded; not refunded yet", rc);
}

/* A succeeded charge whose booking does not exist (lost with a primary): its record, FAILED
 * with the refund owed, then the refund. */
static void record_lost_booking(flow_t *f)
{
    seatd_log(SEATD_LOG_WARN, NULL, "a charge's booking does not exist; refunding",
              "\"booking\":\"%s\",\"charge\":\"%s\"", f->booking_id, f->charge_id);
    seatd_book_lost_args_t a = {
        .booking_id = f->booking_id,
        .charge_id = f->charge_id,
        .amount = f->amount,
        .currency = f->currency,
        .owner = f->owner,
        .hold_id = f->hold_id,
        .seat_ids = f->seat_ids,
    };
    int rc = seatd_store_book_lost(f->ctx.store, &a, on_refund_on_record, f);
    if (rc < 0)
        end_pending(f, "lost booking not recorded; not refunded yet", rc);
}

/* The seat maps that the confirm in 'res' changed are dropped from this worker's cache: the
 * booking's show, or every show of a group payment. */
static void invalidate_confirmed(const flow_t *f, const seatd_store_result_t *res)
{
    const seatd_booking_result_t *b = &res->booking;
    if (b->members == NULL || b->members[0] == '\0') {
        seatd_seatmap_invalidate(f->show_id, b->version);
        return;
    }
    seatd_payment_member_t m;
    for (size_t at = 0; seatd_store_payment_member(b->members, &at, &m);)
        seatd_seatmap_invalidate(m.show_id, m.version);
}

static void on_confirm(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    switch (res->err) {
    case 0:
        invalidate_confirmed(f, res);
        finish(f, SEATD_BOOKING_CONFIRMED, 0, res);
        return;
    case SEATD_ENOTDURABLE:
        /* CONFIRMED on a primary that has not passed it to a replica: a failover may take it
         * back. The begin is durable, so the survivor has the booking PENDING_PAYMENT in its
         * {s}:pending: reconciliation settles it there. Until then: 202. */
        invalidate_confirmed(f, res);
        seatd_metrics_inc(SEATD_METRIC_CONFIRM_NOT_DURABLE);
        end_pending(f, "confirm not on a replica in time; answered pending", res->err);
        return;
    case SEATD_EEXPIRED:
        /* The seats were lost before the confirm: the booking is still PENDING_PAYMENT (on
         * record for reconciliation), the charge goes back. */
        refund(f);
        return;
    case SEATD_ENOTFOUND:
        record_lost_booking(f);
        return;
    case SEATD_ESTATE:
        if (res->booking.state == SEATD_BOOKING_ST_FAILED) {
            record_late_charge(f);
            return;
        }
        finish(f, SEATD_BOOKING_REFUSED, res->err, res); /* CANCELLED: confirmed before */
        return;
    default:
        /* Redis did not answer: the booking is PENDING_PAYMENT on record (a durable begin),
         * and reconciliation confirms or refunds it by the same charge. */
        end_pending(f, "confirm failed after the charge; reconciliation settles", res->err);
        return;
    }
}

static void confirm(flow_t *f)
{
    int rc = seatd_store_book_confirm(f->ctx.store, f->booking_id, f->charge_id, on_confirm, f);
    if (rc < 0)
        end_pending(f, "confirm not sent after the charge; reconciliation settles", rc);
}

static void on_declined(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err)
        log_step(f, SEATD_LOG_WARN, "book_fail after a decline failed; reconciliation settles",
                 res->err);
    finish(f, SEATD_BOOKING_DECLINED, 0, NULL);
}

static void on_not_charged(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err == 0 && res->booking.state == SEATD_BOOKING_ST_PENDING_PAYMENT)
        finish(f, SEATD_BOOKING_DEFERRED, 0, NULL); /* within the horizon */
    else if (res->err == 0)
        finish(f, SEATD_BOOKING_FAILED, 0, NULL);
    else
        finish(f, SEATD_BOOKING_PENDING, 0, NULL);
}

/* Carries the flow on by the gateway's answer 'paid' about the booking's charge. */
static void settle_paid(flow_t *f, const seatd_payment_result_t *paid)
{
    int rc = 0;
    switch (paid->outcome) {
    case SEATD_PAY_APPROVED:
        snprintf(f->charge_id, sizeof(f->charge_id), "%s", paid->charge_id);
        if (paid->amount > 0)
            f->amount = paid->amount; /* what was charged is what goes back */
        if (paid->refunded > 0 && paid->refunded >= f->amount) {
            record_refund(f); /* given back already (the record was lost, or not made) */
            return;
        }
        confirm(f);
        return;
    case SEATD_PAY_DECLINED:
        f->keep_attempt = 1; /* the decline stays counted */
        snprintf(f->decline, sizeof(f->decline), "%s", paid->code[0] ? paid->code : "declined");
        rc = seatd_store_book_fail(f->ctx.store, f->booking_id, f->decline, on_declined, f);
        if (rc < 0)
            finish(f, SEATD_BOOKING_DECLINED, 0, NULL);
        return;
    case SEATD_PAY_NOT_FOUND:
        /* Not final before the horizon: a charge sent late can still land until then. */
        rc = seatd_store_book_fail_after(f->ctx.store, f->booking_id, "payment_not_completed",
                                         f->ctx.horizon_ms, on_not_charged, f);
        if (rc < 0)
            finish(f, SEATD_BOOKING_PENDING, 0, NULL);
        return;
    default:
        /* Unknown: the charge may or may not have happened. The booking stays PENDING and the
         * attempt stays counted until its window ends. */
        f->keep_attempt = 1;
        finish(f, SEATD_BOOKING_PENDING, 0, NULL);
        return;
    }
}

static void set_meta(flow_t *f, const seatd_booking_meta_t *meta)
{
    if (meta == NULL)
        return;
    snprintf(f->owner, sizeof(f->owner), "%s", meta->owner ? meta->owner : "");
    snprintf(f->hold_id, sizeof(f->hold_id), "%s", meta->hold_id ? meta->hold_id : "");
    snprintf(f->currency, sizeof(f->currency), "%s", meta->currency ? meta->currency : "");
    free(f->seat_ids);
    f->seat_ids = seatd_strdup(meta->seat_ids ? meta->seat_ids : "");
}

int seatd_booking_settle(const seatd_booking_ctx_t *ctx, const char *booking_id,
                         const seatd_payment_result_t *paid, const seatd_booking_meta_t *meta,
                         seatd_booking_cb cb, void *data)
{
    if (paid == NULL)
        return SEATD_EINVAL;
    flow_t *f = flow_new(ctx, booking_id, cb, data);
    if (f == NULL)
        return SEATD_EINVAL;
    set_meta(f, meta);
    settle_paid(f, paid);
    return returned(f);
}

/* Starts a refund on record of charge 'charge_id' ('amount'); see the two callers. */
static int refund_on_record(const seatd_booking_ctx_t *ctx, const char *booking_id,
                            const char *charge_id, int64_t amount, int cancelling,
                            seatd_booking_cb cb, void *data)
{
    if (charge_id == NULL || charge_id[0] == '\0' || amount < 1)
        return SEATD_EINVAL;
    flow_t *f = flow_new(ctx, booking_id, cb, data);
    if (f == NULL)
        return SEATD_EINVAL;
    snprintf(f->charge_id, sizeof(f->charge_id), "%s", charge_id);
    f->amount = amount;
    f->cancelling = cancelling;
    refund(f);
    return returned(f);
}

int seatd_booking_refund_owed(const seatd_booking_ctx_t *ctx, const char *booking_id,
                              const char *charge_id, int64_t amount, seatd_booking_cb cb,
                              void *data)
{
    return refund_on_record(ctx, booking_id, charge_id, amount, 0, cb, data);
}

int seatd_booking_refund_cancel(const seatd_booking_ctx_t *ctx, const char *booking_id,
                                const char *charge_id, int64_t amount, seatd_booking_cb cb,
                                void *data)
{
    return refund_on_record(ctx, booking_id, charge_id, amount, 1, cb, data);
}

/* ------------------------------------------------------------------- begin, then charge */

static void on_charge(const seatd_payment_result_t *res, void *data)
{
    settle_paid(data, res);
}

/* The booking began, durably: charge it (the booking id is the idempotency key; the buyer,
 * hold and seats go with the charge, so that the gateway's ledger can tell its buyer what
 * happened should the booking be lost), or confirm a free one. */
static void charge(flow_t *f)
{
    if (f->amount == 0) {
        snprintf(f->charge_id, sizeof(f->charge_id), "free");
        confirm(f);
        return;
    }
    char desc[160];
    if (f->members[0]) /* a group payment: its holds are named by the group hold */
        snprintf(desc, sizeof(desc), "seatd group hold %s", f->hold_id);
    else
        snprintf(desc, sizeof(desc), "seatd show %s seats %.*s", f->show_id, DESC_SEATS_MAX,
                 f->seat_ids);
    int seats_fit = strlen(f->seat_ids) <= SEATD_PAY_TEXT_MAX;
    const char *meta[] = {"owner",     f->owner, "holdId", f->hold_id, seats_fit ? "seatIds" : NULL,
                          f->seat_ids, NULL};
    int rc = seatd_payment_charge_ex(f->ctx.payment, f->booking_id, f->amount, f->currency,
                                     f->method, desc, meta, on_charge, f);
    if (rc < 0) {
        /* Nothing was charged; the booking stays PENDING until reconciliation fails it. */
        end_pending(f, "charge not sent", rc);
    }
}

static void index_booking(flow_t *f);

static void on_indexed(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err) {
        seatd_metrics_inc(SEATD_METRIC_BOOKING_INDEX_ERROR);
        log_step(f, SEATD_LOG_WARN, "booking not filed in the buyer's index (the outbox will)",
                 res->err);
    }
    if (f->members[0] && f->members[f->member_at])
        index_booking(f); /* the group payment's next booking */
    else
        charge(f);
}

/* Files the booking that just began in the buyer's index ({u:<sub>}:bookings, GET
 * /v1/me/bookings) before the charge, so that the buyer reads their own writes: a group
 * payment's bookings one by one (each show's ticket), not the payment. The write never
 * waits for an unreachable shard (the buyer's keys are usually on another primary than the
 * show's), and a failure does not stop the booking: seatd-notify files every confirmed booking
 * from the outbox. */
static void index_booking(flow_t *f)
{
    const char *id = f->booking_id;
    seatd_payment_member_t m;
    if (f->members[0]) {
        if (!seatd_store_payment_member(f->members, &f->member_at, &m)) {
            charge(f); /* every member filed */
            return;
        }
        id = m.booking_id;
    }
    int rc = seatd_store_me_add(f->ctx.store, f->owner, "bookings", id, 0, on_indexed, f);
    if (rc < 0) {
        seatd_metrics_inc(SEATD_METRIC_BOOKING_INDEX_ERROR);
        charge(f);
    }
}

static void on_unbegun(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err)
        log_step(f, SEATD_LOG_WARN, "a booking begun without a replica not failed yet", res->err);
    finish(f, SEATD_BOOKING_REFUSED, SEATD_ENOTDURABLE, NULL);
}

static void begin(flow_t *f);

static void on_tiers_stored(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err) {
        log_step(f, SEATD_LOG_WARN, "the show's seat tiers not stored; not begun", res->err);
        finish(f, SEATD_BOOKING_REFUSED, res->err, NULL);
        return;
    }
    begin(f);
}

/* Stores the seat tiers of show 'f->pricing' from its layout 'l' (a show created before seats
 * were priced in Redis), then begins again. */
static void store_tiers(flow_t *f, const seatd_layout_t *l)
{
    int rc = seatd_store_show_tiers_put(f->ctx.store, f->pricing, l, on_tiers_stored, f);
    if (rc < 0)
        finish(f, SEATD_BOOKING_REFUSED, rc, NULL);
}

static void on_layout_for_tiers(const seatd_store_result_t *res, const seatd_layout_t *l, int why,
                                void *data)
{
    flow_t *f = data;
    if (l == NULL) {
        finish(f, SEATD_BOOKING_REFUSED, res->err ? res->err : why, NULL);
        return;
    }
    store_tiers(f, l);
}

/* book_begin found show 'show_id' (the booking's, or one of a group hold's) without seat tiers
 * (SEATD_EUNPRICED): they are stored from its layout once, and the booking begins again.
 * Nothing began. */
static void price_show(flow_t *f, const char *show_id)
{
    f->priced++;
    snprintf(f->pricing, sizeof(f->pricing), "%s", show_id);
    const seatd_layout_t *l = seatd_layout_cache_get(f->pricing);
    if (l) {
        store_tiers(f, l);
        return;
    }
    int rc = seatd_layout_fetch(f->ctx.store, f->pricing, on_layout_for_tiers, f);
    if (rc < 0)
        finish(f, SEATD_BOOKING_REFUSED, rc, NULL);
}

static void on_begin(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    if (res->err == SEATD_ENOTDURABLE && !res->booking.replayed) {
        /* Begun on a primary that did not pass it to a replica in time (cut off from it?):
         * nothing is charged. The booking is failed again at once, so that the hold is HELD
         * and a retry can begin afresh; should the primary lose both writes in a failover,
         * the survivor never saw either. */
        seatd_metrics_inc(SEATD_METRIC_BOOKING_NOT_DURABLE);
        log_step(f, SEATD_LOG_WARN, "booking begun but not on a replica; nothing charged",
                 res->err);
        int rc = seatd_store_book_fail(f->ctx.store, f->booking_id, "not_durable", on_unbegun, f);
        if (rc < 0)
            finish(f, SEATD_BOOKING_REFUSED, SEATD_ENOTDURABLE, NULL);
        return;
    }
    /* A show still unpriced right after its tiers were stored is refused, not priced again */
    if (res->err == SEATD_EUNPRICED && f->priced < SEATD_BOOKING_PRICED_MAX &&
        seatd_keys_valid_show_id(res->detail) && strcmp(res->detail, f->pricing) != 0) {
        price_show(f, res->detail);
        return;
    }
    if (res->err) {
        finish(f, SEATD_BOOKING_REFUSED, res->err, res);
        return;
    }
    if (res->booking.replayed) {
        snprintf(f->booking_id, sizeof(f->booking_id), "%s", res->booking.booking_id);
        finish(f, SEATD_BOOKING_REPLAYED, 0, res);
        return;
    }
    if (res->booking.has_amount)
        f->amount = res->booking.amount;
    if (res->booking.seat_ids[0]) {
        free(f->seat_ids);
        f->seat_ids = seatd_strdup(res->booking.seat_ids);
    }
    if (res->booking.members[0]) {
        free(f->members);
        f->members = seatd_strdup(res->booking.members);
    }
    index_booking(f);
}

/* Sends book_begin for the flow's booking (its arguments kept in 'f'); < 0 if not sent. */
static int begin_call(flow_t *f)
{
    seatd_book_args_t b = {
        .hold_id = f->hold_id,
        .owner = f->owner,
        .booking_id = f->booking_id,
        .amount = f->amount,
        .currency = f->currency,
        .payment_method = f->method,
        .payment_window_ms = f->window_ms,
        .decline_cap = f->cap,
        .decline_window_ms = f->cap_window,
    };
    return seatd_store_book_begin(f->ctx.store, &b, on_begin, f);
}

static void begin(flow_t *f)
{
    int rc = begin_call(f);
    if (rc < 0)
        finish(f, SEATD_BOOKING_REFUSED, rc, NULL);
}

int seatd_booking_pay(const seatd_booking_ctx_t *ctx, const seatd_booking_pay_args_t *a,
                      seatd_booking_cb cb, void *data)
{
    if (a == NULL || a->hold_id == NULL || a->owner == NULL ||
        (a->amount < 0 && a->amount != SEATD_BOOK_PRICE_IN_STORE) || a->payment_method == NULL ||
        a->currency == NULL)
        return SEATD_EINVAL;
    flow_t *f = flow_new(ctx, a->booking_id, cb, data);
    if (f == NULL)
        return SEATD_EINVAL;
    snprintf(f->hold_id, sizeof(f->hold_id), "%s", a->hold_id);
    snprintf(f->owner, sizeof(f->owner), "%s", a->owner);
    snprintf(f->currency, sizeof(f->currency), "%s", a->currency);
    snprintf(f->method, sizeof(f->method), "%s", a->payment_method);
    free(f->seat_ids);
    f->seat_ids = seatd_strdup(a->seat_ids ? a->seat_ids : "");
    f->amount = a->amount;
    f->window_ms = a->payment_window_ms;
    f->cap = a->decline_cap;
    f->cap_window = a->decline_window_ms;
    int rc = begin_call(f);
    if (rc < 0) {
        flow_free(f);
        return rc;
    }
    return returned(f);
}

/* --------------------------------------------------------------------------- cancellation */

static void on_cancelled(const seatd_store_result_t *res, void *data)
{
    flow_t *f = data;
    const seatd_booking_result_t *b = &res->booking;
    if (res->err == SEATD_ENOTDURABLE)
        seatd_seatmap_invalidate(f->show_id, b->version); /* this primary's map changed */
    if (res->err) {
        /* Refused, or not on a replica in time (a failover may undo it): nothing is refunded
         * now. A cancellation that stands leaves its refund owed in {s}:refunds, where
         * reconciliation finds it; the buyer is answered 503 and may cancel again. */
        finish(f, SEATD_BOOKING_REFUSED, res->err, res);
        return;
    }
    seatd_seatmap_invalidate(f->show_id, b->version);
    if (b->refund_state == SEATD_REFUND_ST_PENDING && b->refund > 0 && b->payment_ref[0]) {
        snprintf(f->charge_id, sizeof(f->charge_id), "%s", b->payment_ref);
        f->amount = b->refund;
        refund(f);
        return;
    }
    finish(f, SEATD_BOOKING_CANCELLED, 0, NULL);
}

int seatd_booking_cancel(const seatd_booking_ctx_t *ctx, const char *booking_id, const char *owner,
                         seatd_booking_cb cb, void *data)
{
    flow_t *f = flow_new(ctx, booking_id, cb, data);
    if (f == NULL)
        return SEATD_ENOTFOUND;
    f->cancelling = 1;
    int rc = seatd_store_cancel_by_policy(ctx->store, f->booking_id, owner, on_cancelled, f);
    if (rc < 0) {
        flow_free(f);
        return rc;
    }
    return returned(f);
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
    if (res->err == 0 && res->booking.state == SEATD_BOOKING_ST_PENDING_PAYMENT &&
        uv_now(w->timer.loop) < w->until_ms) {
        uv_timer_start(&w->timer, on_settle_timer, SEATD_BOOKING_WAIT_POLL_MS, 0);
        return;
    }
    settle_wait_end(w, res);
}

int seatd_booking_wait_settled(uv_loop_t *loop, seatd_store_t *store, const char *booking_id,
                               uint64_t wait_ms, int (*wanted)(void *data), seatd_store_cb cb,
                               void *data)
{
    char show[SEATD_ID_MAX];
    if (loop == NULL || store == NULL || cb == NULL ||
        seatd_keys_parse_id(booking_id, 'b', show) < 0)
        return SEATD_EINVAL;
    settle_wait_t *w = seatd_calloc(1, sizeof(*w));
    w->store = store;
    snprintf(w->booking_id, sizeof(w->booking_id), "%s", booking_id);
    w->until_ms = uv_now(loop) + wait_ms;
    w->wanted = wanted;
    w->cb = cb;
    w->data = data;
    uv_timer_init(loop, &w->timer);
    uv_timer_start(&w->timer, on_settle_timer, SEATD_BOOKING_WAIT_POLL_MS, 0);
    return 0;
}
