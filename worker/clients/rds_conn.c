/*
 * rds_conn.c - node layer (rds_node.h): one pooled Redis connection's state machine:
 * connecting (with AUTH first when a password is set, then the ready hook), the connect
 * deadline, the command deadlines while connected, dropping a connection and reconnecting with
 * exponential backoff and jitter. The commands it carries are rds_cmd.c's. See
 * rds_node_internal.h.
 */
#include "clients/rds_node_internal.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "clients/rds_uv.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define CONNECT_TIMEOUT_MIN_MS 1000

/* ----------------------------------------------------------------------------------------
 * Small helpers
 * -------------------------------------------------------------------------------------- */

static uint64_t rng_next(seatd__rds_node_t *node)
{
    uint64_t x = node->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    node->rng = x;
    return x;
}

/* Logs one line about connection 'c'; 'detail' (may be NULL) comes from hiredis and is
 * escaped. */
void node__log_conn(int level, const conn_t *c, const char *msg, const char *detail)
{
    const seatd__rds_node_t *node = c->node;
    seatd_buf_t b = SEATD_BUF_INIT;
    const char *where = node->unix_path ? node->unix_path : node->host;
    seatd_buf_json_escape(&b, where, strlen(where));
    seatd_buf_t d = SEATD_BUF_INIT;
    if (detail)
        seatd_buf_json_escape(&d, detail, strlen(detail));
    seatd_log(level, NULL, msg, "\"redis\":\"%s\",\"port\":%d,\"conn\":%d,\"error\":\"%s\"",
              b.data ? b.data : "", node->unix_path ? 0 : node->port, c->index,
              d.data ? d.data : "");
    seatd_buf_free(&b);
    seatd_buf_free(&d);
}

/* ----------------------------------------------------------------------------------------
 * Connection state machine
 * -------------------------------------------------------------------------------------- */

static void on_conn_timer(uv_timer_t *t);

/* Arms the reconnect timer with exponential backoff and jitter (half fixed, half random). */
static void conn_schedule_reconnect(conn_t *c)
{
    seatd__rds_node_t *node = c->node;
    if (node->closing)
        return;
    if (c->backoff_ms == 0)
        c->backoff_ms = BACKOFF_MIN_MS;
    else if (c->backoff_ms < BACKOFF_MAX_MS)
        c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
    uint64_t half = c->backoff_ms / 2;
    uint64_t delay = half + rng_next(node) % (half + 1);
    uv_timer_start(&c->timer, on_conn_timer, delay, 0);
}

/* Forgets the connection's context (hiredis frees it, or the caller is about to) and schedules
 * a reconnect. Commands still in flight on it complete through their NULL reply callbacks. */
void node__conn_mark_lost(conn_t *c)
{
    seatd__rds_node_t *node = c->node;
    int was_connected = c->state == CONN_CONNECTED;
    c->ac = NULL;
    c->state = CONN_CLOSED;
    c->ready = 0;
    uv_timer_stop(&c->timer);
    conn_schedule_reconnect(c);
    if (node->lost_cb && !node->closing)
        node->lost_cb(node, c, was_connected, node->lost_data);
}

/* Drops a live connection from outside hiredis' callbacks (our timers): every command in
 * flight on it completes with an error. */
static void conn_drop(conn_t *c)
{
    redisAsyncContext *ac = c->ac;
    node__conn_mark_lost(c);
    if (ac)
        redisAsyncFree(ac);
}

/* Arms the command-deadline timer for the earliest deadline in flight, if any. */
void node__conn_arm_deadline(conn_t *c)
{
    if (!c->inflight.head) {
        uv_timer_stop(&c->timer);
        return;
    }
    uint64_t min = UINT64_MAX;
    for (cmd_t *cmd = c->inflight.head; cmd; cmd = cmd->next)
        if (cmd->deadline_ms < min)
            min = cmd->deadline_ms;
    uint64_t now = node__now_ms();
    uv_timer_start(&c->timer, on_conn_timer, min > now ? min - now : 0, 0);
}

/* The commands in flight on 'c' whose deadline is 'now' or earlier; 'mark' flags them as
 * timed out (they fail with SEATD_ETIMEOUT when the connection is dropped). */
static int count_expired(conn_t *c, uint64_t now, int mark)
{
    int expired = 0;
    for (cmd_t *cmd = c->inflight.head; cmd; cmd = cmd->next) {
        if (cmd->deadline_ms <= now) {
            cmd->timed_out |= mark;
            expired++;
        }
    }
    return expired;
}

