/*
 * pubsub.c - the dedicated subscribe-mode Redis connection; see pubsub.h.
 *
 * The connection is a single-node rds client with one connection (rds.h, "a subscribe-mode
 * connection"): rds owns connecting, AUTH, the reconnect backoff and the teardown; this file
 * keeps the channels. Its ready hook subscribes every wanted channel on each (re)connection,
 * its lost hook marks them unknown and tells the owner, its push hook reads confirmations and
 * messages. In cluster mode (seatd_pubsub_set_nodes) a failed or lost connection moves the
 * subscriber to the next node: the client is closed and one is made for that node.
 *
 * Each wanted channel is a chan_t with a state that follows Redis's view of it:
 *   NONE -> (SUBSCRIBE sent) SUBSCRIBING -> (confirmed) SUBSCRIBED
 *        -> (UNSUBSCRIBE sent) UNSUBSCRIBING -> (confirmed) NONE
 * 'want' is the owner's wish; whenever a confirmation arrives the state is steered towards
 * it again, so a subscribe that races an unsubscribe never loses its channel (hiredis 0.14
 * drops the channel's callback when the unsubscribe reply arrives). A chan_t is freed once
 * it is neither wanted nor known to Redis.
 */
#define _GNU_SOURCE /* memrchr */
#include "clients/pubsub.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"

enum { CH_NONE, CH_SUBSCRIBING, CH_SUBSCRIBED, CH_UNSUBSCRIBING };

typedef struct chan_s {
    struct chan_s *next; /* the subscriber's list */
    char *name;          /* owned */
    int want;            /* the owner wants it */
    int state;           /* CH_*: what Redis knows */
} chan_t;

struct seatd_pubsub_s {
    struct uv_loop_s *loop;   /* borrowed */
    char *host;               /* owned */
    int port;                 /* TCP port */
    char *unix_path;          /* owned or NULL */
    seatd_pubsub_event_cb cb; /* events */
    void *data;               /* for 'cb' */
    seatd_rds_t *rds;         /* owned: the one connection */
    void *conn;               /* its connection while subscribed-capable, else NULL */
    chan_t *chans;            /* wanted or still known to Redis */
    size_t nwanted;           /* chans with 'want' */
    int closing;              /* seatd_pubsub_close() was called */
    unsigned rr;              /* cluster mode: index of the node in use (set_nodes) */
    uv_timer_t *next_node;    /* owned, cluster mode: the wait before trying the next node */
    uint64_t backoff_ms;      /* cluster mode: that wait; 0 once a connection came up */
    unsigned long opened;     /* clients made (one per connection attempt in cluster mode) */
    uv_timer_t *alive;        /* owned: the liveness check of the connection, every second */
    uint64_t heard_ms;        /* loop time of the last reply on it (a message, a probe's, ...) */
    uint64_t ping_ms;         /* when the unanswered probe went out; 0: none out */
};

/* A subscribe connection says nothing while nothing changes, so silence alone proves
 * nothing; but a node that hangs (SIGSTOP, a partition without a reset) kept the live map
 * frozen with no LOST event for as long as it lasted. After ALIVE_IDLE_MS without a word the
 * subscriber sends a probe; unanswered for ALIVE_DEAD_MS, the connection is replaced (LOST for
 * every channel: the feeds read snapshots again). The probe is a SUBSCRIBE of PROBE_CHANNEL
 * (inside the workers' channel permission, no show's name), not a PING: hiredis 0.14 drops a
 * subscribed connection's ["pong", ""] (it looks it up as a pattern's message). */
#define PROBE_CHANNEL "{s:probe}:alive"
#define ALIVE_TICK_MS 500
#define ALIVE_IDLE_MS 1000
#define ALIVE_DEAD_MS 2500

/* Cluster mode: after a node refused the connection, the next one is tried after
 * NODE_BACKOFF_MIN_MS, doubling to NODE_BACKOFF_MAX_MS while none comes up (every node down:
 * without it a worker tried thousands of connections a second, a core at 100 %). */
#define NODE_BACKOFF_MIN_MS 100
#define NODE_BACKOFF_MAX_MS 5000

static void open_client(seatd_pubsub_t *ps);

static chan_t *find(seatd_pubsub_t *ps, const char *name)
{
    for (chan_t *ch = ps->chans; ch; ch = ch->next)
        if (strcmp(ch->name, name) == 0)
            return ch;
    return NULL;
}

