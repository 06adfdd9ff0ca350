/*
 * rds.c - the one Redis client module: a pool of async hiredis connections; see rds.h.
 *
 * Objects:
 *   - seatd_rds_t owns the pool, the queue of commands waiting for a ready connection, one
 *     queue timer (deadlines of queued commands, then the deferred teardown) and the stats.
 *   - conn_t is one pooled connection: a hiredis async context attached to the loop with
 *     rds_uv.c (our adapter: a socket error reaches hiredis when it happens), its state
 *     (CLOSED, CONNECTING, CONNECTED), the list of commands in flight on it, and one timer
 *     whose meaning follows the state: the reconnect backoff when CLOSED, the connect
 *     deadline when CONNECTING, the command deadlines when CONNECTED.
 *   - cmd_t is one command, allocated in one block with its copied arguments. It is on the
 *     queue (cmd->conn == NULL) or in flight on exactly one connection, and completes exactly
 *     once: with its reply, or with an error when it times out, its connection is lost or the
 *     client shuts down.
 *
 * hiredis 0.14 rules this file relies on:
 *   - A registered reply callback runs exactly once: with the reply, or with NULL when the
 *     context is freed (redisAsyncFree, or hiredis' own disconnect on an I/O error). NULL
 *     callbacks run before the disconnect callback.
 *   - The disconnect callback runs only for a context that got connected; a failed connect
 *     reports through the connect callback, after which hiredis frees the context itself.
 *   - redisAsyncFree() is never called from inside one of that context's callbacks here: it is
 *     called only from our own timer callbacks (command deadline, connect deadline, teardown),
 *     which run at the top of a loop turn.
 *   - A connection is marked lost (conn->ac = NULL, not ready) before its context is freed, so
 *     callbacks that run during the free and queue new commands never pick it.
 */
#include "clients/rds.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "clients/rds_cluster.h"
#include "clients/rds_uv.h"

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 6379
#define DEFAULT_POOL 2
#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_MAX_PENDING 10000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define CONNECT_TIMEOUT_MIN_MS 1000

#define CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

enum conn_state_e { CONN_CLOSED, CONN_CONNECTING, CONN_CONNECTED };

typedef struct conn_s conn_t;
typedef struct cmd_s cmd_t;

struct cmd_s {
    cmd_t *prev, *next;    /* links in the rds queue or in conn->inflight */
    seatd_rds_t *rds;      /* owner */
    conn_t *conn;          /* connection it was sent on; NULL while queued */
    seatd_rds_reply_cb cb; /* runs exactly once */
    void *data;            /* passed to 'cb' */
    uint64_t deadline_ms;  /* enqueue time + timeout, on the monotonic clock */
    uint64_t sent_us;      /* when it was written, for the RTT stat */
    int timed_out;         /* its deadline passed while in flight */
    unsigned flags;        /* SEATD_RDS_* and SEATD__RDS_* */
    int wait_pending;      /* a WAIT follows it on its connection: that reply completes it */
    int main_lost;         /* with 'wait_pending': the command's own reply never came */
    redisReply *held;      /* with 'wait_pending': the command's reply (owned copy) */
    int argc;              /* number of arguments */
    size_t *argvlen;       /* argument lengths, in the same block */
    char **argv;           /* argument copies, in the same block */
};

typedef struct cmd_list_s {
    cmd_t *head, *tail; /* FIFO */
    unsigned n;         /* length */
} cmd_list_t;

struct conn_s {
    seatd_rds_t *rds;      /* owner */
    int index;             /* position in the pool, for logs */
    int state;             /* enum conn_state_e */
    int ready;             /* CONNECTED and past the ready hook: takes queued commands */
    int ever_connected;    /* for the reconnects stat */
    redisAsyncContext *ac; /* owned; NULL when CLOSED */
    uv_timer_t timer;      /* backoff, connect deadline or command deadlines (by state) */
    cmd_list_t inflight;   /* commands sent and not answered, in send order */
    uint64_t backoff_ms;   /* last reconnect delay; 0 after a successful connection */
};

