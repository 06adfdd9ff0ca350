/*
 * live_show.c - one watched show of the live seat map: finding it by id, its seat ids with
 * their id -> index hash, its standing areas, its ring of the last versions' changes (seats
 * and areas' free counts), its lifecycle, and applying the delta messages of a show in step
 * with Redis (a gap or a bad message sends it back to a seat-map read, live_sync.c). See
 * live_internal.h.
 */
#include "flows/live_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "base/log.h"
#include "base/mem.h"

/* ---------------------------------------------------------------------------------------
 * Shows: lookup, seat ids, lifecycle
 * --------------------------------------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

show_t *live__show_find(seatd_live_t *lv, const char *id)
{
    for (show_t *s = lv->buckets[hash_str(id) % SHOW_BUCKETS]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static long seat_index(const show_t *s, const char *id)
{
    size_t mask = s->nslots - 1;
    for (size_t i = hash_str(id) & mask;; i = (i + 1) & mask) {
        uint32_t v = s->slots[i];
        if (v == 0)
            return -1;
        if (strcmp(s->ids[v - 1], id) == 0)
            return (long)(v - 1);
    }
}

show_t *live__show_new(seatd_live_t *lv, const char *id, const seatd_layout_t *l)
{
    show_t *s = seatd_calloc(1, sizeof(*s));
    s->lv = lv;
    snprintf(s->id, sizeof(s->id), "%s", id);
    if (seatd_keys_show(s->channel, id, "ch") < 0)
        snprintf(s->channel, sizeof(s->channel), "{s:%s}:ch", id);
    s->nseats = seatd_layout_count(l);
    s->ids = seatd_calloc(s->nseats ? s->nseats : 1, sizeof(*s->ids));
    s->nslots = 16;
    while (s->nslots < 2 * s->nseats)
        s->nslots *= 2;
    s->slots = seatd_calloc(s->nslots, sizeof(*s->slots));
    for (size_t i = 0; i < s->nseats; i++) {
        snprintf(s->ids[i], sizeof(s->ids[i]), "%s", seatd_layout_seat(l, i)->id);
        size_t mask = s->nslots - 1;
        size_t j = hash_str(s->ids[i]) & mask;
        while (s->slots[j] != 0)
            j = (j + 1) & mask;
        s->slots[j] = (uint32_t)(i + 1);
    }
    s->status = seatd_calloc(s->nseats ? s->nseats : 1, 1);
    s->ring_cap = lv->opts.ring;
    s->ring = seatd_calloc(s->ring_cap, sizeof(*s->ring));
    s->snap_ver = -1;
    s->ver = -1;
    s->flushed_ver = -1;
    size_t b = hash_str(id) % SHOW_BUCKETS;
    s->hnext = lv->buckets[b];
    lv->buckets[b] = s;
    lv->nshows++;
    return s;
}

/* The k-th oldest entry of the ring. */
ring_entry_t *live__ring_at(const show_t *s, size_t k)
{
    return &s->ring[(s->ring_head + k) % s->ring_cap];
}

static void ring_drop_oldest(show_t *s)
{
    ring_entry_t *old = live__ring_at(s, 0);
    free(old->idx);
    free(old->st);
    old->idx = NULL;
    old->st = NULL;
    s->ring_head = (s->ring_head + 1) % s->ring_cap;
    s->ring_n--;
}

/* Moves the entries into an array of 'cap' (>= ring_n) slots, oldest first. */
static void ring_resize(show_t *s, size_t cap)
{
    ring_entry_t *r = seatd_calloc(cap, sizeof(*r));
    for (size_t k = 0; k < s->ring_n; k++)
        r[k] = *live__ring_at(s, k);
    free(s->ring);
    s->ring = r;
    s->ring_cap = cap;
    s->ring_head = 0;
}

void live__ring_clear(show_t *s)
{
    while (s->ring_n > 0)
        ring_drop_oldest(s);
    s->ring_head = 0;
    s->flushed_ver = s->ver; /* nothing older can be sent as a delta any more */
}

/* After a tick's pass: back to the 'ring' versions kept for reconnects, and to its array,
 * except versions after 'flushed_ver' (they arrived during the pass: watchers it reached
 * early still need them for the next tick's delta). */
void live__ring_trim(show_t *s)
{
    size_t keep = s->lv->opts.ring;
    while (s->ring_n > keep && live__ring_at(s, 0)->v <= s->flushed_ver)
        ring_drop_oldest(s);
    if (s->ring_cap > keep && s->ring_n <= keep)
        ring_resize(s, keep);
}