static void on_conn_timer(uv_timer_t *t)
{
    conn_t *c = CONTAINER_OF(t, conn_t, timer);
    seatd__rds_node_t *node = c->node;
    if (node->closing)
        return;
    switch (c->state) {
    case CONN_CLOSED: /* backoff elapsed */
        node__conn_connect(c);
        break;
    case CONN_CONNECTING: /* connect deadline */
        node__log_conn(SEATD_LOG_WARN, c, "redis connect timed out", NULL);
        conn_drop(c);
        node__conn_connect_failed(c);
        break;
    case CONN_CONNECTED: {
        uint64_t now = node__now_ms();
        if (count_expired(c, now, 0) == 0) {
            node__conn_arm_deadline(c);
            break;
        }
        /* Timers run before the loop polls for I/O: after a long turn of the loop (a fan-out
         * to thousands of sockets, a descheduled process) a reply that arrived in time may be
         * waiting in the socket. Read it first: only a command Redis has not answered is past
         * its deadline. */
        redisAsyncHandleRead(c->ac);
        if (node->closing || c->state != CONN_CONNECTED)
            break; /* closed from a reply's callback, or the read found the connection lost */
        int expired = count_expired(c, now, 1);
        if (!expired) {
            node__conn_arm_deadline(c);
            break;
        }
        /* hiredis cannot cancel one command: drop the connection, which fails everything in
         * flight on it (timed-out ones with ETIMEOUT, the rest with EUNAVAILABLE). */
        char detail[64];
        snprintf(detail, sizeof(detail), "%d command(s) past their deadline", expired);
        node__log_conn(SEATD_LOG_WARN, c, "redis command timed out, dropping the connection",
                       detail);
        conn_drop(c);
        break;
    }
    }
}

static void on_auth_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    const redisReply *reply = r;
    conn_t *c = privdata;
    if (reply && reply->type == REDIS_REPLY_ERROR && c->ac == ac)
        node__log_conn(SEATD_LOG_ERROR, c, "redis refused the credentials", reply->str);
}

/* AUTH is the first command on a new connection: hiredis writes in order, so everything
 * queued after it runs as the authenticated user. Not tracked as a command: a hung server
 * is caught by the deadlines of the commands behind it. */
static void conn_auth(conn_t *c)
{
    seatd__rds_node_t *node = c->node;
    const char *argv[3] = {"AUTH", node->user, node->password};
    int argc = 3;
    if (!node->user) {
        argv[1] = node->password;
        argc = 2;
    }
    if (redisAsyncCommandArgv(c->ac, on_auth_reply, c, argc, argv, NULL) != REDIS_OK)
        node__log_conn(SEATD_LOG_WARN, c, "redis AUTH not sent", c->ac->errstr);
}

static void on_connect(const redisAsyncContext *cac, int status)
{
    conn_t *c = cac->data;
    seatd__rds_node_t *node = c->node;
    if (c->ac != cac)
        return;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback returns. */
        node__log_conn(SEATD_LOG_DEBUG, c, "redis connect failed", cac->errstr);
        node__conn_mark_lost(c);
        node__conn_connect_failed(c);
        return;
    }
    uv_timer_stop(&c->timer);
    c->state = CONN_CONNECTED;
    c->backoff_ms = 0;
    node->unreachable = 0;
    if (c->ever_connected)
        node->stats.reconnects++;
    c->ever_connected = 1;
    if (node->closing)
        return;
    node__log_conn(SEATD_LOG_INFO, c, "redis connected", NULL);
    if (node->password)
        conn_auth(c);
    if (node->ready_cb)
        node->ready_cb(node, c, node->ready_data);
    if (c->state != CONN_CONNECTED || node->closing)
        return;
    c->ready = 1;
    node__dispatch(node);
}

static void on_disconnect(const redisAsyncContext *cac, int status)
{
    conn_t *c = cac->data;
    if (c->ac != cac)
        return; /* we dropped it ourselves and already know */
    node__log_conn(SEATD_LOG_WARN, c, "redis connection lost", cac->errstr);
    node__conn_mark_lost(c);
}

/* Starts connecting; on a synchronous failure schedules the next attempt. */
void node__conn_connect(conn_t *c)
{
    seatd__rds_node_t *node = c->node;
    redisAsyncContext *ac = node->unix_path ? redisAsyncConnectUnix(node->unix_path)
                                            : redisAsyncConnect(node->host, node->port);
    if (!ac) {
        node__log_conn(SEATD_LOG_WARN, c, "redis connect failed", "out of memory");
        conn_schedule_reconnect(c);
        return;
    }
    if (ac->err) {
        node__log_conn(SEATD_LOG_DEBUG, c, "redis connect failed", ac->errstr);
        redisAsyncFree(ac);
        conn_schedule_reconnect(c);
        node__conn_connect_failed(c);
        if (node->lost_cb && !node->closing)
            node->lost_cb(node, c, 0, node->lost_data);
        return;
    }
    ac->data = c;
    if (seatd_rds_uv_attach(ac, node->loop) != 0) {
        node__log_conn(SEATD_LOG_WARN, c, "redis connect failed", "cannot attach to the loop");
        redisAsyncFree(ac);
        conn_schedule_reconnect(c);
        return;
    }
    c->ac = ac;
    c->state = CONN_CONNECTING;
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    redisAsyncSetConnectCallback(ac, on_connect); /* after attach: it arms the write event */
    uint64_t limit =
        node->timeout_ms > CONNECT_TIMEOUT_MIN_MS ? node->timeout_ms : CONNECT_TIMEOUT_MIN_MS;
    uv_timer_start(&c->timer, on_conn_timer, limit, 0);
}
