/*
 * rds_cluster.c - the Redis Cluster router behind a cluster-mode seatd_rds_t; see rds.h
 * (cluster mode) and rds_cluster.h.
 *
 * Objects:
 *   - cluster_t: the slot map (slot -> node index, -1 unknown), the known nodes (seeds, then
 *     every node CLUSTER SLOTS names), the list of commands waiting for a retry or for a map,
 *     one retry timer and one refresh timer.
 *   - node_t: one node, host:port, with its pool (a single-node seatd_rds_t, rds.c) created
 *     the first time a command is routed to it, and kept until close.
 *   - rcmd_t: one command, with its copied arguments, its routing (slot, or a pinned node for
 *     ASK and for commands sent to every primary) and its own deadline, fixed when it was first
 *     queued. It is either in flight on one pool (exactly one pool callback pending) or on the
 *     waiting list, and completes exactly once.
 *
 * No storm: a command is resent at once only after MOVED or ASK (the answer names where to go,
 * and redirections are capped; a script does not follow ASK, it waits: rds_slot.h); every
 * other retry waits a jittered backoff that doubles per attempt, and never goes past the
 * command's deadline. Map refreshes are one at a time and at most one per REFRESH_MIN_MS,
 * whatever the number of commands that asked for one.
 */
#define _GNU_SOURCE /* memmem */
#include "clients/rds_cluster.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "base/log.h"
#include "base/mem.h"
#include "domain/rds_slot.h"

#define REFRESH_MIN_MS 250
#define BACKOFF_BASE_MS 25
#define BACKOFF_CAP_MS 1000
#define MAX_REDIRECTS 16
#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_MAX_PENDING 10000

typedef struct node_s {
    char *host;        /* owned */
    int port;          /* TCP port */
    seatd_rds_t *pool; /* owned; NULL until a command is routed here */
    int primary;       /* serves slots in the current map */
} node_t;

typedef struct all_s all_t;
typedef struct rcmd_s rcmd_t;

struct rcmd_s {
    rcmd_t *prev, *next; /* in cl->waiting */
    seatd__rds_cluster_t *cl;
    seatd_rds_reply_cb cb; /* runs exactly once */
    void *data;            /* for 'cb' */
    unsigned flags;        /* SEATD_RDS_* */
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
    int argc;
    size_t *argvlen; /* in the same block */
    char **argv;     /* in the same block */
};

/* A command sent to every primary: completes when every leg has. */
struct all_s {
    seatd_rds_reply_cb cb;
    void *data;
    int legs;          /* not yet completed */
    int err;           /* first error met */
    redisReply *reply; /* owned: first error reply, else the last reply */
    int reply_is_error;
};

struct seatd__rds_cluster_s {
    seatd_rds_t *owner;     /* the cluster-mode client (a shell), freed by us at the end */
    uv_loop_t *loop;        /* borrowed */
    seatd_rds_opts_t popts; /* options of every pool; strings owned below */
    char *user, *password;  /* owned */
    uint64_t timeout_ms;    /* per-command deadline */
    unsigned max_pending;   /* bound on commands alive */
    node_t *nodes;          /* owned array */
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

static void rcmd_send(rcmd_t *r);
static void schedule_refresh(seatd__rds_cluster_t *cl);

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

static uint64_t rng_next(seatd__rds_cluster_t *cl)
{
    uint64_t x = cl->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    cl->rng = x;
    return x;
}

/* ----------------------------------------------------------------------------------------
 * Nodes
 * -------------------------------------------------------------------------------------- */

/* The index of host:port, added if new. */
static int node_get(seatd__rds_cluster_t *cl, const char *host, size_t hlen, int port)
{
    for (int i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i].port == port && strlen(cl->nodes[i].host) == hlen &&
            memcmp(cl->nodes[i].host, host, hlen) == 0)
            return i;
    if (cl->nnodes == cl->cap) {
        cl->cap = cl->cap ? cl->cap * 2 : 8;
        cl->nodes = seatd_realloc(cl->nodes, (size_t)cl->cap * sizeof(node_t));
    }
    node_t *n = &cl->nodes[cl->nnodes];
    memset(n, 0, sizeof(*n));
    n->host = seatd_malloc(hlen + 1);
    memcpy(n->host, host, hlen);
    n->host[hlen] = '\0';
    n->port = port;
    return cl->nnodes++;
}

