/*
 * live_sync.c - keeping a watched show in step with Redis: the seat-map read that gives its
 * statuses (and standing areas' free counts) at a version (after a subscription, a gap or a lost
 * link; the messages that arrive meanwhile are buffered and applied after it), and the pub/sub
 * events of its channel: subscribed, lost, a delta, a waiting-room change. See live_internal.h.
 */
#include "flows/live_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/log.h"
#include "base/mem.h"

/* ---------------------------------------------------------------------------------------
 * Reading the seat map (snapshot base)
 * --------------------------------------------------------------------------------------- */

typedef struct {
    seatd_live_t *lv;
    char id[SEATD_ID_MAX];
    unsigned gen; /* the show's sub_gen when the read started */
} read_op_t;

static int bit(const unsigned char *map, size_t len, size_t i)
{
    return i / 8 < len && (map[i / 8] >> (7 - i % 8)) & 1;
}

static void on_version_floor(const seatd_store_result_t *res, void *data)
{
    char *id = data;
    seatd_log(res->err ? SEATD_LOG_WARN : SEATD_LOG_INFO, NULL,
              res->err ? "live: lost versions not skipped" : "live: skipped past lost versions",
              "\"show\":\"%s\",\"version\":%lld", id,
              res->err ? -1LL : (long long)res->reap.version);
    free(id);
}

static void on_seatmap(const seatd_store_result_t *res, void *data)
{
    read_op_t *op = data;
    seatd_live_t *lv = op->lv;
    show_t *s = live__show_find(lv, op->id);
    unsigned op_gen = op->gen;
    free(op);
    lv->inflight--;
    if (s == NULL) {
        live__maybe_free(lv);
        return;
    }
    s->reading = 0;
    unsigned gen = op_gen;
    if (lv->closing || s->nwatchers == 0) {
        live__show_maybe_free(s);
        live__maybe_free(lv);
        return;
    }
    if (res->err) {
        seatd_log(SEATD_LOG_WARN, NULL, "live: seat map read failed",
                  "\"show\":\"%s\",\"error\":\"%s\"", s->id, seatd_err_name(res->err));
        if (res->err == SEATD_ENOSHOW) {
            for (watcher_t *w = s->watchers; w; w = w->next)
                live__watcher_close(w, SEATD_WS_CLOSE_POLICY, "no such show");
            return;
        }
        s->retry_ms = live__now_ms(lv) + RETRY_READ_MS;
        return;
    }
    if (!s->subscribed)
        return; /* the subscription dropped meanwhile: read again when it is back */
    if (gen != s->sub_gen) {
        /* Started before the subscription was lost and made again: deltas published in
         * between reached nobody, so this map may be stale. Read again. */
        live__start_read(s);
        return;
    }
    const seatd_seatmap_result_t *sm = &res->seatmap;
    if (sm->version < s->high_ver || (s->lost && s->high_ver > 0 && sm->version == s->high_ver)) {
        /* Redis lost writes (a restart short of its last second, a failover): the watchers
         * get this map as a snapshot (their version is not behind it), and the version moves
         * past the lost ones, so that a client that reconnects with ?since= of a lost version
         * is not told it missed nothing once the show is back at that number. After a lost
         * link, the same version may be another history's already (new writes reached it
         * before this read): it is moved past too; when nothing was lost, the watchers get
         * one snapshot more. */
        long long seen = s->high_ver;
        s->high_ver = sm->version;
        for (watcher_t *w = s->watchers; w; w = w->next)
            w->sent_ver = -1;
        char *id = seatd_strdup(s->id);
        if (seatd_store_version_floor(lv->store, s->id, seen, on_version_floor, id) < 0)
            free(id);
    }
    if (sm->version > s->high_ver)
        s->high_ver = sm->version;
    s->lost = 0;
    for (size_t i = 0; i < s->nseats; i++)
        s->status[i] = bit(sm->booked, sm->booked_len, i)     ? ST_BOOKED
                       : bit(sm->held, sm->held_len, i)       ? ST_HELD
                       : bit(sm->blocked, sm->blocked_len, i) ? ST_UNAVAILABLE
                                                              : ST_AVAILABLE;
    live__areas_set(s, sm->areas);
    s->ver = sm->version;
    s->synced = 1;
    s->snap_ver = -1;    /* the map read may differ from a snapshot cached at its version */
    live__ring_clear(s); /* (also: the ring's area indexes are the new array's) */
    /* Messages that arrived during the read: older ones are in the map, newer ones apply. */
    buffered_t *m = s->bhead;
    s->bhead = s->btail = NULL;
    s->nbuffered = 0;
    while (m) {
        buffered_t *next = m->next;
        if (s->synced)
            live__on_delta(s, m->msg, m->len);
        else
            live__buffer_msg(s, m->msg, m->len); /* a gap re-read is in flight: keep for it */
        free(m->msg);
        free(m);
        m = next;
    }
    live__mark_dirty(s); /* watchers waiting for a snapshot */
}