struct seatd_rds_s {
    uv_loop_t *loop;             /* borrowed */
    char *host;                  /* owned */
    int port;                    /* TCP port */
    char *unix_path;             /* owned; NULL for TCP */
    char *user, *password;       /* owned; AUTH on connect when 'password' is set */
    int pool_size;               /* connections in 'conns' */
    uint64_t timeout_ms;         /* per-command deadline */
    unsigned max_pending;        /* bound on queued + in flight */
    conn_t *conns;               /* owned array of 'pool_size' */
    cmd_list_t queue;            /* commands waiting for a ready connection */
    uv_timer_t qtimer;           /* queue deadlines; then runs the deferred teardown */
    unsigned pending;            /* queued + in flight */
    unsigned rr;                 /* round-robin start for dispatch ties */
    int closing;                 /* seatd_rds_close() was called */
    int unreachable;             /* a connect attempt failed and no connection is ready:
                                    queued commands fail at once instead of at their deadline */
    int handles_open;            /* uv handles not yet closed; free at 0 */
    seatd_rds_ready_cb ready_cb; /* hook run on every (re)connection */
    void *ready_data;            /* passed to 'ready_cb' */
    uint64_t rng;                /* xorshift state for the backoff jitter */
    seatd_rds_stats_t stats;     /* counters; 'pending'/'connected' computed on read */
    int wait_replicas, wait_ms;  /* WAIT after SEATD_RDS_DURABLE commands when > 0 */
    seatd__rds_cluster_t *cl;    /* cluster mode: the router (this object is only a shell) */
    seatd_rds_lost_cb lost_cb;   /* hook run when a connection is lost or a connect fails */
    void *lost_data;             /* passed to 'lost_cb' */
    seatd_rds_push_cb push_cb;   /* subscribe-mode replies (seatd_rds_send_push) */
    void *push_data;             /* passed to 'push_cb' */
    seatd_rds_t *owner;          /* a cluster node's pool: the cluster-mode client */
};

static void conn_connect(conn_t *c);
static void dispatch(seatd_rds_t *rds);
static void conn_connect_failed(conn_t *c);

/* ----------------------------------------------------------------------------------------
 * Small helpers
 * -------------------------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

static void list_push_tail(cmd_list_t *l, cmd_t *cmd)
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

static void list_remove(cmd_list_t *l, cmd_t *cmd)
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

static uint64_t rng_next(seatd_rds_t *rds)
{
    uint64_t x = rds->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rds->rng = x;
    return x;
}

/* Logs one line about connection 'c'; 'detail' (may be NULL) comes from hiredis and is
 * escaped. */
static void log_conn(int level, const conn_t *c, const char *msg, const char *detail)
{
    const seatd_rds_t *rds = c->rds;
    seatd_buf_t b = SEATD_BUF_INIT;
    const char *where = rds->unix_path ? rds->unix_path : rds->host;
    seatd_buf_json_escape(&b, where, strlen(where));
    seatd_buf_t d = SEATD_BUF_INIT;
    if (detail)
        seatd_buf_json_escape(&d, detail, strlen(detail));
    seatd_log(level, NULL, msg, "\"redis\":\"%s\",\"port\":%d,\"conn\":%d,\"error\":\"%s\"",
              b.data ? b.data : "", rds->unix_path ? 0 : rds->port, c->index, d.data ? d.data : "");
    seatd_buf_free(&b);
    seatd_buf_free(&d);
}

#define BULK_GRACE_MS_PER_MB 1000

