/*
 * rds_cluster_slots.c - the cluster's slot map: asking a node for CLUSTER SLOTS (one refresh
 * in flight, at most one per REFRESH_MIN_MS, the nodes asked in turn), learning the nodes it
 * names and applying it as a whole, then waking the commands that waited for a map. See
 * rds_cluster_internal.h.
 */
#include "clients/rds_cluster_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"

#define REFRESH_MIN_MS 250

/* ----------------------------------------------------------------------------------------
 * The slot map
 * -------------------------------------------------------------------------------------- */

static void on_rtimer(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    cl->refresh_wanted = 0;
    if (!cl->closing)
        cluster__start_refresh(cl);
}

/* Asks for a refresh: one in flight at a time, at most one per REFRESH_MIN_MS. */
void cluster__schedule_refresh(seatd__rds_cluster_t *cl)
{
    if (cl->closing || cl->refreshing || cl->refresh_wanted)
        return;
    uint64_t now = cluster__now_ms(), next = cl->last_refresh_ms + REFRESH_MIN_MS;
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
    return cluster__node_get(cl, host, hlen, (int)n->element[1]->integer);
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
    cl->last_refresh_ms = cluster__now_ms();
    if (cl->closing) {
        cl->pending--;
        cluster__maybe_free(cl);
        return;
    }
    cl->pending--;
    if (!err && apply_slots(cl, reply, node) == 0) {
        cl->refreshes++;
        cluster__wake_map_waiters(cl);
        return;
    }
    seatd_log(SEATD_LOG_DEBUG, NULL, "redis cluster map refresh failed",
              "\"node\":\"%s:%d\",\"error\":\"%s\"", cl->nodes[node].host, cl->nodes[node].port,
              err ? seatd_err_name(err) : "bad reply");
    /* Ask the next node, throttled; commands waiting for a map wait at most their deadline. */
    if (!cl->have_map || cl->whead)
        cluster__schedule_refresh(cl);
}

/* Sends CLUSTER SLOTS to the next node in turn (a node with a ready pool first). */
void cluster__start_refresh(seatd__rds_cluster_t *cl)
{
    if (cl->refreshing || cl->nnodes == 0)
        return;
    int pick = -1;
    for (int k = 0; k < cl->nnodes && pick < 0; k++) {
        int i = (int)((cl->refresh_rr + (unsigned)k) % (unsigned)cl->nnodes);
        if (cl->nodes[i].pool && seatd__rds_node_is_ready(cl->nodes[i].pool))
            pick = i;
    }
    if (pick < 0)
        pick = (int)(cl->refresh_rr % (unsigned)cl->nnodes);
    cl->refresh_rr = (unsigned)pick + 1;
    refresh_t *rf = seatd_calloc(1, sizeof(*rf));
    rf->cl = cl;
    rf->node = pick;
    static const char *const argv[] = {"CLUSTER", "SLOTS"};
    seatd__rds_msg_t *m = seatd__rds_msg_new(2, argv, NULL);
    int rc = seatd__rds_node_send(cluster__node_pool(cl, pick), m, SEATD__RDS_DETAIL,
                                  cluster__now_ms() + cl->timeout_ms, on_slots, rf);
    seatd__rds_msg_unref(m);
    if (rc) {
        free(rf);
        cl->last_refresh_ms = cluster__now_ms();
        cluster__schedule_refresh(cl);
        return;
    }
    cl->pending++;
    cl->refreshing = 1;
}
