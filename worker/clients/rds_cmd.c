/*
 * rds_cmd.c - the commands of the single-node Redis client: their allocation (one block with
 * the copied arguments), sending one on a connection (in RESP, with WAIT behind a durable
 * one), their completion exactly once (a reply, a lost connection, a deadline), and the
 * bounded queue of commands waiting for a ready connection. See rds_internal.h.
 */
#include "clients/rds_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"

/* ----------------------------------------------------------------------------------------
 * Small helpers
 * -------------------------------------------------------------------------------------- */
void rds__list_push_tail(cmd_list_t *l, cmd_t *cmd)
{
    cmd->next = NULL;
    cmd->prev = l->tail;
    if (l->tail)
        l->tail->next = cmd;
    else
        l->head = cmd;
    l->tail = cmd;
    l->n++;
}

static void list_push_head(cmd_list_t *l, cmd_t *cmd)
{
    cmd->prev = NULL;
    cmd->next = l->head;
    if (l->head)
        l->head->prev = cmd;
    else
        l->tail = cmd;
    l->head = cmd;
    l->n++;
}

void rds__list_remove(cmd_list_t *l, cmd_t *cmd)
{
    if (cmd->prev)
        cmd->prev->next = cmd->next;
    else
        l->head = cmd->next;
    if (cmd->next)
        cmd->next->prev = cmd->prev;
    else
        l->tail = cmd->prev;
    cmd->prev = cmd->next = NULL;
    l->n--;
}
#define BULK_GRACE_MS_PER_MB 1000

/* Returns an owned command holding copies of the arguments (freed with free()). */
cmd_t *rds__cmd_new(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    unsigned flags, uint64_t deadline_ms, seatd_rds_reply_cb cb, void *data)
{
    size_t bytes = 0;
    for (int i = 0; i < argc; i++)
        bytes += (argvlen ? argvlen[i] : strlen(argv[i])) + 1;
    size_t size = sizeof(cmd_t) + (size_t)argc * (sizeof(size_t) + sizeof(char *)) + bytes;
    cmd_t *cmd = seatd_malloc(size);
    memset(cmd, 0, sizeof(*cmd));
    cmd->rds = rds;
    cmd->cb = cb;
    cmd->data = data;
    /* A large command (a stadium's ~6 MB layout) takes longer to send and to run: its deadline
     * grows by BULK_GRACE_MS_PER_MB per MiB of arguments, so only the payload's own time is
     * added, and a hung Redis still fails small commands within --redis-timeout-ms. */
    cmd->deadline_ms =
        rds__now_ms() + rds->timeout_ms + (uint64_t)(bytes >> 20) * BULK_GRACE_MS_PER_MB;
    if (deadline_ms)
        cmd->deadline_ms = deadline_ms;
    cmd->flags = flags;
    if ((flags & SEATD_RDS_DURABLE) && rds->wait_replicas > 0)
        cmd->deadline_ms += (uint64_t)rds->wait_ms; /* WAIT's own time */
    cmd->argc = argc;
    cmd->argvlen = (size_t *)(cmd + 1);
    cmd->argv = (char **)(cmd->argvlen + argc);
    char *p = (char *)(cmd->argv + argc);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        if (len)
            memcpy(p, argv[i], len);
        p[len] = '\0';
        cmd->argv[i] = p;
        cmd->argvlen[i] = len;
        p += len + 1;
    }
    return cmd;
}