void live__start_read(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (s->reading || lv->closing)
        return;
    read_op_t *op = seatd_calloc(1, sizeof(*op));
    op->lv = lv;
    snprintf(op->id, sizeof(op->id), "%s", s->id);
    op->gen = s->sub_gen;
    lv->stats.resyncs++;
    s->retry_ms = 0;
    if (seatd_store_seatmap(lv->store, s->id, on_seatmap, op) < 0) {
        free(op);
        s->retry_ms = live__now_ms(lv) + RETRY_READ_MS;
        return;
    }
    s->reading = 1;
    lv->inflight++;
}

/* ---------------------------------------------------------------------------------------
 * Pub/sub events
 * --------------------------------------------------------------------------------------- */

/* "{s:42}:ch" -> "42" into 'out'. */
static int channel_show(const char *channel, char *out, size_t n)
{
    if (strncmp(channel, "{s:", 3) != 0)
        return -1;
    const char *end = strchr(channel, '}');
    if (end == NULL || (size_t)(end - channel - 3) >= n || strcmp(end, "}:ch") != 0)
        return -1;
    memcpy(out, channel + 3, (size_t)(end - channel - 3));
    out[end - channel - 3] = '\0';
    return 0;
}

/*
 * A queued show's waiting room changed (lua/queue.lua publishes {"q":1,"a":A,"s":S,"w":W} on
 * the show's channel, outside the version sequence): one small frame for every watcher at
 * (a pass: a slice of them per loop turn), whatever their seat-map state, so a sold-out
 * reaches every waiter with one publish.
 * The frame is kept for watchers who connect later.
 */
static void on_queue_msg(show_t *s, const char *msg, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(msg, len);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "s");
    const cJSON *wn = cJSON_GetObjectItemCaseSensitive(root, "w");
    if (!cJSON_IsNumber(a) || !cJSON_IsString(st) || !cJSON_IsNumber(wn) ||
        strspn(st->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != strlen(st->valuestring) ||
        strlen(st->valuestring) > 16) {
        cJSON_Delete(root);
        return;
    }
    seatd_buf_reset(&s->qframe);
    seatd_buf_printf(&s->qframe,
                     "{\"type\":\"queue\",\"admittedThrough\":%lld,\"state\":\"%s\","
                     "\"waiting\":%lld}",
                     (long long)a->valuedouble, st->valuestring, (long long)wn->valuedouble);
    cJSON_Delete(root);
    live__pass_queue(s);
}

void live__on_pubsub(int event, const char *channel, const char *payload, size_t len, void *data)
{
    seatd_live_t *lv = data;
    char id[SEATD_ID_MAX];
    if (channel_show(channel, id, sizeof(id)) < 0)
        return;
    show_t *s = live__show_find(lv, id);
    if (s == NULL)
        return;
    switch (event) {
    case SEATD_PUBSUB_SUBSCRIBED:
        s->subscribed = 1;
        s->sub_gen++;
        live__desync(s, 0);
        live__buffered_clear(s); /* the read that follows covers everything before now */
        live__start_read(s);
        break;
    case SEATD_PUBSUB_LOST:
        s->lost = 1;
        s->subscribed = 0;
        s->sub_gen++;
        live__desync(s, 0);
        live__buffered_clear(s);
        break;
    case SEATD_PUBSUB_MESSAGE:
        if (len > 6 && memcmp(payload, "{\"q\":1,", 7) == 0)
            on_queue_msg(s, payload, len);
        else if (s->synced)
            live__on_delta(s, payload, len);
        else if (s->subscribed)
            live__buffer_msg(s, payload, len);
        break;
    }
}
