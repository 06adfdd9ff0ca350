/*
 * rds_cluster_route.c - a cluster command's way to its node: sending it to the primary of its
 * slot (or to every primary), following MOVED and ASK, and retrying what did not run after a
 * backoff on the waiting list, where commands also wait for a slot map; each completes
 * exactly once. See rds_cluster_internal.h.
 *
 * No storm: a command is resent at once only after MOVED or ASK (the answer names where to go,
 * and redirections are capped; a script does not follow ASK, it waits: rds_slot.h); every
 * other retry waits a jittered backoff that doubles per attempt, and never goes past the
 * command's deadline. Map refreshes are one at a time and at most one per REFRESH_MIN_MS,
 * whatever the number of commands that asked for one.
 */
#define _GNU_SOURCE /* memmem */
#include "clients/rds_cluster_internal.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define BACKOFF_BASE_MS 25
#define BACKOFF_CAP_MS 1000
#define MAX_REDIRECTS 16

/* A command sent to every primary: completes when every leg has. */
struct all_s {
    seatd__rds_cb cb;
    void *data;
    int legs;          /* not yet completed */
    int err;           /* first error met */
    redisReply *reply; /* owned: first error reply, else the last reply */
    int reply_is_error;
};

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
 * Completion and the waiting list
 * -------------------------------------------------------------------------------------- */

void cluster__wait_remove(seatd__rds_cluster_t *cl, rcmd_t *r)
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
void cluster__rcmd_finish(rcmd_t *r, const redisReply *reply, int err)
{
    seatd__rds_cluster_t *cl = r->cl;
    if (err)
        cl->errors++;
    if (r->group)
        all_leg_done(r->group, reply, err);
    else
        r->cb(reply, err, r->data);
    seatd__rds_msg_unref(r->msg);
    free(r);
    cl->pending--;
    cluster__maybe_free(cl);
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
    uint64_t now = cluster__now_ms();
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
    uint64_t now = cluster__now_ms();
    r->attempts++;
    if (cl->closing || (r->flags & SEATD__RDS_NO_WAIT) || now + delay >= r->deadline_ms) {
        cluster__rcmd_finish(r, NULL, err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
        return;
    }
    cl->retries++;
    park(r, now + delay, err);
}

static void on_retry_timer(uv_timer_t *t)
{
    seatd__rds_cluster_t *cl = t->data;
    uint64_t now = cluster__now_ms();
    rcmd_t *due = NULL, **tail = &due;
    for (rcmd_t *r = cl->whead, *next; r; r = next) {
        next = r->next;
        if (r->deadline_ms <= now || r->retry_at <= now || cl->closing) {
            cluster__wait_remove(cl, r);
            *tail = r;
            tail = &r->next;
        }
    }
    while (due) {
        rcmd_t *r = due;
        due = r->next;
        r->next = NULL;
        if (cl->closing)
            cluster__rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        else if (r->deadline_ms <= now)
            cluster__rcmd_finish(
                r, NULL, r->last_err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
        else
            cluster__rcmd_send(r);
    }
    arm_retry(cl);
}

/* A new map: everything waiting for one goes now. */
void cluster__wake_map_waiters(seatd__rds_cluster_t *cl)
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
    return cluster__node_parse(cl, q, (size_t)(end - q));
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
        cluster__rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        return;
    }
    if (err == SEATD_ENOTDURABLE) {
        cluster__rcmd_finish(r, reply,
                             err); /* it ran: the reply goes up with the shortfall (rds.h) */
        return;
    }
    if (err) {
        /* Never sent (EUNAVAILABLE): safe to retry. Sent, then lost or timed out: it may have
         * run, so only an idempotent command goes again. */
        int may_have_run = err == SEATD__RDS_ELOST || err == SEATD_ETIMEOUT;
        cluster__schedule_refresh(cl);
        if (may_have_run && !(r->flags & SEATD__RDS_IDEMPOTENT)) {
            cluster__rcmd_finish(r, NULL,
                                 err == SEATD_ETIMEOUT ? SEATD_ETIMEOUT : SEATD_EUNAVAILABLE);
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
                cluster__rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
                return;
            }
            if (ask && r->script) {
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
                cluster__schedule_refresh(cl);
            }
            cluster__rcmd_send(r);
            return;
        }
        static const char nonlocal[] = "attempted to access a non local key";
        if (memmem(s, len, nonlocal, sizeof(nonlocal) - 1) != NULL) {
            /* A script met a key of a MIGRATING slot that is not (or no longer) on this node.
             * It stopped there, but may have written before: resent (after a backoff, when
             * the migration has moved on) only when idempotent, else EUNAVAILABLE (503). */
            cluster__schedule_refresh(cl);
            r->asking = 0;
            if (r->group == NULL)
                r->pin = -1;
            if (!(r->flags & SEATD__RDS_IDEMPOTENT)) {
                cluster__rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
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
            cluster__schedule_refresh(cl);
            r->asking = 0;
            if (r->group == NULL)
                r->pin = -1;
            backoff(r, SEATD_EUNAVAILABLE);
            return;
        }
    }
    cluster__rcmd_finish(r, reply, 0);
}

