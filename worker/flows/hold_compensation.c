/* hold_compensation.c - releasing holds answered 5xx; see hold_compensation.h. */
#include "flows/hold_compensation.h"

#include <stdint.h>
#include <stdlib.h>
#include <uv.h>

#include "app.h"
#include "base/list.h"
#include "base/errors.h"
#include "base/fmt.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "clients/rds.h"
#include "domain/keys.h"
#include "domain/seatmap.h"
#include "store/store.h"

/*
 * A NOTFOUND is checked once more COMP_ABSENT_RECHECK_MS later (a command still buffered in
 * an old connection to a woken Redis lands within its first event-loop turns). A hold that a
 * retry with the same idempotency key was answered (a replay marks it claimed), or that is
 * paying or booked by then, is kept: the buyer has it.
 *
 * One queue per worker process, processed one entry at a time with backoff while Redis is
 * unavailable (COMP_BACKOFF_MIN_MS doubling to COMP_BACKOFF_MAX_MS), bounded at COMP_MAX
 * entries (beyond it, or when the worker drains, an entry is dropped with a log line and the
 * hold ends at its TTL). The timer exists only while the queue is non-empty, so an idle
 * worker's loop still closes.
 * --------------------------------------------------------------------------------------- */

#define COMP_MAX 10000
#define COMP_BACKOFF_MIN_MS 50
#define COMP_BACKOFF_MAX_MS 1000
#define COMP_ABSENT_RECHECK_MS 100

typedef struct comp_s {
    struct comp_s *next;
    char hold_id[SEATD_ID_MAX];
    char *owner;    /* owned */
    char *idem_key; /* owned Redis key of the idempotency record, or NULL */
    int absent;     /* NOTFOUND answers so far */
    int released;   /* released: only the idempotency record is left to delete */
} comp_t;

static struct {
    seatd_app_t *app; /* borrowed: the worker's app (one per process) */
    comp_t *head, *tail;
    unsigned n;
    uv_timer_t *timer; /* owned while the queue is non-empty */
    int busy;          /* a Redis call for the head is in flight */
    uint64_t backoff_ms;
} comp;

static void comp_run(uv_timer_t *t);

static void comp_free(comp_t *e)
{
    free(e->owner);
    free(e->idem_key);
    free(e);
}

static void on_comp_timer_closed(uv_handle_t *h)
{
    free(h);
}

/* Runs the head after 'delay_ms'; closes the timer when the queue is empty. */
static void comp_schedule(uint64_t delay_ms)
{
    if (!comp.head) {
        if (comp.timer) {
            uv_close((uv_handle_t *)comp.timer, on_comp_timer_closed);
            comp.timer = NULL;
        }
        return;
    }
    if (!comp.timer) {
        comp.timer = seatd_malloc(sizeof(*comp.timer));
        uv_timer_init(comp.app->loop, comp.timer);
    }
    uv_timer_start(comp.timer, comp_run, delay_ms, 0);
}

/* The head is settled with 'metric': next entry. */
static void comp_pop(int metric, const char *outcome)
{
    comp_t *e = comp.head;
    comp.head = e->next;
    if (!comp.head)
        comp.tail = NULL;
    comp.n--;
    seatd_metrics_inc(metric);
    seatd_log(metric == SEATD_METRIC_HOLD_COMP_DROPPED ? SEATD_LOG_WARN : SEATD_LOG_INFO, NULL,
              "hold compensation settled", "\"holdId\":\"%s\",\"outcome\":\"%s\"", e->hold_id,
              outcome);
    comp_free(e);
    comp.backoff_ms = 0;
    comp_schedule(0);
}

static void comp_retry_later(void)
{
    comp.backoff_ms = comp.backoff_ms ? comp.backoff_ms * 2 : COMP_BACKOFF_MIN_MS;
    if (comp.backoff_ms > COMP_BACKOFF_MAX_MS)
        comp.backoff_ms = COMP_BACKOFF_MAX_MS;
    comp_schedule(comp.backoff_ms);
}

static void on_comp_idem_deleted(const struct redisReply *reply, int err, void *data)
{
    comp.busy = 0;
    if (err == SEATD_ESHUTDOWN) {
        comp_pop(SEATD_METRIC_HOLD_COMP_DROPPED, "dropped");
        return;
    }
    if (err || seatd_rds_reply_type(reply) != SEATD_RDS_REPLY_INTEGER) {
        comp_retry_later();
        return;
    }
    comp_pop(SEATD_METRIC_HOLD_COMP_RELEASED, "released");
}

