/*
 * rds_node.h - the bottom layer of the Redis client: one Redis node's connection pool
 * (rds_node.c, rds_conn.c, rds_cmd.c, rds_uv.c). It connects (AUTH, the ready hook, the
 * reconnect backoff), queues, sends, completes every command exactly once, follows a durable
 * command with WAIT, and counts. It knows nothing of a cluster nor of the public client: the
 * layers above it are the cluster router (rds_cluster.h), which keeps one node per primary,
 * and the public seatd_rds_t (rds.h, rds.c), which uses one node or the router. Private to the
 * rds files: nobody outside clients/rds*.c includes this (tests of the RESP writer aside).
 *
 * The layering, one way only:
 *     rds.h / rds.c, rds_reply.c       the public client (facade)
 *         |            \
 *         |        rds_cluster*.{c,h}  the cluster router
 *         |            /
 *     rds_node.h: rds_node.c rds_conn.c rds_cmd.c rds_uv.c   one node's pool
 *
 * The semantics of the pool (queue bound, deadlines, "unreachable", backoff, WAIT, the
 * callback contract, teardown) are those rds.h describes for a single-node client; this
 * header states only what differs in form.
 *
 * A command travels down as one message (seatd__rds_msg_t): its RESP bytes, formatted once
 * by the layer that took the caller's argv, reference-counted. The router and the node keep a
 * reference while they need it and never copy the arguments again.
 */
#ifndef SEATD_RDS_NODE_H
#define SEATD_RDS_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/errors.h"

struct uv_loop_s;
struct redisReply;

#define SEATD__RDS_DEFAULT_TIMEOUT_MS 2000
#define SEATD__RDS_DEFAULT_MAX_PENDING 10000

/* Call flags. The low three carry rds.h's SEATD_RDS_* values (rds.c checks they match); a
 * node reads only DURABLE, the router IDEMPOTENT and NO_WAIT. */
#define SEATD__RDS_IDEMPOTENT 0x1u /* safe to run twice */
#define SEATD__RDS_DURABLE 0x2u    /* followed by WAIT when wait_replicas > 0 */
#define SEATD__RDS_NO_WAIT 0x4u    /* cluster: fail at once when the slot's node is away */
#define SEATD__RDS_ASKING 0x100u   /* send ASKING first, on the same connection */
#define SEATD__RDS_DETAIL 0x200u   /* report "sent, then lost" as SEATD__RDS_ELOST */

/* "Sent, then the connection was lost: it may have run" (only with SEATD__RDS_DETAIL; never
 * reaches a caller of the public API). */
#define SEATD__RDS_ELOST (-10001)

typedef struct seatd__rds_node_s seatd__rds_node_t;

/* The same signature as rds.h's seatd_rds_reply_cb and seatd_rds_push_cb: a caller's callback
 * is handed down as it is. */
typedef void (*seatd__rds_cb)(const struct redisReply *reply, int err, void *data);
typedef void (*seatd__rds_push_cb)(const struct redisReply *reply, void *data);
/* Run after each connection of the node is established, before queued commands flow. */
typedef void (*seatd__rds_node_ready_cb)(seatd__rds_node_t *node, void *conn, void *data);
/* A connection went away (was_connected = 1) or a connect attempt failed (0). */
typedef void (*seatd__rds_node_lost_cb)(seatd__rds_node_t *node, void *conn, int was_connected,
                                        void *data);

/* ---------------------------------------------------------------- one command's bytes */

typedef struct seatd__rds_msg_s {
    unsigned refs; /* freed when it drops to 0 */
    size_t args;   /* bytes of the arguments themselves (the large-command deadline grace) */
    size_t len;    /* bytes of RESP at 'data' */
    char data[];   /* "*<argc>\r\n$<len>\r\n<arg>\r\n..." */
} seatd__rds_msg_t;

/* A new message (one reference) holding the RESP form of the command; 'argvlen' may be NULL
 * for NUL-terminated arguments. The arguments are borrowed for the call only. */
seatd__rds_msg_t *seatd__rds_msg_new(int argc, const char *const *argv, const size_t *argvlen);
seatd__rds_msg_t *seatd__rds_msg_ref(seatd__rds_msg_t *m);
void seatd__rds_msg_unref(seatd__rds_msg_t *m);
/* Appends the RESP form of the command to 'out': the bytes hiredis's redisFormatCommandArgv
 * writes. */
void seatd__rds_format_command(int argc, const char *const *argv, const size_t *argvlen,
                               seatd_buf_t *out);

/* ---------------------------------------------------------------- the node */

