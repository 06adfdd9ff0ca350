/*
 * delivery.c - seatd-notify's events: read from a stream with the consumer group, filed in
 * their owner's bookings index, claimed, held back until replicas acknowledge them (with
 * --wait-replicas), appended to the notifications log and acked; retried from the pending list
 * with a backoff, and dead-lettered after --max-deliveries (main.c describes each step).
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "domain/keys.h"
#include "notify.h"
#include "redis_sync.h"
static const char *field(const redisReply *fields, const char *name)
{
    for (size_t i = 0; fields && i + 1 < fields->elements; i += 2)
        if (fields->element[i]->str && strcmp(fields->element[i]->str, name) == 0)
            return fields->element[i + 1]->str;
    return NULL;
}

/* 1 if the notifications log already holds a line for 'event_id'. */
static int log_has(const char *event_id)
{
    FILE *f = fopen(notify.log_path, "r");
    if (f == NULL)
        return 0;
    char needle[256], line[4096];
    snprintf(needle, sizeof(needle), "\"eventId\":\"%s\"", event_id);
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* Sends the notification: one JSON line, one write() on an O_APPEND descriptor. */
static int send_notification(const char *event_id, const redisReply *fields)
{
    const char *type = field(fields, "type");
    const char *booking = field(fields, "bookingId");
    if (type == NULL || booking == NULL ||
        (strcmp(type, "booking.confirmed") != 0 && strcmp(type, "booking.cancelled") != 0))
        return -1; /* undeliverable: retried, then dead-lettered */
    if (notify.delay_ms > 0)
        notify_sleep_ms(notify.delay_ms);
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"eventId\":\"%s\",\"consumer\":\"", event_id);
    seatd_buf_json_escape(&b, notify.consumer, strlen(notify.consumer));
    seatd_buf_puts(&b, "\"");
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const redisReply *k = fields->element[i], *v = fields->element[i + 1];
        if (k->str == NULL || v->str == NULL)
            continue;
        seatd_buf_puts(&b, ",\"");
        seatd_buf_json_escape(&b, k->str, k->len);
        seatd_buf_puts(&b, "\":\"");
        seatd_buf_json_escape(&b, v->str, v->len);
        seatd_buf_puts(&b, "\"");
    }
    seatd_buf_puts(&b, "}\n");
    ssize_t w = write(notify.log_fd, b.data, b.len);
    int ok = w == (ssize_t)b.len;
    seatd_buf_free(&b);
    return ok ? 0 : -1;
}

/* Files the event's booking in its owner's index {u:<owner>}:bookings (GET /v1/me/bookings),
 * keeping the entry the worker may have written when the booking began (ZADD NX): the worker
 * does not wait for that write, so this is what makes the index complete. Returns 0 when
 * filed (or there is nothing to file), -1 on Redis trouble (the entry stays pending). */
static int file_in_index(const redisReply *fields)
{
    const char *owner = field(fields, "owner");
    const char *booking = field(fields, "bookingId");
    const char *at = field(fields, "at");
    char key[SEATD_KEY_MAX];
    if (owner == NULL || booking == NULL || booking[0] == '\0' ||
        seatd_keys_user(key, owner, "bookings") < 0)
        return 0; /* not a booking event of a valid user: nothing to file */
    char score[24];
    snprintf(score, sizeof(score), "%lld", at ? atoll(at) : 0);
    const char *argv[] = {"ZADD", key, "NX", score, booking};
    redisReply *r = notify_cmd(5, argv);
    int rc = notify_is_error(r) ? -1 : 0;
    if (rc < 0)
        notify_log("could not file booking %s in %s's index (%s); will retry", booking, owner,
                   r && r->str ? r->str : "no answer");
    freeReplyObject(r);
    return rc;
}

static void ack(const stream_t *s, const char *id)
{
    const char *argv[] = {"XACK", s->stream, notify.group, id};
    freeReplyObject(notify_cmd(4, argv));
}

/* 1 when the field lists 'a' and 'b' ([k, v, …]) are the same, byte for byte. */
static int same_fields(const redisReply *a, const redisReply *b)
{
    if (a == NULL || b == NULL || a->type != REDIS_REPLY_ARRAY || b->type != REDIS_REPLY_ARRAY ||
        a->elements != b->elements)
        return 0;
    for (size_t i = 0; i < a->elements; i++) {
        const redisReply *x = a->element[i], *y = b->element[i];
        if (x->str == NULL || y->str == NULL || x->len != y->len ||
            memcmp(x->str, y->str, x->len) != 0)
            return 0;
    }
    return 1;
}