/* Frees 'ch' when nobody wants it and Redis does not know it. */
static void maybe_forget(seatd_pubsub_t *ps, chan_t *ch)
{
    if (ch->want || ch->state != CH_NONE)
        return;
    for (chan_t **pp = &ps->chans; *pp; pp = &(*pp)->next) {
        if (*pp == ch) {
            *pp = ch->next;
            break;
        }
    }
    free(ch->name);
    free(ch);
}

/* Sends what it takes to move 'ch' towards its wish (when connected and not in transit). */
static void steer(seatd_pubsub_t *ps, chan_t *ch)
{
    if (!ps->conn || ps->closing)
        return;
    if (ch->want && ch->state == CH_NONE) {
        const char *argv[2] = {"SUBSCRIBE", ch->name};
        if (seatd_rds_send_push(ps->rds, ps->conn, 2, argv) == 0)
            ch->state = CH_SUBSCRIBING;
    } else if (!ch->want && ch->state == CH_SUBSCRIBED) {
        const char *argv[2] = {"UNSUBSCRIBE", ch->name};
        if (seatd_rds_send_push(ps->rds, ps->conn, 2, argv) == 0)
            ch->state = CH_UNSUBSCRIBING;
    }
}

/* Every subscription reply (subscribe/unsubscribe confirmations and messages). */
static void on_push(const struct redisReply *r, void *data)
{
    seatd_pubsub_t *ps = data;
    if (ps->closing)
        return;
    ps->heard_ms = uv_now(ps->loop);
    if (seatd_rds_reply_elements(r) < 3)
        return;
    const struct redisReply *k = seatd_rds_reply_element(r, 0);
    const struct redisReply *c = seatd_rds_reply_element(r, 1);
    const struct redisReply *m = seatd_rds_reply_element(r, 2);
    if (seatd_rds_reply_type(k) != SEATD_RDS_REPLY_STRING ||
        seatd_rds_reply_type(c) != SEATD_RDS_REPLY_STRING)
        return;
    const char *kind = seatd_rds_reply_str(k, NULL);
    if (strcmp(seatd_rds_reply_str(c, NULL), PROBE_CHANNEL) == 0) {
        ps->ping_ms = 0; /* the probe's answer: the node is alive */
        return;
    }
    chan_t *ch = find(ps, seatd_rds_reply_str(c, NULL));
    if (ch == NULL)
        return;
    if (strcmp(kind, "message") == 0) {
        size_t len;
        const char *payload = seatd_rds_reply_str(m, &len);
        if (ch->want && ch->state == CH_SUBSCRIBED &&
            seatd_rds_reply_type(m) == SEATD_RDS_REPLY_STRING)
            ps->cb(SEATD_PUBSUB_MESSAGE, ch->name, payload, len, ps->data);
    } else if (strcmp(kind, "subscribe") == 0) {
        ch->state = CH_SUBSCRIBED;
        if (ch->want)
            ps->cb(SEATD_PUBSUB_SUBSCRIBED, ch->name, NULL, 0, ps->data);
        else
            steer(ps, ch);
    } else if (strcmp(kind, "unsubscribe") == 0) {
        ch->state = CH_NONE;
        if (ch->want)
            steer(ps, ch);
        else
            maybe_forget(ps, ch);
    }
}

/* The connection is up (AUTH already sent first on it): subscribe everything wanted. */
static void on_ready(seatd_rds_t *rds, void *conn, void *data)
{
    seatd_pubsub_t *ps = data;
    (void)rds;
    if (ps->closing)
        return;
    ps->conn = conn;
    ps->backoff_ms = 0;
    ps->heard_ms = uv_now(ps->loop);
    ps->ping_ms = 0;
    seatd_log(SEATD_LOG_INFO, NULL, "pubsub connected", "\"channels\":%zu", ps->nwanted);
    for (chan_t *ch = ps->chans, *next; ch; ch = next) {
        next = ch->next;
        steer(ps, ch);
    }
}

/* See seatd_pubsub_set_nodes(); owned, process-wide. */
static char **node_hosts;
static int *node_ports;
static int nnodes;

static void on_next_node_closed(uv_handle_t *h)
{
    free(h);
}

static void on_next_node(uv_timer_t *t)
{
    seatd_pubsub_t *ps = t->data;
    if (!ps->closing && ps->rds == NULL)
        open_client(ps);
}

/* The connection is gone, or a connect failed: every channel is unknown to Redis again, and
 * the owner hears which ones may have missed messages. rds reconnects by itself; in cluster
 * mode the subscriber moves on to the next node instead. */
