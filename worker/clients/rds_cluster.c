/*
 * rds_cluster.c - the Redis Cluster router (rds_cluster.h), between the public client (rds.c,
 * cluster mode in rds.h) above and the node layer (rds_node.h) below. This file holds the
 * known nodes and their pools, the command table (routing key, read-only commands), the calls
 * rds.c makes and the teardown;
 * a command's way to its node is in rds_cluster_route.c, the slot map in rds_cluster_slots.c
 * (rds_cluster_internal.h).
 */
#include "clients/rds_cluster_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/mem.h"

/* ----------------------------------------------------------------------------------------
 * Nodes
 * -------------------------------------------------------------------------------------- */

/* The index of host:port, added if new. */
int cluster__node_get(seatd__rds_cluster_t *cl, const char *host, size_t hlen, int port)
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
int cluster__node_parse(seatd__rds_cluster_t *cl, const char *p, size_t len)
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
    return cluster__node_get(cl, p, (size_t)(colon - p), port);
}

seatd__rds_node_t *cluster__node_pool(seatd__rds_cluster_t *cl, int i)
{
    node_t *n = &cl->nodes[i];
    if (!n->pool) {
        seatd__rds_node_opts_t o = cl->popts;
        o.host = n->host;
        o.port = n->port;
        n->pool = seatd__rds_node_new(cl->loop, &o);
        seatd__rds_node_set_ready_hook(n->pool, cl->ready_cb, cl->ready_data);
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

/* The slot of the command's routing key, or -1 for a keyless command. The arguments are the
 * caller's, binary-safe and not NUL-terminated. */
static int command_slot(int argc, const char *const *argv, const size_t *lens)
{
    if (name_in(argv[0], lens[0], keyless) || argc < 2)
        return -1;
    if (name_in(argv[0], lens[0], scripted)) {
        if (argc < 4)
            return -1;
        /* numkeys > 0: Redis takes plain decimal only, so its first byte is 1-9. */
        int some_keys = lens[2] > 0 && argv[2][0] >= '1' && argv[2][0] <= '9';
        return some_keys ? (int)seatd_rds_keyslot(argv[3], lens[3]) : -1;
    }
    return (int)seatd_rds_keyslot(argv[1], lens[1]);
}

/* ----------------------------------------------------------------------------------------
 * API for rds.c (rds_cluster.h)
 * -------------------------------------------------------------------------------------- */

seatd__rds_cluster_t *
seatd__rds_cluster_new(uv_loop_t *loop, const seatd__rds_node_opts_t *node_opts, const char *seeds)
{
    seatd__rds_cluster_t *cl = seatd_calloc(1, sizeof(*cl));
    const seatd__rds_node_opts_t *opts = node_opts;
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
    cl->timeout_ms =
        (uint64_t)(opts->timeout_ms > 0 ? opts->timeout_ms : SEATD__RDS_DEFAULT_TIMEOUT_MS);
    cl->max_pending =
        (unsigned)(opts->max_pending > 0 ? opts->max_pending : SEATD__RDS_DEFAULT_MAX_PENDING);
    cl->rng = (uv_hrtime() ^ (uint64_t)(uintptr_t)cl) | 1u;
    for (int s = 0; s < SEATD_RDS_SLOTS; s++)
        cl->slots[s] = -1;
    const char *p = seeds;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len && cluster__node_parse(cl, p, len) < 0)
            seatd_log(SEATD_LOG_ERROR, NULL, "redis cluster seed not host:port, ignored",
                      "\"seed\":\"%.*s\"", (int)(len < 64 ? len : 64), p);
        p = comma ? comma + 1 : NULL;
    }
    uv_timer_init(loop, &cl->retry);
    uv_timer_init(loop, &cl->rtimer);
    cl->retry.data = cl->rtimer.data = cl;
    cl->handles_open = 2;
    cluster__start_refresh(cl);
    return cl;
}

void seatd__rds_cluster_set_ready_hook(seatd__rds_cluster_t *cl, seatd__rds_node_ready_cb cb,
                                       void *data)
{
    cl->ready_cb = cb;
    cl->ready_data = data;
    for (int i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i].pool)
            seatd__rds_node_set_ready_hook(cl->nodes[i].pool, cb, data);
}