/* Parses "host:port" at p (len bytes); the node index or -1. */
static int node_parse(seatd__rds_cluster_t *cl, const char *p, size_t len)
{
    while (len && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (p[i] == ':')
            colon = p + i;
    if (!colon || colon == p || (size_t)(colon - p) + 1 >= len)
        return -1;
    int port = 0;
    for (const char *q = colon + 1; q < p + len; q++) {
        if (*q < '0' || *q > '9' || port > 65535)
            return -1;
        port = port * 10 + (*q - '0');
    }
    if (port <= 0 || port > 65535)
        return -1;
    return node_get(cl, p, (size_t)(colon - p), port);
}

static seatd_rds_t *node_pool(seatd__rds_cluster_t *cl, int i)
{
    node_t *n = &cl->nodes[i];
    if (!n->pool) {
        seatd_rds_opts_t o = cl->popts;
        o.host = n->host;
        o.port = n->port;
        n->pool = seatd_rds_new(cl->loop, &o);
        seatd__rds_set_owner(n->pool, cl->owner);
    }
    return n->pool;
}

/* ----------------------------------------------------------------------------------------
 * Commands: routing key, idempotency
 * -------------------------------------------------------------------------------------- */

static int name_is(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && strncasecmp(a, b, alen) == 0;
}

static int name_in(const char *a, size_t alen, const char *const *list)
{
    for (; *list; list++)
        if (name_is(a, alen, *list))
            return 1;
    return 0;
}

static const char *const keyless[] = {
    "PING",   "FUNCTION", "WAIT",     "CLUSTER", "INFO",     "SCRIPT", "PUBLISH", "ECHO",
    "TIME",   "DBSIZE",   "FLUSHALL", "FLUSHDB", "CONFIG",   "CLIENT", "HELLO",   "COMMAND",
    "ACL",    "MEMORY",   "SLOWLOG",  "LATENCY", "DEBUG",    "SCAN",   "KEYS",    "RANDOMKEY",
    "ASKING", "READONLY", "AUTH",     "SELECT",  "LASTSAVE", "ROLE",   NULL};

static const char *const scripted[] = {"FCALL",   "FCALL_RO",   "EVAL", "EVALSHA",
                                       "EVAL_RO", "EVALSHA_RO", NULL};

static const char *const readonly[] = {
    "GET",        "MGET",  "EXISTS",  "TTL",           "PTTL",      "TYPE",
    "STRLEN",     "HGET",  "HGETALL", "HMGET",         "HEXISTS",   "HLEN",
    "HKEYS",      "HVALS", "ZRANGE",  "ZRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYSCORE",
    "ZSCORE",     "ZCARD", "ZCOUNT",  "ZRANK",         "ZMSCORE",   "SMEMBERS",
    "SISMEMBER",  "SCARD", "LRANGE",  "LLEN",          "XRANGE",    "XREVRANGE",
    "XLEN",       "XINFO", "GETBIT",  "BITCOUNT",      "FCALL_RO",  "EVAL_RO",
    "EVALSHA_RO", "PING",  "INFO",    "CLUSTER",       "TIME",      "ECHO",
    "DBSIZE",     "SCAN",  "KEYS",    "FUNCTION",      "WAIT",      NULL};

/* The slot of the command's routing key, or -1 for a keyless command. */
static int command_slot(int argc, char *const *argv, const size_t *lens)
{
    if (name_in(argv[0], lens[0], keyless) || argc < 2)
        return -1;
    if (name_in(argv[0], lens[0], scripted)) {
        if (argc < 4)
            return -1;
        long nk = strtol(argv[2], NULL, 10);
        return nk > 0 ? (int)seatd_rds_keyslot(argv[3], lens[3]) : -1;
    }
    return (int)seatd_rds_keyslot(argv[1], lens[1]);
}

/* ----------------------------------------------------------------------------------------
 * Completion and the waiting list
 * -------------------------------------------------------------------------------------- */

static void maybe_free(seatd__rds_cluster_t *cl);

static void wait_remove(seatd__rds_cluster_t *cl, rcmd_t *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        cl->whead = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        cl->wtail = r->prev;
    r->prev = r->next = NULL;
}

static void all_leg_done(all_t *a, const redisReply *reply, int err)
{
    if (err && !a->err)
        a->err = err;
    if (!err && !a->reply_is_error) {
        int is_error = reply && reply->type == REDIS_REPLY_ERROR;
        seatd__rds_reply_free(a->reply);
        a->reply = seatd__rds_reply_dup(reply);
        a->reply_is_error = is_error;
    }
    if (--a->legs > 0)
        return;
    if (a->err)
        a->cb(NULL, a->err, a->data);
    else
        a->cb(a->reply, 0, a->data);
    seatd__rds_reply_free(a->reply);
    free(a);
}

/* Completes 'r' (not on the waiting list): its callback, once; frees it. */
static void rcmd_finish(rcmd_t *r, const redisReply *reply, int err)
{
    seatd__rds_cluster_t *cl = r->cl;
    if (err)
        cl->errors++;
    if (r->group)
        all_leg_done(r->group, reply, err);
    else
        r->cb(reply, err, r->data);
    free(r);
    cl->pending--;
    maybe_free(cl);
}

static void on_retry_timer(uv_timer_t *t);

static void arm_retry(seatd__rds_cluster_t *cl)
{
    if (cl->closing)
        return;
    uint64_t min = UINT64_MAX;
    for (rcmd_t *r = cl->whead; r; r = r->next) {
        uint64_t at = r->retry_at < r->deadline_ms ? r->retry_at : r->deadline_ms;
        if (at < min)
            min = at;
    }
    if (min == UINT64_MAX) {
        uv_timer_stop(&cl->retry);
        return;
    }
    uint64_t now = now_ms();
    uv_timer_start(&cl->retry, on_retry_timer, min > now ? min - now : 0, 0);
}

/* Parks 'r' until 'at' (UINT64_MAX: until a map is known), or its deadline. */
static void park(rcmd_t *r, uint64_t at, int err)
{
    seatd__rds_cluster_t *cl = r->cl;
    r->retry_at = at;
    r->last_err = err;
    r->prev = cl->wtail;
    r->next = NULL;
    if (cl->wtail)
        cl->wtail->next = r;
    else
        cl->whead = r;
    cl->wtail = r;
    arm_retry(cl);
}

/* Retries 'r' after a jittered backoff within its deadline, or fails it with 'err'. */
static void backoff(rcmd_t *r, int err)
{
    seatd__rds_cluster_t *cl = r->cl;
    uint64_t step = (uint64_t)BACKOFF_BASE_MS << (r->attempts < 6 ? r->attempts : 6);
    if (step > BACKOFF_CAP_MS)
        step = BACKOFF_CAP_MS;
    uint64_t delay = step / 2 + rng_next(cl) % (step / 2 + 1);
    uint64_t now = now_ms();
    r->attempts++;
    if (cl->closing || (r->flags & SEATD_RDS_NO_WAIT) || now + delay >= r->deadline_ms) {
        rcmd_finish(r, NULL, err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
        return;
    }
    cl->retries++;
    park(r, now + delay, err);
}

static void on_retry_timer(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    uint64_t now = now_ms();
    rcmd_t *due = NULL, **tail = &due;
    for (rcmd_t *r = cl->whead, *next; r; r = next) {
        next = r->next;
        if (r->deadline_ms <= now || r->retry_at <= now || cl->closing) {
            wait_remove(cl, r);
            *tail = r;
            tail = &r->next;
        }
    }
    while (due) {
        rcmd_t *r = due;
        due = r->next;
        r->next = NULL;
        if (cl->closing)
            rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        else if (r->deadline_ms <= now)
            rcmd_finish(r, NULL,
                        r->last_err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
        else
            rcmd_send(r);
    }
    arm_retry(cl);
}

/* A new map: everything waiting for one goes now. */
static void wake_map_waiters(seatd__rds_cluster_t *cl)
{
    int any = 0;
    for (rcmd_t *r = cl->whead; r; r = r->next)
        if (r->retry_at == UINT64_MAX) {
            r->retry_at = 0;
            any = 1;
        }
    if (any)
        arm_retry(cl);
}

/* ----------------------------------------------------------------------------------------
 * Replies from the pools
 * -------------------------------------------------------------------------------------- */

/* Parses "MOVED 3999 127.0.0.1:6381" / "ASK ..." after the word; node index or -1. */
static int redirect_target(seatd__rds_cluster_t *cl, const char *p, size_t len, int *slot)
{
    const char *end = p + len;
    while (p < end && *p == ' ')
        p++;
    long s = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        s = s * 10 + (*q++ - '0');
        if (s >= SEATD_RDS_SLOTS)
            return -1; /* checked per digit: a long number must not wrap into the bound */
    }
    if (q == p || q >= end || *q != ' ')
        return -1;
    *slot = (int)s;
    q++;
    return node_parse(cl, q, (size_t)(end - q));
}

static int starts(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(s, word, n) == 0 && (len == n || s[n] == ' ');
}

static void on_pool_reply(const redisReply *reply, int err, void *data)
{
    rcmd_t *r = data;
    seatd__rds_cluster_t *cl = r->cl;
    if (err == SEATD_ESHUTDOWN || cl->closing) {
        rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        return;
    }
    if (err == SEATD_ENOTDURABLE) {
        rcmd_finish(r, reply, err); /* it ran: the reply goes up with the shortfall (rds.h) */
        return;
    }
    if (err) {
        /* Never sent (EUNAVAILABLE): safe to retry. Sent, then lost or timed out: it may have
         * run, so only an idempotent command goes again. */
        int may_have_run = err == SEATD__RDS_ELOST || err == SEATD_ETIMEOUT;
        schedule_refresh(cl);
        if (may_have_run && !(r->flags & SEATD_RDS_IDEMPOTENT)) {
            rcmd_finish(r, NULL, err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
            return;
        }
        backoff(r, err == SEATD__RDS_ELOST ? SEATD_EUNAVAILABLE : err);
        return;
    }
    if (reply && reply->type == REDIS_REPLY_ERROR && reply->str) {
        const char *s = reply->str;
        size_t len = reply->len;
        if (starts(s, len, "MOVED") || starts(s, len, "ASK")) {
            int ask = s[0] == 'A';
            size_t skip = ask ? 3 : 5;
            int slot = -1;
            int node = redirect_target(cl, s + skip, len - skip, &slot);
            if (node < 0 || ++r->redirects > MAX_REDIRECTS) {
                rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
                return;
            }
            if (ask && seatd_rds_is_script(r->argv[0], r->argvlen[0])) {
                /* Not followed: on the importing node a script would find the keys still on
                 * the source missing (rds_slot.h). It did not run here; resent to the
                 * slot's owner after a backoff, until the migration ends in MOVED. */
                cl->asked++;
                cl->ask_waits++;
                r->redirects--;
                r->asking = 0;
                if (r->group == NULL)
                    r->pin = -1;
                backoff(r, SEATD_EUNAVAILABLE);
                return;
            }
            if (ask) {
                cl->asked++;
                r->pin = node;
                r->asking = 1;
            } else {
                cl->moved++;
                cl->slots[slot] = (int16_t)node;
                if (r->group == NULL)
                    r->pin = -1; /* a leg of an 'all' stays on its node's successor */
                else
                    r->pin = node;
                r->asking = 0;
                schedule_refresh(cl);
            }
            rcmd_send(r);
            return;
        }
        static const char nonlocal[] = "attempted to access a non local key";
        if (memmem(s, len, nonlocal, sizeof(nonlocal) - 1) != NULL) {
            /* A script met a key of a MIGRATING slot that is not (or no longer) on this node.
             * It stopped there, but may have written before: resent (after a backoff, when
             * the migration has moved on) only when idempotent, else EUNAVAILABLE (503). */
            schedule_refresh(cl);
            r->asking = 0;
            if (r->group == NULL)
                r->pin = -1;
            if (!(r->flags & SEATD_RDS_IDEMPOTENT)) {
                rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
                return;
            }
            backoff(r, SEATD_EUNAVAILABLE);
            return;
        }
        if (starts(s, len, "TRYAGAIN") || starts(s, len, "CLUSTERDOWN") ||
            starts(s, len, "LOADING") || starts(s, len, "MASTERDOWN") ||
            starts(s, len, "NOREPLICAS")) {
            /* Did not run: a slot in migration with keys split (TRYAGAIN), a failover in
             * progress, a node loading its data, a primary fenced because it cannot reach
             * a replica (NOREPLICAS, min-replicas-to-write: cut off by a partition, its replica
             * about to be promoted, or its only replica down). */
            schedule_refresh(cl);
            r->asking = 0;
            if (r->group == NULL)
                r->pin = -1;
            backoff(r, SEATD_EUNAVAILABLE);
            return;
        }
    }
    rcmd_finish(r, reply, 0);
}

/* Fans an 'all' placeholder out to every primary of the map; frees the placeholder. */
static void fan_out(rcmd_t *r)
{
    seatd__rds_cluster_t *cl = r->cl;
    int legs = 0;
    for (int i = 0; i < cl->nnodes; i++)
        legs += cl->nodes[i].primary;
    if (legs == 0) {
        rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
        return;
    }
    all_t *a = seatd_calloc(1, sizeof(*a));
    a->cb = r->cb;
    a->data = r->data;
    a->legs = legs;
    size_t bytes = 0;
    for (int k = 0; k < r->argc; k++)
        bytes += r->argvlen[k] + 1;
    for (int i = 0; i < cl->nnodes; i++) {
        if (!cl->nodes[i].primary)
            continue;
        size_t size = sizeof(rcmd_t) + (size_t)r->argc * (sizeof(size_t) + sizeof(char *)) + bytes;
        rcmd_t *leg = seatd_malloc(size);
        memcpy(leg, r, size);
        leg->argvlen = (size_t *)(leg + 1);
        leg->argv = (char **)(leg->argvlen + leg->argc);
        char *p = (char *)(leg->argv + leg->argc);
        for (int k = 0; k < leg->argc; k++) {
            leg->argv[k] = p;
            p += leg->argvlen[k] + 1;
        }
        leg->prev = leg->next = NULL;
        leg->all = 0;
        leg->group = a;
        leg->pin = i;
        cl->pending++;
        rcmd_send(leg);
    }
    free(r);
    cl->pending--;
}

/* Sends 'r' where it belongs now, or parks it. Never runs its callback synchronously when
 * called from seatd__rds_cluster_callv (a failure there parks it for the next loop turn). */
static void rcmd_send(rcmd_t *r)
{
    seatd__rds_cluster_t *cl = r->cl;
    if (cl->closing) {
        /* Not reached from seatd__rds_cluster_callv, which refuses once closing. */
        rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        return;
    }
    if (r->all) {
        if (!cl->have_map) {
            schedule_refresh(cl);
            park(r, UINT64_MAX, SEATD_EUNAVAILABLE);
            return;
        }
        fan_out(r);
        return;
    }
    int node = r->pin;
    if (node < 0) {
        if (r->slot >= 0) {
            node = cl->slots[r->slot];
        } else if (cl->have_map) {
            for (unsigned k = 0; k < (unsigned)cl->nnodes && node < 0; k++) {
                int i = (int)((cl->refresh_rr + k) % (unsigned)cl->nnodes);
                if (cl->nodes[i].primary)
                    node = i;
            }
        }
    }
    if (node < 0) {
        schedule_refresh(cl);
        if ((r->flags & SEATD_RDS_NO_WAIT) && cl->have_map)
            r->deadline_ms = now_ms(); /* fails on the next loop turn, never synchronously */
        park(r, UINT64_MAX, SEATD_EUNAVAILABLE);
        return;
    }
    unsigned sflags = r->flags | SEATD__RDS_DETAIL | (r->asking ? SEATD__RDS_ASKING : 0);
    int rc = seatd__rds_send(node_pool(cl, node), r->argc, (const char **)r->argv, r->argvlen,
                             sflags, r->deadline_ms, on_pool_reply, r);
    if (rc) {
        /* The pool is full or closing: try again after a backoff, within the deadline. */
        r->attempts++;
        park(r, now_ms() + BACKOFF_BASE_MS, rc == SEATD_EOVERLOAD ? SEATD_EUNAVAILABLE : rc);
    }
}

/* ----------------------------------------------------------------------------------------
 * The slot map
 * -------------------------------------------------------------------------------------- */

static void start_refresh(seatd__rds_cluster_t *cl);

static void on_rtimer(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    cl->refresh_wanted = 0;
    if (!cl->closing)
        start_refresh(cl);
}

/* Asks for a refresh: one in flight at a time, at most one per REFRESH_MIN_MS. */
static void schedule_refresh(seatd__rds_cluster_t *cl)
{
    if (cl->closing || cl->refreshing || cl->refresh_wanted)
        return;
    uint64_t now = now_ms(), next = cl->last_refresh_ms + REFRESH_MIN_MS;
    cl->refresh_wanted = 1;
    uv_timer_start(&cl->rtimer, on_rtimer, next > now ? next - now : 0, 0);
}

/* The node index of one CLUSTER SLOTS node entry [host, port, ...], added if new; -1 if the
 * entry is malformed. An empty or "?" host is the node we asked ('asked'). */
static int slots_node(seatd__rds_cluster_t *cl, const redisReply *n, int asked)
{
    if (n->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
        n->element[0]->type != REDIS_REPLY_STRING || n->element[1]->type != REDIS_REPLY_INTEGER)
        return -1;
    const char *host = n->element[0]->str;
    size_t hlen = n->element[0]->len;
    if (hlen == 0 || (hlen == 1 && host[0] == '?')) {
        host = cl->nodes[asked].host;
        hlen = strlen(host);
    }
    return node_get(cl, host, hlen, (int)n->element[1]->integer);
}

static int slots_entry_ok(const redisReply *e)
{
    return e->type == REDIS_REPLY_ARRAY && e->elements >= 3 &&
           e->element[0]->type == REDIS_REPLY_INTEGER && e->element[1]->type == REDIS_REPLY_INTEGER;
}

/* Applies a CLUSTER SLOTS reply; 0, or -1 if it is unusable (then nothing changes). */
static int apply_slots(seatd__rds_cluster_t *cl, const redisReply *reply, int asked)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0)
        return -1;
    /* First pass: learn every node (primaries and replicas: all are refresh candidates). */
    for (size_t k = 0; k < reply->elements; k++)
        if (slots_entry_ok(reply->element[k]))
            for (size_t j = 2; j < reply->element[k]->elements; j++)
                (void)slots_node(cl, reply->element[k]->element[j], asked);
    static int16_t fresh[SEATD_RDS_SLOTS];
    for (int s = 0; s < SEATD_RDS_SLOTS; s++)
        fresh[s] = -1;
    int *is_primary = seatd_calloc((size_t)cl->nnodes, sizeof(int));
    for (size_t k = 0; k < reply->elements; k++) {
        const redisReply *e = reply->element[k];
        if (!slots_entry_ok(e))
            continue;
        int primary = slots_node(cl, e->element[2], asked);
        if (primary < 0)
            continue;
        is_primary[primary] = 1;
        /* The range cut to the slots that exist first: a broken node's 0..2^63-1 is not
         * walked number by number (nor past LLONG_MAX). */
        long long lo = e->element[0]->integer, hi = e->element[1]->integer;
        lo = lo < 0 ? 0 : lo;
        hi = hi > SEATD_RDS_SLOTS - 1 ? SEATD_RDS_SLOTS - 1 : hi;
        for (long long s = lo; s <= hi; s++)
            fresh[s] = (int16_t)primary;
    }
    memcpy(cl->slots, fresh, sizeof(fresh));
    for (int i = 0; i < cl->nnodes; i++)
        cl->nodes[i].primary = is_primary[i];
    free(is_primary);
    cl->have_map = 1;
    return 0;
}

typedef struct refresh_s {
    seatd__rds_cluster_t *cl;
    int node;
} refresh_t;

static void on_slots(const redisReply *reply, int err, void *data)
{
    refresh_t *rf = data;
    seatd__rds_cluster_t *cl = rf->cl;
    int node = rf->node;
    free(rf);
    cl->refreshing = 0;
    cl->last_refresh_ms = now_ms();
    if (cl->closing) {
        cl->pending--;
        maybe_free(cl);
        return;
    }
    cl->pending--;
    if (!err && apply_slots(cl, reply, node) == 0) {
        cl->refreshes++;
        wake_map_waiters(cl);
        return;
    }
    seatd_log(SEATD_LOG_DEBUG, NULL, "redis cluster map refresh failed",
              "\"node\":\"%s:%d\",\"error\":\"%s\"", cl->nodes[node].host, cl->nodes[node].port,
              err ? seatd_err_name(err) : "bad reply");
    /* Ask the next node, throttled; commands waiting for a map wait at most their deadline. */
    if (!cl->have_map || cl->whead)
        schedule_refresh(cl);
}

/* Sends CLUSTER SLOTS to the next node in turn (a node with a ready pool first). */
static void start_refresh(seatd__rds_cluster_t *cl)
{
    if (cl->refreshing || cl->nnodes == 0)
        return;
    int pick = -1;
    for (int k = 0; k < cl->nnodes && pick < 0; k++) {
        int i = (int)((cl->refresh_rr + (unsigned)k) % (unsigned)cl->nnodes);
        if (cl->nodes[i].pool && seatd_rds_is_ready(cl->nodes[i].pool))
            pick = i;
    }
    if (pick < 0)
        pick = (int)(cl->refresh_rr % (unsigned)cl->nnodes);
    cl->refresh_rr = (unsigned)pick + 1;
    refresh_t *rf = seatd_calloc(1, sizeof(*rf));
    rf->cl = cl;
    rf->node = pick;
    static const char *argv[] = {"CLUSTER", "SLOTS"};
    int rc = seatd__rds_send(node_pool(cl, pick), 2, argv, NULL, SEATD__RDS_DETAIL,
                             now_ms() + cl->timeout_ms, on_slots, rf);
    if (rc) {
        free(rf);
        cl->last_refresh_ms = now_ms();
        schedule_refresh(cl);
        return;
    }
    cl->pending++;
    cl->refreshing = 1;
}

/* ----------------------------------------------------------------------------------------
 * API for rds.c
 * -------------------------------------------------------------------------------------- */

seatd__rds_cluster_t *seatd__rds_cluster_new(seatd_rds_t *owner, uv_loop_t *loop,
                                             const seatd_rds_opts_t *opts)
{
    seatd__rds_cluster_t *cl = seatd_calloc(1, sizeof(*cl));
    cl->owner = owner;
    cl->loop = loop;
    cl->user = opts->user && opts->user[0] ? seatd_strdup(opts->user) : NULL;
    cl->password = opts->password && opts->password[0] ? seatd_strdup(opts->password) : NULL;
    cl->popts.pool_size = opts->pool_size;
    cl->popts.timeout_ms = opts->timeout_ms;
    cl->popts.max_pending = opts->max_pending;
    cl->popts.user = cl->user;
    cl->popts.password = cl->password;
    cl->popts.wait_replicas = opts->wait_replicas;
    cl->popts.wait_ms = opts->wait_ms;
    cl->timeout_ms = (uint64_t)(opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS);
    cl->max_pending = (unsigned)(opts->max_pending > 0 ? opts->max_pending : DEFAULT_MAX_PENDING);
    cl->rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)cl) | 1u;
    for (int s = 0; s < SEATD_RDS_SLOTS; s++)
        cl->slots[s] = -1;
    const char *p = opts->cluster_nodes;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len && node_parse(cl, p, len) < 0)
            seatd_log(SEATD_LOG_ERROR, NULL, "redis cluster seed not host:port, ignored",
                      "\"seed\":\"%.*s\"", (int)(len < 64 ? len : 64), p);
        p = comma ? comma + 1 : NULL;
    }
    uv_timer_init(loop, &cl->retry);
    uv_timer_init(loop, &cl->rtimer);
    cl->retry.data = cl->rtimer.data = cl;
    cl->handles_open = 2;
    start_refresh(cl);
    return cl;
}

