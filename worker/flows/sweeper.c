/* sweeper.c - prompt reaping of due holds across workers; see sweeper.h. */
#include "flows/sweeper.h"
#include "store/functions.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "domain/keys.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "store/scripts.h"
#include "store/store.h"

#define CLAIM_MAX "256" /* shows claimed per hint bucket per sweep */
#define REAP_MAX 1000   /* holds reaped per show per call; more: filed as due again */
#define RESCAN_EVERY_MS 30000
#define RESCAN_LEASE_MS 25000
#define RESCAN_PAGE 500
#define RETENTION_MS 86400000LL

struct seatd_sweeper_s {
    uv_loop_t *loop;           /* borrowed */
    seatd_rds_t *rds;          /* borrowed */
    seatd_scripts_t *scripts;  /* borrowed */
    seatd_store_t *store;      /* borrowed */
    unsigned interval_ms;      /* sweep period */
    uv_timer_t timer;          /* the sweep period */
    unsigned inflight;         /* Redis calls without their callback */
    unsigned sweep_pending;    /* calls of the current sweep (claim, reaps, filings) */
    int closing;               /* seatd_sweeper_close() was called */
    int timer_closed;          /* the timer's close callback ran */
    uint64_t next_rescan_ms;   /* when to try for the rescan lease */
    int rescanning;            /* this worker holds the lease and walks the catalogue */
    int rescan_busy;           /* a catalogue page is in flight */
    long rescan_off;           /* next catalogue index */
    int pruning;               /* the rescan's first phase: pruning the catalogue */
    uint64_t lease_at_ms;      /* when the lease was last taken or renewed (loop ms) */
    char token[48];            /* this sweeper's lease token */
    seatd_sweeper_rescan_t ro; /* rescan options */
    uint64_t swept_at_ms;      /* when the last sweep without a failed call ended, or the
                                  sweeper was made (loop ms) */
    int sweep_failed;          /* a claim or reap of the current sweep failed */
    unsigned queue_pending;    /* waiting-room calls of the current tick (list, advances) */
    unsigned long long tick_rooms, tick_waiting; /* the current tick's, so far */
    seatd_sweeper_stats_t stats;
};

typedef struct {
    seatd_sweeper_t *sw;
    char id[SEATD_ID_MAX];
    int sweep; /* part of the current sweep (counts in sweep_pending) */
} op_t;

static void maybe_free(seatd_sweeper_t *sw)
{
    if (sw->closing && sw->timer_closed && sw->inflight == 0)
        free(sw);
}

static op_t *op_new(seatd_sweeper_t *sw, const char *id, int sweep)
{
    op_t *op = seatd_calloc(1, sizeof(*op));
    op->sw = sw;
    if (id)
        snprintf(op->id, sizeof(op->id), "%s", id);
    op->sweep = sweep;
    sw->inflight++;
    if (sweep)
        sw->sweep_pending++;
    return op;
}

/* Ends 'op' (its call answered or was never queued). Returns 1 if the sweeper is gone or
 * closing: the caller stops. */
static int op_done(op_t *op)
{
    seatd_sweeper_t *sw = op->sw;
    sw->inflight--;
    if (op->sweep && --sw->sweep_pending == 0 && !sw->sweep_failed)
        sw->swept_at_ms = uv_now(sw->loop);
    free(op);
    if (sw->closing) {
        maybe_free(sw);
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Filing shows under their next deadline
 * --------------------------------------------------------------------------------------- */

static void on_filed(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    if (err || seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR)
        op->sw->stats.errors++;
    op_done(op);
}

/* ZADD seatd:due:{hN} LT 'score' 'id' (the show's bucket): files the show unless an earlier
 * hint is there. */
static void file_show(seatd_sweeper_t *sw, const char *id, const char *score, int sweep)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_DUE, id) < 0)
        return;
    const char *argv[] = {"ZADD", key, "LT", score, id};
    op_t *op = op_new(sw, id, sweep);
    if (seatd_rds_callv(sw->rds, 5, argv, NULL, on_filed, op) < 0) {
        sw->stats.errors++;
        op_done(op);
    }
}

void seatd_sweeper_hint(seatd_sweeper_t *sw, const char *show_id)
{
    if (sw == NULL || sw->closing)
        return;
    seatd_hints_due(sw->rds, show_id);
}