int seatd__rds_cluster_send(seatd__rds_cluster_t *cl, int argc, const char *const *argv,
                            const size_t *argvlen, seatd__rds_msg_t *m, unsigned flags, int all,
                            seatd__rds_cb cb, void *data)
{
    if (cl->closing)
        return SEATD_ESHUTDOWN;
    if (cl->pending >= cl->max_pending)
        return SEATD_EOVERLOAD;
    /* The routing reads the first arguments only: their lengths, when the caller gave none. */
    size_t lens[4];
    if (!argvlen) {
        for (int i = 0; i < argc && i < 4; i++)
            lens[i] = strlen(argv[i]);
        argvlen = lens;
    }
    rcmd_t *r = seatd_calloc(1, sizeof(*r));
    r->cl = cl;
    r->cb = cb;
    r->data = data;
    r->pin = -1;
    r->all = all;
    r->slot = command_slot(argc, argv, argvlen);
    r->flags = flags;
    if (name_in(argv[0], argvlen[0], readonly))
        r->flags |= SEATD__RDS_IDEMPOTENT;
    r->script = seatd_rds_is_script(argv[0], argvlen[0]);
    r->msg = seatd__rds_msg_ref(m);
    r->deadline_ms = cluster__now_ms() + cl->timeout_ms + (uint64_t)(m->args >> 20) * 1000;
    cl->pending++;
    cluster__rcmd_send(r);
    return 0;
}

int seatd__rds_cluster_has_node(const seatd__rds_cluster_t *cl, const seatd__rds_node_t *node)
{
    for (int i = 0; node && i < cl->nnodes; i++)
        if (cl->nodes[i].pool == node)
            return 1;
    return 0;
}

int seatd__rds_cluster_is_ready(const seatd__rds_cluster_t *cl)
{
    if (!cl->have_map)
        return 0;
    for (int i = 0; i < cl->nnodes; i++)
        if (cl->nodes[i].pool && seatd__rds_node_is_ready(cl->nodes[i].pool))
            return 1;
    return 0;
}

void seatd__rds_cluster_stats(const seatd__rds_cluster_t *cl, seatd__rds_cluster_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    seatd__rds_node_stats_t *sum = &out->nodes;
    for (int i = 0; i < cl->nnodes; i++) {
        if (!cl->nodes[i].pool)
            continue;
        seatd__rds_node_stats_t s;
        seatd__rds_node_stats(cl->nodes[i].pool, &s);
#define ADD(type, name) sum->name += s.name;
        SEATD__RDS_NODE_STATS(ADD)
#undef ADD
    }
    sum->pending = cl->pending; /* the router's own queue, not the nodes' sum */
    out->moved = cl->moved;
    out->asked = cl->asked;
    out->ask_waits = cl->ask_waits;
    out->retries = cl->retries;
    out->refreshes = cl->refreshes;
}

/* ----------------------------------------------------------------------------------------
 * Teardown: pools closed (their callbacks complete our commands with ESHUTDOWN), the waiting
 * list failed on the next turn, our two timers closed; the last of these frees everything.
 * -------------------------------------------------------------------------------------- */

void cluster__maybe_free(seatd__rds_cluster_t *cl)
{
    if (!cl->closing || cl->handles_open > 0 || cl->pending > 0)
        return;
    for (int i = 0; i < cl->nnodes; i++)
        free(cl->nodes[i].host);
    free(cl->nodes);
    free(cl->user);
    free(cl->password);
    void (*done)(void *) = cl->done;
    void *done_data = cl->done_data;
    free(cl);
    if (done)
        done(done_data);
}

static void on_closed(uv_handle_t *h)
{
    seatd__rds_cluster_t *cl = h->data;
    cl->handles_open--;
    cluster__maybe_free(cl);
}

static void on_teardown(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    while (cl->whead) {
        rcmd_t *r = cl->whead;
        cluster__wait_remove(cl, r);
        cl->handles_open++; /* keep 'cl' alive through the callbacks */
        cluster__rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        cl->handles_open--;
    }
    uv_close((uv_handle_t *)&cl->retry, on_closed);
    uv_close((uv_handle_t *)&cl->rtimer, on_closed);
}

void seatd__rds_cluster_close(seatd__rds_cluster_t *cl, void (*done)(void *data), void *data)
{
    cl->closing = 1;
    cl->done = done;
    cl->done_data = data;
    for (int i = 0; i < cl->nnodes; i++)
        seatd__rds_node_close(cl->nodes[i].pool, NULL, NULL);
    uv_timer_stop(&cl->rtimer);
    uv_timer_start(&cl->retry, on_teardown, 0, 0);
}
