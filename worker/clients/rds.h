/*
 * rds.h - the one Redis client module: a small pool of async hiredis connections on a libuv
 * loop.
 *
 * Lifecycle: seatd_rds_new() starts connecting every pooled connection at once and returns;
 * commands may be queued before any connection is up (they wait in a bounded queue and are
 * sent when one connects, or fail with SEATD_EUNAVAILABLE when their deadline passes while
 * still queued: such a command never reached Redis and is safe to retry). Once a connect
 * attempt has failed and no connection is ready (Redis refused us, or did not accept within
 * the connect deadline), Redis is "unreachable": queued and new commands fail with
 * SEATD_EUNAVAILABLE on the next loop turn instead of waiting for their deadline, until a
 * connection succeeds again. Socket errors are seen when they happen (rds_uv.c).
 * seatd_rds_close() begins an asynchronous teardown: every pending callback fires with
 * SEATD_ESHUTDOWN, handles are closed, and the object frees itself in its last close callback,
 * so uv_run() returns and uv_loop_close() succeeds afterwards.
 *
 * Connection states: CLOSED -> CONNECTING -> CONNECTED; on an I/O error, a protocol error or a
 * command timeout the connection is dropped (every command sent on it fails with
 * SEATD_EUNAVAILABLE or SEATD_ETIMEOUT) and reconnected with exponential backoff
 * (100 ms doubling to 5 s, with jitter). hiredis 0.14 has no command timeouts: this module
 * owns them with one uv_timer per connection that checks the oldest in-flight command.
 *
 * Every successful (re)connection calls the ready hook (if set) before queued commands flow,
 * which is how scripts.c makes sure the function library is loaded.
 *
 * Cluster mode (opts.cluster_nodes set; rds_cluster.c): the same API over a Redis Cluster.
 * The slot map comes from CLUSTER SLOTS asked of a seed (then of any known node); each primary
 * gets its own pool (as above: 'pool_size' connections, AUTH, backoff, ready hook), created
 * the first time a command routes to it. A command goes to the primary of the slot of its key
 * (see seatd_rds_callv_ex: derived from the command; keyless commands go to any primary).
 *   - MOVED: the slot is patched, the command resent at once, and one full refresh of the map
 *     is scheduled (at most one refresh per 250 ms, one in flight);
 *   - ASK: ASKING + the command are sent once on the named node, the map is not changed;
 *   - TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, a connection that is not up: a refresh is
 *     scheduled and the command resent after a jittered backoff (25 ms doubling to 1 s), while
 *     its own deadline (set when it was first queued) allows; then SEATD_EUNAVAILABLE;
 *   - a command that was sent and then lost its connection or timed out may have run: it is
 *     resent only when idempotent (SEATD_RDS_IDEMPOTENT, or a read-only command), otherwise it
 *     fails with SEATD_EUNAVAILABLE / SEATD_ETIMEOUT as in single-node mode.
 * At most 16 redirections per command. The callback contract is unchanged.
 *
 * Durability (opts.wait_replicas > 0): a command flagged SEATD_RDS_DURABLE is followed, on the
 * same connection, by WAIT wait_replicas wait_ms; its callback runs once WAIT answers, with
 * the command's own reply. When fewer replicas acknowledged in time the write ran on the
 * primary but a failover can still undo it (a primary cut off from its replica,
 * docs/durability.md): the callback gets the reply AND err == SEATD_ENOTDURABLE (the one case where
 * both are set), a WARN is logged and the 'wait_short' stat counts it. The caller decides:
 * the booking flow charges nothing after a begin that is not durable, and answers 202 after
 * a confirm that is not. An error reply (the script refused) is delivered with err 0.
 *
 * Loop and threads: one loop, one thread. Never share a seatd_rds_t across fork().
 *
 * Inside, three layers, each using only the one(s) below (rds_node.h draws them): this API
 * (rds.c, rds_reply.c) formats a command once and hands it to one node's pool (rds_node.h:
 * rds_node.c, rds_conn.c, rds_cmd.c, rds_uv.c) or, in cluster mode, to the router
 * (rds_cluster.h: rds_cluster*.c), which keeps one node per primary.
 */
#ifndef SEATD_RDS_H
#define SEATD_RDS_H

#include <stddef.h>

#include "base/errors.h"

struct uv_loop_s;
struct redisReply;

typedef struct seatd_rds_s seatd_rds_t;

typedef struct seatd_rds_opts_s {
    const char *host;          /* borrowed; "127.0.0.1" when NULL and no 'unix_path' */
    int port;                  /* TCP port; 6379 when 0 */
    const char *unix_path;     /* borrowed; a unix socket path, used instead of host/port if set */
    int pool_size;             /* connections in the pool; 2 when 0 */
    int timeout_ms;            /* per-command deadline from the moment it is queued (plus 1 s per
                                * MiB of arguments); 2000 when 0 */
    int max_pending;           /* commands queued or in flight across the pool; 10000 when 0 */
    const char *user;          /* borrowed; Redis ACL user for AUTH on every connect, or NULL */
    const char *password;      /* borrowed; when set, "AUTH [user] password" is the first command
                                * of every (re)connection; a refusal is logged at ERROR */
    const char *cluster_nodes; /* borrowed; "host:port,host:port" seed nodes of a Redis Cluster:
                                * cluster mode when set and not empty (host/port/unix_path are
                                * then ignored) */
    int wait_replicas;         /* WAIT for this many replicas after SEATD_RDS_DURABLE commands;
                                * 0 = off */
    int wait_ms;               /* WAIT's timeout; 100 when 0 */
} seatd_rds_opts_t;

