/*
 * rds.c - the one Redis client module: a pool of async hiredis connections; see rds.h. This
 * file is its public side: creating the client (a pool, or in cluster mode a shell over the
 * router of rds_cluster.c), queueing commands, the hooks, the stats and the teardown. The
 * objects and how the work is divided among the rds*.c files are in rds_internal.h.
 */
#include "clients/rds_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 6379
#define DEFAULT_POOL 2
#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_MAX_PENDING 10000

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
        rds__conn_connect(&rds->conns[i]);
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
    cmd_t *cmd = rds__cmd_new(rds, argc, argv, argvlen, flags, deadline_ms, cb, data);
    rds->pending++;
    rds__list_push_tail(&rds->queue, cmd);
    rds__dispatch(rds);
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
    cmd_t *cmd = rds__cmd_new(rds, argc, argv, argvlen, 0, 0, cb, data);
    if (rds__conn_send(c, cmd) != 0) {
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
        rds__list_remove(&rds->queue, cmd);
        rds->pending--;
        rds__cmd_finish(cmd, NULL, SEATD_ESHUTDOWN);
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