/* Completes 'cmd' (already unlinked and uncounted): runs its callback once, frees it. */
void rds__cmd_finish(cmd_t *cmd, const redisReply *reply, int err)
{
    seatd_rds_t *rds = cmd->rds;
    if (err && err != SEATD_ENOTDURABLE) { /* a write not yet on a replica was answered */
        rds->stats.errors++;
        if (err == SEATD_ETIMEOUT)
            rds->stats.timeouts++;
    } else {
        rds->stats.commands++;
        uint64_t now_us = uv_hrtime() / 1000u;
        if (cmd->sent_us && now_us >= cmd->sent_us) {
            rds->stats.rtt_us_sum += now_us - cmd->sent_us;
            seatd_metrics_observe(SEATD_HIST_REDIS_RTT, (double)(now_us - cmd->sent_us) / 1e6);
        }
    }
    cmd->cb(reply, err, cmd->data);
    seatd__rds_reply_free(cmd->held);
    free(cmd);
}
/* The error of a command whose reply never came. */
static int lost_error(const seatd_rds_t *rds, const cmd_t *cmd)
{
    if (rds->closing)
        return SEATD_ESHUTDOWN;
    if (cmd->timed_out)
        return SEATD_ETIMEOUT;
    return (cmd->flags & SEATD__RDS_DETAIL) ? SEATD__RDS_ELOST : SEATD_EUNAVAILABLE;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    cmd_t *cmd = privdata;
    conn_t *c = cmd->conn;
    seatd_rds_t *rds = cmd->rds;
    if (cmd->wait_pending) {
        /* The WAIT behind it completes the command (its callback runs after this one, with
         * NULL too if the context is going away). */
        if (r) {
            cmd->held = seatd__rds_reply_dup(r);
        } else {
            cmd->main_lost = 1;
            if (c->ac == ac) {
                rds__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
                rds__conn_mark_lost(c);
            }
        }
        return;
    }
    rds__list_remove(&c->inflight, cmd);
    rds->pending--;
    if (!r) {
        /* The context is being freed: mark the connection lost before any user callback can
         * queue commands, so that nothing is sent on it. */
        if (c->ac == ac) {
            rds__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
            rds__conn_mark_lost(c);
        }
        rds__cmd_finish(cmd, NULL, lost_error(rds, cmd));
        return;
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    rds__cmd_finish(cmd, r, 0);
}

/* The WAIT sent after a SEATD_RDS_DURABLE command: completes that command with its own reply.
 * Fewer replicas than asked (or no answer, the connection gone after the write) does not undo
 * the write, but a failover may: the reply is delivered with SEATD_ENOTDURABLE, the shortfall
 * logged and counted (rds.h). */
static void on_wait_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    cmd_t *cmd = privdata;
    conn_t *c = cmd->conn;
    seatd_rds_t *rds = cmd->rds;
    const redisReply *wr = r;
    rds__list_remove(&c->inflight, cmd);
    rds->pending--;
    if (!wr && c->ac == ac) {
        rds__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
        rds__conn_mark_lost(c);
    }
    if (cmd->main_lost || !cmd->held) {
        rds__cmd_finish(cmd, NULL, lost_error(rds, cmd));
        return;
    }
    int err = 0;
    if (cmd->held->type != REDIS_REPLY_ERROR) {
        long long acked = wr && wr->type == REDIS_REPLY_INTEGER ? wr->integer : -1;
        if (acked >= rds->wait_replicas) {
            rds->stats.wait_ok++;
        } else {
            rds->stats.wait_short++;
            err = SEATD_ENOTDURABLE;
            char detail[96];
            snprintf(detail, sizeof(detail), "%lld of %d replica(s) acknowledged within %d ms",
                     acked < 0 ? 0 : acked, rds->wait_replicas, rds->wait_ms);
            rds__log_conn(SEATD_LOG_WARN, c, "redis WAIT short: write made, not yet on replicas",
                          detail);
        }
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    rds__cmd_finish(cmd, cmd->held, err);
}
/* ----------------------------------------------------------------------------------------
 * Dispatch and the queue
 * -------------------------------------------------------------------------------------- */

void seatd__rds_format_command(int argc, const char *const *argv, const size_t *argvlen,
                               seatd_buf_t *out)
{
    size_t bytes = 16;
    for (int i = 0; i < argc; i++)
        bytes += argvlen[i] + 32;
    seatd_buf_reserve(out, bytes);
    seatd_buf_append(out, "*", 1);
    seatd_buf_put_uint(out, (size_t)argc);
    seatd_buf_append(out, "\r\n", 2);
    for (int i = 0; i < argc; i++) {
        seatd_buf_append(out, "$", 1);
        seatd_buf_put_uint(out, argvlen[i]);
        seatd_buf_append(out, "\r\n", 2);
        seatd_buf_append(out, argv[i], argvlen[i]);
        seatd_buf_append(out, "\r\n", 2);
    }
}

/* Writes 'cmd' on 'c'; 0, or -1 if hiredis refused (the context is going away). The command
 * is written in RESP here and handed over formatted: hiredis's own formatter (an sdscatfmt per
 * argument) was a tenth of a worker's instructions under the hold load (callgrind). */
int rds__conn_send(conn_t *c, cmd_t *cmd)
{
    static seatd_buf_t resp = SEATD_BUF_INIT; /* the loop's scratch: used and emptied at once */
    cmd->conn = c;
    if ((cmd->flags & SEATD__RDS_ASKING) &&
        redisAsyncCommand(c->ac, NULL, NULL, "ASKING") != REDIS_OK) {
        cmd->conn = NULL;
        return -1;
    }
    seatd_buf_reset(&resp);
    seatd__rds_format_command(cmd->argc, (const char *const *)cmd->argv, cmd->argvlen, &resp);
    int rc = redisAsyncFormattedCommand(c->ac, on_reply, cmd, resp.data, resp.len);
    if (resp.cap > 64 * 1024)
        seatd_buf_free(&resp); /* a layout upload's size is not kept for every later command */
    if (rc != REDIS_OK) {
        cmd->conn = NULL;
        return -1;
    }
    if ((cmd->flags & SEATD_RDS_DURABLE) && c->rds->wait_replicas > 0) {
        /* Same connection, right behind it: WAIT counts the replicas that have everything
         * this connection wrote so far. hiredis cannot fail this after the command was
         * accepted, short of the context going away, in which case both callbacks get NULL. */
        if (redisAsyncCommand(c->ac, on_wait_reply, cmd, "WAIT %d %d", c->rds->wait_replicas,
                              c->rds->wait_ms) == REDIS_OK)
            cmd->wait_pending = 1;
    }
    cmd->sent_us = uv_hrtime() / 1000u;
    rds__list_push_tail(&c->inflight, cmd);
    if (!uv_is_active((uv_handle_t *)&c->timer))
        rds__conn_arm_deadline(c);
    return 0;
}

/* The ready connection with the fewest commands in flight, ties broken round-robin. */
static conn_t *pick_ready(seatd_rds_t *rds)
{
    conn_t *best = NULL;
    for (int k = 0; k < rds->pool_size; k++) {
        conn_t *c = &rds->conns[(rds->rr + (unsigned)k) % (unsigned)rds->pool_size];
        if (c->ready && c->ac && (!best || c->inflight.n < best->inflight.n))
            best = c;
    }
    if (best)
        rds->rr++;
    return best;
}

static void on_queue_timer(uv_timer_t *t);

static void arm_queue_timer(seatd_rds_t *rds)
{
    if (rds->closing)
        return;
    if (!rds->queue.head) {
        uv_timer_stop(&rds->qtimer);
        return;
    }
    if (rds->unreachable) {
        /* Redis refused us: fail what waits on the next loop turn, not at its deadline. */
        uv_timer_start(&rds->qtimer, on_queue_timer, 0, 0);
        return;
    }
    if (uv_is_active((uv_handle_t *)&rds->qtimer))
        return; /* it fires no later than the head's deadline and re-arms itself */
    uint64_t now = rds__now_ms(), d = rds->queue.head->deadline_ms;
    uv_timer_start(&rds->qtimer, on_queue_timer, d > now ? d - now : 0, 0);
}

void rds__dispatch(seatd_rds_t *rds)
{
    if (rds->closing)
        return;
    while (rds->queue.head) {
        conn_t *c = pick_ready(rds);
        if (!c)
            break;
        cmd_t *cmd = rds->queue.head;
        rds__list_remove(&rds->queue, cmd);
        if (rds__conn_send(c, cmd) != 0) {
            /* hiredis is tearing this context down; its disconnect callback follows. */
            list_push_head(&rds->queue, cmd);
            c->ready = 0;
        }
    }
    arm_queue_timer(rds);
}

/* Queued commands whose deadline passed, or all of them while Redis is unreachable, never
 * reached Redis: they fail with EUNAVAILABLE (see rds.h: "never sent", safe to retry). A
 * callback that queues a new command while unreachable sees it failed on a later turn. */
static void on_queue_timer(uv_timer_t *t)
{
    seatd_rds_t *rds = CONTAINER_OF(t, seatd_rds_t, qtimer);
    uint64_t now = rds__now_ms();
    cmd_list_t due = {0};
    while (rds->queue.head && (rds->unreachable || rds->queue.head->deadline_ms <= now)) {
        cmd_t *cmd = rds->queue.head;
        rds__list_remove(&rds->queue, cmd);
        rds__list_push_tail(&due, cmd);
    }
    while (due.head) {
        cmd_t *cmd = due.head;
        rds__list_remove(&due, cmd);
        rds->pending--;
        if (rds->unreachable && !rds->closing)
            rds->stats.refused++;
        rds__cmd_finish(cmd, NULL, rds->closing ? SEATD_ESHUTDOWN : SEATD_EUNAVAILABLE);
    }
    if (!rds->closing)
        arm_queue_timer(rds);
}

/* A connect attempt of 'c' failed (refused, reset, or its deadline): when no connection is
 * ready, Redis is unreachable, and waiting commands fail now rather than at their deadline.
 * The reconnect backoff keeps running; the first successful connect clears the state. */
void rds__conn_connect_failed(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    rds->stats.connect_failures++;
    if (rds->closing || seatd_rds_is_ready(rds))
        return;
    rds->unreachable = 1;
    arm_queue_timer(rds);
}
