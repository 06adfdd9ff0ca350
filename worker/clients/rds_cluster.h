/*
 * rds_cluster.h - private to the rds module: the Redis Cluster router behind seatd_rds_t in
 * cluster mode (see rds.h), and the few rds*.c internals it uses. Nobody else includes this.
 */
#ifndef SEATD_RDS_CLUSTER_H
#define SEATD_RDS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "clients/rds.h"

struct uv_loop_s;
struct redisReply;

/* Internal call flags, above the public SEATD_RDS_* ones. */
#define SEATD__RDS_ASKING 0x100u /* send ASKING first, on the same connection */
#define SEATD__RDS_DETAIL 0x200u /* report "sent, then lost" as SEATD__RDS_ELOST */

/* "Sent, then the connection was lost: it may have run" (only with SEATD__RDS_DETAIL; never
 * reaches a caller of the public API). */
#define SEATD__RDS_ELOST (-10001)

typedef struct seatd__rds_cluster_s seatd__rds_cluster_t;

/* rds.c: queues a command on single-node client 'rds' with 'flags' and an absolute deadline
 * on the uv_hrtime clock in ms (0: the client's own timeout). Same contract as callv. */
int seatd__rds_send(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    unsigned flags, uint64_t deadline_ms, seatd_rds_reply_cb cb, void *data);
/* rds.c: sets the ready hook of a node pool to forward to 'owner''s hook. */
void seatd__rds_set_owner(seatd_rds_t *pool, seatd_rds_t *owner);
/* rds.c: frees the shell of a cluster-mode client once its router is gone. */
void seatd__rds_free_shell(seatd_rds_t *rds);
/* rds.c: the owner's ready hook, run for a node pool's connection. */
void seatd__rds_run_ready(seatd_rds_t *owner, seatd_rds_t *pool, void *conn);
/* rds_cmd.c: appends the RESP form of the command (an array of 'argc' bulk strings) to 'out';
 * the bytes hiredis's redisFormatCommandArgv writes. */
void seatd__rds_format_command(int argc, const char *const *argv, const size_t *argvlen,
                               seatd_buf_t *out);
/* rds_reply.c: a deep copy of 'r' (owned, free with seatd__rds_reply_free), NULL for NULL. */
struct redisReply *seatd__rds_reply_dup(const struct redisReply *r);
void seatd__rds_reply_free(struct redisReply *r);

/* rds_cluster.c: the router. 'owner' is the cluster-mode seatd_rds_t; 'opts' copied. NULL if
 * the seed list does not parse. */
seatd__rds_cluster_t *seatd__rds_cluster_new(seatd_rds_t *owner, struct uv_loop_s *loop,
                                             const seatd_rds_opts_t *opts);
int seatd__rds_cluster_callv(seatd__rds_cluster_t *cl, int argc, const char **argv,
                             const size_t *argvlen, unsigned flags, int all, seatd_rds_reply_cb cb,
                             void *data);
int seatd__rds_cluster_is_ready(const seatd__rds_cluster_t *cl);
void seatd__rds_cluster_stats(const seatd__rds_cluster_t *cl, seatd_rds_stats_t *out);
/* Closes every pool; when the last command has completed, calls seatd__rds_free_shell(). */
void seatd__rds_cluster_close(seatd__rds_cluster_t *cl);

#endif