void live__buffered_clear(show_t *s)
{
    while (s->bhead) {
        buffered_t *m = s->bhead;
        s->bhead = m->next;
        free(m->msg);
        free(m);
    }
    s->btail = NULL;
    s->nbuffered = 0;
}

/* Frees 's' if nobody watches it and no read is in flight for it; unsubscribes first. */
void live__show_maybe_free(show_t *s)
{
    seatd_live_t *lv = s->lv;
    if (s->nwatchers > 0 || s->reading)
        return;
    if (lv->ps)
        seatd_pubsub_unsubscribe(lv->ps, s->channel);
    for (show_t **pp = &lv->buckets[hash_str(s->id) % SHOW_BUCKETS]; *pp; pp = &(*pp)->hnext) {
        if (*pp == s) {
            *pp = s->hnext;
            break;
        }
    }
    if (s->dirty) {
        for (show_t **pp = &lv->dirty; *pp; pp = &(*pp)->dnext) {
            if (*pp == s) {
                *pp = s->dnext;
                break;
            }
        }
    }
    live__pass_forget(s);
    lv->nshows--;
    live__ring_clear(s);
    live__buffered_clear(s);
    live__frame_free(&s->snap);
    seatd_buf_free(&s->qframe);
    free(s->ring);
    free(s->ids);
    free(s->slots);
    free(s->status);
    free(s->areas);
    free(s);
}

/* ---------------------------------------------------------------------------------------
 * Standing areas
 * --------------------------------------------------------------------------------------- */

static long area_index(const show_t *s, const char *id)
{
    for (size_t i = 0; i < s->nareas; i++)
        if (strcmp(s->areas[i].id, id) == 0)
            return (long)i;
    return -1;
}

/*
 * The areas of 's' and their free counts from a seat-map read's free text 'text' (borrowed;
 * "FLOOR:5000:4862,BALC:200:200", "" or NULL for none): the array is made, resized or freed
 * to fit (a show without areas keeps none). The caller clears the ring after it: its entries'
 * area indexes are the array's.
 */
void live__areas_set(show_t *s, const char *text)
{
    area_t got[SEATD_AREAS_MAX];
    size_t n;
    if (seatd_areas_parse_free(text, got, SEATD_AREAS_MAX, &n) < 0) /* the areas before stay */
        seatd_log(SEATD_LOG_WARN, NULL, "live: bad areas in the seat map", "\"show\":\"%s\"",
                  s->id);
    if (n == 0) {
        free(s->areas);
        s->areas = NULL;
    } else if (n != s->nareas) {
        s->areas = seatd_realloc(s->areas, n * sizeof(*s->areas));
    }
    s->nareas = n;
    if (n > 0)
        memcpy(s->areas, got, n * sizeof(*got));
}

/* ---------------------------------------------------------------------------------------
 * Applying deltas
 * --------------------------------------------------------------------------------------- */

static int parse_status(const char *st)
{
    if (strcmp(st, "available") == 0)
        return ST_AVAILABLE;
    if (strcmp(st, "held") == 0)
        return ST_HELD;
    if (strcmp(st, "booked") == 0)
        return ST_BOOKED;
    if (strcmp(st, "unavailable") == 0)
        return ST_UNAVAILABLE;
    return -1;
}

/* Decodes {"v":V,"c":[["C7","held"],…],"a":{"FLOOR":4862,…}} ("a": the free counts of the
 * areas that changed, when any did) into a ring entry. A version may change areas only ("c"
 * empty): it is a version all the same. Returns 0 or -1. */