/* Ends 'op', then files its show at 'score' ("": not filed; 'sweep' as in file_show()),
 * unless ending it freed the closing sweeper. */
static void op_done_then_file(op_t *op, const char *score, int sweep)
{
    seatd_sweeper_t *sw = op->sw;
    char id[SEATD_ID_MAX];
    snprintf(id, sizeof(id), "%s", op->id);
    if (op_done(op) || score[0] == '\0')
        return;
    file_show(sw, id, score, sweep);
}

/* ---------------------------------------------------------------------------------------
 * One sweep: claim due shows, reap each, file each under its next deadline
 * --------------------------------------------------------------------------------------- */

static void on_reap(const seatd_store_result_t *res, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    if (res->err == 0) {
        sw->stats.reaps++;
        sw->stats.reaped += (unsigned long long)res->reap.reaped;
    } else if (res->err != SEATD_ENOSHOW) {
        sw->stats.errors++;
        sw->sweep_failed = 1;
    }
    /* Decide the filing before op_done() (which may free the sweeper when closing). */
    char score[32] = "";
    if (res->err == 0) {
        const seatd_reap_result_t *reap = &res->reap;
        if (reap->due > 0)
            snprintf(score, sizeof(score), "%lld", (long long)reap->now_ms);
        else if (reap->next[0])
            snprintf(score, sizeof(score), "%s", reap->next);
    } else if (res->err != SEATD_ENOSHOW) {
        snprintf(score, sizeof(score), "0"); /* try again at the next sweep */
    }
    op_done_then_file(op, score, 1);
}

static void on_claim(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    if (err || seatd_rds_reply_type(reply) != SEATD_RDS_REPLY_ARRAY) {
        sw->stats.errors++;
        sw->sweep_failed = 1;
        if (!err)
            seatd_log(SEATD_LOG_WARN, NULL, "sweeper: claim failed", "\"reply\":\"%s\"",
                      seatd_rds_reply_str(reply, NULL) ? seatd_rds_reply_str(reply, NULL) : "");
        op_done(op);
        return;
    }
    size_t n = seatd_rds_reply_elements(reply);
    /* Start the reaps before ending the claim, so sweep_pending never dips to 0 between. */
    for (size_t i = 0; i + 1 < n; i += 2) {
        const char *name = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
        const char *id = seatd_rds_reply_str(seatd_rds_reply_element(reply, i + 1), NULL);
        if (!name || !id || strcmp(name, "id") != 0 || sw->closing)
            continue;
        op_t *rop = op_new(sw, id, 1);
        if (seatd_store_reap(sw->store, id, REAP_MAX, on_reap, rop) < 0) {
            sw->stats.errors++;
            char keep[SEATD_ID_MAX];
            snprintf(keep, sizeof(keep), "%s", id);
            int valid = seatd_keys_valid_show_id(keep);
            op_done(rop);
            if (valid)
                file_show(sw, keep, "0", 1);
        }
    }
    op_done(op);
}

/* ---------------------------------------------------------------------------------------
 * The catalogue rescan
 * --------------------------------------------------------------------------------------- */

static void on_first_deadline(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    char score[32] = "";
    if (!err && seatd_rds_reply_elements(reply) == 2) {
        const char *s = seatd_rds_reply_str(seatd_rds_reply_element(reply, 1), NULL);
        if (s)
            snprintf(score, sizeof(score), "%lld", (long long)strtod(s, NULL));
    }
    op_done_then_file(op, score, 0);
}

static void on_catalogue_page(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    sw->rescan_busy = 0;
    size_t n = err ? 0 : seatd_rds_reply_elements(reply);
    if (!sw->closing) {
        for (size_t i = 0; i < n; i++) {
            const char *id = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
            char key[SEATD_KEY_MAX];
            if (!id || seatd_keys_show(key, id, "expiry") < 0)
                continue;
            const char *argv[] = {"ZRANGE", key, "0", "0", "WITHSCORES"};
            op_t *fop = op_new(sw, id, 0);
            if (seatd_rds_callv(sw->rds, 5, argv, NULL, on_first_deadline, fop) < 0)
                op_done(fop);
        }
        sw->stats.rescans++;
        sw->rescan_off += sw->ro.page;
        if (err || n < (size_t)sw->ro.page) {
            sw->rescanning = 0;
            sw->next_rescan_ms = uv_now(sw->loop) + sw->ro.every_ms;
        }
    }
    op_done(op);
}