/* 0 when entry 'id' of 's', read as 'fields', is beyond a failover's reach: on the connection
 * that wrote the claim 'key' just before (its last write there), the node holds the entry as it
 * was read, and at least --wait-replicas replicas acknowledged that write within --wait-ms.
 * Else -1, with the reason in 'why' ('whylen' bytes). Always 0 when --wait-replicas is 0. */
static int replicated(const stream_t *s, const char *id, const char *key, const redisReply *fields,
                      char *why, size_t whylen)
{
    if (notify.wait_replicas == 0)
        return 0;
    if (notify.c == NULL) {
        snprintf(why, whylen, "not connected");
        return -1;
    }
    /* A read: this connection's replication offset stays the claim's. */
    const char *range[] = {"XRANGE", s->stream, id, id};
    redisReply *r = seatd_redis_command_at(notify.c, key, 4, range, NULL);
    int present = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
                  r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
                  same_fields(r->element[0]->element[1], fields);
    if (!present) {
        if (r == NULL)
            snprintf(why, whylen, "the claim's node did not answer (%s)",
                     seatd_redis_errstr(notify.c));
        else if (r->type == REDIS_REPLY_ERROR)
            snprintf(why, whylen, "XRANGE on the claim's node: %s", r->str);
        else
            snprintf(why, whylen, "the claim's node does not hold the entry as it was read");
        freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    char n[24], ms[24];
    snprintf(n, sizeof(n), "%ld", notify.wait_replicas);
    snprintf(ms, sizeof(ms), "%ld", notify.wait_ms);
    const char *wait[] = {"WAIT", n, ms};
    r = seatd_redis_command_at(notify.c, key, 3, wait, NULL);
    int rc = r && r->type == REDIS_REPLY_INTEGER && r->integer >= notify.wait_replicas ? 0 : -1;
    if (r == NULL)
        snprintf(why, whylen, "WAIT: no answer (%s)", seatd_redis_errstr(notify.c));
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(why, whylen, "WAIT: %s", r->str);
    else if (rc < 0)
        snprintf(why, whylen, "%lld of %ld replicas acknowledged within %ld ms",
                 r->type == REDIS_REPLY_INTEGER ? r->integer : -1LL, notify.wait_replicas,
                 notify.wait_ms);
    freeReplyObject(r);
    return rc;
}

/* Handles one entry: exactly one line in the log per event id, then XACK. A failed delivery
 * leaves the entry pending (retried by reclaim()). Returns 1 when the entry was held back for
 * want of replicas (the rest of its stream would be too: its node is the same), else 0. */
static int handle(const stream_t *s, const char *id, const redisReply *fields)
{
    if (fields == NULL || fields->type != REDIS_REPLY_ARRAY) {
        ack(s, id); /* the entry was trimmed away: nothing to send */
        return 0;
    }
    if (file_in_index(fields) < 0)
        return 0; /* the owner's shard is not answering: the entry stays pending */
    char event_id[160], key[SEATD_KEY_MAX], mark[160], suffix[200], why[256];
    snprintf(event_id, sizeof(event_id), "%s:%s", s->show, id);
    snprintf(suffix, sizeof(suffix), "notified:%s:%s", notify.group, id);
    if (seatd_keys_show(key, s->show, suffix) < 0)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long wall = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    snprintf(mark, sizeof(mark), "sending:%lld:%s", wall, notify.consumer);
    const char *set[] = {"SET", key, mark, "NX", "GET", "EX", DEDUPE_TTL};
    redisReply *r = notify_cmd(7, set);
    if (notify_is_error(r)) {
        freeReplyObject(r);
        return 0; /* Redis trouble: the entry stays pending */
    }
    int send = 1;
    if (r->type == REDIS_REPLY_STRING) { /* someone claimed it before */
        long long then = strncmp(r->str, "sending:", 8) == 0 ? atoll(r->str + 8) : 0;
        if (strcmp(r->str, "done") == 0) {
            send = 0; /* a duplicate delivery */
        } else if (log_has(event_id)) {
            send = 0; /* its claimer sent it, then died before saying so */
        } else if (strcmp(r->str, CLAIM_HELD) != 0 && wall - then < STALE_CLAIM_MS) {
            freeReplyObject(r); /* another consumer is sending it now: leave it pending */
            return 0;
        } else {
            /* A dead consumer's claim, never sent, or one held back for replicas: take it.
             * The SET NX wrote nothing, so this write is the one the WAIT below must cover. */
            const char *take[] = {"SET", key, mark, "EX", DEDUPE_TTL};
            redisReply *t = notify_cmd(5, take);
            int taken = !notify_is_error(t);
            freeReplyObject(t);
            if (!taken) {
                freeReplyObject(r);
                return 0; /* Redis trouble: the entry stays pending */
            }
        }
    }
    freeReplyObject(r);
    if (send && replicated(s, id, key, fields, why, sizeof(why)) < 0) {
        const char *hold_back[] = {"SET", key, CLAIM_HELD, "EX", DEDUPE_TTL};
        freeReplyObject(notify_cmd(5, hold_back)); /* not sent: any consumer may retry it at once */
        notify.held++;
        notify_log("held back %s: %s; will retry (%lu held back so far)", event_id, why,
                   notify.held);
        return 1;
    }
    if (send && send_notification(event_id, fields) < 0) {
        const char *del[] = {"DEL", key};
        freeReplyObject(notify_cmd(2, del)); /* not sent: free the claim for the retry */
        notify_log("delivery failed for %s; will retry", event_id);
        return 0;
    }
    const char *done[] = {"SET", key, "done", "EX", DEDUPE_TTL};
    freeReplyObject(notify_cmd(5, done));
    ack(s, id);
    return 0;
}

/* entries: [[id, [k, v, …]], …]. Returns how many were handled; stops after one held back for
 * replicas, setting '*held' (the others stay pending, for a later pass). */
static int handle_entries(const stream_t *s, const redisReply *entries, int *held)
{
    int n = 0;
    *held = 0;
    for (size_t i = 0; entries && entries->type == REDIS_REPLY_ARRAY && i < entries->elements &&
                       !notify_stop_flag && !*held;
         i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->str == NULL)
            continue;
        *held = handle(s, e->element[0]->str, e->element[1]);
        n++;
    }
    return n;
}