/* Returns an owned command holding copies of the arguments (freed with free()). */
static cmd_t *cmd_new(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
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
    cmd->deadline_ms = now_ms() + rds->timeout_ms + (uint64_t)(bytes >> 20) * BULK_GRACE_MS_PER_MB;
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
static void cmd_finish(cmd_t *cmd, const redisReply *reply, int err)
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

/* ----------------------------------------------------------------------------------------
 * Connection state machine
 * -------------------------------------------------------------------------------------- */

static void on_conn_timer(uv_timer_t *t);

/* Arms the reconnect timer with exponential backoff and jitter (half fixed, half random). */
static void conn_schedule_reconnect(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    if (rds->closing)
        return;
    if (c->backoff_ms == 0)
        c->backoff_ms = BACKOFF_MIN_MS;
    else if (c->backoff_ms < BACKOFF_MAX_MS)
        c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    uint64_t half = c->backoff_ms / 2;
    uint64_t delay = half + rng_next(rds) % (half + 1);
    uv_timer_start(&c->timer, on_conn_timer, delay, 0);
}

/* Forgets the connection's context (hiredis frees it, or the caller is about to) and schedules
 * a reconnect. Commands still in flight on it complete through their NULL reply callbacks. */
static void conn_mark_lost(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    int was_connected = c->state == CONN_CONNECTED;
    c->ac = NULL;
    c->state = CONN_CLOSED;
    c->ready = 0;
    uv_timer_stop(&c->timer);
    conn_schedule_reconnect(c);
    if (rds->lost_cb && !rds->closing)
        rds->lost_cb(rds, c, was_connected, rds->lost_data);
}

/* Drops a live connection from outside hiredis' callbacks (our timers): every command in
 * flight on it completes with an error. */
static void conn_drop(conn_t *c)
{
    redisAsyncContext *ac = c->ac;
    conn_mark_lost(c);
    if (ac)
        redisAsyncFree(ac);
}

/* Arms the command-deadline timer for the earliest deadline in flight, if any. */
static void conn_arm_deadline(conn_t *c)
{
    if (!c->inflight.head) {
        uv_timer_stop(&c->timer);
        return;
    }
    uint64_t min = UINT64_MAX;
    for (cmd_t *cmd = c->inflight.head; cmd; cmd = cmd->next)
        if (cmd->deadline_ms < min)
            min = cmd->deadline_ms;
    uint64_t now = now_ms();
    uv_timer_start(&c->timer, on_conn_timer, min > now ? min - now : 0, 0);
}

static void on_conn_timer(uv_timer_t *t)
{
    conn_t *c = CONTAINER_OF(t, conn_t, timer);
    seatd_rds_t *rds = c->rds;
    if (rds->closing)
        return;
    switch (c->state) {
    case CONN_CLOSED: /* backoff elapsed */
        conn_connect(c);
        break;
    case CONN_CONNECTING: /* connect deadline */
        log_conn(SEATD_LOG_WARN, c, "redis connect timed out", NULL);
        conn_drop(c);
        conn_connect_failed(c);
        break;
    case CONN_CONNECTED: {
        uint64_t now = now_ms();
        int expired = 0;
        for (cmd_t *cmd = c->inflight.head; cmd; cmd = cmd->next) {
            if (cmd->deadline_ms <= now) {
                cmd->timed_out = 1;
                expired++;
            }
        }
        if (!expired) {
            conn_arm_deadline(c);
            break;
        }
        /* hiredis cannot cancel one command: drop the connection, which fails everything in
         * flight on it (timed-out ones with ETIMEOUT, the rest with EUNAVAILABLE). */
        char detail[64];
        snprintf(detail, sizeof(detail), "%d command(s) past their deadline", expired);
        log_conn(SEATD_LOG_WARN, c, "redis command timed out, dropping the connection", detail);
        conn_drop(c);
        break;
    }
    }
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
                log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
                conn_mark_lost(c);
            }
        }
        return;
    }
    list_remove(&c->inflight, cmd);
    rds->pending--;
    if (!r) {
        /* The context is being freed: mark the connection lost before any user callback can
         * queue commands, so that nothing is sent on it. */
        if (c->ac == ac) {
            log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
            conn_mark_lost(c);
        }
        cmd_finish(cmd, NULL, lost_error(rds, cmd));
        return;
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    cmd_finish(cmd, r, 0);
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
    list_remove(&c->inflight, cmd);
    rds->pending--;
    if (!wr && c->ac == ac) {
        log_conn(SEATD_LOG_WARN, c, "redis connection lost", ac->errstr);
        conn_mark_lost(c);
    }
    if (cmd->main_lost || !cmd->held) {
        cmd_finish(cmd, NULL, lost_error(rds, cmd));
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
            log_conn(SEATD_LOG_WARN, c, "redis WAIT short: write made, not yet on replicas",
                     detail);
        }
    }
    if (c->ac == ac && !c->inflight.head)
        uv_timer_stop(&c->timer);
    cmd_finish(cmd, cmd->held, err);
}

