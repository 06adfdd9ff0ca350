/*
 * cluster_fixture.h - a real local Redis Cluster for integration tests.
 *
 * seatd_test_cluster_start() starts 'primaries' * (1 + 'replicas') redis-servers on free
 * loopback ports (each also needs port + 10000 free, for the cluster bus) in one temp dir,
 * with cluster-enabled yes, appendonly yes, cluster-require-full-coverage no (the other shards
 * keep serving while one fails over), cluster-node-timeout
 * SEATD_TEST_CLUSTER_NODE_TIMEOUT_MS, save '', enable-debug-command local; joins them with
 * `redis-cli --cluster create ... --cluster-replicas R --cluster-yes`; and returns once every
 * node reports cluster_state:ok, agrees on the slot map and every replica's link is up.
 *
 * The servers are children of the calling process with PR_SET_PDEATHSIG(SIGKILL), so they die
 * with it (a Criterion test process, or the integration runner). Call stop() at the end.
 */
#ifndef SEATD_TEST_CLUSTER_FIXTURE_H
#define SEATD_TEST_CLUSTER_FIXTURE_H

#include <stddef.h>

#define SEATD_TEST_CLUSTER_MAX 12
#define SEATD_TEST_CLUSTER_NODE_TIMEOUT_MS 2000

struct redisContext;

typedef struct seatd_test_cluster_s {
    int n;                                   /* nodes started */
    int port[SEATD_TEST_CLUSTER_MAX];        /* loopback TCP port of node i */
    int pid[SEATD_TEST_CLUSTER_MAX];         /* its pid; 0 once killed or stopped */
    char dir[256];                           /* temp dir holding every node's files */
    char nodes[SEATD_TEST_CLUSTER_MAX * 22]; /* "127.0.0.1:p0,127.0.0.1:p1,...": a seed list */
} seatd_test_cluster_t;

/* Starts and joins the cluster; 0 once it is ok everywhere, -1 (and nothing left running) on
 * failure, with the reason on stderr. */
int seatd_test_cluster_start(seatd_test_cluster_t *cl, int primaries, int replicas);
/* Kills every node (SIGTERM, SIGKILL after 2 s) and removes the dir. */
void seatd_test_cluster_stop(seatd_test_cluster_t *cl);

/* Waits up to 'timeout_ms' until every live node says cluster_state:ok and all agree on which
 * node serves each slot; 0 or -1. */
int seatd_test_cluster_wait_ok(seatd_test_cluster_t *cl, int timeout_ms);

/* SIGKILLs node 'i' (kill -9) and reaps it. */
void seatd_test_cluster_kill(seatd_test_cluster_t *cl, int i);

/* The index of the node that currently serves 'slot' as a primary (asked of a live node), or
 * -1. */
int seatd_test_cluster_primary_of(seatd_test_cluster_t *cl, unsigned slot);
/* Index of a live primary other than 'not_this', or -1. */
int seatd_test_cluster_other_primary(seatd_test_cluster_t *cl, int not_this);
/* The node id (40 hex chars) of node 'i' into 'out' (41 bytes); 0 or -1. */
int seatd_test_cluster_node_id(seatd_test_cluster_t *cl, int i, char *out);

/* A synchronous connection to node 'i'; returns owned (redisFree), or NULL. */
struct redisContext *seatd_test_cluster_connect(seatd_test_cluster_t *cl, int i);

/* Moves 'slot' with its keys from the node serving it to node 'to', as redis-cli --cluster
 * reshard does: SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in
 * batches, then SETSLOT NODE on target, source and the others. 'mid' (may be NULL) runs after
 * the keys moved and before the slot is handed over: the window in which the source answers
 * ASK; it gets 'arg' and its return value is ignored. 0 or -1. */
int seatd_test_cluster_move_slot(seatd_test_cluster_t *cl, unsigned slot, int to,
                                 void (*mid)(void *arg), void *arg);

/* The three steps of a move, for a test that stops between them. begin: SETSLOT IMPORTING on
 * 'to', MIGRATING on the slot's owner. migrate: MIGRATE from the owner to 'to' the keys named
 * ('keys', NULL-terminated), or when 'keys' is NULL every key of the slot, in batches. finish:
 * SETSLOT NODE on 'to', the old owner, then every other primary. Each 0 or -1 (said on
 * stderr); a MIGRATE that meets a key already on 'to' (BUSYKEY) fails. */
int seatd_test_cluster_begin_move(seatd_test_cluster_t *cl, unsigned slot, int to);
int seatd_test_cluster_migrate_keys(seatd_test_cluster_t *cl, unsigned slot, int to,
                                    const char *const *keys);
int seatd_test_cluster_finish_move(seatd_test_cluster_t *cl, unsigned slot, int to);

#endif
