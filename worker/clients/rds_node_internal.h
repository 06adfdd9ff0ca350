/*
 * rds_node_internal.h - what the files of the node layer (one Redis node's pool, rds_node.h)
 * share: its objects, and the functions one file calls in another. Not an interface: include
 * it only from rds_node.c (creating a node, queueing, the hooks, stats, teardown, reply
 * copies), rds_conn.c (the connection state machine) and rds_cmd.c (messages, sending,
 * completion, the queue). It includes nothing of the router nor of the public client: the
 * layers above use rds_node.h.
 *
 * Objects:
 *   - seatd__rds_node_t owns the pool, the queue of commands waiting for a ready connection,
 *     one queue timer (deadlines of queued commands, then the deferred teardown) and the stats.
 *   - conn_t is one pooled connection: a hiredis async context attached to the loop with
 *     rds_uv.c (our adapter: a socket error reaches hiredis when it happens), its state
 *     (CLOSED, CONNECTING, CONNECTED), the list of commands in flight on it, and one timer
 *     whose meaning follows the state: the reconnect backoff when CLOSED, the connect
 *     deadline when CONNECTING, the command deadlines when CONNECTED.
 *   - cmd_t is one command: a reference to its message (the RESP bytes, shared with the
 *     layer above, never copied here), its callback and its deadline. It is on the
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
#ifndef SEATD_RDS_NODE_INTERNAL_H
#define SEATD_RDS_NODE_INTERNAL_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clients/rds_node.h"

#define CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

enum conn_state_e { CONN_CLOSED, CONN_CONNECTING, CONN_CONNECTED };

typedef struct conn_s conn_t;
typedef struct cmd_s cmd_t;

struct cmd_s {
    cmd_t *prev, *next;      /* links in the node queue or in conn->inflight */
    seatd__rds_node_t *node; /* owner */
    conn_t *conn;            /* connection it was sent on; NULL while queued */
    seatd__rds_cb cb;        /* runs exactly once */
    void *data;              /* passed to 'cb' */
    uint64_t deadline_ms;    /* enqueue time + timeout, on the monotonic clock */
    uint64_t sent_us;        /* when it was written, for the RTT stat */
    int timed_out;           /* its deadline passed while in flight */
    unsigned flags;          /* SEATD__RDS_* */
    int wait_pending;        /* a WAIT follows it on its connection: that reply completes it */
    int main_lost;           /* with 'wait_pending': the command's own reply never came */
    redisReply *held;        /* with 'wait_pending': the command's reply (owned copy) */
    seatd__rds_msg_t *msg;   /* one reference, dropped when the command is freed */
};

typedef struct cmd_list_s {
    cmd_t *head, *tail; /* FIFO */
    unsigned n;         /* length */
} cmd_list_t;

struct conn_s {
    seatd__rds_node_t *node; /* owner */
    int index;               /* position in the pool, for logs */
    int state;               /* enum conn_state_e */
    int ready;               /* CONNECTED and past the ready hook: takes queued commands */
    int ever_connected;      /* for the reconnects stat */
    redisAsyncContext *ac;   /* owned; NULL when CLOSED */
    uv_timer_t timer;        /* backoff, connect deadline or command deadlines (by state) */
    cmd_list_t inflight;     /* commands sent and not answered, in send order */
    uint64_t backoff_ms;     /* last reconnect delay; 0 after a successful connection */
};

struct seatd__rds_node_s {
    uv_loop_t *loop;                   /* borrowed */
    char *host;                        /* owned */
    int port;                          /* TCP port */
    char *unix_path;                   /* owned; NULL for TCP */
    char *user, *password;             /* owned; AUTH on connect when 'password' is set */
    int pool_size;                     /* connections in 'conns' */
    uint64_t timeout_ms;               /* per-command deadline */
    unsigned max_pending;              /* bound on queued + in flight */
    conn_t *conns;                     /* owned array of 'pool_size' */
    cmd_list_t queue;                  /* commands waiting for a ready connection */
    uv_timer_t qtimer;                 /* queue deadlines; then runs the deferred teardown */
    unsigned pending;                  /* queued + in flight */
    unsigned rr;                       /* round-robin start for node__dispatch ties */
    int closing;                       /* seatd__rds_node_close() was called */
    int unreachable;                   /* a connect attempt failed and no connection is ready:
                                          queued commands fail at once, not at their deadline */
    int handles_open;                  /* uv handles not yet closed; free at 0 */
    seatd__rds_node_ready_cb ready_cb; /* hook run on every (re)connection */
    void *ready_data;                  /* passed to 'ready_cb' */
    uint64_t rng;                      /* xorshift state for the backoff jitter */
    seatd__rds_node_stats_t stats;     /* counters; 'pending'/'connected' computed on read */
    int wait_replicas, wait_ms;        /* WAIT after SEATD__RDS_DURABLE commands when > 0 */
    seatd__rds_node_lost_cb lost_cb;   /* hook run when a connection is lost or a connect fails */
    void *lost_data;                   /* passed to 'lost_cb' */
    seatd__rds_push_cb push_cb;        /* subscribe-mode replies (..._send_push) */
    void *push_data;                   /* passed to 'push_cb' */
    void (*done)(void *);              /* run once the node is freed (seatd__rds_node_close) */
    void *done_data;                   /* passed to 'done' */
};

static inline uint64_t node__now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* ---------------------------------------------------------------- rds_conn.c */

void node__log_conn(int level, const conn_t *c, const char *msg, const char *detail);
void node__conn_connect(conn_t *c);
void node__conn_mark_lost(conn_t *c);
void node__conn_arm_deadline(conn_t *c);

/* ---------------------------------------------------------------- rds_cmd.c */

void node__list_push_tail(cmd_list_t *l, cmd_t *cmd);
void node__list_remove(cmd_list_t *l, cmd_t *cmd);
cmd_t *node__cmd_new(seatd__rds_node_t *node, seatd__rds_msg_t *msg, unsigned flags,
                     uint64_t deadline_ms, seatd__rds_cb cb, void *data);
void node__cmd_free(cmd_t *cmd);
void node__cmd_finish(cmd_t *cmd, const redisReply *reply, int err);
int node__conn_send(conn_t *c, cmd_t *cmd);
void node__dispatch(seatd__rds_node_t *node);
void node__conn_connect_failed(conn_t *c);

#endif
