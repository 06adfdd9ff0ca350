/*
 * streams.c - seatd-notify's streams: one per show, found by walking the catalogue seatd:shows
 * one page per refresh, and forgotten once a whole walk did not see their show and they have
 * nothing new or pending for the group (main.c, "Streams").
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/keys.h"
#include "notify.h"
/* The index of 'show' in the sorted notify.streams, or where it would go ('*found' 0). */
static size_t stream_find(const char *show, int *found)
{
    size_t lo = 0, hi = notify.nstreams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(notify.streams[mid].show, show);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static long pending_count(const stream_t *s)
{
    const char *argv[] = {"XPENDING", s->stream, notify.group};
    redisReply *r = notify_cmd(3, argv);
    long n = -1;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        n = (long)r->element[0]->integer;
    freeReplyObject(r);
    return n;
}

/* At the end of a walk: forgets the streams of shows no longer in the catalogue once they
 * have nothing new or pending for the group (and those never created). */
static void forget_pruned(void)
{
    size_t k = 0;
    for (size_t i = 0; i < notify.nstreams; i++) {
        stream_t *s = &notify.streams[i];
        int keep =
            s->seen == notify.walk || s->last_read > 0 || (s->grouped && pending_count(s) != 0);
        if (keep)
            notify.streams[k++] = *s;
    }
    if (k < notify.nstreams)
        notify_log("forgot %zu streams of shows no longer in the catalogue", notify.nstreams - k);
    notify.nstreams = k;
}

/* Reads one page of the catalogue: new shows get a stream entry, every listed one is marked
 * seen in this walk and gets its group once the stream exists. */
void notify_refresh_streams(void)
{
    char start[24], stop[24];
    snprintf(start, sizeof(start), "%ld", notify.cursor);
    snprintf(stop, sizeof(stop), "%ld", notify.cursor + notify.batch - 1);
    const char *argv[] = {"ZRANGE", SEATD_KEY_CATALOGUE, start, stop};
    redisReply *r = notify_cmd(4, argv);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const char *id = r->element[i]->str;
        if (id == NULL || !seatd_keys_valid_show_id(id))
            continue;
        int found;
        size_t k = stream_find(id, &found);
        if (!found) {
            stream_t fresh;
            memset(&fresh, 0, sizeof(fresh));
            snprintf(fresh.show, sizeof(fresh.show), "%s", id);
            if (seatd_keys_show(fresh.stream, id, "bookings") < 0)
                continue;
            if (notify.nstreams == notify.cap) {
                notify.cap = notify.cap ? notify.cap * 2 : 64;
                notify.streams = realloc(notify.streams, notify.cap * sizeof(*notify.streams));
                if (notify.streams == NULL)
                    abort();
            }
            memmove(&notify.streams[k + 1], &notify.streams[k],
                    (notify.nstreams - k) * sizeof(*notify.streams));
            notify.streams[k] = fresh;
            notify.nstreams++;
        }
        stream_t *s = &notify.streams[k];
        s->seen = notify.walk;
        if (!s->grouped) {
            const char *g[] = {"XGROUP", "CREATE", s->stream, notify.group, "0"};
            redisReply *gr = notify_cmd(5, g);
            if (gr && (gr->type != REDIS_REPLY_ERROR || strstr(gr->str, "BUSYGROUP")))
                s->grouped = 1; /* else: the stream does not exist yet */
            freeReplyObject(gr);
        }
    }
    if ((long)r->elements < notify.batch) { /* the end of the catalogue: the walk is complete */
        forget_pruned();
        notify.cursor = 0;
        notify.walk++;
    } else {
        notify.cursor += notify.batch;
    }
    freeReplyObject(r);
}
