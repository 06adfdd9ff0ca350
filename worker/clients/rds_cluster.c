/*
 * rds_cluster.c - the Redis Cluster router behind a cluster-mode seatd_rds_t; see rds.h
 * (cluster mode) and rds_cluster.h. This file holds the known nodes and their pools, the
 * command table (routing key, read-only commands), the calls rds.c makes and the teardown;
 * a command's way to its node is in rds_cluster_route.c, the slot map in rds_cluster_slots.c
 * (rds_cluster_internal.h).
 */
#include "clients/rds_cluster_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/mem.h"

#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_MAX_PENDING 10000

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

seatd_rds_t *cluster__node_pool(seatd__rds_cluster_t *cl, int i)
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
    r->deadline_ms = cluster__now_ms() + cl->timeout_ms + (uint64_t)(bytes >> 20) * 1000;
    cl->pending++;
    cluster__rcmd_send(r);
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

void cluster__maybe_free(seatd__rds_cluster_t *cl)
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

void seatd__rds_cluster_close(seatd__rds_cluster_t *cl)
{
    cl->closing = 1;
    for (int i = 0; i < cl->nnodes; i++)
        seatd_rds_close(cl->nodes[i].pool);
    uv_timer_stop(&cl->rtimer);
    uv_timer_start(&cl->retry, on_teardown, 0, 0);
}