static void on_auth_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    const redisReply *reply = r;
    conn_t *c = privdata;
    if (reply && reply->type == REDIS_REPLY_ERROR && c->ac == ac)
        log_conn(SEATD_LOG_ERROR, c, "redis refused the credentials", reply->str);
}

/* AUTH is the first command on a new connection: hiredis writes in order, so everything
 * queued after it runs as the authenticated user. Not tracked as a command: a hung server
 * is caught by the deadlines of the commands behind it. */
static void conn_auth(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    const char *argv[3] = {"AUTH", rds->user, rds->password};
    int argc = 3;
    if (!rds->user) {
        argv[1] = rds->password;
        argc = 2;
    }
    if (redisAsyncCommandArgv(c->ac, on_auth_reply, c, argc, argv, NULL) != REDIS_OK)
        log_conn(SEATD_LOG_WARN, c, "redis AUTH not sent", c->ac->errstr);
}

static void on_connect(const redisAsyncContext *cac, int status)
{
    conn_t *c = cac->data;
    seatd_rds_t *rds = c->rds;
    if (c->ac != cac)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback returns. */
        log_conn(SEATD_LOG_DEBUG, c, "redis connect failed", cac->errstr);
        conn_mark_lost(c);
        conn_connect_failed(c);
        return;
    }
    uv_timer_stop(&c->timer);
    c->state = CONN_CONNECTED;
    c->backoff_ms = 0;
    rds->unreachable = 0;
    if (c->ever_connected)
        rds->stats.reconnects++;
    c->ever_connected = 1;
    if (rds->closing)
        return;
    log_conn(SEATD_LOG_INFO, c, "redis connected", NULL);
    if (rds->password)
        conn_auth(c);
    if (rds->owner)
        seatd__rds_run_ready(rds->owner, rds, c);
    else if (rds->ready_cb)
        rds->ready_cb(rds, c, rds->ready_data);
    if (c->state != CONN_CONNECTED || rds->closing)
        return;
    c->ready = 1;
    dispatch(rds);
}

static void on_disconnect(const redisAsyncContext *cac, int status)
{
    conn_t *c = cac->data;
    if (c->ac != cac)
        return; /* we dropped it ourselves and already know */
    log_conn(SEATD_LOG_WARN, c, "redis connection lost", cac->errstr);
    conn_mark_lost(c);
}

/* Starts connecting; on a synchronous failure schedules the next attempt. */
static void conn_connect(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    redisAsyncContext *ac = rds->unix_path ? redisAsyncConnectUnix(rds->unix_path)
                                           : redisAsyncConnect(rds->host, rds->port);
    if (!ac) {
        log_conn(SEATD_LOG_WARN, c, "redis connect failed", "out of memory");
        conn_schedule_reconnect(c);
        return;
    }
    if (ac->err) {
        log_conn(SEATD_LOG_DEBUG, c, "redis connect failed", ac->errstr);
        redisAsyncFree(ac);
        conn_schedule_reconnect(c);
        conn_connect_failed(c);
        if (rds->lost_cb && !rds->closing)
            rds->lost_cb(rds, c, 0, rds->lost_data);
        return;
    }
    ac->data = c;
    if (seatd_rds_uv_attach(ac, rds->loop) != 0) {
        log_conn(SEATD_LOG_WARN, c, "redis connect failed", "cannot attach to the loop");
        redisAsyncFree(ac);
        conn_schedule_reconnect(c);
        return;
    }
    c->ac = ac;
    c->state = CONN_CONNECTING;
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    redisAsyncSetConnectCallback(ac, on_connect); /* after attach: it arms the write event */
    uint64_t limit =
        rds->timeout_ms > CONNECT_TIMEOUT_MIN_MS ? rds->timeout_ms : CONNECT_TIMEOUT_MIN_MS;
    uv_timer_start(&c->timer, on_conn_timer, limit, 0);
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
static int conn_send(conn_t *c, cmd_t *cmd)
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
    list_push_tail(&c->inflight, cmd);
    if (!uv_is_active((uv_handle_t *)&c->timer))
        conn_arm_deadline(c);
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
    uint64_t now = now_ms(), d = rds->queue.head->deadline_ms;
    uv_timer_start(&rds->qtimer, on_queue_timer, d > now ? d - now : 0, 0);
}

