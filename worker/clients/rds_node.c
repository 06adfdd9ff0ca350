/*
 * rds_node.c - node layer (rds_node.h): one Redis node's pool of async hiredis connections.
 * This file creates a node, queues its commands, holds its hooks and stats, tears it down,
 * and copies replies; the connections are rds_conn.c's, the commands rds_cmd.c's. The objects
 * and how the work is divided are in rds_node_internal.h. Nothing here knows of a cluster or
 * of the public client (rds.h): they are the layers above.
 */
#include "clients/rds_node_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 6379
#define DEFAULT_POOL 2

/* ----------------------------------------------------------------------------------------
 * The node and its commands
 * -------------------------------------------------------------------------------------- */

seatd__rds_node_t *seatd__rds_node_new(uv_loop_t *loop, const seatd__rds_node_opts_t *o)
{
    seatd__rds_node_t *node = seatd_calloc(1, sizeof(*node));
    node->wait_replicas = o->wait_replicas > 0 ? o->wait_replicas : 0;
    node->wait_ms = o->wait_ms > 0 ? o->wait_ms : 100;
    node->loop = loop;
    node->host = seatd_strdup(o->host ? o->host : DEFAULT_HOST);
    node->port = o->port > 0 ? o->port : DEFAULT_PORT;
    node->unix_path = o->unix_path ? seatd_strdup(o->unix_path) : NULL;
    node->user = o->user && o->user[0] ? seatd_strdup(o->user) : NULL;
    node->password = o->password && o->password[0] ? seatd_strdup(o->password) : NULL;
    node->pool_size = o->pool_size > 0 ? o->pool_size : DEFAULT_POOL;
    node->timeout_ms =
        (uint64_t)(o->timeout_ms > 0 ? o->timeout_ms : SEATD__RDS_DEFAULT_TIMEOUT_MS);
    node->max_pending =
        (unsigned)(o->max_pending > 0 ? o->max_pending : SEATD__RDS_DEFAULT_MAX_PENDING);
    node->rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)node) | 1u;
    node->conns = seatd_calloc((size_t)node->pool_size, sizeof(conn_t));
    uv_timer_init(loop, &node->qtimer);
    node->handles_open = 1 + node->pool_size;
    for (int i = 0; i < node->pool_size; i++) {
        conn_t *c = &node->conns[i];
        c->node = node;
        c->index = i;
        c->state = CONN_CLOSED;
        uv_timer_init(loop, &c->timer);
    }
    for (int i = 0; i < node->pool_size; i++)
        node__conn_connect(&node->conns[i]);
    return node;
}

void seatd__rds_node_set_ready_hook(seatd__rds_node_t *node, seatd__rds_node_ready_cb cb,
                                    void *data)
{
    node->ready_cb = cb;
    node->ready_data = data;
}

int seatd__rds_node_send(seatd__rds_node_t *node, seatd__rds_msg_t *m, unsigned flags,
                         uint64_t deadline_ms, seatd__rds_cb cb, void *data)
{
    if (!node || node->closing)
        return SEATD_ESHUTDOWN;
    if (node->pending >= node->max_pending)
        return SEATD_EOVERLOAD;
    cmd_t *cmd = node__cmd_new(node, m, flags, deadline_ms, cb, data);
    node->pending++;
    node__list_push_tail(&node->queue, cmd);
    node__dispatch(node);
    return 0;
}

seatd__rds_node_t *seatd__rds_node_of_conn(void *conn)
{
    return conn ? ((conn_t *)conn)->node : NULL;
}

int seatd__rds_node_send_on_conn(seatd__rds_node_t *node, void *conn, seatd__rds_msg_t *m,
                                 seatd__rds_cb cb, void *data)
{
    if (!node || node->closing)
        return SEATD_ESHUTDOWN;
    conn_t *c = conn;
    if (!c || c < node->conns || c >= node->conns + node->pool_size)
        return SEATD_EINVAL;
    if (c->state != CONN_CONNECTED || !c->ac)
        return SEATD_EUNAVAILABLE;
    cmd_t *cmd = node__cmd_new(node, m, 0, 0, cb, data);
    if (node__conn_send(c, cmd) != 0) {
        node__cmd_free(cmd);
        return SEATD_EUNAVAILABLE;
    }
    node->pending++; /* counted, but never refused: the hook must be able to run */
    return 0;
}