int seatd__rds_cluster_callv(seatd__rds_cluster_t *cl, int argc, const char **argv,
                             const size_t *argvlen, unsigned flags, int all, seatd_rds_reply_cb cb,
                             void *data)
{
    if (cl->closing)
        return SEATD_ESHUTDOWN;
    if (argc <= 0 || !argv || !cb)
        return SEATD_EINVAL;
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) {
        if (!argv[i])
            return SEATD_EINVAL;
        bytes += (argvlen ? argvlen[i] : strlen(argv[i])) + 1;
    }
    if (cl->pending >= cl->max_pending)
        return SEATD_EOVERLOAD;
    rcmd_t *r = seatd_malloc(sizeof(*r) + (size_t)argc * (sizeof(size_t) + sizeof(char *)) + bytes);
    memset(r, 0, sizeof(*r));
    r->cl = cl;
    r->cb = cb;
    r->data = data;
    r->pin = -1;
    r->all = all;
    r->argc = argc;
    r->argvlen = (size_t *)(r + 1);
    r->argv = (char **)(r->argvlen + argc);
    char *p = (char *)(r->argv + argc);
    for (int i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        if (len)
            memcpy(p, argv[i], len);
        p[len] = '\0';
        r->argv[i] = p;
        r->argvlen[i] = len;
        p += len + 1;
    }
    r->slot = command_slot(argc, r->argv, r->argvlen);
    r->flags = flags;
    if (name_in(r->argv[0], r->argvlen[0], readonly))
        r->flags |= SEATD_RDS_IDEMPOTENT;
    r->deadline_ms = now_ms() + cl->timeout_ms + (uint64_t)(bytes >> 20) * 1000;
    cl->pending++;
    rcmd_send(r);
    return 0;
}