int notify_read_new(stream_t *s)
{
    const char *argv[] = {"XREADGROUP",    "GROUP",   notify.group,
                          notify.consumer, "COUNT",   READ_COUNT,
                          "STREAMS",       s->stream, ">"};
    redisReply *r = notify_cmd(9, argv);
    int n = 0;
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0) {
        /* The group is gone (the stream deleted and written again, a restore, a failover
         * that lost the XGROUP CREATE): made again at once, from the stream's start, like
         * the first time (a notification may go twice; none is lost). */
        notify_log("NOGROUP on %s: creating the consumer group again", s->stream);
        const char *g[] = {"XGROUP", "CREATE", s->stream, notify.group, "0"};
        redisReply *gr = notify_cmd(5, g);
        s->grouped = gr && (gr->type != REDIS_REPLY_ERROR || strstr(gr->str, "BUSYGROUP"));
        freeReplyObject(gr);
    }
    int held = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2)
        n = handle_entries(s, r->element[0]->element[1], &held);
    freeReplyObject(r);
    s->last_read = n;
    if (n > 0) {
        /* entries of ours are pending now: their retries are looked for at the base pace */
        long long soon = notify_now_ms() + notify_reclaim_base();
        s->reclaim_ms = notify_reclaim_base();
        if (s->next_reclaim > soon)
            s->next_reclaim = soon;
    }
    if (n > 0 && !held) {
        s->idle_ms = 0;
        s->next_read = 0;
    } else { /* nothing new, or its node lacks replicas: reading more would only hold more */
        s->idle_ms = s->idle_ms ? s->idle_ms * 2 : IDLE_MIN_MS;
        if (s->idle_ms > IDLE_MAX_MS)
            s->idle_ms = IDLE_MAX_MS;
        s->next_read = notify_now_ms() + s->idle_ms;
    }
    return n;
}

enum { CLAIM_OTHER, CLAIM_SENT, CLAIM_HELD_BACK };

/* What became of event 'id' of 's': CLAIM_SENT (its claim says "done", or the log has it),
 * CLAIM_HELD_BACK (its last try found too few replicas), else CLAIM_OTHER. */
static int claim_state(const stream_t *s, const char *id)
{
    char key[SEATD_KEY_MAX], suffix[200], event_id[160];
    snprintf(suffix, sizeof(suffix), "notified:%s:%s", notify.group, id);
    snprintf(event_id, sizeof(event_id), "%s:%s", s->show, id);
    if (seatd_keys_show(key, s->show, suffix) < 0)
        return CLAIM_OTHER;
    const char *get[] = {"GET", key};
    redisReply *r = notify_cmd(2, get);
    int done = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "done") == 0;
    int held = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, CLAIM_HELD) == 0;
    freeReplyObject(r);
    if (done || log_has(event_id))
        return CLAIM_SENT;
    return held ? CLAIM_HELD_BACK : CLAIM_OTHER;
}

