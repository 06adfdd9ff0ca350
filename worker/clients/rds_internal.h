/*
 * rds_internal.h - what the files of the single-node Redis client share: its objects, and the
 * functions one file calls in another. Not an interface: include it only from rds.c (the
 * public API and teardown), rds_conn.c (the connection state machine) and rds_cmd.c (commands:
 * sending, completion, the queue); everything else goes through rds.h (rds_cluster.c through
 * rds_cluster.h).
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
 * hiredis 0.14 rules these files rely on:
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
#ifndef SEATD_RDS_INTERNAL_H
#define SEATD_RDS_INTERNAL_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clients/rds.h"
#include "clients/rds_cluster.h"

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
    unsigned rr;                 /* round-robin start for rds__dispatch ties */
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

static inline uint64_t rds__now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* ---------------------------------------------------------------- rds_conn.c */

void rds__log_conn(int level, const conn_t *c, const char *msg, const char *detail);
void rds__conn_connect(conn_t *c);
void rds__conn_mark_lost(conn_t *c);
void rds__conn_arm_deadline(conn_t *c);

/* ---------------------------------------------------------------- rds_cmd.c */

void rds__list_push_tail(cmd_list_t *l, cmd_t *cmd);
void rds__list_remove(cmd_list_t *l, cmd_t *cmd);
cmd_t *rds__cmd_new(seatd_rds_t *rds, int argc, const char **argv, const size_t *argvlen,
                    unsigned flags, uint64_t deadline_ms, seatd_rds_reply_cb cb, void *data);
void rds__cmd_finish(cmd_t *cmd, const redisReply *reply, int err);
int rds__conn_send(conn_t *c, cmd_t *cmd);
void rds__dispatch(seatd_rds_t *rds);
void rds__conn_connect_failed(conn_t *c);

#endif