int seatd__rds_cluster_is_ready(const seatd__rds_cluster_t *cl)
{
    if (!cl->have_map)
        return 0;
    for (int i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i].pool && seatd_rds_is_ready(cl->nodes[i].pool))
            return 1;
    return 0;
}

void seatd__rds_cluster_stats(const seatd__rds_cluster_t *cl, seatd_rds_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < cl->nnodes; i++) {
        if (!cl->nodes[i].pool)
            continue;
        seatd_rds_stats_t s;
        seatd_rds_get_stats(cl->nodes[i].pool, &s);
        out->commands += s.commands;
        out->errors += s.errors;
        out->timeouts += s.timeouts;
        out->reconnects += s.reconnects;
        out->connect_failures += s.connect_failures;
        out->refused += s.refused;
        out->rtt_us_sum += s.rtt_us_sum;
        out->wait_ok += s.wait_ok;
        out->wait_short += s.wait_short;
        out->connected += s.connected;
    }
    out->moved = cl->moved;
    out->asked = cl->asked;
    out->ask_waits = cl->ask_waits;
    out->retries = cl->retries;
    out->refreshes = cl->refreshes;
    out->pending = cl->pending;
}

/* ----------------------------------------------------------------------------------------
 * Teardown: pools closed (their callbacks complete our commands with ESHUTDOWN), the waiting
 * list failed on the next turn, our two timers closed; the last of these frees everything.
 * -------------------------------------------------------------------------------------- */