static void on_lost(seatd_rds_t *rds, void *conn, int was_connected, void *data)
{
    seatd_pubsub_t *ps = data;
    (void)conn;
    ps->conn = NULL;
    for (chan_t *ch = ps->chans, *next; ch; ch = next) {
        next = ch->next;
        int had = ch->state == CH_SUBSCRIBED;
        ch->state = CH_NONE;
        if (ch->want && had && was_connected && !ps->closing)
            ps->cb(SEATD_PUBSUB_LOST, ch->name, NULL, 0, ps->data);
        else if (!ch->want)
            maybe_forget(ps, ch);
    }
    if (nnodes > 1 && !ps->closing && rds == ps->rds) {
        seatd_rds_set_conn_hooks(rds, NULL, NULL, NULL);
        seatd_rds_set_ready_hook(rds, NULL, NULL);
        seatd_rds_close(rds); /* deferred: safe from inside its own callback */
        ps->rds = NULL;
        ps->rr++;
        if (was_connected) {
            open_client(ps); /* a connection that worked: the next node at once */
            return;
        }
        ps->backoff_ms = ps->backoff_ms ? ps->backoff_ms * 2 : NODE_BACKOFF_MIN_MS;
        if (ps->backoff_ms > NODE_BACKOFF_MAX_MS)
            ps->backoff_ms = NODE_BACKOFF_MAX_MS;
        if (!ps->next_node) {
            ps->next_node = seatd_malloc(sizeof(*ps->next_node));
            uv_timer_init(ps->loop, ps->next_node);
            ps->next_node->data = ps;
        }
        uv_timer_start(ps->next_node, on_next_node, ps->backoff_ms, 0);
    }
}

void seatd_pubsub_set_nodes(const char *list)
{
    for (int i = 0; i < nnodes; i++)
        free(node_hosts[i]);
    free(node_hosts);
    free(node_ports);
    node_hosts = NULL;
    node_ports = NULL;
    nnodes = 0;
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *colon = memrchr(p, ':', len);
        if (colon && colon > p) {
            node_hosts = seatd_realloc(node_hosts, (size_t)(nnodes + 1) * sizeof(char *));
            node_ports = seatd_realloc(node_ports, (size_t)(nnodes + 1) * sizeof(int));
            size_t hlen = (size_t)(colon - p);
            while (hlen && *p == ' ') {
                p++;
                hlen--;
            }
            node_hosts[nnodes] = seatd_malloc(hlen + 1);
            memcpy(node_hosts[nnodes], p, hlen);
            node_hosts[nnodes][hlen] = '\0';
            node_ports[nnodes] = atoi(colon + 1);
            nnodes++;
        }
        p = comma ? comma + 1 : NULL;
    }
}

/* See seatd_pubsub_set_auth(); owned, process-wide. */
static char *auth_user, *auth_password;

void seatd_pubsub_set_auth(const char *user, const char *password)
{
    free(auth_user);
    free(auth_password);
    auth_user = user && user[0] ? seatd_strdup(user) : NULL;
    auth_password = password && password[0] ? seatd_strdup(password) : NULL;
}

/* Makes the client for the current address (in cluster mode, node 'rr'). */
static void open_client(seatd_pubsub_t *ps)
{
    seatd_rds_opts_t o = {0};
    if (nnodes > 0) {
        /* Cluster mode: a PUBLISH reaches every node over the cluster bus, so any node will
         * do. */
        int i = (int)(ps->rr % (unsigned)nnodes);
        o.host = node_hosts[i];
        o.port = node_ports[i];
    } else {
        o.host = ps->host;
        o.port = ps->port;
        o.unix_path = ps->unix_path;
    }
    o.pool_size = 1;
    o.user = auth_user;
    o.password = auth_password;
    ps->opened++;
    ps->rds = seatd_rds_new(ps->loop, &o);
    seatd_rds_set_conn_hooks(ps->rds, on_lost, on_push, ps);
    seatd_rds_set_ready_hook(ps->rds, on_ready, ps);
}

static void on_alive_closed(uv_handle_t *h)
{
    free(h);
}

/* Every ALIVE_TICK_MS: a probe after ALIVE_IDLE_MS of silence; a new connection when that
 * probe went unanswered for ALIVE_DEAD_MS. */