/* Copies entry 'id' to the dead-letter stream, then acks it. */
static void dead_letter(const stream_t *s, const char *id, long long deliveries)
{
    const char *range[] = {"XRANGE", s->stream, id, id};
    redisReply *r = notify_cmd(4, range);
    char dead[SEATD_KEY_MAX], count[24];
    snprintf(count, sizeof(count), "%lld", deliveries);
    const redisReply *fields = NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->elements == 2)
        fields = r->element[0]->element[1];
    if (seatd_keys_show(dead, s->show, "bookings:dead") == 0) {
        size_t nf = fields ? fields->elements : 0;
        const char **argv = calloc(11 + nf, sizeof(*argv));
        size_t *lens = calloc(11 + nf, sizeof(*lens));
        int a = 0;
        argv[a++] = "XADD";
        argv[a++] = dead;
        argv[a++] = "*";
        argv[a++] = "origId";
        argv[a++] = id;
        argv[a++] = "deliveries";
        argv[a++] = count;
        argv[a++] = "reason";
        argv[a++] = "max_deliveries";
        argv[a++] = "group";
        argv[a++] = notify.group;
        for (int i = 0; i < a; i++)
            lens[i] = strlen(argv[i]);
        for (size_t i = 0; i < nf; i++) {
            argv[a] = fields->element[i]->str ? fields->element[i]->str : "";
            lens[a++] = fields->element[i]->str ? fields->element[i]->len : 0;
        }
        redisReply *x = notify_cmdv(a, argv, lens);
        int ok = !notify_is_error(x);
        freeReplyObject(x);
        free(argv);
        free(lens);
        if (ok) {
            ack(s, id);
            notify_log("dead-lettered %s:%s after %lld deliveries", s->show, id, deliveries);
        }
    }
    freeReplyObject(r);
}

/* Retries this stream's pending entries whose backoff has passed (and a dead consumer's),
 * until one is held back for replicas; returns how many entries the pending list showed. */
static size_t reclaim(const stream_t *s)
{
    char idle[24];
    snprintf(idle, sizeof(idle), "%ld", notify.retry_base_ms);
    const char *argv[] = {"XPENDING", s->stream, notify.group, "IDLE", idle, "-", "+", "100"};
    redisReply *r = notify_cmd(8, argv);
    int held = 0;
    for (size_t i = 0;
         r && r->type == REDIS_REPLY_ARRAY && i < r->elements && !notify_stop_flag && !held; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 || e->element[0]->str == NULL)
            continue;
        const char *id = e->element[0]->str;
        long long idle_ms = e->element[2]->integer, count = e->element[3]->integer;
        if (count >= notify.max_deliveries) {
            int state = claim_state(s, id);
            if (state == CLAIM_SENT)
                ack(s, id); /* sent, but its sender died before the XACK */
            else if (state != CLAIM_HELD_BACK)
                dead_letter(s, id, count);
            if (state != CLAIM_HELD_BACK)
                continue;
            /* Not undeliverable, only not on replicas yet: tried again (the backoff capped). */
        }
        long long backoff = notify.retry_base_ms;
        for (long long k = 1; k < count && backoff < 60000; k++)
            backoff *= 2;
        if (backoff > 60000)
            backoff = 60000;
        if (idle_ms < backoff)
            continue;
        char min_idle[24];
        snprintf(min_idle, sizeof(min_idle), "%lld", backoff);
        const char *claim[] = {"XCLAIM", s->stream, notify.group, notify.consumer, min_idle, id};
        redisReply *c = notify_cmd(6, claim);
        handle_entries(s, c, &held);
        freeReplyObject(c);
    }
    size_t listed = r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    freeReplyObject(r);
    return listed;
}

/* reclaim() when the stream is due; then its next look (see RECLAIM_MAX_MS). */
void notify_reclaim_when_due(stream_t *s, long long now)
{
    long base = notify_reclaim_base();
    if (now < s->next_reclaim)
        return;
    if (reclaim(s) > 0 || s->reclaim_ms < base)
        s->reclaim_ms = base;
    else if ((s->reclaim_ms *= 2) > RECLAIM_MAX_MS)
        s->reclaim_ms = RECLAIM_MAX_MS > base ? RECLAIM_MAX_MS : base;
    s->next_reclaim = now + s->reclaim_ms;
}
