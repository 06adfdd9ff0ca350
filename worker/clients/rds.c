/*
 * rds.c - the public Redis client (rds.h), the top layer of the rds files: a facade that
 * checks a call, formats its command once (a message, rds_node.h) and hands it to one node's
 * pool (rds_node.h) or, in cluster mode, to the router (rds_cluster.h), which hands it on to
 * its nodes without copying it again. The layers below know nothing of this one:
 *
 *     rds.c (this file), rds_reply.c: the facade
 *       |-- one node -->  rds_node.h (rds_node.c rds_conn.c rds_cmd.c rds_uv.c)
 *       '-- cluster -->   rds_cluster.h (rds_cluster*.c)  -->  rds_node.h, one node per primary
 *
 * The hooks (ready, lost) are passed down with this object as their data and run with it,
 * so a caller sees its own seatd_rds_t whatever layer a connection belongs to.
 */
#include "clients/rds.h"

#include <stdlib.h>

#include "base/mem.h"
#include "clients/rds_cluster.h"
#include "clients/rds_node.h"

_Static_assert(SEATD_RDS_IDEMPOTENT == SEATD__RDS_IDEMPOTENT &&
                   SEATD_RDS_DURABLE == SEATD__RDS_DURABLE &&
                   SEATD_RDS_NO_WAIT == SEATD__RDS_NO_WAIT,
               "rds.h's call flags are the layers' below");

struct seatd_rds_s {
    seatd__rds_node_t *node;     /* single-node mode: the one pool (owned) */
    seatd__rds_cluster_t *cl;    /* cluster mode: the router (owned) */
    int closing;                 /* seatd_rds_close() was called; freed when the layer is */
    seatd_rds_ready_cb ready_cb; /* run on every (re)connection of any node */
    void *ready_data;            /* passed to 'ready_cb' */
    seatd_rds_lost_cb lost_cb;   /* single-node: a connection lost or a connect failed */
    void *lost_data;             /* passed to 'lost_cb' */
};

static void on_node_ready(seatd__rds_node_t *node, void *conn, void *data)
{
    (void)node;
    seatd_rds_t *rds = data;
    if (rds->ready_cb && !rds->closing)
        rds->ready_cb(rds, conn, rds->ready_data);
}

static void on_node_lost(seatd__rds_node_t *node, void *conn, int was_connected, void *data)
{
    (void)node;
    seatd_rds_t *rds = data;
    if (rds->lost_cb && !rds->closing)
        rds->lost_cb(rds, conn, was_connected, rds->lost_data);
}