static int decode_delta(show_t *s, const char *msg, size_t len, ring_entry_t *e)
{
    cJSON *root = cJSON_ParseWithLength(msg, len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "v");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "c");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
    if (!cJSON_IsNumber(v) || !(cJSON_IsArray(c) || cJSON_IsObject(c))) {
        cJSON_Delete(root);
        return -1;
    }
    /* cjson.encode turns an empty Lua table into {}: no changes. */
    int n = cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0;
    /* areas the show does not have (none known, or not in the last read) are not shown */
    int na = s->nareas > 0 && cJSON_IsObject(a) ? cJSON_GetArraySize(a) : 0;
    if (na > SEATD_AREAS_MAX)
        na = SEATD_AREAS_MAX;
    e->v = (long long)v->valuedouble;
    e->n = 0;
    e->na = 0;
    e->idx = seatd_malloc(sizeof(*e->idx) * (size_t)(n + 2 * na ? n + 2 * na : 1));
    e->st = seatd_malloc((size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        const cJSON *pair = cJSON_GetArrayItem(c, i);
        const cJSON *seat = cJSON_GetArrayItem(pair, 0);
        const cJSON *st = cJSON_GetArrayItem(pair, 1);
        if (!cJSON_IsString(seat) || !cJSON_IsString(st))
            continue;
        long idx = seat_index(s, seat->valuestring);
        int code = parse_status(st->valuestring);
        if (idx < 0 || code < 0)
            continue; /* not in this layout: nothing to show */
        e->idx[e->n] = (uint32_t)idx;
        e->st[e->n] = (uint8_t)code;
        e->n++;
    }
    const cJSON *m = NULL, *counts = na > 0 ? a : NULL;
    cJSON_ArrayForEach(m, counts)
    {
        if (e->na == na)
            break;
        long k = area_index(s, m->string);
        if (k < 0 || !cJSON_IsNumber(m) || m->valuedouble < 0)
            continue;
        uint32_t cap = s->areas[k].capacity;
        e->idx[e->n + 2u * e->na] = (uint32_t)k;
        e->idx[e->n + 2u * e->na + 1] = m->valuedouble < cap ? (uint32_t)m->valuedouble : cap;
        e->na++;
    }
    cJSON_Delete(root);
    return 0;
}

/*
 * Applies the entry of version ver + 1 (taken). A full ring drops its oldest version, unless
 * the next tick still has to send it to the watchers that were up to date at the last one:
 * then it grows (up to opts.ring_burst), so that a burst of more versions than 'ring' within
 * one tick — a busy on-sale, ticks of up to a second with many watchers — still reaches them
 * as one delta, not as a snapshot of the whole map each. live__ring_trim() shrinks it after the
 * tick.
 */
static void apply(show_t *s, ring_entry_t *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        s->status[e->idx[i]] = e->st[i];
    for (uint32_t j = 0; j < e->na; j++)
        s->areas[e->idx[e->n + 2 * j]].free = e->idx[e->n + 2 * j + 1];
    s->ver = e->v;
    if (s->ver > s->high_ver)
        s->high_ver = s->ver;
    if (s->ring_n == s->ring_cap) {
        size_t most = s->lv->opts.ring_burst;
        if (live__ring_at(s, 0)->v > s->flushed_ver && s->ring_cap < most)
            ring_resize(s, s->ring_cap * 2 < most ? s->ring_cap * 2 : most);
        else
            ring_drop_oldest(s);
    }
    *live__ring_at(s, s->ring_n) = *e;
    s->ring_n++;
    live__mark_dirty(s);
}

/* A gap, a lost subscription or a bad message: the statuses are no longer the truth. */
void live__desync(show_t *s, int read_now)
{
    s->synced = 0;
    live__ring_clear(s);
    if (read_now && s->subscribed)
        live__start_read(s);
}

void live__buffer_msg(show_t *s, const char *msg, size_t len)
{
    if (s->nbuffered >= MAX_BUFFERED) {
        /* A read that takes this long is stuck: start over once it answers. */
        live__buffered_clear(s);
    }
    buffered_t *m = seatd_calloc(1, sizeof(*m));
    m->msg = seatd_strndup(msg, len);
    m->len = len;
    SEATD_QUEUE_APPEND(s->bhead, s->btail, m);
    s->nbuffered++;
}

/* One delta message for a synced show. */
void live__on_delta(show_t *s, const char *msg, size_t len)
{
    ring_entry_t e = {0};
    if (decode_delta(s, msg, len, &e) < 0) {
        seatd_log(SEATD_LOG_WARN, NULL, "live: malformed delta", "\"show\":\"%s\"", s->id);
        live__desync(s, 1);
        return;
    }
    if (e.v <= s->ver) { /* already in the snapshot */
        free(e.idx);
        free(e.st);
        return;
    }
    if (e.v != s->ver + 1) {
        seatd_log(SEATD_LOG_INFO, NULL, "live: version gap, reading the seat map",
                  "\"show\":\"%s\",\"have\":%lld,\"got\":%lld", s->id, s->ver, e.v);
        free(e.idx);
        free(e.st);
        live__buffer_msg(s, msg, len);
        live__desync(s, 1);
        return;
    }
    apply(s, &e);
}