void seatd__rds_node_set_conn_hooks(seatd__rds_node_t *node, seatd__rds_node_lost_cb lost,
                                    void *lost_data, seatd__rds_push_cb push, void *push_data)
{
    node->lost_cb = lost;
    node->lost_data = lost_data;
    node->push_cb = push;
    node->push_data = push_data;
}

/* Every reply to a subscribe-mode command, and every message, on any connection of the pool:
 * handed to the push hook while that connection is the live one. NULL (the context going
 * away) is not: the lost hook reports that. */
static void on_push(redisAsyncContext *ac, void *r, void *privdata)
{
    conn_t *c = privdata;
    seatd__rds_node_t *node = c->node;
    if (!r || c->ac != ac || node->closing || !node->push_cb)
        return;
    node->push_cb(r, node->push_data);
}

int seatd__rds_node_send_push(seatd__rds_node_t *node, void *conn, int argc, const char **argv)
{
    if (!node || node->closing)
        return SEATD_ESHUTDOWN;
    conn_t *c = conn;
    if (!c || c < node->conns || c >= node->conns + node->pool_size || argc <= 0 || !argv)
        return SEATD_EINVAL;
    if (c->state != CONN_CONNECTED || !c->ac)
        return SEATD_EUNAVAILABLE;
    if (redisAsyncCommandArgv(c->ac, on_push, c, argc, argv, NULL) != REDIS_OK)
        return SEATD_EUNAVAILABLE;
    return 0;
}

int seatd__rds_node_is_ready(const seatd__rds_node_t *node)
{
    for (int i = 0; node && i < node->pool_size; i++)
        if (node->conns[i].ready)
            return 1;
    return 0;
}

void seatd__rds_node_stats(const seatd__rds_node_t *node, seatd__rds_node_stats_t *out)
{
    *out = node->stats;
    out->pending = node->pending;
    out->connected = 0;
    for (int i = 0; i < node->pool_size; i++)
        if (node->conns[i].ready)
            out->connected++;
}

/* ----------------------------------------------------------------------------------------
 * Teardown
 * -------------------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    seatd__rds_node_t *node = h->data;
    if (--node->handles_open > 0)
        return;
    free(node->conns);
    free(node->host);
    free(node->unix_path);
    free(node->user);
    free(node->password);
    void (*done)(void *) = node->done;
    void *done_data = node->done_data;
    free(node);
    if (done)
        done(done_data);
}

/* Runs at the top of a loop turn (the queue timer with a 0 delay), never inside a hiredis
 * callback, so freeing the contexts here is safe. */
static void on_teardown(uv_timer_t *t)
{
    seatd__rds_node_t *node = CONTAINER_OF(t, seatd__rds_node_t, qtimer);
    for (int i = 0; i < node->pool_size; i++) {
        conn_t *c = &node->conns[i];
        uv_timer_stop(&c->timer);
        redisAsyncContext *ac = c->ac;
        c->ac = NULL;
        c->state = CONN_CLOSED;
        c->ready = 0;
        if (ac)
            redisAsyncFree(ac); /* in-flight callbacks fire with ESHUTDOWN */
    }
    while (node->queue.head) {
        cmd_t *cmd = node->queue.head;
        node__list_remove(&node->queue, cmd);
        node->pending--;
        node__cmd_finish(cmd, NULL, SEATD_ESHUTDOWN);
    }
    for (int i = 0; i < node->pool_size; i++) {
        node->conns[i].timer.data = node;
        uv_close((uv_handle_t *)&node->conns[i].timer, on_handle_closed);
    }
    node->qtimer.data = node;
    uv_close((uv_handle_t *)&node->qtimer, on_handle_closed);
}

void seatd__rds_node_close(seatd__rds_node_t *node, void (*done)(void *data), void *data)
{
    if (!node || node->closing)
        return;
    node->closing = 1;
    node->done = done;
    node->done_data = data;
    for (int i = 0; i < node->pool_size; i++)
        node->conns[i].ready = 0;
    /* Deferred to the next loop turn: close() may be called from inside a reply callback,
     * where freeing that hiredis context is not allowed, and no callback runs inside close. */
    uv_timer_start(&node->qtimer, on_teardown, 0, 0);
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