static void maybe_free(seatd__rds_cluster_t *cl)
{
    if (!cl->closing || cl->handles_open > 0 || cl->pending > 0)
        return;
    for (int i = 0; i < cl->nnodes; i++)
        free(cl->nodes[i].host);
    free(cl->nodes);
    free(cl->user);
    free(cl->password);
    seatd__rds_free_shell(cl->owner);
    free(cl);
}

static void on_closed(uv_handle_t *h)
{
    seatd__rds_cluster_t *cl = h->data;
    cl->handles_open--;
    maybe_free(cl);
}

static void on_teardown(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    while (cl->whead) {
        rcmd_t *r = cl->whead;
        wait_remove(cl, r);
        cl->handles_open++; /* keep 'cl' alive through the callbacks */
        rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        cl->handles_open--;
    }
    uv_close((uv_handle_t *)&cl->retry, on_closed);
    uv_close((uv_handle_t *)&cl->rtimer, on_closed);
}

void seatd__rds_cluster_close(seatd__rds_cluster_t *cl)
{
    cl->closing = 1;
    for (int i = 0; i < cl->nnodes; i++)
        seatd_rds_close(cl->nodes[i].pool);
    uv_timer_stop(&cl->rtimer);
    uv_timer_start(&cl->retry, on_teardown, 0, 0);
}
