/* redis_sync.c - a blocking Redis client that follows a cluster's redirections; see
 * redis_sync.h. */
#include "redis_sync.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "domain/rds_slot.h"
#include "base/mem.h"

#define MAX_NODES 64
#define SLOTS 16384
#define RETRY_PAUSE_MS 100

typedef struct {
    char host[108]; /* an address, or a unix socket path */
    int port;
    redisContext *c; /* NULL until connected, or after it broke */
} node_t;

struct seatd_redis_s {
    seatd_redis_opts_t o;
    char user[128], password[256];
    node_t nodes[MAX_NODES];
    int nnodes;
    short owner[SLOTS];    /* slot -> index in nodes, -1 when unknown (use the first reachable) */
    short answered[SLOTS]; /* slot -> the node whose current connection answered the slot's
                              last command (seatd_redis_command_at), -1 when none */
    char err[512];         /* room for a host, a user name and hiredis's message */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The node 'host':'port', added if new; -1 when the table is full. */
static int node_index(seatd_redis_t *r, const char *host, int port)
{
    for (int i = 0; i < r->nnodes; i++)
        if (r->nodes[i].port == port && strcmp(r->nodes[i].host, host) == 0)
            return i;
    if (r->nnodes == MAX_NODES)
        return -1;
    node_t *n = &r->nodes[r->nnodes];
    snprintf(n->host, sizeof(n->host), "%s", host);
    n->port = port;
    n->c = NULL;
    return r->nnodes++;
}

/* Forgets that node 'i''s connection answered anything: it is closed or replaced. */
static void node_forget_answers(seatd_redis_t *r, int i)
{
    for (int s = 0; s < SLOTS; s++)
        if (r->answered[s] == i)
            r->answered[s] = -1;
}

static void node_drop(seatd_redis_t *r, int i)
{
    if (r->nodes[i].c)
        redisFree(r->nodes[i].c);
    r->nodes[i].c = NULL;
    node_forget_answers(r, i);
    for (int s = 0; s < SLOTS; s++) /* the cluster will name the new owner */
        if (r->owner[s] == i)
            r->owner[s] = -1;
}

/* A live connection to node 'i' (connected and authenticated), or NULL. */
static redisContext *node_conn(seatd_redis_t *r, int i)
{
    node_t *n = &r->nodes[i];
    if (n->c && !n->c->err)
        return n->c;
    if (n->c)
        redisFree(n->c);
    n->c = NULL;
    node_forget_answers(r, i); /* a new connection has run none of the old one's commands */
    struct timeval tv = {r->o.timeout_ms / 1000, (r->o.timeout_ms % 1000) * 1000};
    n->c = n->host[0] == '/' ? redisConnectUnixWithTimeout(n->host, tv) /* one node's socket */
                             : redisConnectWithTimeout(n->host, n->port, tv);
    if (n->c == NULL || n->c->err) {
        snprintf(r->err, sizeof(r->err), "%s:%d: %s", n->host, n->port,
                 n->c ? n->c->errstr : "out of memory");
        if (n->c)
            redisFree(n->c);
        n->c = NULL;
        return NULL;
    }
    redisSetTimeout(n->c, tv);
    if (r->password[0]) {
        redisReply *a = r->user[0] ? redisCommand(n->c, "AUTH %s %s", r->user, r->password)
                                   : redisCommand(n->c, "AUTH %s", r->password);
        int refused = a == NULL || a->type == REDIS_REPLY_ERROR;
        if (a)
            freeReplyObject(a);
        if (refused) {
            snprintf(r->err, sizeof(r->err), "%s:%d refused the credentials%s%s", n->host, n->port,
                     r->user[0] ? " of user " : "", r->user);
            redisFree(n->c);
            n->c = NULL;
            return NULL;
        }
    }
    return n->c;
}

/* 1 when the pattern 'p' starts with a hash tag free of glob characters ("{s:42}:*"): every key
 * it matches is in that tag's slot. */
static int tagged_pattern(const char *p, size_t len)
{
    if (len < 3 || p[0] != '{')
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (p[i] == '}')
            return i > 1;
        if (strchr("*?[\\", p[i]) != NULL)
            return 0;
    }
    return 0;
}

/* The argument that names the command's key, or -1 for a command without one. KEYS and SCAN
 * name their pattern when it has a hash tag (it matches keys of that slot only). */