/* Flags of seatd_rds_callv_ex(). */
#define SEATD_RDS_IDEMPOTENT 0x1u /* safe to run twice: may be resent after it may have run */
#define SEATD_RDS_DURABLE 0x2u    /* followed by WAIT when opts.wait_replicas > 0 */
/* Cluster mode: when the slot's node cannot be reached (no owner known, connection down,
 * CLUSTERDOWN/TRYAGAIN…) fail at once with SEATD_EUNAVAILABLE instead of waiting for a
 * failover within the deadline. For the optional side steps of a request whose key lives on
 * another shard than the request's show (a per-user counter): the caller carries on without
 * them rather than make a healthy shard's request wait for a dead one. No effect on one node. */
#define SEATD_RDS_NO_WAIT 0x4u

/*
 * Called with the reply, borrowed for the duration of the callback (NULL when 'err' != 0,
 * except SEATD_ENOTDURABLE, which comes with the reply of the write that is not yet durable).
 * 'err' is 0, or SEATD_EUNAVAILABLE (never sent: no connection before the deadline, or Redis
 * unreachable; or sent on a connection that was then lost, outcome unknown), SEATD_ETIMEOUT (sent,
 * no answer before the deadline, outcome unknown), SEATD_EOVERLOAD (never: that is returned
 * synchronously) or SEATD_ESHUTDOWN. A Redis error reply (REDIS_REPLY_ERROR) arrives with 'err' ==
 * 0: the caller decodes it.
 */
typedef void (*seatd_rds_reply_cb)(const struct redisReply *reply, int err, void *data);

/*
 * Called after each connection of the pool is established (including reconnects), before
 * commands queued for it are sent. The hook may issue commands with seatd_rds_call_on_ready()
 * on that same connection; they run ahead of the queue. 'conn' identifies the connection.
 */
typedef void (*seatd_rds_ready_cb)(seatd_rds_t *rds, void *conn, void *data);

/* Returns an owned client (freed by seatd_rds_close()). 'opts' is borrowed (copied). */
seatd_rds_t *seatd_rds_new(struct uv_loop_s *loop, const seatd_rds_opts_t *opts);

/* Sets the hook run on every (re)connect. Call before the loop runs. */
void seatd_rds_set_ready_hook(seatd_rds_t *rds, seatd_rds_ready_cb cb, void *data);

/*
 * Queues one command given as 'argc' binary-safe arguments ('argv'/'argvlen' borrowed for the
 * call only: they are copied). Returns 0 and 'cb' runs exactly once later; or returns
 * SEATD_EOVERLOAD (queue full) or SEATD_ESHUTDOWN, and 'cb' never runs.
 * 'argvlen' may be NULL for NUL-terminated arguments.
 */
SEATD_MUSTCHECK int seatd_rds_callv(seatd_rds_t *rds, int argc, const char **argv,
                                    const size_t *argvlen, seatd_rds_reply_cb cb, void *data);

/*
 * seatd_rds_callv() with 'flags' (SEATD_RDS_*). In cluster mode the routing key is derived
 * from the command: for FCALL, FCALL_RO, EVAL, EVALSHA (and _RO) the first key after numkeys
 * (none when numkeys is 0); none for PING, FUNCTION, WAIT, CLUSTER, INFO, SCRIPT, PUBLISH and
 * other keyless commands; argv[1] for every other command (seatd sends no multi-key command
 * whose keys span slots). Read-only commands are treated as idempotent whatever 'flags' says.
 */
SEATD_MUSTCHECK int seatd_rds_callv_ex(seatd_rds_t *rds, int argc, const char **argv,
                                       const size_t *argvlen, unsigned flags, seatd_rds_reply_cb cb,
                                       void *data);

/*
 * Sends the command to every primary (cluster mode; in single-node mode it is
 * seatd_rds_callv()). 'cb' runs once: with the first error (or error reply) met, else with the
 * reply of the last primary. For FUNCTION LOAD.
 */
SEATD_MUSTCHECK int seatd_rds_callv_all(seatd_rds_t *rds, int argc, const char **argv,
                                        const size_t *argvlen, seatd_rds_reply_cb cb, void *data);

/* 1 in cluster mode. */
int seatd_rds_is_cluster(const seatd_rds_t *rds);

/* Like seatd_rds_callv() but sent on 'conn' (from the ready hook), ahead of queued commands. */
SEATD_MUSTCHECK int seatd_rds_call_on_ready(seatd_rds_t *rds, void *conn, int argc,
                                            const char **argv, const size_t *argvlen,
                                            seatd_rds_reply_cb cb, void *data);