static void dispatch(seatd_rds_t *rds)
{
    if (rds->closing)
        return;
    while (rds->queue.head) {
        conn_t *c = pick_ready(rds);
        if (!c)
            break;
        cmd_t *cmd = rds->queue.head;
        list_remove(&rds->queue, cmd);
        if (conn_send(c, cmd) != 0) {
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
    uint64_t now = now_ms();
    cmd_list_t due = {0};
    while (rds->queue.head && (rds->unreachable || rds->queue.head->deadline_ms <= now)) {
        cmd_t *cmd = rds->queue.head;
        list_remove(&rds->queue, cmd);
        list_push_tail(&due, cmd);
    }
    while (due.head) {
        cmd_t *cmd = due.head;
        list_remove(&due, cmd);
        rds->pending--;
        if (rds->unreachable && !rds->closing)
            rds->stats.refused++;
        cmd_finish(cmd, NULL, rds->closing ? SEATD_ESHUTDOWN : SEATD_EUNAVAILABLE);
    }
    if (!rds->closing)
        arm_queue_timer(rds);
}

/* A connect attempt of 'c' failed (refused, reset, or its deadline): when no connection is
 * ready, Redis is unreachable, and waiting commands fail now rather than at their deadline.
 * The reconnect backoff keeps running; the first successful connect clears the state. */
static void conn_connect_failed(conn_t *c)
{
    seatd_rds_t *rds = c->rds;
    rds->stats.connect_failures++;
    if (rds->closing || seatd_rds_is_ready(rds))
        return;
    rds->unreachable = 1;
    arm_queue_timer(rds);
}

/* ----------------------------------------------------------------------------------------
 * Public API
 * -------------------------------------------------------------------------------------- */

seatd_rds_t *seatd_rds_new(uv_loop_t *loop, const seatd_rds_opts_t *opts)
{
    seatd_rds_opts_t o;
    memset(&o, 0, sizeof(o));
    if (opts)
        o = *opts;
    seatd_rds_t *rds = seatd_calloc(1, sizeof(*rds));
    rds->wait_replicas = o.wait_replicas > 0 ? o.wait_replicas : 0;
    rds->wait_ms = o.wait_ms > 0 ? o.wait_ms : 100;
    if (o.cluster_nodes && o.cluster_nodes[0]) {
        /* A shell: the router owns the per-primary pools (rds_cluster.c). */
        rds->loop = loop;
        rds->host = seatd_strdup(o.cluster_nodes);
        rds->timeout_ms = (uint64_t)(o.timeout_ms > 0 ? o.timeout_ms : DEFAULT_TIMEOUT_MS);
        rds->cl = seatd__rds_cluster_new(rds, loop, &o);
        return rds;
    }
    rds->loop = loop;
    rds->host = seatd_strdup(o.host ? o.host : DEFAULT_HOST);
    rds->port = o.port > 0 ? o.port : DEFAULT_PORT;
    rds->unix_path = o.unix_path ? seatd_strdup(o.unix_path) : NULL;
    rds->user = o.user && o.user[0] ? seatd_strdup(o.user) : NULL;
    rds->password = o.password && o.password[0] ? seatd_strdup(o.password) : NULL;
    rds->pool_size = o.pool_size > 0 ? o.pool_size : DEFAULT_POOL;
    rds->timeout_ms = (uint64_t)(o.timeout_ms > 0 ? o.timeout_ms : DEFAULT_TIMEOUT_MS);
    rds->max_pending = (unsigned)(o.max_pending > 0 ? o.max_pending : DEFAULT_MAX_PENDING);
    rds->rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)rds) | 1u;
    rds->conns = seatd_calloc((size_t)rds->pool_size, sizeof(conn_t));
    uv_timer_init(loop, &rds->qtimer);
    rds->handles_open = 1 + rds->pool_size;
    for (int i = 0; i < rds->pool_size; i++) {
        conn_t *c = &rds->conns[i];
        c->rds = rds;
        c->index = i;
        c->state = CONN_CLOSED;
        uv_timer_init(loop, &c->timer);
    }
    for (int i = 0; i < rds->pool_size; i++)
        conn_connect(&rds->conns[i]);
    return rds;
}

