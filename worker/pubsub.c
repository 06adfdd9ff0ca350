/*
 * pubsub.c - the dedicated subscribe-mode Redis connection; see pubsub.h.
 *
 * Each wanted channel is a chan_t with a state that follows Redis's view of it:
 *   NONE -> (SUBSCRIBE sent) SUBSCRIBING -> (confirmed) SUBSCRIBED
 *        -> (UNSUBSCRIBE sent) UNSUBSCRIBING -> (confirmed) NONE
 * 'want' is the owner's wish; whenever a confirmation arrives the state is steered towards
 * it again, so a subscribe that races an unsubscribe never loses its channel (hiredis 0.14
 * drops the channel's callback when the unsubscribe reply arrives). A chan_t is freed once
 * it is neither wanted nor known to Redis.
 *
 * hiredis rules relied on (as in rds.c): subscribe callbacks are called with NULL when the
 * context is freed; redisAsyncFree() is only called from our own timer callback.
 */
#define _GNU_SOURCE /* memrchr */
#include "pubsub.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "log.h"
#include "mem.h"
#include "rds_uv.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

enum { CH_NONE, CH_SUBSCRIBING, CH_SUBSCRIBED, CH_UNSUBSCRIBING };

typedef struct chan_s {
    struct chan_s *next; /* the subscriber's list */
    char *name;          /* owned */
    int want;            /* the owner wants it */
    int state;           /* CH_*: what Redis knows */
} chan_t;

struct seatd_pubsub_s {
    uv_loop_t *loop;          /* borrowed */
    char *host;               /* owned */
    int port;                 /* TCP port */
    char *unix_path;          /* owned or NULL */
    seatd_pubsub_event_cb cb; /* events */
    void *data;               /* for 'cb' */
    redisAsyncContext *ac;    /* owned; NULL when not connected */
    int connected;            /* 'ac' finished connecting */
    uv_timer_t timer;         /* reconnect backoff; then the deferred teardown */
    uint64_t backoff_ms;      /* last reconnect delay */
    chan_t *chans;            /* wanted or still known to Redis */
    size_t nwanted;           /* chans with 'want' */
    int closing;              /* seatd_pubsub_close() was called */
    unsigned rr;              /* cluster mode: index of the node tried next (set_nodes) */
};

static void connect_now(seatd_pubsub_t *ps);

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

static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata);

/* Sends what it takes to move 'ch' towards its wish (when connected and not in transit). */
static void steer(seatd_pubsub_t *ps, chan_t *ch)
{
    if (!ps->connected || ps->closing)
        return;
    if (ch->want && ch->state == CH_NONE) {
        if (redisAsyncCommand(ps->ac, on_sub_reply, ps, "SUBSCRIBE %s", ch->name) == REDIS_OK)
            ch->state = CH_SUBSCRIBING;
    } else if (!ch->want && ch->state == CH_SUBSCRIBED) {
        if (redisAsyncCommand(ps->ac, on_sub_reply, ps, "UNSUBSCRIBE %s", ch->name) == REDIS_OK)
            ch->state = CH_UNSUBSCRIBING;
    }
}

/* Every subscription callback (subscribe/unsubscribe confirmations and messages). */
static void on_sub_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    seatd_pubsub_t *ps = privdata;
    redisReply *r = reply;
    if (r == NULL || ps->closing || ac != ps->ac)
        return; /* the context is being freed: the disconnect path handles the channels */
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = r->element[0]->str;
    chan_t *ch = find(ps, r->element[1]->str);
    if (ch == NULL)
        return;
    if (strcmp(kind, "message") == 0) {
        if (ch->want && ch->state == CH_SUBSCRIBED && r->element[2]->type == REDIS_REPLY_STRING)
            ps->cb(SEATD_PUBSUB_MESSAGE, ch->name, r->element[2]->str, (size_t)r->element[2]->len,
                   ps->data);
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

static void on_timer(uv_timer_t *t)
{
    seatd_pubsub_t *ps = t->data;
    if (!ps->closing)
        connect_now(ps);
}

static void schedule_reconnect(seatd_pubsub_t *ps)
{
    if (ps->closing)
        return;
    ps->rr++; /* cluster mode: the next attempt goes to the next node */
    ps->backoff_ms = ps->backoff_ms == 0 ? BACKOFF_MIN_MS : ps->backoff_ms * 2;
    if (ps->backoff_ms > BACKOFF_MAX_MS)
        ps->backoff_ms = BACKOFF_MAX_MS;
    uv_timer_start(&ps->timer, on_timer, ps->backoff_ms, 0);
}

/* The connection is gone (hiredis frees the context itself): every channel is unknown to
 * Redis again, and the owner hears which ones may have missed messages. */
static void lost(seatd_pubsub_t *ps)
{
    int was_connected = ps->connected;
    ps->ac = NULL;
    ps->connected = 0;
    for (chan_t *ch = ps->chans, *next; ch; ch = next) {
        next = ch->next;
        int had = ch->state == CH_SUBSCRIBED;
        ch->state = CH_NONE;
        if (ch->want && had && was_connected && !ps->closing)
            ps->cb(SEATD_PUBSUB_LOST, ch->name, NULL, 0, ps->data);
        else if (!ch->want)
            maybe_forget(ps, ch);
    }
    schedule_reconnect(ps);
}

/* See seatd_pubsub_set_nodes(); owned, process-wide. */
static char **node_hosts;
static int *node_ports;
static int nnodes;

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

static void on_auth_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    const redisReply *reply = r;
    (void)ac;
    (void)privdata;
    if (reply && reply->type == REDIS_REPLY_ERROR)
        seatd_log(SEATD_LOG_ERROR, NULL, "pubsub: redis refused the credentials", NULL);
}