/* Fans an 'all' placeholder out to every primary of the map; frees the placeholder. */
static void fan_out(rcmd_t *r)
{
    seatd__rds_cluster_t *cl = r->cl;
    int legs = 0;
    for (int i = 0; i < cl->nnodes; i++)
        legs += cl->nodes[i].primary;
    if (legs == 0) {
        cluster__rcmd_finish(r, NULL, SEATD_EUNAVAILABLE);
        return;
    }
    all_t *a = seatd_calloc(1, sizeof(*a));
    a->cb = r->cb;
    a->data = r->data;
    a->legs = legs;
    for (int i = 0; i < cl->nnodes; i++) {
        if (!cl->nodes[i].primary)
            continue;
        rcmd_t *leg = seatd_malloc(sizeof(*leg));
        *leg = *r;
        seatd__rds_msg_ref(leg->msg); /* every leg shares the one message */
        leg->prev = leg->next = NULL;
        leg->all = 0;
        leg->group = a;
        leg->pin = i;
        cl->pending++;
        cluster__rcmd_send(leg);
    }
    seatd__rds_msg_unref(r->msg);
    free(r);
    cl->pending--;
}

/* Sends 'r' where it belongs now, or parks it. Never runs its callback synchronously when
 * called from seatd__rds_cluster_send (a failure there parks it for the next loop turn). */
void cluster__rcmd_send(rcmd_t *r)
{
    seatd__rds_cluster_t *cl = r->cl;
    if (cl->closing) {
        /* Not reached from seatd__rds_cluster_send, which refuses once closing. */
        cluster__rcmd_finish(r, NULL, SEATD_ESHUTDOWN);
        return;
    }
    if (r->all) {
        if (!cl->have_map) {
            cluster__schedule_refresh(cl);
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
        cluster__schedule_refresh(cl);
        if ((r->flags & SEATD__RDS_NO_WAIT) && cl->have_map)
            r->deadline_ms =
                cluster__now_ms(); /* fails on the next loop turn, never synchronously */
        park(r, UINT64_MAX, SEATD_EUNAVAILABLE);
        return;
    }
    unsigned sflags = r->flags | SEATD__RDS_DETAIL | (r->asking ? SEATD__RDS_ASKING : 0);
    int rc = seatd__rds_node_send(cluster__node_pool(cl, node), r->msg, sflags, r->deadline_ms,
                                  on_pool_reply, r);
    if (rc) {
        /* The pool is full or closing: try again after a backoff, within the deadline. */
        r->attempts++;
        park(r, cluster__now_ms() + BACKOFF_BASE_MS,
             rc == SEATD_EOVERLOAD ? SEATD_EUNAVAILABLE : rc);
    }
}