static void comp_delete_idem(void)
{
    comp_t *e = comp.head;
    const char *argv[] = {"DEL", e->idem_key};
    if (!comp.app->rds ||
        seatd_rds_callv(comp.app->rds, 2, argv, NULL, on_comp_idem_deleted, NULL) != 0) {
        comp_retry_later();
        return;
    }
    comp.busy = 1;
}

static void on_comp_release(const seatd_store_result_t *res, void *data)
{
    comp_t *e = comp.head;
    comp.busy = 0;
    (void)data;
    if (!res->err || res->err == SEATD_EEXPIRED) {
        char show[SEATD_ID_MAX];
        if (!res->err && seatd_keys_parse_id(e->hold_id, 'h', show) == 0)
            seatd_seatmap_invalidate(show, res->hold.version);
        e->released = 1;
        if (e->idem_key) {
            comp_delete_idem();
            return;
        }
        comp_pop(res->err ? SEATD_METRIC_HOLD_COMP_KEPT : SEATD_METRIC_HOLD_COMP_RELEASED,
                 res->err ? "expired" : "released");
        return;
    }
    if (res->err == SEATD_ENOTFOUND) {
        if (++e->absent < 2) {
            comp_schedule(COMP_ABSENT_RECHECK_MS);
            return;
        }
        comp_pop(SEATD_METRIC_HOLD_COMP_ABSENT, "absent");
        return;
    }
    if (res->err == SEATD_ESHUTDOWN) {
        comp_pop(SEATD_METRIC_HOLD_COMP_DROPPED, "dropped");
        return;
    }
    if (seatd_err_http_status(res->err) < 500) {
        comp_pop(SEATD_METRIC_HOLD_COMP_KEPT, "kept"); /* paying or booked: the buyer has it */
        return;
    }
    comp_retry_later(); /* Redis still unavailable */
}

static void comp_run(uv_timer_t *t)
{
    (void)t;
    if (comp.busy || !comp.head)
        return;
    seatd_app_t *app = comp.app;
    if (app->draining || !app->store) {
        while (comp.head)
            comp_pop(SEATD_METRIC_HOLD_COMP_DROPPED, "dropped: worker draining");
        return;
    }
    comp_t *e = comp.head;
    if (e->released) {
        comp_delete_idem();
        return;
    }
    int rc = seatd_store_release_unclaimed(app->store, e->hold_id, e->owner, on_comp_release, NULL);
    if (rc == SEATD_ESHUTDOWN) {
        comp_pop(SEATD_METRIC_HOLD_COMP_DROPPED, "dropped");
        return;
    }
    if (rc < 0) {
        comp_retry_later();
        return;
    }
    comp.busy = 1;
}

void seatd_hold_compensate(seatd_app_t *app, const char *show_id, const char *hold_id,
                           const char *owner, const char *idem)
{
    if (comp.n >= COMP_MAX || app->draining) {
        seatd_metrics_inc(SEATD_METRIC_HOLD_COMP_DROPPED);
        seatd_log(SEATD_LOG_WARN, NULL, "hold compensation dropped",
                  "\"holdId\":\"%s\",\"queued\":%u", hold_id, comp.n);
        return;
    }
    comp_t *e = seatd_calloc(1, sizeof(*e));
    seatd_fmt_copy(e->hold_id, sizeof(e->hold_id), hold_id);
    e->owner = seatd_strdup(owner);
    if (idem) {
        char suffix[SEATD_KEY_MAX], key[SEATD_KEY_MAX];
        if (seatd_fmt_cat(suffix, sizeof(suffix), "idem:", owner, ":", idem) > 0 &&
            seatd_keys_show(key, show_id, suffix) == 0)
            e->idem_key = seatd_strdup(key);
    }
    comp.app = app;
    SEATD_QUEUE_APPEND(comp.head, comp.tail, e);
    comp.n++;
    seatd_log(SEATD_LOG_INFO, NULL, "hold answered 5xx: compensation filed",
              "\"holdId\":\"%s\",\"queued\":%u", e->hold_id, comp.n);
    if (!comp.busy && !(comp.timer && uv_is_active((uv_handle_t *)comp.timer)))
        comp_schedule(0);
}
