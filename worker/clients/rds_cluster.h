/*
 * rds_cluster.h - the middle layer of the Redis client: the Redis Cluster router. It keeps the
 * slot map and one node (rds_node.h) per primary, created the first time a command routes to
 * it, and routes, redirects and retries as rds.h (cluster mode) describes. It uses only the
 * node layer below it (rds_node.h) and knows nothing of the public client: rds.c, the facade
 * above, is its only user. Private to the rds files.
 */
#ifndef SEATD_RDS_CLUSTER_H
#define SEATD_RDS_CLUSTER_H

#include <stddef.h>

#include "clients/rds_node.h"

struct uv_loop_s;

typedef struct seatd__rds_cluster_s seatd__rds_cluster_t;

typedef struct seatd__rds_cluster_stats_s {
    seatd__rds_node_stats_t nodes; /* summed over the nodes; 'pending' is the router's own */
    unsigned long long moved, asked, ask_waits, retries, refreshes;
} seatd__rds_cluster_stats_t;

/* A router over the seed nodes "host:port,host:port" ('seeds' borrowed); every node it
 * creates gets 'node_opts' (borrowed, copied; host/port/unix_path ignored). Seeds that do not
 * parse are logged and ignored. */
seatd__rds_cluster_t *seatd__rds_cluster_new(struct uv_loop_s *loop,
                                             const seatd__rds_node_opts_t *node_opts,
                                             const char *seeds);
/* The ready hook of every node, present and future. */
void seatd__rds_cluster_set_ready_hook(seatd__rds_cluster_t *cl, seatd__rds_node_ready_cb cb,
                                       void *data);
/* Routes 'm' (a reference is taken: the caller keeps its own). 'argv' (borrowed for the call)
 * is the command 'm' holds, read for its routing key and name. 'all': to every primary
 * (seatd_rds_callv_all). 0 and 'cb' runs exactly once later; or SEATD_EOVERLOAD /
 * SEATD_ESHUTDOWN and 'cb' never runs. */
SEATD_MUSTCHECK int seatd__rds_cluster_send(seatd__rds_cluster_t *cl, int argc,
                                            const char *const *argv, const size_t *argvlen,
                                            seatd__rds_msg_t *m, unsigned flags, int all,
                                            seatd__rds_cb cb, void *data);
/* 1 if 'node' is one of the router's nodes. */
int seatd__rds_cluster_has_node(const seatd__rds_cluster_t *cl, const seatd__rds_node_t *node);
/* 1 once a slot map is known and a node is ready. */
int seatd__rds_cluster_is_ready(const seatd__rds_cluster_t *cl);
void seatd__rds_cluster_stats(const seatd__rds_cluster_t *cl, seatd__rds_cluster_stats_t *out);
/* Closes every node; once the last command has completed and the router is freed, runs
 * 'done(data)' (may be NULL). */
void seatd__rds_cluster_close(seatd__rds_cluster_t *cl, void (*done)(void *data), void *data);

#endif