static void on_unfiled(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    if (err || seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR)
        op->sw->stats.errors++;
    op_done(op);
}

/* The pruned shows also leave their seatd:due bucket (their holds ended long ago). */
static void on_pruned(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    sw->rescan_busy = 0;
    size_t n = 0;
    if (err || seatd_rds_reply_type(reply) != SEATD_RDS_REPLY_ARRAY) {
        sw->stats.errors++;
        sw->pruning = 0; /* walk the catalogue anyway; prune again next rescan */
    } else {
        size_t ne = seatd_rds_reply_elements(reply);
        for (size_t i = 0; i + 1 < ne && !sw->closing; i += 2) {
            const char *name = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
            const char *id = seatd_rds_reply_str(seatd_rds_reply_element(reply, i + 1), NULL);
            if (!name || !id || strcmp(name, "id") != 0)
                continue;
            n++;
            char key[SEATD_KEY_MAX];
            if (seatd_keys_show_hint(key, SEATD_KEY_DUE, id) < 0)
                continue;
            const char *argv[] = {"ZREM", key, id};
            op_t *zop = op_new(sw, id, 0);
            if (seatd_rds_callv(sw->rds, 3, argv, NULL, on_unfiled, zop) < 0)
                op_done(zop);
        }
        sw->stats.pruned += n;
        if (n < (size_t)sw->ro.page)
            sw->pruning = 0;
    }
    op_done(op);
}

/* Answers of seatd_lease ("take" and "renew"). */
static void on_lease(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    int held = 0;
    if (!err && seatd_rds_reply_elements(reply) == 2) {
        const char *v = seatd_rds_reply_str(seatd_rds_reply_element(reply, 1), NULL);
        held = v && strcmp(v, "1") == 0;
    }
    if (held) {
        if (!sw->rescanning) {
            sw->rescanning = 1;
            sw->pruning = 1;
            sw->rescan_off = 0;
        }
        sw->lease_at_ms = uv_now(sw->loop);
        sw->stats.leases++;
    } else {
        if (sw->rescanning)
            seatd_log(SEATD_LOG_WARN, NULL, "sweeper: rescan lease lost; stopping the walk",
                      "\"offset\":%ld", sw->rescan_off);
        sw->rescanning = 0; /* another worker has it */
        sw->next_rescan_ms = uv_now(sw->loop) + sw->ro.every_ms;
    }
    sw->rescan_busy = 0;
    op_done(op);
}

static void lease_call(seatd_sweeper_t *sw, const char *verb)
{
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%lld", (long long)sw->ro.lease_ms);
    const char *keys[] = {SEATD_KEY_RESCAN_LEASE};
    const char *args[] = {verb, sw->token, ttl};
    op_t *op = op_new(sw, NULL, 0);
    sw->rescan_busy = 1;
    if (seatd_scripts_fcall(sw->scripts, SEATD_FN_LEASE, 1, keys, 3, args, NULL, on_lease, op) <
        0) {
        sw->rescan_busy = 0;
        sw->stats.errors++;
        op_done(op);
    }
}

/* One step of the rescan per tick: take the lease; then, renewing it every third of its
 * time while the walk runs, prune the catalogue and walk it page by page. */
static void rescan_step(seatd_sweeper_t *sw)
{
    if (sw->rescan_busy)
        return;
    if (!sw->rescanning) {
        if (uv_now(sw->loop) < sw->next_rescan_ms)
            return;
        sw->next_rescan_ms = uv_now(sw->loop) + sw->ro.every_ms;
        lease_call(sw, "take");
        return;
    }
    if (uv_now(sw->loop) - sw->lease_at_ms >= (uint64_t)sw->ro.lease_ms / 3) {
        lease_call(sw, "renew");
        return;
    }
    op_t *op = op_new(sw, NULL, 0);
    sw->rescan_busy = 1;
    int rc;
    if (sw->pruning) {
        char retention[24], max[24];
        snprintf(retention, sizeof(retention), "%lld", (long long)sw->ro.retention_ms);
        snprintf(max, sizeof(max), "%d", sw->ro.page);
        const char *keys[] = {SEATD_KEY_CATALOGUE};
        const char *args[] = {retention, max};
        rc = seatd_scripts_fcall(sw->scripts, SEATD_FN_CATALOGUE_PRUNE, 1, keys, 2, args, NULL,
                                 on_pruned, op);
    } else {
        char start[24], stop[24];
        snprintf(start, sizeof(start), "%ld", sw->rescan_off);
        snprintf(stop, sizeof(stop), "%ld", sw->rescan_off + sw->ro.page - 1);
        const char *argv[] = {"ZRANGE", SEATD_KEY_CATALOGUE, start, stop};
        rc = seatd_rds_callv(sw->rds, 4, argv, NULL, on_catalogue_page, op);
    }
    if (rc < 0) {
        sw->rescan_busy = 0;
        sw->stats.errors++;
        op_done(op);
    }
}