void seatd_rds_set_ready_hook(seatd_rds_t *rds, seatd_rds_ready_cb cb, void *data)
{
    rds->ready_cb = cb;
    rds->ready_data = data;
}

static int check_args(int argc, const char **argv, seatd_rds_reply_cb cb)
{
    if (argc <= 0 || !argv || !cb)
        return SEATD_EINVAL;
    for (int i = 0; i < argc; i++)
        if (!argv[i])
            return SEATD_EINVAL;
    return 0;
}

int seatd__rds_send(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    unsigned flags, uint64_t deadline_ms, seatd_rds_reply_cb cb, void *data)
{
    if (!rds || rds->closing)
        return SEATD_ESHUTDOWN;
    int rc = check_args(argc, argv, cb);
    if (rc)
        return rc;
    if (rds->pending >= rds->max_pending)
        return SEATD_EOVERLOAD;
    cmd_t *cmd = cmd_new(rds, argc, argv, argvlen, flags, deadline_ms, cb, data);
    rds->pending++;
    list_push_tail(&rds->queue, cmd);
    dispatch(rds);
    return 0;
}

int seatd_rds_callv_ex(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                       unsigned flags, seatd_rds_reply_cb cb, void *data)
{
    flags &= SEATD_RDS_IDEMPOTENT | SEATD_RDS_DURABLE | SEATD_RDS_NO_WAIT;
    if (rds && rds->cl && !rds->closing)
        return seatd__rds_cluster_callv(rds->cl, argc, argv, argvlen, flags, 0, cb, data);
    return seatd__rds_send(rds, argc, argv, argvlen, flags, 0, cb, data);
}

int seatd_rds_callv(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    seatd_rds_reply_cb cb, void *data)
{
    return seatd_rds_callv_ex(rds, argc, argv, argvlen, 0, cb, data);
}

int seatd_rds_callv_all(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                        seatd_rds_reply_cb cb, void *data)
{
    if (rds && rds->cl && !rds->closing)
        return seatd__rds_cluster_callv(rds->cl, argc, argv, argvlen, 0, 1, cb, data);
    return seatd__rds_send(rds, argc, argv, argvlen, 0, 0, cb, data);
}

int seatd_rds_is_cluster(const seatd_rds_t *rds)
{
    return rds && rds->cl;
}

void seatd__rds_set_owner(seatd_rds_t *pool, seatd_rds_t *owner)
{
    pool->owner = owner;
}

void seatd__rds_run_ready(seatd_rds_t *owner, seatd_rds_t *pool, void *conn)
{
    (void)pool;
    if (owner->ready_cb && !owner->closing)
        owner->ready_cb(owner, conn, owner->ready_data);
}

