/*
 * rds_cmd.c - node layer (rds_node.h): messages (a command's RESP bytes, formatted once and
 * shared by reference with the layers above), the commands of a node (a message, a callback,
 * a deadline), sending one on a connection (with WAIT behind a durable one), their completion
 * exactly once (a reply, a lost connection, a deadline), and the bounded queue of commands
 * waiting for a ready connection. See rds_node_internal.h.
 */
#include "clients/rds_node_internal.h"

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
void node__list_push_tail(cmd_list_t *l, cmd_t *cmd)
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

void node__list_remove(cmd_list_t *l, cmd_t *cmd)
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

/* ----------------------------------------------------------------------------------------
 * Messages
 * -------------------------------------------------------------------------------------- */

static size_t digits(size_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static char *put_uint(char *p, size_t v)
{
    char *end = p + digits(v);
    char *q = end;
    do {
        *--q = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

/* The size of the RESP form of the command, and the bytes of its arguments in '*args'. */
static size_t resp_size(int argc, const char *const *argv, const size_t *argvlen, size_t *args)
{
    size_t n = 1 + digits((size_t)argc) + 2;
    *args = 0;
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        *args += len;
        n += 1 + digits(len) + 2 + len + 2;
    }
    return n;
}

/* Writes the RESP form at 'p' (resp_size() bytes); returns its end. */
static char *resp_write(char *p, int argc, const char *const *argv, const size_t *argvlen)
{
    *p++ = '*';
    p = put_uint(p, (size_t)argc);
    *p++ = '\r';
    *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        *p++ = '$';
        p = put_uint(p, len);
        *p++ = '\r';
        *p++ = '\n';
        if (len)
            memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    return p;
}

void seatd__rds_format_command(int argc, const char *const *argv, const size_t *argvlen,
                               seatd_buf_t *out)
{
    size_t args;
    size_t n = resp_size(argc, argv, argvlen, &args);
    seatd_buf_reserve(out, n);
    resp_write(out->data + out->len, argc, argv, argvlen);
    out->len += n;
    out->data[out->len] = '\0';
}

/* The command is written in RESP here, once, and handed to hiredis formatted: hiredis's own
 * formatter (an sdscatfmt per argument) was a tenth of a worker's instructions under the hold
 * load (callgrind); a cluster command resent after a redirection is not formatted again. */
seatd__rds_msg_t *seatd__rds_msg_new(int argc, const char *const *argv, const size_t *argvlen)
{
    size_t args;
    size_t n = resp_size(argc, argv, argvlen, &args);
    seatd__rds_msg_t *m = seatd_malloc(sizeof(*m) + n);
    m->refs = 1;
    m->args = args;
    m->len = n;
    resp_write(m->data, argc, argv, argvlen);
    return m;
}

seatd__rds_msg_t *seatd__rds_msg_ref(seatd__rds_msg_t *m)
{
    m->refs++;
    return m;
}

void seatd__rds_msg_unref(seatd__rds_msg_t *m)
{
    if (m && --m->refs == 0)
        free(m);
}

/* ----------------------------------------------------------------------------------------
 * Commands
 * -------------------------------------------------------------------------------------- */

/* Returns an owned command holding a reference to 'msg' (freed with node__cmd_free()). */
cmd_t *node__cmd_new(seatd__rds_node_t *node, seatd__rds_msg_t *msg, unsigned flags,
                     uint64_t deadline_ms, seatd__rds_cb cb, void *data)
{
    cmd_t *cmd = seatd_calloc(1, sizeof(*cmd));
    cmd->node = node;
    cmd->cb = cb;
    cmd->data = data;
    /* A large command (a stadium's ~6 MB layout) takes longer to send and to run: its deadline
     * grows by BULK_GRACE_MS_PER_MB per MiB of arguments, so only the payload's own time is
     * added, and a hung Redis still fails small commands within --redis-timeout-ms. */
    cmd->deadline_ms =
        node__now_ms() + node->timeout_ms + (uint64_t)(msg->args >> 20) * BULK_GRACE_MS_PER_MB;
    if (deadline_ms)
        cmd->deadline_ms = deadline_ms;
    cmd->flags = flags;
    if ((flags & SEATD__RDS_DURABLE) && node->wait_replicas > 0)
        cmd->deadline_ms += (uint64_t)node->wait_ms; /* WAIT's own time */
    cmd->msg = seatd__rds_msg_ref(msg);
    return cmd;
}

void node__cmd_free(cmd_t *cmd)
{
    seatd__rds_reply_free(cmd->held);
    seatd__rds_msg_unref(cmd->msg);
    free(cmd);
}

/* Completes 'cmd' (already unlinked and uncounted): runs its callback once, frees it. */
void node__cmd_finish(cmd_t *cmd, const redisReply *reply, int err)
{
    seatd__rds_node_t *node = cmd->node;
    if (err && err != SEATD_ENOTDURABLE) { /* a write not yet on a replica was answered */
        node->stats.errors++;
        if (err == SEATD_ETIMEOUT)
            node->stats.timeouts++;
    } else {
        node->stats.commands++;
        uint64_t now_us = uv_hrtime() / 1000u;
        if (cmd->sent_us && now_us >= cmd->sent_us) {
            node->stats.rtt_us_sum += now_us - cmd->sent_us;
            seatd_metrics_observe(SEATD_HIST_REDIS_RTT, (double)(now_us - cmd->sent_us) / 1e6);
        }
    }
    cmd->cb(reply, err, cmd->data);
    node__cmd_free(cmd);
}
/* The error of a command whose reply never came. */
static int lost_error(const seatd__rds_node_t *node, const cmd_t *cmd)
{
    if (node->closing)
        return SEATD_ESHUTDOWN;
    if (cmd->timed_out)
        return SEATD_ETIMEOUT;
    return (cmd->flags & SEATD__RDS_DETAIL) ? SEATD__RDS_ELOST : SEATD_EUNAVAILABLE;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    cmd_t *cmd = privdata;
    conn_t *c = cmd->conn;
    seatd__rds_node_t *node = cmd->node;
    if (cmd->wait_pending) {
        /* The WAIT behind it completes the command (its callback runs after this one, with
         * NULL too if the context is going away). */
        if (r) {
            cmd->held = seatd__rds_reply_dup(r);
        } else {
            cmd->main_lost = 1;
            if (c->ac == ac) {
                node__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
                node__conn_mark_lost(c);
            }
        }
        return;
    }
    node__list_remove(&c->inflight, cmd);
    node->pending--;
    if (!r) {
        /* The context is being freed: mark the connection lost before any user callback can
         * queue commands, so that nothing is sent on it. */
        if (c->ac == ac) {
            node__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
            node__conn_mark_lost(c);
        }
        node__cmd_finish(cmd, NULL, lost_error(node, cmd));
        return;
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    node__cmd_finish(cmd, r, 0);
}

/* The WAIT sent after a SEATD_RDS_DURABLE command: completes that command with its own reply.
 * Fewer replicas than asked (or no answer, the connection gone after the write) does not undo
 * the write, but a failover may: the reply is delivered with SEATD_ENOTDURABLE, the shortfall
 * logged and counted (rds.h). */
static void on_wait_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    cmd_t *cmd = privdata;
    conn_t *c = cmd->conn;
    seatd__rds_node_t *node = cmd->node;
    const redisReply *wr = r;
    node__list_remove(&c->inflight, cmd);
    node->pending--;
    if (!wr && c->ac == ac) {
        node__log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
        node__conn_mark_lost(c);
    }
    if (cmd->main_lost || !cmd->held) {
        node__cmd_finish(cmd, NULL, lost_error(node, cmd));
        return;
    }
    int err = 0;
    if (cmd->held->type != REDIS_REPLY_ERROR) {
        long long acked = wr && wr->type == REDIS_REPLY_INTEGER ? wr->integer : -1;
        if (acked >= node->wait_replicas) {
            node->stats.wait_ok++;
        } else {
            node->stats.wait_short++;
            err = SEATD_ENOTDURABLE;
            char detail[96];
            snprintf(detail, sizeof(detail), "%lld of %d replica(s) acknowledged within %d ms",
                     acked < 0 ? 0 : acked, node->wait_replicas, node->wait_ms);
            node__log_conn(SEATD_LOG_WARN, c, "redis WAIT short: write made, not yet on replicas",
                           detail);
        }
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    node__cmd_finish(cmd, cmd->held, err);
}
/* ----------------------------------------------------------------------------------------
 * Dispatch and the queue
 * -------------------------------------------------------------------------------------- */

/* Writes 'cmd' on 'c'; 0, or -1 if hiredis refused (the context is going away). */
int node__conn_send(conn_t *c, cmd_t *cmd)
{
    cmd->conn = c;
    if ((cmd->flags & SEATD__RDS_ASKING) &&
        redisAsyncCommand(c->ac, NULL, NULL, "ASKING") != REDIS_OK) {
        cmd->conn = NULL;
        return -1;
    }
    if (redisAsyncFormattedCommand(c->ac, on_reply, cmd, cmd->msg->data, cmd->msg->len) !=
        REDIS_OK) {
        cmd->conn = NULL;
        return -1;
    }
    if ((cmd->flags & SEATD__RDS_DURABLE) && c->node->wait_replicas > 0) {
        /* Same connection, right behind it: WAIT counts the replicas that have everything
         * this connection wrote so far. hiredis cannot fail this after the command was
         * accepted, short of the context going away, in which case both callbacks get NULL. */
        if (redisAsyncCommand(c->ac, on_wait_reply, cmd, "WAIT %d %d", c->node->wait_replicas,
                              c->node->wait_ms) == REDIS_OK)
            cmd->wait_pending = 1;
    }
    cmd->sent_us = uv_hrtime() / 1000u;
    node__list_push_tail(&c->inflight, cmd);
    if (!uv_is_active((uv_handle_t *)&c->timer))
        node__conn_arm_deadline(c);
    return 0;
}

/* The ready connection with the fewest commands in flight, ties broken round-robin. */
static conn_t *pick_ready(seatd__rds_node_t *node)
{
    conn_t *best = NULL;
    for (int k = 0; k < node->pool_size; k++) {
        conn_t *c = &node->conns[(node->rr + (unsigned)k) % (unsigned)node->pool_size];
        if (c->ready && c->ac && (!best || c->inflight.n < best->inflight.n))
            best = c;
    }
    if (best)
        node->rr++;
    return best;
}

static void on_queue_timer(uv_timer_t *t);

static void arm_queue_timer(seatd__rds_node_t *node)
{
    if (node->closing)
        return;
    if (!node->queue.head) {
        uv_timer_stop(&node->qtimer);
        return;
    }
    if (node->unreachable) {
        /* Redis refused us: fail what waits on the next loop turn, not at its deadline. */
        uv_timer_start(&node->qtimer, on_queue_timer, 0, 0);
        return;
    }
    if (uv_is_active((uv_handle_t *)&node->qtimer))
        return; /* it fires no later than the head's deadline and re-arms itself */
    uint64_t now = node__now_ms(), d = node->queue.head->deadline_ms;
    uv_timer_start(&node->qtimer, on_queue_timer, d > now ? d - now : 0, 0);
}

void node__dispatch(seatd__rds_node_t *node)
{
    if (node->closing)
        return;
    while (node->queue.head) {
        conn_t *c = pick_ready(node);
        if (!c)
            break;
        cmd_t *cmd = node->queue.head;
        node__list_remove(&node->queue, cmd);
        if (node__conn_send(c, cmd) != 0) {
            /* hiredis is tearing this context down; its disconnect callback follows. */
            list_push_head(&node->queue, cmd);
            c->ready = 0;
        }
    }
    arm_queue_timer(node);
}

/* Queued commands whose deadline passed, or all of them while Redis is unreachable, never
 * reached Redis: they fail with EUNAVAILABLE (see rds.h: "never sent", safe to retry). A
 * callback that queues a new command while unreachable sees it failed on a later turn. */
static void on_queue_timer(uv_timer_t *t)
{
    seatd__rds_node_t *node = CONTAINER_OF(t, seatd__rds_node_t, qtimer);
    uint64_t now = node__now_ms();
    cmd_list_t due = {0};
    while (node->queue.head && (node->unreachable || node->queue.head->deadline_ms <= now)) {
        cmd_t *cmd = node->queue.head;
        node__list_remove(&node->queue, cmd);
        node__list_push_tail(&due, cmd);
    }
    while (due.head) {
        cmd_t *cmd = due.head;
        node__list_remove(&due, cmd);
        node->pending--;
        if (node->unreachable && !node->closing)
            node->stats.refused++;
        node__cmd_finish(cmd, NULL, node->closing ? SEATD_ESHUTDOWN : SEATD_EUNAVAILABLE);
    }
    if (!node->closing)
        arm_queue_timer(node);
}

/* A connect attempt of 'c' failed (refused, reset, or its deadline): when no connection is
 * ready, Redis is unreachable, and waiting commands fail now rather than at their deadline.
 * The reconnect backoff keeps running; the first successful connect clears the state. */
void node__conn_connect_failed(conn_t *c)
{
    seatd__rds_node_t *node = c->node;
    node->stats.connect_failures++;
    if (node->closing || seatd__rds_node_is_ready(node))
        return;
    node->unreachable = 1;
    arm_queue_timer(node);
}