/* ---------------------------------------------------------------------------------------
 * A subscribe-mode connection (pubsub.c): a single-node client with pool_size 1 whose one
 * connection is put in subscribe mode from the ready hook. The client still owns connecting,
 * AUTH, the backoff and the teardown; the subscriber adds two hooks:
 *   - lost(rds, conn, was_connected, data): the connection went away (was_connected = 1) or
 *     a connect attempt failed (0); the client reconnects with its backoff by itself. May
 *     call seatd_rds_close() on 'rds'.
 *   - push(reply, data): each reply on a subscribe-mode connection (confirmations and
 *     messages), borrowed for the call.
 * Single-node clients only.
 * ------------------------------------------------------------------------------------- */
typedef void (*seatd_rds_lost_cb)(seatd_rds_t *rds, void *conn, int was_connected, void *data);
typedef void (*seatd_rds_push_cb)(const struct redisReply *reply, void *data);
/* Sets both hooks ('data' for both; NULLs clear them). */
void seatd_rds_set_conn_hooks(seatd_rds_t *rds, seatd_rds_lost_cb lost, seatd_rds_push_cb push,
                              void *data);
/* Sends a subscribe-mode command (SUBSCRIBE, UNSUBSCRIBE; 'argv' borrowed, copied) on 'conn'
 * (from the ready hook, while it is up). Its replies go to the push hook; no deadline. 0,
 * SEATD_EUNAVAILABLE (that connection is not up), SEATD_EINVAL or SEATD_ESHUTDOWN. */
SEATD_MUSTCHECK int seatd_rds_send_push(seatd_rds_t *rds, void *conn, int argc, const char **argv);

/* 1 if at least one connection is CONNECTED and has passed its ready hook. */
int seatd_rds_is_ready(const seatd_rds_t *rds);

/* Stats for /metrics and tests. */
typedef struct seatd_rds_stats_s {
    unsigned long long commands;         /* commands completed with a reply */
    unsigned long long errors;           /* commands failed (unavailable, timeout, shutdown) */
    unsigned long long timeouts;         /* of which timed out */
    unsigned long long reconnects;       /* successful connections after the first */
    unsigned long long connect_failures; /* connect attempts that failed (error or deadline) */
    unsigned long long refused;          /* of 'errors': failed at once, Redis being unreachable */
    unsigned long long rtt_us_sum;       /* summed round-trip time of completed commands */
    unsigned long long moved;            /* cluster: MOVED redirections followed */
    unsigned long long asked;            /* cluster: ASK redirections met */
    unsigned long long ask_waits;        /* of which scripts, not followed: backoff (rds_slot.h) */
    unsigned long long retries;          /* cluster: commands resent after a backoff */
    unsigned long long refreshes;        /* cluster: slot map refreshes answered */
    unsigned long long wait_ok;          /* WAIT reached wait_replicas in time */
    unsigned long long wait_short;       /* WAIT answered fewer (or not at all) */
    unsigned int pending;                /* queued + in flight now */
    unsigned int connected;              /* connections ready now */
} seatd_rds_stats_t;
void seatd_rds_get_stats(const seatd_rds_t *rds, seatd_rds_stats_t *out);

/* Starts the asynchronous teardown described above. seatd_rds_close(NULL) is a no-op. */
void seatd_rds_close(seatd_rds_t *rds);

/* ---------------------------------------------------------------------------------------
 * Reply accessors, so that modules decoding replies (scripts.c, store.c) need not include
 * hiredis (STYLE rule 3). All take a reply borrowed from a seatd_rds_reply_cb and return
 * values borrowed for the same duration. NULL 'r' reads as SEATD_RDS_REPLY_NONE.
 * ------------------------------------------------------------------------------------- */
enum seatd_rds_reply_type_e {
    SEATD_RDS_REPLY_NONE,   /* NULL reply */
    SEATD_RDS_REPLY_STRING, /* bulk string, binary-safe */
    SEATD_RDS_REPLY_ARRAY,
    SEATD_RDS_REPLY_INTEGER,
    SEATD_RDS_REPLY_NIL,
    SEATD_RDS_REPLY_STATUS, /* simple string, e.g. OK */
    SEATD_RDS_REPLY_ERROR,  /* error reply, e.g. "ERR Function not found" */
    SEATD_RDS_REPLY_OTHER
};
int seatd_rds_reply_type(const struct redisReply *r);
/* The bytes of a STRING, STATUS or ERROR reply (NUL-terminated; '*len' gets the length when
 * 'len' is not NULL); NULL for other types. */
const char *seatd_rds_reply_str(const struct redisReply *r, size_t *len);
/* The value of an INTEGER reply; 0 for other types. */
long long seatd_rds_reply_integer(const struct redisReply *r);
/* The number of elements of an ARRAY reply; 0 for other types. */
size_t seatd_rds_reply_elements(const struct redisReply *r);
/* Element 'i' of an ARRAY reply, or NULL when out of range or not an array. */
const struct redisReply *seatd_rds_reply_element(const struct redisReply *r, size_t i);

#endif