static void on_connect(const redisAsyncContext *cac, int status)
{
    seatd_pubsub_t *ps = cac->data;
    if (cac != ps->ac)
        return;
    if (status != REDIS_OK) {
        seatd_log(SEATD_LOG_DEBUG, NULL, "pubsub connect failed", "\"error\":\"%s\"", cac->errstr);
        ps->ac = NULL; /* hiredis frees it after this callback */
        schedule_reconnect(ps);
        return;
    }
    if (auth_password) {
        /* First on the wire: the SUBSCRIBEs below run as the authenticated user. */
        const char *argv[3] = {"AUTH", auth_user ? auth_user : auth_password, auth_password};
        (void)redisAsyncCommandArgv(ps->ac, on_auth_reply, NULL, auth_user ? 3 : 2, argv, NULL);
    }
    ps->connected = 1;
    ps->backoff_ms = 0;
    seatd_log(SEATD_LOG_INFO, NULL, "pubsub connected", "\"channels\":%zu", ps->nwanted);
    for (chan_t *ch = ps->chans; ch; ch = ch->next)
        steer(ps, ch);
}

static void on_disconnect(const redisAsyncContext *cac, int status)
{
    seatd_pubsub_t *ps = cac->data;
    if (cac != ps->ac)
        return;
    seatd_log(SEATD_LOG_WARN, NULL, "pubsub connection lost", "\"error\":\"%s\"", cac->errstr);
    lost(ps);
}

static void connect_now(seatd_pubsub_t *ps)
{
    redisAsyncContext *ac;
    if (nnodes > 0) {
        /* Cluster mode: a PUBLISH reaches every node over the cluster bus, so any node will
         * do; after a failure the next one is tried. */
        int i = (int)(ps->rr % (unsigned)nnodes);
        ac = redisAsyncConnect(node_hosts[i], node_ports[i]);
    } else {
        ac = ps->unix_path ? redisAsyncConnectUnix(ps->unix_path)
                           : redisAsyncConnect(ps->host, ps->port);
    }
    if (ac == NULL) {
        schedule_reconnect(ps);
        return;
    }
    if (ac->err || seatd_rds_uv_attach(ac, ps->loop) != 0) {
        redisAsyncFree(ac);
        schedule_reconnect(ps);
        return;
    }
    ac->data = ps;
    ps->ac = ac;
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    redisAsyncSetConnectCallback(ac, on_connect);
}

seatd_pubsub_t *seatd_pubsub_new(uv_loop_t *loop, const char *host, int port, const char *unix_path,
                                 seatd_pubsub_event_cb cb, void *data)
{
    seatd_pubsub_t *ps = seatd_calloc(1, sizeof(*ps));
    ps->loop = loop;
    ps->host = seatd_strdup(host ? host : "127.0.0.1");
    ps->port = port ? port : 6379;
    ps->unix_path = unix_path ? seatd_strdup(unix_path) : NULL;
    ps->cb = cb;
    ps->data = data;
    uv_timer_init(loop, &ps->timer);
    ps->timer.data = ps;
    connect_now(ps);
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
    return ps->connected;
}

/* ---------------------------------------------------------------------------------------
 * Teardown
 * --------------------------------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h)
{
    seatd_pubsub_t *ps = h->data;
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

/* At the top of a loop turn, never inside a hiredis callback: free the context here. */
static void on_teardown(uv_timer_t *t)
{
    seatd_pubsub_t *ps = t->data;
    redisAsyncContext *ac = ps->ac;
    ps->ac = NULL;
    ps->connected = 0;
    if (ac)
        redisAsyncFree(ac);
    uv_close((uv_handle_t *)&ps->timer, on_timer_closed);
}

void seatd_pubsub_close(seatd_pubsub_t *ps)
{
    if (ps == NULL || ps->closing)
        return;
    ps->closing = 1;
    uv_timer_stop(&ps->timer);
    uv_timer_start(&ps->timer, on_teardown, 0, 0);
}