/* ---------------------------------------------------------------------------------------
 * Waiting rooms (issue 15): every tick, every queue with people in it is advanced
 * (seatd_queue_advance: admissions as seats come back or admissions lapse, sold-out
 * announced), so a quiet queue moves and its news goes out within a tick, with no request.
 * Every worker does it: the function is atomic and publishes only a change.
 * --------------------------------------------------------------------------------------- */

#define QUEUES_MAX "64" /* waiting rooms advanced per tick */

static void queue_op_done(op_t *op)
{
    seatd_sweeper_t *sw = op->sw;
    if (--sw->queue_pending == 0) { /* the tick is whole: its figures are the gauges' */
        sw->stats.queue_rooms = sw->tick_rooms;
        sw->stats.queue_waiting = sw->tick_waiting;
    }
    op_done(op);
}

static void on_queue_advanced(const seatd_store_result_t *res, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    if (res->err == 0) {
        sw->stats.queue_advances++;
        seatd_metrics_add(SEATD_METRIC_QUEUE_ADMITTED_SWEEPER, res->queue.admitted);
        sw->tick_rooms++;
        sw->tick_waiting += res->queue.waiting > 0 ? (unsigned long long)res->queue.waiting : 0;
    } else if (res->err != SEATD_ENOQUEUE && res->err != SEATD_ENOSHOW) {
        sw->stats.errors++;
    }
    queue_op_done(op);
}

static void on_queues(const struct redisReply *reply, int err, void *data)
{
    op_t *op = data;
    seatd_sweeper_t *sw = op->sw;
    if (err || seatd_rds_reply_type(reply) != SEATD_RDS_REPLY_ARRAY || sw->closing) {
        if (err)
            sw->stats.errors++;
        queue_op_done(op);
        return;
    }
    size_t n = seatd_rds_reply_elements(reply);
    for (size_t i = 0; i < n && !sw->closing; i++) {
        size_t len = 0;
        const char *id = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), &len);
        char show[SEATD_ID_MAX];
        if (id == NULL || len == 0 || len >= sizeof(show))
            continue;
        memcpy(show, id, len);
        show[len] = '\0';
        op_t *a = op_new(sw, show, 0);
        sw->queue_pending++;
        if (seatd_store_queue_advance(sw->store, show, on_queue_advanced, a) < 0) {
            sw->stats.errors++;
            queue_op_done(a);
        }
    }
    queue_op_done(op);
}