static void on_alive_tick(uv_timer_t *t)
{
    seatd_pubsub_t *ps = t->data;
    if (ps->closing || !ps->conn || !ps->rds)
        return;
    uint64_t now = uv_now(ps->loop);
    if (ps->ping_ms && now - ps->ping_ms >= ALIVE_DEAD_MS) {
        seatd_log(SEATD_LOG_WARN, NULL, "pubsub connection silent; replacing it",
                  "\"silentMs\":%llu", (unsigned long long)(now - ps->heard_ms));
        seatd_rds_t *old = ps->rds;
        seatd_rds_set_conn_hooks(old, NULL, NULL, NULL);
        seatd_rds_set_ready_hook(old, NULL, NULL);
        ps->rds = NULL;                /* so that on_lost does not move on by itself */
        on_lost(old, ps->conn, 1, ps); /* LOST for every channel it had */
        seatd_rds_close(old);
        ps->rr++; /* cluster mode: the next node; one node: the same address again */
        open_client(ps);
        return;
    }
    if (!ps->ping_ms && now - ps->heard_ms >= ALIVE_IDLE_MS) {
        const char *argv[2] = {"SUBSCRIBE", PROBE_CHANNEL};
        if (seatd_rds_send_push(ps->rds, ps->conn, 2, argv) == 0)
            ps->ping_ms = now;
    }
}

seatd_pubsub_t *seatd_pubsub_new(struct uv_loop_s *loop, const char *host, int port,
                                 const char *unix_path, seatd_pubsub_event_cb cb, void *data)
{
    seatd_pubsub_t *ps = seatd_calloc(1, sizeof(*ps));
    ps->loop = loop;
    ps->host = seatd_strdup(host ? host : "127.0.0.1");
    ps->port = port ? port : 6379;
    ps->unix_path = unix_path ? seatd_strdup(unix_path) : NULL;
    ps->cb = cb;
    ps->data = data;
    ps->alive = seatd_malloc(sizeof(*ps->alive));
    uv_timer_init(loop, ps->alive);
    ps->alive->data = ps;
    uv_timer_start(ps->alive, on_alive_tick, ALIVE_TICK_MS, ALIVE_TICK_MS);
    uv_unref((uv_handle_t *)ps->alive); /* the check alone keeps no loop running */
    open_client(ps);
    return ps;
}

int seatd_pubsub_subscribe(seatd_pubsub_t *ps, const char *channel)
{
    if (ps->closing)
        return SEATD_ESHUTDOWN;
    chan_t *ch = find(ps, channel);
    if (ch == NULL) {
        ch = seatd_calloc(1, sizeof(*ch));
        ch->name = seatd_strdup(channel);
        ch->next = ps->chans;
        ps->chans = ch;
    }
    if (!ch->want) {
        ch->want = 1;
        ps->nwanted++;
    }
    steer(ps, ch);
    return 0;
}

void seatd_pubsub_unsubscribe(seatd_pubsub_t *ps, const char *channel)
{
    chan_t *ch = find(ps, channel);
    if (ch == NULL || !ch->want)
        return;
    ch->want = 0;
    ps->nwanted--;
    steer(ps, ch);
    maybe_forget(ps, ch);
}

size_t seatd_pubsub_channels(const seatd_pubsub_t *ps)
{
    return ps->nwanted;
}

int seatd_pubsub_connected(const seatd_pubsub_t *ps)
{
    return ps->conn != NULL;
}

unsigned long seatd_pubsub_attempts(const seatd_pubsub_t *ps)
{
    return ps->opened;
}

/* ---------------------------------------------------------------------------------------
 * Teardown: the client frees itself asynchronously (rds.h); its hooks are cleared first, so
 * nothing reaches this object once it is freed here.
 * --------------------------------------------------------------------------------------- */

void seatd_pubsub_close(seatd_pubsub_t *ps)
{
    if (ps == NULL || ps->closing)
        return;
    ps->closing = 1;
    if (ps->rds) {
        seatd_rds_set_conn_hooks(ps->rds, NULL, NULL, NULL);
        seatd_rds_set_ready_hook(ps->rds, NULL, NULL);
        seatd_rds_close(ps->rds);
    }
    if (ps->next_node)
        uv_close((uv_handle_t *)ps->next_node, on_next_node_closed);
    uv_close((uv_handle_t *)ps->alive, on_alive_closed);
    while (ps->chans) {
        chan_t *ch = ps->chans;
        ps->chans = ch->next;
        free(ch->name);
        free(ch);
    }
    free(ps->host);
    free(ps->unix_path);
    free(ps);
}