int seatd_rds_call_on_ready(seatd_rds_t *rds, void *conn, int argc, const char **argv,
                            const size_t *argvlen, seatd_rds_reply_cb cb, void *data)
{
    if (!rds || rds->closing)
        return SEATD_ESHUTDOWN;
    int rc = check_args(argc, argv, cb);
    if (rc)
        return rc;
    if (rds->cl && conn) {
        /* A connection of one of the node pools: the command goes on that pool. */
        seatd_rds_t *pool = ((conn_t *)conn)->rds;
        if (pool->owner != rds)
            return SEATD_EINVAL;
        rds = pool;
        if (rds->closing)
            return SEATD_ESHUTDOWN;
    }
    conn_t *c = conn;
    if (!c || c < rds->conns || c >= rds->conns + rds->pool_size)
        return SEATD_EINVAL;
    if (c->state != CONN_CONNECTED || !c->ac)
        return SEATD_EUNAVAILABLE;
    cmd_t *cmd = cmd_new(rds, argc, argv, argvlen, 0, 0, cb, data);
    if (conn_send(c, cmd) != 0) {
        free(cmd);
        return SEATD_EUNAVAILABLE;
    }
    rds->pending++; /* counted, but never refused: the hook must be able to run */
    return 0;
}

void seatd_rds_set_conn_hooks(seatd_rds_t *rds, seatd_rds_lost_cb lost, seatd_rds_push_cb push,
                              void *data)
{
    rds->lost_cb = lost;
    rds->lost_data = data;
    rds->push_cb = push;
    rds->push_data = data;
}

/* Every reply to a subscribe-mode command, and every message, on any connection of the pool:
 * handed to the push hook while that connection is the live one. NULL (the context going
 * away) is not: the lost hook reports that. */
static void on_push(redisAsyncContext *ac, void *r, void *privdata)
{
    conn_t *c = privdata;
    seatd_rds_t *rds = c->rds;
    if (!r || c->ac != ac || rds->closing || !rds->push_cb)
        return;
    rds->push_cb(r, rds->push_data);
}

int seatd_rds_send_push(seatd_rds_t *rds, void *conn, int argc, const char **argv)
{
    if (!rds || rds->closing || rds->cl)
        return SEATD_ESHUTDOWN;
    conn_t *c = conn;
    if (!c || c < rds->conns || c >= rds->conns + rds->pool_size || argc <= 0 || !argv)
        return SEATD_EINVAL;
    if (c->state != CONN_CONNECTED || !c->ac)
        return SEATD_EUNAVAILABLE;
    if (redisAsyncCommandArgv(c->ac, on_push, c, argc, argv, NULL) != REDIS_OK)
        return SEATD_EUNAVAILABLE;
    return 0;
}

int seatd_rds_is_ready(const seatd_rds_t *rds)
{
    if (rds && rds->cl)
        return seatd__rds_cluster_is_ready(rds->cl);
    for (int i = 0; rds && i < rds->pool_size; i++)
        if (rds->conns[i].ready)
            return 1;
    return 0;
}

void seatd_rds_get_stats(const seatd_rds_t *rds, seatd_rds_stats_t *out)
{
    if (rds->cl) {
        seatd__rds_cluster_stats(rds->cl, out);
        return;
    }
    *out = rds->stats;
    out->pending = rds->pending;
    out->connected = 0;
    for (int i = 0; i < rds->pool_size; i++)
        if (rds->conns[i].ready)
            out->connected++;
}

/* ----------------------------------------------------------------------------------------
 * Teardown
 * -------------------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    seatd_rds_t *rds = h->data;
    if (--rds->handles_open > 0)
        return;
    free(rds->conns);
    free(rds->host);
    free(rds->unix_path);
    free(rds->user);
    free(rds->password);
    free(rds);
}

/* Runs at the top of a loop turn (the queue timer with a 0 delay), never inside a hiredis
 * callback, so freeing the contexts here is safe. */
