/*
 * rds_cluster_internal.h - what the files of the Redis Cluster router share: its objects and
 * the functions one file calls in another. Not an interface: include it only from
 * rds_cluster.c (nodes, the command table, the calls rds.c makes, teardown),
 * rds_cluster_route.c (sending, redirects, retries, the waiting list) and
 * rds_cluster_slots.c (the slot map and its refresh); rds.c goes through rds_cluster.h. The
 * router sits on the node layer and uses only its interface, rds_node.h.
 *
 * Objects:
 *   - cluster_t: the slot map (slot -> node index, -1 unknown), the known nodes (seeds, then
 *     every node CLUSTER SLOTS names), the list of commands waiting for a retry or for a map,
 *     one retry timer and one refresh timer.
 *   - node_t: one node, host:port, with its pool (a seatd__rds_node_t, rds_node.h) created
 *     the first time a command is routed to it, and kept until close.
 *   - rcmd_t: one command, with a reference to its message (the RESP bytes, shared with the
 *     facade and with the node it is sent to, never copied), its routing (slot, or a pinned
 *     node for ASK and for commands sent to every primary) and its own deadline, fixed when it
 *     was first queued. It is either in flight on one pool (exactly one pool callback
 *     pending) or on the waiting list, and completes exactly once.
 */
#ifndef SEATD_RDS_CLUSTER_INTERNAL_H
#define SEATD_RDS_CLUSTER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "clients/rds_cluster.h"
#include "clients/rds_node.h"
#include "domain/rds_slot.h"

typedef struct node_s {
    char *host;              /* owned */
    int port;                /* TCP port */
    seatd__rds_node_t *pool; /* owned; NULL until a command is routed here */
    int primary;             /* serves slots in the current map */
} node_t;

typedef struct all_s all_t;
typedef struct rcmd_s rcmd_t;

struct rcmd_s {
    rcmd_t *prev, *next; /* in cl->waiting */
    seatd__rds_cluster_t *cl;
    seatd__rds_cb cb;      /* runs exactly once */
    void *data;            /* for 'cb' */
    unsigned flags;        /* SEATD__RDS_* */
    int slot;              /* routing slot, -1 for keyless */
    int pin;               /* node index it must go to (ASK, or one primary of an 'all'), or -1 */
    int asking;            /* send ASKING first (after ASK) */
    int all;               /* a placeholder for "every primary": fans out once a map is known */
    all_t *group;          /* the 'all' it is one leg of, or NULL */
    int redirects;         /* MOVED + ASK followed */
    int attempts;          /* backoff retries so far */
    int last_err;          /* error to report if the deadline passes while waiting */
    uint64_t deadline_ms;  /* fixed at first queueing */
    uint64_t retry_at;     /* when waiting: when to send again (UINT64_MAX: when a map comes) */
    int script;            /* a script (FCALL, EVAL...): does not follow ASK (rds_slot.h) */
    seatd__rds_msg_t *msg; /* one reference, dropped when the command is freed */
};

struct seatd__rds_cluster_s {
    void (*done)(void *);              /* run once the router is freed (seatd__rds_cluster_close) */
    void *done_data;                   /* passed to 'done' */
    seatd__rds_node_ready_cb ready_cb; /* every node's ready hook */
    void *ready_data;                  /* passed to 'ready_cb' */
    uv_loop_t *loop;                   /* borrowed */
    seatd__rds_node_opts_t popts;      /* options of every pool; strings owned below */
    char *user, *password;             /* owned */
    uint64_t timeout_ms;               /* per-command deadline */
    unsigned max_pending;              /* bound on commands alive */
    node_t *nodes;                     /* owned array */
    int nnodes, cap;
    int16_t slots[SEATD_RDS_SLOTS]; /* node index serving each slot, -1 unknown */
    int have_map;                   /* a CLUSTER SLOTS answer was applied */
    rcmd_t *whead, *wtail;          /* waiting commands */
    uv_timer_t retry;               /* fires for the earliest waiting command */
    uv_timer_t rtimer;              /* throttled refresh */
    int refreshing;                 /* a CLUSTER SLOTS is in flight */
    int refresh_wanted;             /* rtimer is armed */
    uint64_t last_refresh_ms;
    unsigned refresh_rr; /* next node asked */
    unsigned pending;    /* rcmds alive */
    int closing;
    int handles_open;
    uint64_t rng;
    unsigned long long moved, asked, ask_waits, retries, refreshes, errors;
};

static inline uint64_t cluster__now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* ---------------------------------------------------------------- rds_cluster.c */

int cluster__node_get(seatd__rds_cluster_t *cl, const char *host, size_t hlen, int port);
int cluster__node_parse(seatd__rds_cluster_t *cl, const char *p, size_t len);
seatd__rds_node_t *cluster__node_pool(seatd__rds_cluster_t *cl, int i);
void cluster__maybe_free(seatd__rds_cluster_t *cl);

/* ---------------------------------------------------------------- rds_cluster_route.c */

void cluster__wait_remove(seatd__rds_cluster_t *cl, rcmd_t *r);
void cluster__rcmd_finish(rcmd_t *r, const struct redisReply *reply, int err);
void cluster__wake_map_waiters(seatd__rds_cluster_t *cl);
void cluster__rcmd_send(rcmd_t *r);

/* ---------------------------------------------------------------- rds_cluster_slots.c */

void cluster__schedule_refresh(seatd__rds_cluster_t *cl);
void cluster__start_refresh(seatd__rds_cluster_t *cl);

#endif