static void queue_tick(seatd_sweeper_t *sw)
{
    if (sw->queue_pending > 0)
        return; /* the last tick's advances are still out: never pile up */
    sw->tick_rooms = sw->tick_waiting = 0;
    uv_timeval64_t tv;
    if (uv_gettimeofday(&tv) < 0)
        return;
    char now[24];
    snprintf(now, sizeof(now), "%lld", (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000);
    /* Every bucket of the list (each in its own slot range: on a cluster, the shard that owns
     * its shows), so a dead shard stops only its own rooms. */
    for (int b = 0; b < SEATD_HINT_BUCKETS && !sw->closing; b++) {
        char key[SEATD_KEY_MAX];
        if (seatd_keys_hint(key, SEATD_KEY_QUEUES, b) < 0)
            continue;
        /* Rooms whose sales closed leave the list (a queue past its close admits nobody). */
        const char *prune[] = {"ZREMRANGEBYSCORE", key, "-inf", now};
        op_t *p = op_new(sw, NULL, 0);
        if (seatd_rds_callv(sw->rds, 4, prune, NULL, on_filed, p) < 0) {
            sw->stats.errors++;
            if (op_done(p))
                return;
        }
        const char *argv[] = {"ZRANGEBYSCORE", key, now, "+inf", "LIMIT", "0", QUEUES_MAX};
        op_t *op = op_new(sw, NULL, 0);
        sw->queue_pending++;
        if (seatd_rds_callv(sw->rds, 7, argv, NULL, on_queues, op) < 0) {
            sw->stats.errors++;
            queue_op_done(op);
        }
    }
}

static void on_timer(uv_timer_t *t)
{
    seatd_sweeper_t *sw = t->data;
    if (sw->closing)
        return;
    rescan_step(sw);
    queue_tick(sw);
    if (sw->closing)
        return;
    if (sw->sweep_pending > 0)
        return; /* the previous sweep is still reaping: never overlap */
    /* One claim per hint bucket, all sent at once (each bucket lives in its own slot range,
     * so on a cluster each goes to the shard that owns its shows). */
    sw->stats.sweeps++;
    sw->sweep_failed = 0;
    for (int b = 0; b < SEATD_HINT_BUCKETS && !sw->closing; b++) {
        char key[SEATD_KEY_MAX];
        if (seatd_keys_hint(key, SEATD_KEY_DUE, b) < 0)
            continue;
        const char *keys[] = {key};
        const char *args[] = {CLAIM_MAX};
        op_t *op = op_new(sw, NULL, 1);
        if (seatd_scripts_fcall(sw->scripts, SEATD_FN_SWEEP_CLAIM, 1, keys, 1, args, NULL, on_claim,
                                op) < 0) {
            sw->stats.errors++;
            sw->sweep_failed = 1;
            if (op_done(op))
                return;
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Lifecycle
 * --------------------------------------------------------------------------------------- */

seatd_sweeper_t *seatd_sweeper_new(uv_loop_t *loop, seatd_rds_t *rds, seatd_scripts_t *scripts,
                                   seatd_store_t *store, unsigned interval_ms)
{
    seatd_sweeper_t *sw = seatd_calloc(1, sizeof(*sw));
    sw->loop = loop;
    sw->rds = rds;
    sw->scripts = scripts;
    sw->store = store;
    sw->interval_ms = interval_ms ? interval_ms : 250;
    uv_timer_init(loop, &sw->timer);
    sw->timer.data = sw;
    /* The first rescan soon after start, so a restart picks up holds nobody hinted. */
    sw->next_rescan_ms = uv_now(loop) + 1000;
    sw->swept_at_ms = uv_now(loop);
    snprintf(sw->token, sizeof(sw->token), "%ld-%llx", (long)getpid(),
             (unsigned long long)uv_hrtime());
    seatd_sweeper_rescan_t ro = {.retention_ms = -1};
    seatd_sweeper_set_rescan(sw, &ro);
    return sw;
}

void seatd_sweeper_set_rescan(seatd_sweeper_t *sw, const seatd_sweeper_rescan_t *ro)
{
    sw->ro = *ro;
    if (sw->ro.every_ms <= 0)
        sw->ro.every_ms = RESCAN_EVERY_MS;
    if (sw->ro.lease_ms <= 0)
        sw->ro.lease_ms = RESCAN_LEASE_MS;
    if (sw->ro.page <= 0)
        sw->ro.page = RESCAN_PAGE;
    if (sw->ro.retention_ms < 0)
        sw->ro.retention_ms = RETENTION_MS;
    if (sw->ro.first_ms > 0)
        sw->next_rescan_ms = uv_now(sw->loop) + (uint64_t)sw->ro.first_ms;
}

void seatd_sweeper_start(seatd_sweeper_t *sw)
{
    uv_timer_start(&sw->timer, on_timer, sw->interval_ms, sw->interval_ms);
}

void seatd_sweeper_get_stats(const seatd_sweeper_t *sw, seatd_sweeper_stats_t *out)
{
    *out = sw->stats;
    uint64_t now = uv_now(sw->loop);
    out->lag_ms = now > sw->swept_at_ms ? now - sw->swept_at_ms : 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    seatd_sweeper_t *sw = h->data;
    sw->timer_closed = 1;
    maybe_free(sw);
}

void seatd_sweeper_close(seatd_sweeper_t *sw)
{
    if (sw == NULL || sw->closing)
        return;
    sw->closing = 1;
    uv_close((uv_handle_t *)&sw->timer, on_timer_closed);
}