static void on_teardown(uv_timer_t *t)
{
    seatd_rds_t *rds = CONTAINER_OF(t, seatd_rds_t, qtimer);
    for (int i = 0; i < rds->pool_size; i++) {
        conn_t *c = &rds->conns[i];
        uv_timer_stop(&c->timer);
        redisAsyncContext *ac = c->ac;
        c->ac = NULL;
        c->state = CONN_CLOSED;
        c->ready = 0;
        if (ac)
            redisAsyncFree(ac); /* in-flight callbacks fire with ESHUTDOWN */
    }
    while (rds->queue.head) {
        cmd_t *cmd = rds->queue.head;
        list_remove(&rds->queue, cmd);
        rds->pending--;
        cmd_finish(cmd, NULL, SEATD_ESHUTDOWN);
    }
    for (int i = 0; i < rds->pool_size; i++) {
        rds->conns[i].timer.data = rds;
        uv_close((uv_handle_t *)&rds->conns[i].timer, on_handle_closed);
    }
    rds->qtimer.data = rds;
    uv_close((uv_handle_t *)&rds->qtimer, on_handle_closed);
}

void seatd__rds_free_shell(seatd_rds_t *rds)
{
    free(rds->host);
    free(rds);
}

void seatd_rds_close(seatd_rds_t *rds)
{
    if (!rds || rds->closing)
        return;
    rds->closing = 1;
    if (rds->cl) {
        seatd__rds_cluster_close(rds->cl); /* frees the shell when done */
        return;
    }
    for (int i = 0; i < rds->pool_size; i++)
        rds->conns[i].ready = 0;
    /* Deferred to the next loop turn: close() may be called from inside a reply callback,
     * where freeing that hiredis context is not allowed, and no callback runs inside close. */
    uv_timer_start(&rds->qtimer, on_teardown, 0, 0);
}

/* ----------------------------------------------------------------------------------------
 * Reply accessors
 * -------------------------------------------------------------------------------------- */

int seatd_rds_reply_type(const struct redisReply *r)
{
    if (!r)
        return SEATD_RDS_REPLY_NONE;
    switch (r->type) {
    case REDIS_REPLY_STRING:
        return SEATD_RDS_REPLY_STRING;
    case REDIS_REPLY_ARRAY:
        return SEATD_RDS_REPLY_ARRAY;
    case REDIS_REPLY_INTEGER:
        return SEATD_RDS_REPLY_INTEGER;
    case REDIS_REPLY_NIL:
        return SEATD_RDS_REPLY_NIL;
    case REDIS_REPLY_STATUS:
        return SEATD_RDS_REPLY_STATUS;
    case REDIS_REPLY_ERROR:
        return SEATD_RDS_REPLY_ERROR;
    default:
        return SEATD_RDS_REPLY_OTHER;
    }
}

const char *seatd_rds_reply_str(const struct redisReply *r, size_t *len)
{
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
               r->type != REDIS_REPLY_ERROR)) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = r->len;
    return r->str;
}

long long seatd_rds_reply_integer(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

size_t seatd_rds_reply_elements(const struct redisReply *r)
{
    return r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
}

const struct redisReply *seatd_rds_reply_element(const struct redisReply *r, size_t i)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
        return NULL;
    return r->element[i];
}

/* ----------------------------------------------------------------------------------------
 * Reply copies (WAIT holds the command's reply across a callback; the cluster router merges
 * the replies of a command sent to every primary)
 * -------------------------------------------------------------------------------------- */

redisReply *seatd__rds_reply_dup(const redisReply *r)
{
    if (!r)
        return NULL;
    redisReply *d = seatd_calloc(1, sizeof(*d));
    d->type = r->type;
    d->integer = r->integer;
    if (r->str) {
        d->len = r->len;
        d->str = seatd_malloc(r->len + 1);
        memcpy(d->str, r->str, r->len);
        d->str[r->len] = '\0';
    }
    if (r->element && r->elements) {
        d->elements = r->elements;
        d->element = seatd_calloc(r->elements, sizeof(*d->element));
        for (size_t i = 0; i < r->elements; i++)
            d->element[i] = seatd__rds_reply_dup(r->element[i]);
    }
    return d;
}

void seatd__rds_reply_free(redisReply *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->element && i < r->elements; i++)
        seatd__rds_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}