static int key_arg(int argc, const char **argv, const size_t *lens)
{
    if (argc < 2)
        return -1;
    const char *c = argv[0];
#define LEN(i) (lens ? lens[i] : strlen(argv[i]))
    if (!strcasecmp(c, "KEYS"))
        return tagged_pattern(argv[1], LEN(1)) ? 1 : -1;
    if (!strcasecmp(c, "SCAN")) {
        for (int i = 2; i + 1 < argc; i++)
            if (LEN(i) == 5 && !strncasecmp(argv[i], "MATCH", 5))
                return tagged_pattern(argv[i + 1], LEN(i + 1)) ? i + 1 : -1;
        return -1;
    }
#undef LEN
    if (!strcasecmp(c, "FCALL") || !strcasecmp(c, "FCALL_RO") || !strcasecmp(c, "EVAL") ||
        !strcasecmp(c, "EVAL_RO") || !strcasecmp(c, "EVALSHA") || !strcasecmp(c, "EVALSHA_RO"))
        return argc > 3 && atoi(argv[2]) > 0 ? 3 : -1;
    if (!strcasecmp(c, "XREAD") || !strcasecmp(c, "XREADGROUP")) {
        for (int i = 1; i + 1 < argc; i++)
            if ((lens ? lens[i] : strlen(argv[i])) == 7 && !strncasecmp(argv[i], "STREAMS", 7))
                return i + 1;
        return -1;
    }
    /* Subcommands whose key follows them: XGROUP CREATE <key> …, XINFO STREAM <key>. */
    if (!strcasecmp(c, "XGROUP") || !strcasecmp(c, "XINFO") || !strcasecmp(c, "OBJECT") ||
        !strcasecmp(c, "MEMORY"))
        return argc > 2 ? 2 : -1;
    static const char *const keyless[] = {"PING",   "INFO",   "CLUSTER", "FUNCTION", "ACL",
                                          "TIME",   "CONFIG", "AUTH",    "SCRIPT",   "DBSIZE",
                                          "WAIT",   "CLIENT", "COMMAND", "SHUTDOWN", "FLUSHALL",
                                          "SELECT", "HELLO",  "ECHO",    "PUBLISH"};
    for (size_t i = 0; i < sizeof(keyless) / sizeof(keyless[0]); i++)
        if (!strcasecmp(c, keyless[i]))
            return -1;
    return 1;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381": the slot and the node's index. */
static int parse_redirect(seatd_redis_t *r, const char *msg, int *slot)
{
    const char *sp = strchr(msg, ' ');
    if (sp == NULL)
        return -1;
    *slot = atoi(sp + 1);
    const char *addr = strchr(sp + 1, ' ');
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (colon == NULL || *slot < 0 || *slot >= SLOTS || (size_t)(colon - addr - 1) >= 64)
        return -1;
    char host[64];
    snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 1), addr + 1);
    return node_index(r, host, atoi(colon + 1));
}

static int starts(const redisReply *x, const char *prefix)
{
    return x && x->type == REDIS_REPLY_ERROR && x->str &&
           strncmp(x->str, prefix, strlen(prefix)) == 0;
}

redisReply *seatd_redis_commandv(seatd_redis_t *r, int argc, const char **argv, const size_t *lens)
{
    int k = key_arg(argc, argv, lens);
    int slot = k < 0 ? -1 : (int)seatd_rds_keyslot(argv[k], lens ? lens[k] : strlen(argv[k]));
    long long deadline = now_ms() + r->o.timeout_ms;
    int ask = -1; /* the node an ASK named, for the next attempt only */
    int next = 0; /* round-robin over the known nodes when the owner is unknown or dead */
    int hops = 0; /* redirections followed: a bound, in case nodes disagree for long */
    for (;;) {
        int i = ask >= 0 ? ask : (slot >= 0 && r->owner[slot] >= 0 ? r->owner[slot] : next);
        redisContext *c = node_conn(r, i);
        redisReply *x = NULL;
        if (c != NULL) {
            if (ask >= 0) {
                redisReply *a = redisCommand(c, "ASKING");
                if (a)
                    freeReplyObject(a);
            }
            x = redisCommandArgv(c, argc, argv, lens);
            if (x == NULL)
                snprintf(r->err, sizeof(r->err), "%s:%d: %s", r->nodes[i].host, r->nodes[i].port,
                         c->errstr);
        }
        ask = -1;
        if (x == NULL) {
            node_drop(r, i);
            next = (i + 1) % r->nnodes;
        } else if (starts(x, "MOVED ") || starts(x, "ASK ")) {
            int s, to = parse_redirect(r, x->str, &s);
            int moved = x->str[0] == 'M';
            freeReplyObject(x);
            if (to < 0 || ++hops > 16) {
                snprintf(r->err, sizeof(r->err),
                         to < 0 ? "bad redirection" : "too many redirections");
                return NULL;
            }
            if (moved) {
                r->owner[s] = (short)to;
                slot = s; /* the node knows the command's key: follow its slot from now on */
            } else if (seatd_rds_is_script(argv[0], lens ? lens[0] : strlen(argv[0]))) {
                /* A script waits a migration out rather than run on the importing node with
                 * keys left on the source (rds_slot.h): pause, ask the owner again. */
                hops--;
                snprintf(r->err, sizeof(r->err), "slot %d in migration", s);
                if (now_ms() + RETRY_PAUSE_MS >= deadline)
                    return NULL;
                pause_ms(RETRY_PAUSE_MS);
                continue;
            } else {
                ask = to;
            }
            continue; /* a redirection is an answer, not a failure: no pause */
        } else if (starts(x, "TRYAGAIN") || starts(x, "CLUSTERDOWN") || starts(x, "LOADING")) {
            snprintf(r->err, sizeof(r->err), "%s", x->str);
            if (now_ms() + RETRY_PAUSE_MS >= deadline)
                return x;
            freeReplyObject(x);
        } else {
            if (slot >= 0) /* it ran here (or was refused here): seatd_redis_command_at() */
                r->answered[slot] = (short)i;
            return x;
        }
        if (now_ms() + RETRY_PAUSE_MS >= deadline)
            return NULL;
        pause_ms(RETRY_PAUSE_MS);
    }
}