typedef struct seatd__rds_node_opts_s {
    const char *host;      /* borrowed (copied); "127.0.0.1" when NULL and no 'unix_path' */
    int port;              /* 6379 when 0 */
    const char *unix_path; /* borrowed (copied); used instead of host/port if set */
    int pool_size;         /* 2 when 0 */
    int timeout_ms;        /* SEATD__RDS_DEFAULT_TIMEOUT_MS when 0 */
    int max_pending;       /* SEATD__RDS_DEFAULT_MAX_PENDING when 0 */
    const char *user;      /* borrowed (copied); AUTH user, or NULL */
    const char *password;  /* borrowed (copied); AUTH on every connect when set */
    int wait_replicas;     /* WAIT after SEATD__RDS_DURABLE commands when > 0 */
    int wait_ms;           /* WAIT's timeout; 100 when 0 */
} seatd__rds_node_opts_t;

/* The node's counters, listed once: the struct below, the router's sum over its nodes and
 * the facade's copy into seatd_rds_stats_t (same names there) all walk this list. */
#define SEATD__RDS_NODE_STATS(X)                                                                   \
    X(unsigned long long, commands)                                                                \
    X(unsigned long long, errors)                                                                  \
    X(unsigned long long, timeouts)                                                                \
    X(unsigned long long, reconnects)                                                              \
    X(unsigned long long, connect_failures)                                                        \
    X(unsigned long long, refused)                                                                 \
    X(unsigned long long, rtt_us_sum)                                                              \
    X(unsigned long long, wait_ok)                                                                 \
    X(unsigned long long, wait_short)                                                              \
    X(unsigned int, pending)                                                                       \
    X(unsigned int, connected)

typedef struct seatd__rds_node_stats_s {
#define SEATD__RDS_STAT_FIELD(type, name) type name;
    SEATD__RDS_NODE_STATS(SEATD__RDS_STAT_FIELD)
#undef SEATD__RDS_STAT_FIELD
} seatd__rds_node_stats_t;

/* Starts connecting every connection; owned, freed by seatd__rds_node_close(). */
seatd__rds_node_t *seatd__rds_node_new(struct uv_loop_s *loop, const seatd__rds_node_opts_t *o);
void seatd__rds_node_set_ready_hook(seatd__rds_node_t *node, seatd__rds_node_ready_cb cb,
                                    void *data);
/* The subscribe-mode hooks of rds.h (seatd_rds_set_conn_hooks); NULLs clear them. */
void seatd__rds_node_set_conn_hooks(seatd__rds_node_t *node, seatd__rds_node_lost_cb lost,
                                    void *lost_data, seatd__rds_push_cb push, void *push_data);

/* Queues 'm' (a reference is taken: the caller keeps its own) with 'flags' and an absolute
 * deadline on the uv_hrtime clock in ms (0: the node's own timeout). 0 and 'cb' runs exactly
 * once later; or SEATD_EOVERLOAD / SEATD_ESHUTDOWN and 'cb' never runs. */
SEATD_MUSTCHECK int seatd__rds_node_send(seatd__rds_node_t *node, seatd__rds_msg_t *m,
                                         unsigned flags, uint64_t deadline_ms, seatd__rds_cb cb,
                                         void *data);
/* The node a connection handed to a ready hook belongs to. */
seatd__rds_node_t *seatd__rds_node_of_conn(void *conn);
/* Sends 'm' on 'conn' of 'node' ahead of the queue (from the ready hook); 0,
 * SEATD_EINVAL (not a connection of 'node'), SEATD_EUNAVAILABLE or SEATD_ESHUTDOWN. */
SEATD_MUSTCHECK int seatd__rds_node_send_on_conn(seatd__rds_node_t *node, void *conn,
                                                 seatd__rds_msg_t *m, seatd__rds_cb cb, void *data);
/* seatd_rds_send_push() of rds.h, on a connection of 'node'. */
SEATD_MUSTCHECK int seatd__rds_node_send_push(seatd__rds_node_t *node, void *conn, int argc,
                                              const char **argv);

/* 1 if at least one connection is CONNECTED and past its ready hook. */
int seatd__rds_node_is_ready(const seatd__rds_node_t *node);
void seatd__rds_node_stats(const seatd__rds_node_t *node, seatd__rds_node_stats_t *out);
/* Starts the asynchronous teardown (rds.h); 'done(data)' (may be NULL) runs once the node is
 * freed. No hook of the node runs after this call. seatd__rds_node_close(NULL, ...) is a no-op.
 */
void seatd__rds_node_close(seatd__rds_node_t *node, void (*done)(void *data), void *data);

/* A deep copy of 'r' (owned, free with seatd__rds_reply_free), NULL for NULL. */
struct redisReply *seatd__rds_reply_dup(const struct redisReply *r);
void seatd__rds_reply_free(struct redisReply *r);

#endif