seatd_rds_t *seatd_rds_new(struct uv_loop_s *loop, const seatd_rds_opts_t *opts)
{
    seatd_rds_opts_t o = {0};
    if (opts)
        o = *opts;
    seatd__rds_node_opts_t no = {
        .host = o.host,
        .port = o.port,
        .unix_path = o.unix_path,
        .pool_size = o.pool_size,
        .timeout_ms = o.timeout_ms,
        .max_pending = o.max_pending,
        .user = o.user,
        .password = o.password,
        .wait_replicas = o.wait_replicas,
        .wait_ms = o.wait_ms,
    };
    seatd_rds_t *rds = seatd_calloc(1, sizeof(*rds));
    if (o.cluster_nodes && o.cluster_nodes[0]) {
        rds->cl = seatd__rds_cluster_new(loop, &no, o.cluster_nodes);
        seatd__rds_cluster_set_ready_hook(rds->cl, on_node_ready, rds);
    } else {
        rds->node = seatd__rds_node_new(loop, &no);
        seatd__rds_node_set_ready_hook(rds->node, on_node_ready, rds);
    }
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

/* Formats the command once and hands it down; the layer below keeps its own reference. */
static int send_down(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                     unsigned flags, int all, seatd_rds_reply_cb cb, void *data)
{
    if (!rds || rds->closing)
        return SEATD_ESHUTDOWN;
    int rc = check_args(argc, argv, cb);
    if (rc)
        return rc;
    seatd__rds_msg_t *m = seatd__rds_msg_new(argc, argv, argvlen);
    if (rds->cl)
        rc = seatd__rds_cluster_send(rds->cl, argc, argv, argvlen, m, flags, all, cb, data);
    else
        rc = seatd__rds_node_send(rds->node, m, flags, 0, cb, data);
    seatd__rds_msg_unref(m);
    return rc;
}

int seatd_rds_callv_ex(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                       unsigned flags, seatd_rds_reply_cb cb, void *data)
{
    flags &= SEATD_RDS_IDEMPOTENT | SEATD_RDS_DURABLE | SEATD_RDS_NO_WAIT;
    return send_down(rds, argc, argv, argvlen, flags, 0, cb, data);
}

int seatd_rds_callv(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    seatd_rds_reply_cb cb, void *data)
{
    return seatd_rds_callv_ex(rds, argc, argv, argvlen, 0, cb, data);
}

int seatd_rds_callv_all(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                        seatd_rds_reply_cb cb, void *data)
{
    return send_down(rds, argc, argv, argvlen, 0, 1, cb, data);
}

int seatd_rds_is_cluster(const seatd_rds_t *rds)
{
    return rds && rds->cl;
}

int seatd_rds_call_on_ready(seatd_rds_t *rds, void *conn, int argc, const char **argv,
                            const size_t *argvlen, seatd_rds_reply_cb cb, void *data)
{
    if (!rds || rds->closing)
        return SEATD_ESHUTDOWN;
    int rc = check_args(argc, argv, cb);
    if (rc)
        return rc;
    seatd__rds_node_t *node = rds->node;
    if (rds->cl) {
        /* A connection of one of the router's nodes: the command goes on that node. */
        node = seatd__rds_node_of_conn(conn);
        if (!seatd__rds_cluster_has_node(rds->cl, node))
            return SEATD_EINVAL;
    }
    seatd__rds_msg_t *m = seatd__rds_msg_new(argc, argv, argvlen);
    rc = seatd__rds_node_send_on_conn(node, conn, m, cb, data);
    seatd__rds_msg_unref(m);
    return rc;
}

void seatd_rds_set_conn_hooks(seatd_rds_t *rds, seatd_rds_lost_cb lost, seatd_rds_push_cb push,
                              void *data)
{
    rds->lost_cb = lost;
    rds->lost_data = data;
    if (rds->node)
        seatd__rds_node_set_conn_hooks(rds->node, lost ? on_node_lost : NULL, rds, push, data);
}

int seatd_rds_send_push(seatd_rds_t *rds, void *conn, int argc, const char **argv)
{
    if (!rds || rds->closing || rds->cl)
        return SEATD_ESHUTDOWN;
    return seatd__rds_node_send_push(rds->node, conn, argc, argv);
}

int seatd_rds_is_ready(const seatd_rds_t *rds)
{
    if (!rds)
        return 0;
    return rds->cl ? seatd__rds_cluster_is_ready(rds->cl) : seatd__rds_node_is_ready(rds->node);
}

static void copy_node_stats(const seatd__rds_node_stats_t *s, seatd_rds_stats_t *out)
{
#define COPY(type, name) out->name = s->name;
    SEATD__RDS_NODE_STATS(COPY)
#undef COPY
}

void seatd_rds_get_stats(const seatd_rds_t *rds, seatd_rds_stats_t *out)
{
    *out = (seatd_rds_stats_t){0};
    if (!rds->cl) {
        seatd__rds_node_stats_t s;
        seatd__rds_node_stats(rds->node, &s);
        copy_node_stats(&s, out);
        return;
    }
    seatd__rds_cluster_stats_t cs;
    seatd__rds_cluster_stats(rds->cl, &cs);
    copy_node_stats(&cs.nodes, out);
    out->moved = cs.moved;
    out->asked = cs.asked;
    out->ask_waits = cs.ask_waits;
    out->retries = cs.retries;
    out->refreshes = cs.refreshes;
}

/* The layer below is gone: nothing can call back into this object any more. */
static void on_layer_freed(void *data)
{
    free(data);
}

void seatd_rds_close(seatd_rds_t *rds)
{
    if (!rds || rds->closing)
        return;
    rds->closing = 1;
    if (rds->cl)
        seatd__rds_cluster_close(rds->cl, on_layer_freed, rds);
    else
        seatd__rds_node_close(rds->node, on_layer_freed, rds);
}