redisReply *seatd_redis_command_at(seatd_redis_t *r, const char *key, int argc, const char **argv,
                                   const size_t *lens)
{
    unsigned slot = seatd_rds_keyslot(key, strlen(key));
    int i = r->answered[slot];
    redisContext *c = i >= 0 ? r->nodes[i].c : NULL;
    if (c == NULL || c->err) {
        snprintf(r->err, sizeof(r->err), "no open connection answered a command of slot %u", slot);
        return NULL;
    }
    redisReply *x = redisCommandArgv(c, argc, argv, lens);
    if (x == NULL) {
        snprintf(r->err, sizeof(r->err), "%s:%d: %s", r->nodes[i].host, r->nodes[i].port,
                 c->errstr);
        node_drop(r, i); /* the next command reconnects; this one is not sent again */
    }
    return x;
}

/* Splits hiredis's RESP encoding of a formatted command back into arguments, each ended with
 * a NUL written over its "\r" (key_arg() compares names and parses numbers as C strings). */
static redisReply *command_resp(seatd_redis_t *r, char *cmd, int len)
{
    char *p = cmd, *end = cmd + len;
    if (p >= end || *p != '*')
        return NULL;
    int argc = atoi(p + 1);
    if (argc <= 0 || argc > 1024)
        return NULL;
    const char **argv = seatd_calloc((size_t)argc, sizeof(*argv));
    size_t *lens = seatd_calloc((size_t)argc, sizeof(*lens));
    p = strchr(p, '\n') + 1;
    int i = 0;
    for (; i < argc && p < end && *p == '$'; i++) {
        lens[i] = (size_t)strtoul(p + 1, NULL, 10);
        p = strchr(p, '\n') + 1;
        if (p + lens[i] + 2 > end)
            break;
        argv[i] = p;
        p[lens[i]] = '\0';
        p += lens[i] + 2;
    }
    redisReply *x = i == argc ? seatd_redis_commandv(r, argc, argv, lens) : NULL;
    free(argv);
    free(lens);
    return x;
}

redisReply *seatd_redis_command(seatd_redis_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *x = seatd_redis_vcommand(r, fmt, ap);
    va_end(ap);
    return x;
}

redisReply *seatd_redis_vcommand(seatd_redis_t *r, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0)
        return NULL;
    redisReply *x = command_resp(r, cmd, len);
    redisFreeCommand(cmd);
    return x;
}

/* Reads the slot map with CLUSTER SLOTS from the first node, so commands that a wrong node
 * would answer without a redirection (KEYS, SCAN) go to the owner from the start. A node that
 * is not in cluster mode answers an error: everything stays on it. */
static void load_slots(seatd_redis_t *r)
{
    redisReply *x = redisCommand(r->nodes[0].c, "CLUSTER SLOTS");
    if (x && x->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < x->elements; i++) {
            const redisReply *e = x->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
                e->element[2]->element[0]->type != REDIS_REPLY_STRING)
                continue;
            long long lo = e->element[0]->integer, hi = e->element[1]->integer;
            int n = node_index(r, e->element[2]->element[0]->str,
                               (int)e->element[2]->element[1]->integer);
            for (long long sl = lo; n >= 0 && sl <= hi && sl < SLOTS; sl++)
                if (sl >= 0)
                    r->owner[sl] = (short)n;
        }
    }
    if (x)
        freeReplyObject(x);
}

seatd_redis_t *seatd_redis_connect(const seatd_redis_opts_t *opts, char *err, size_t errlen)
{
    seatd_redis_t *r = seatd_calloc(1, sizeof(*r));
    r->o = *opts;
    if (r->o.timeout_ms <= 0)
        r->o.timeout_ms = 5000;
    snprintf(r->user, sizeof(r->user), "%s", opts->user ? opts->user : "");
    snprintf(r->password, sizeof(r->password), "%s", opts->password ? opts->password : "");
    r->o.user = r->o.password = NULL;
    for (int s = 0; s < SLOTS; s++)
        r->owner[s] = r->answered[s] = -1;
    node_index(r, opts->host ? opts->host : "127.0.0.1", opts->port ? opts->port : 6379);
    if (node_conn(r, 0) == NULL) {
        snprintf(err, errlen, "%s", r->err);
        seatd_redis_free(r);
        return NULL;
    }
    load_slots(r);
    return r;
}

const char *seatd_redis_errstr(const seatd_redis_t *r)
{
    return r->err;
}

void seatd_redis_free(seatd_redis_t *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->nnodes; i++)
        if (r->nodes[i].c)
            redisFree(r->nodes[i].c);
    free(r);
}
