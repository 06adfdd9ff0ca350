/*
 * seatd-notify - the outbox consumer: reads the booking events the scripts append to each
 * show's stream {s:<id>}:bookings (booking.confirmed, booking.cancelled) with a consumer group
 * and "sends" one notification per event: one JSON line appended to a log file.
 *
 *   seatd-notify --redis 127.0.0.1:6379 [--group notifiers] [--consumer <host-pid>]
 *                --log notifications.log [--max-deliveries 5] [--retry-base-ms 500]
 *                [--refresh-ms 1000] [--deliver-delay-ms 0] [--batch 1000]
 *                [--redis-user USER --redis-password-file FILE]
 *                [--wait-replicas 0] [--wait-ms 100]
 *
 * Redis credentials: "AUTH USER <password>" on every connection, the password read from the
 * file (first line); also from SEATD_REDIS_USER / SEATD_REDIS_PASSWORD_FILE.
 *
 * Streams: one per show, in the show's hash slot (the script that changes a booking appends
 * its event in the same atomic step). They are discovered from the catalogue seatd:shows,
 * which holds the shows on sale (and those started less than the retention ago: the
 * sweeper prunes older ones). Every --refresh-ms one page of --batch shows is read, the
 * cursor walking the catalogue and starting over at its end, so each refresh costs at most
 * one page however large the catalogue, and there is no cap on the number of streams. A
 * stream whose show has left the catalogue is forgotten once a whole walk did not see it and
 * it has nothing new or pending for the group. The group is created at id 0 once the stream
 * exists. Each
 * stream is read on its own (XREADGROUP … STREAMS <one stream> >), which also works on Redis
 * Cluster, where one command cannot span slots: again at once after a read that found
 * entries, else after 50 ms doubling to 1 s while the stream stays empty (IDLE_*_MS).
 *
 * Before its notification, every event's booking is filed in its owner's index
 * {u:<owner>}:bookings (ZADD NX, GET /v1/me/bookings): the worker queues that entry when the
 * booking begins but does not wait for it (it lives on another shard than the show's), so the
 * outbox is what guarantees a confirmed booking is listed; an entry whose owner's shard does
 * not answer stays pending and is retried like a failed delivery.
 *
 * Delivery is at-least-once from Redis and made exactly-once in the log by the event id
 * "<showId>:<entryId>": before sending, the consumer claims the per-event key
 * {s:<id>}:notified:<group>:<entryId> with SET NX ("sending:<consumer>", 7-day TTL); after
 * sending it sets "done" and XACKs. A claim that already says "done" is a duplicate (acked,
 * not sent). A claim left "sending" by a consumer that died between claim and "done" is
 * resolved by looking for the event id in the log itself (the receiver is idempotent).
 *
 * Nothing a failover can take back is announced (docs/design.md, "When the network splits") when
 * --wait-replicas N is above 0 (SEATD_REDIS_WAIT_REPLICAS; 0, the default, is off). A primary
 * cut off by a partition keeps accepting writes for a few seconds, and all it took then is
 * discarded when its replica is promoted: a booking.confirmed written there and announced would
 * confirm a booking that no longer exists. So between the claim and the sending, on the
 * connection that wrote the claim (seatd_redis_command_at(), redis_sync.h), the consumer
 *   - reads the entry again (XRANGE) and goes on only if that node holds it as it was read:
 *     after a failover between the read and the claim, the claim's node may never have had it;
 *   - sends WAIT N M (--wait-ms, SEATD_REDIS_WAIT_MS, 100): the claim is a write in the show's
 *     slot, so that node's replication offset for this connection covers it and everything the
 *     node took before it, the event's XADD included.
 * Every claim that leads to a sending is such a write: the first SET NX, and the SET that
 * re-claims a stale or held-back claim on a retry. When fewer than N replicas acknowledge
 * within M ms (or the node does not hold the entry, or does not answer), nothing is sent and
 * nothing acked: the claim becomes "held-for-replicas" (any consumer may take it at once), the
 * entry stays pending and is retried like a failed delivery, one line is logged ("held back
 * <event id>: <why>"), and the rest of that stream waits for the next pass (its entries live
 * on the same node) while the consumer goes on with the other streams. A held-back entry is
 * not dead-lettered for it: past --max-deliveries it is retried at the 60 s backoff cap until
 * its node's replicas acknowledge it.
 *
 * Retries: an event whose delivery fails (a poison event: unknown type, no bookingId) is not
 * acked. The consumer polls XPENDING (with IDLE) and re-claims with XCLAIM each entry idle for
 * at least retry-base * 2^(deliveries-1) ms (capped at 60 s), which also takes over the
 * entries of a dead consumer. XPENDING + XCLAIM rather than XAUTOCLAIM: XAUTOCLAIM has one
 * min-idle for all entries and would claim (and count a delivery for) entries still backing
 * off. After --max-deliveries deliveries the entry is copied to the dead-letter stream
 * {s:<id>}:bookings:dead (fields kept, plus origId, deliveries, reason) and acked.
 *
 * SIGTERM / SIGINT: finish the current event and exit 0. Synchronous hiredis: one process is
 * one consumer; run as many as needed (deploy/up starts one).
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "domain/keys.h"
#include "redis_sync.h"

#define DEFAULT_BATCH 1000
#define READ_COUNT "10"
#define STALE_CLAIM_MS 1000            /* a "sending" claim this old belongs to a dead consumer */
#define CLAIM_HELD "held-for-replicas" /* a claim not sent for want of replicas: take it */
#define CLIENT_TIMEOUT_MS 5000         /* redis_sync's per-command default */
#define DEDUPE_TTL "604800"
/* A stream that found nothing is read again after IDLE_MIN_MS, doubling to IDLE_MAX_MS while
 * it stays empty; one that found entries is read again at once. So a quiet catalogue costs
 * Redis about one read per show per second, and a busy show does not make every other
 * stream's read busy too (it did: 71 shows, one on sale, ~1,400 XREADGROUP/s). */
#define IDLE_MIN_MS 50
#define IDLE_MAX_MS 1000
/* The pending list is looked at every retry-base/2 while it lists entries (or after a read
 * took some), and the interval doubles to RECLAIM_MAX_MS while it lists none: so a dead
 * consumer's entries are taken over within that much more. */
#define RECLAIM_MAX_MS 4000

typedef struct {
    char show[SEATD_ID_MAX];
    char stream[SEATD_KEY_MAX];
    int grouped;            /* the group exists on this stream */
    unsigned long seen;     /* the catalogue walk that last listed the show */
    int last_read;          /* entries the last read found */
    long idle_ms;           /* 0 after a read that found entries, else the current poll interval */
    long long next_read;    /* monotonic ms: read again from then on */
    long reclaim_ms;        /* the current interval between two looks at the pending list */
    long long next_reclaim; /* monotonic ms: look again from then on */
} stream_t;

static struct {
    char host[256];
    int port;
    const char *group;
    char consumer[128];
    const char *log_path;
    long max_deliveries;
    long retry_base_ms;
    long refresh_ms;
    long delay_ms;
    seatd_redis_t *c; /* NULL until connected */
    int log_fd;
    long batch;
    long wait_replicas; /* WAIT for this many replicas before sending; 0: off */
    long wait_ms;       /* WAIT's timeout */
    unsigned long held; /* events held back for replicas since the start */
    stream_t *streams;  /* owned, sorted by show id */
    size_t nstreams, cap;
    long cursor;              /* the next catalogue offset */
    unsigned long walk;       /* catalogue walks begun (the current one included) */
    char redis_user[128];     /* ACL user, or "" */
    char redis_password[256]; /* its password, or "": no AUTH */
} G;

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pace at which a pending list with entries is looked at: half the first retry's wait. */
static long reclaim_base(void)
{
    return G.retry_base_ms / 2 > 0 ? G.retry_base_ms / 2 : 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_flag) {
    }
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "{\"prog\":\"seatd-notify\",\"consumer\":\"%s\",\"msg\":\"", G.consumer);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\"}\n");
    va_end(ap);
}

/* Runs a command on the node that owns its key (redis_sync.c follows a cluster's
 * redirections); connects (with a pause after a failure) when there is no client yet. Owned
 * reply or NULL. The consumer's commands are safe to send twice (XREADGROUP re-delivers, the
 * claim key dedupes). */
static redisReply *cmdv(int argc, const char **argv, const size_t *lens)
{
    for (int attempt = 0; attempt < 2 && !stop_flag; attempt++) {
        if (G.c == NULL) {
            char err[256];
            /* A WAIT blocks its connection for up to --wait-ms: the reply must come before
             * the client's own timeout. */
            int timeout = CLIENT_TIMEOUT_MS;
            if (G.wait_replicas > 0 && G.wait_ms + 1000 > timeout)
                timeout = (int)G.wait_ms + 1000;
            seatd_redis_opts_t o = {.host = G.host,
                                    .port = G.port,
                                    .user = G.redis_user[0] ? G.redis_user : NULL,
                                    .password = G.redis_password[0] ? G.redis_password : NULL,
                                    .timeout_ms = timeout};
            G.c = seatd_redis_connect(&o, err, sizeof(err));
            if (G.c == NULL) {
                static char last[256];
                if (strcmp(last, err) != 0) /* once per distinct failure, not every 500 ms */
                    logf_("redis: %s", err);
                snprintf(last, sizeof(last), "%s", err);
                sleep_ms(500);
                continue;
            }
        }
        redisReply *r = seatd_redis_commandv(G.c, argc, argv, lens);
        if (r)
            return r;
    }
    return NULL;
}

static redisReply *cmd(int argc, const char **argv)
{
    return cmdv(argc, argv, NULL);
}

static int is_error(const redisReply *r)
{
    return r == NULL || r->type == REDIS_REPLY_ERROR;
}

/* ------------------------------------------------------------------- streams */

/* The index of 'show' in the sorted G.streams, or where it would go ('*found' 0). */
static size_t stream_find(const char *show, int *found)
{
    size_t lo = 0, hi = G.nstreams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(G.streams[mid].show, show);
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
    const char *argv[] = {"XPENDING", s->stream, G.group};
    redisReply *r = cmd(3, argv);
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
    for (size_t i = 0; i < G.nstreams; i++) {
        stream_t *s = &G.streams[i];
        int keep = s->seen == G.walk || s->last_read > 0 || (s->grouped && pending_count(s) != 0);
        if (keep)
            G.streams[k++] = *s;
    }
    if (k < G.nstreams)
        logf_("forgot %zu streams of shows no longer in the catalogue", G.nstreams - k);
    G.nstreams = k;
}

/* Reads one page of the catalogue: new shows get a stream entry, every listed one is marked
 * seen in this walk and gets its group once the stream exists. */
static void refresh_streams(void)
{
    char start[24], stop[24];
    snprintf(start, sizeof(start), "%ld", G.cursor);
    snprintf(stop, sizeof(stop), "%ld", G.cursor + G.batch - 1);
    const char *argv[] = {"ZRANGE", SEATD_KEY_CATALOGUE, start, stop};
    redisReply *r = cmd(4, argv);
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
            if (G.nstreams == G.cap) {
                G.cap = G.cap ? G.cap * 2 : 64;
                G.streams = realloc(G.streams, G.cap * sizeof(*G.streams));
                if (G.streams == NULL)
                    abort();
            }
            memmove(&G.streams[k + 1], &G.streams[k], (G.nstreams - k) * sizeof(*G.streams));
            G.streams[k] = fresh;
            G.nstreams++;
        }
        stream_t *s = &G.streams[k];
        s->seen = G.walk;
        if (!s->grouped) {
            const char *g[] = {"XGROUP", "CREATE", s->stream, G.group, "0"};
            redisReply *gr = cmd(5, g);
            if (gr && (gr->type != REDIS_REPLY_ERROR || strstr(gr->str, "BUSYGROUP")))
                s->grouped = 1; /* else: the stream does not exist yet */
            freeReplyObject(gr);
        }
    }
    if ((long)r->elements < G.batch) { /* the end of the catalogue: the walk is complete */
        forget_pruned();
        G.cursor = 0;
        G.walk++;
    } else {
        G.cursor += G.batch;
    }
    freeReplyObject(r);
}

/* ------------------------------------------------------------------- delivery */

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
    FILE *f = fopen(G.log_path, "r");
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
    if (G.delay_ms > 0)
        sleep_ms(G.delay_ms);
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"eventId\":\"%s\",\"consumer\":\"", event_id);
    seatd_buf_json_escape(&b, G.consumer, strlen(G.consumer));
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
    ssize_t w = write(G.log_fd, b.data, b.len);
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
    redisReply *r = cmd(5, argv);
    int rc = is_error(r) ? -1 : 0;
    if (rc < 0)
        logf_("could not file booking %s in %s's index (%s); will retry", booking, owner,
              r && r->str ? r->str : "no answer");
    freeReplyObject(r);
    return rc;
}

static void ack(const stream_t *s, const char *id)
{
    const char *argv[] = {"XACK", s->stream, G.group, id};
    freeReplyObject(cmd(4, argv));
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
    if (G.wait_replicas == 0)
        return 0;
    if (G.c == NULL) {
        snprintf(why, whylen, "not connected");
        return -1;
    }
    /* A read: this connection's replication offset stays the claim's. */
    const char *range[] = {"XRANGE", s->stream, id, id};
    redisReply *r = seatd_redis_command_at(G.c, key, 4, range, NULL);
    int present = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
                  r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
                  same_fields(r->element[0]->element[1], fields);
    if (!present) {
        if (r == NULL)
            snprintf(why, whylen, "the claim's node did not answer (%s)", seatd_redis_errstr(G.c));
        else if (r->type == REDIS_REPLY_ERROR)
            snprintf(why, whylen, "XRANGE on the claim's node: %s", r->str);
        else
            snprintf(why, whylen, "the claim's node does not hold the entry as it was read");
        freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    char n[24], ms[24];
    snprintf(n, sizeof(n), "%ld", G.wait_replicas);
    snprintf(ms, sizeof(ms), "%ld", G.wait_ms);
    const char *wait[] = {"WAIT", n, ms};
    r = seatd_redis_command_at(G.c, key, 3, wait, NULL);
    int rc = r && r->type == REDIS_REPLY_INTEGER && r->integer >= G.wait_replicas ? 0 : -1;
    if (r == NULL)
        snprintf(why, whylen, "WAIT: no answer (%s)", seatd_redis_errstr(G.c));
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(why, whylen, "WAIT: %s", r->str);
    else if (rc < 0)
        snprintf(why, whylen, "%lld of %ld replicas acknowledged within %ld ms",
                 r->type == REDIS_REPLY_INTEGER ? r->integer : -1LL, G.wait_replicas, G.wait_ms);
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
    snprintf(suffix, sizeof(suffix), "notified:%s:%s", G.group, id);
    if (seatd_keys_show(key, s->show, suffix) < 0)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long wall = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    snprintf(mark, sizeof(mark), "sending:%lld:%s", wall, G.consumer);
    const char *set[] = {"SET", key, mark, "NX", "GET", "EX", DEDUPE_TTL};
    redisReply *r = cmd(7, set);
    if (is_error(r)) {
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
            redisReply *t = cmd(5, take);
            int taken = !is_error(t);
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
        freeReplyObject(cmd(5, hold_back)); /* not sent: any consumer may retry it at once */
        G.held++;
        logf_("held back %s: %s; will retry (%lu held back so far)", event_id, why, G.held);
        return 1;
    }
    if (send && send_notification(event_id, fields) < 0) {
        const char *del[] = {"DEL", key};
        freeReplyObject(cmd(2, del)); /* not sent: free the claim for the retry */
        logf_("delivery failed for %s; will retry", event_id);
        return 0;
    }
    const char *done[] = {"SET", key, "done", "EX", DEDUPE_TTL};
    freeReplyObject(cmd(5, done));
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
                       !stop_flag && !*held;
         i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[0]->str == NULL)
            continue;
        *held = handle(s, e->element[0]->str, e->element[1]);
        n++;
    }
    return n;
}

static int read_new(stream_t *s)
{
    const char *argv[] = {"XREADGROUP", "GROUP",   G.group,   G.consumer, "COUNT",
                          READ_COUNT,   "STREAMS", s->stream, ">"};
    redisReply *r = cmd(9, argv);
    int n = 0;
    if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0) {
        /* The group is gone (the stream deleted and written again, a restore, a failover
         * that lost the XGROUP CREATE): made again at once, from the stream's start, like
         * the first time (a notification may go twice; none is lost). */
        logf_("NOGROUP on %s: creating the consumer group again", s->stream);
        const char *g[] = {"XGROUP", "CREATE", s->stream, G.group, "0"};
        redisReply *gr = cmd(5, g);
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
        long long soon = now_ms() + reclaim_base();
        s->reclaim_ms = reclaim_base();
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
        s->next_read = now_ms() + s->idle_ms;
    }
    return n;
}

enum { CLAIM_OTHER, CLAIM_SENT, CLAIM_HELD_BACK };

/* What became of event 'id' of 's': CLAIM_SENT (its claim says "done", or the log has it),
 * CLAIM_HELD_BACK (its last try found too few replicas), else CLAIM_OTHER. */
static int claim_state(const stream_t *s, const char *id)
{
    char key[SEATD_KEY_MAX], suffix[200], event_id[160];
    snprintf(suffix, sizeof(suffix), "notified:%s:%s", G.group, id);
    snprintf(event_id, sizeof(event_id), "%s:%s", s->show, id);
    if (seatd_keys_show(key, s->show, suffix) < 0)
        return CLAIM_OTHER;
    const char *get[] = {"GET", key};
    redisReply *r = cmd(2, get);
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
    redisReply *r = cmd(4, range);
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
        argv[a++] = G.group;
        for (int i = 0; i < a; i++)
            lens[i] = strlen(argv[i]);
        for (size_t i = 0; i < nf; i++) {
            argv[a] = fields->element[i]->str ? fields->element[i]->str : "";
            lens[a++] = fields->element[i]->str ? fields->element[i]->len : 0;
        }
        redisReply *x = cmdv(a, argv, lens);
        int ok = !is_error(x);
        freeReplyObject(x);
        free(argv);
        free(lens);
        if (ok) {
            ack(s, id);
            logf_("dead-lettered %s:%s after %lld deliveries", s->show, id, deliveries);
        }
    }
    freeReplyObject(r);
}

/* Retries this stream's pending entries whose backoff has passed (and a dead consumer's),
 * until one is held back for replicas; returns how many entries the pending list showed. */
static size_t reclaim(const stream_t *s)
{
    char idle[24];
    snprintf(idle, sizeof(idle), "%ld", G.retry_base_ms);
    const char *argv[] = {"XPENDING", s->stream, G.group, "IDLE", idle, "-", "+", "100"};
    redisReply *r = cmd(8, argv);
    int held = 0;
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements && !stop_flag && !held;
         i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 || e->element[0]->str == NULL)
            continue;
        const char *id = e->element[0]->str;
        long long idle_ms = e->element[2]->integer, count = e->element[3]->integer;
        if (count >= G.max_deliveries) {
            int state = claim_state(s, id);
            if (state == CLAIM_SENT)
                ack(s, id); /* sent, but its sender died before the XACK */
            else if (state != CLAIM_HELD_BACK)
                dead_letter(s, id, count);
            if (state != CLAIM_HELD_BACK)
                continue;
            /* Not undeliverable, only not on replicas yet: tried again (the backoff capped). */
        }
        long long backoff = G.retry_base_ms;
        for (long long k = 1; k < count && backoff < 60000; k++)
            backoff *= 2;
        if (backoff > 60000)
            backoff = 60000;
        if (idle_ms < backoff)
            continue;
        char min_idle[24];
        snprintf(min_idle, sizeof(min_idle), "%lld", backoff);
        const char *claim[] = {"XCLAIM", s->stream, G.group, G.consumer, min_idle, id};
        redisReply *c = cmd(6, claim);
        handle_entries(s, c, &held);
        freeReplyObject(c);
    }
    size_t listed = r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    freeReplyObject(r);
    return listed;
}

/* reclaim() when the stream is due; then its next look (see RECLAIM_MAX_MS). */
static void reclaim_when_due(stream_t *s, long long now)
{
    long base = reclaim_base();
    if (now < s->next_reclaim)
        return;
    if (reclaim(s) > 0 || s->reclaim_ms < base)
        s->reclaim_ms = base;
    else if ((s->reclaim_ms *= 2) > RECLAIM_MAX_MS)
        s->reclaim_ms = RECLAIM_MAX_MS > base ? RECLAIM_MAX_MS : base;
    s->next_reclaim = now + s->reclaim_ms;
}

/* ------------------------------------------------------------------- main */

/* Prints the usage to 'out' and exits with 'status' (0 for --help, 2 for a bad command line). */
static void usage(FILE *out, int status)
{
    fprintf(out,
            "usage: seatd-notify --redis host:port --log FILE [--group notifiers]\n"
            "       [--consumer NAME] [--max-deliveries 5] [--retry-base-ms 500]\n"
            "       [--refresh-ms 1000] [--deliver-delay-ms 0] [--batch 1000]\n"
            "       [--redis-user USER] [--redis-password-file FILE]\n"
            "       [--wait-replicas 0] [--wait-ms 100]\n"
            "\n"
            "  --redis host:port         a Redis node (a cluster's other nodes are found from it)\n"
            "  --log FILE                where notifications are appended, one JSON line each\n"
            "  --group NAME              the consumer group (consumers in one group share work)\n"
            "  --consumer NAME           this consumer's name in the group (default host-pid)\n"
            "  --max-deliveries N        tries before an event is dead-lettered\n"
            "  --retry-base-ms MS        the first retry's wait, doubling per try (60 s cap)\n"
            "  --refresh-ms MS           how often a page of the show catalogue is read\n"
            "  --deliver-delay-ms MS     a pause before each sending (tests)\n"
            "  --batch N                 shows per catalogue page (1..100000)\n"
            "  --redis-user USER         ACL user (env SEATD_REDIS_USER)\n"
            "  --redis-password-file F   its password, first line (env SEATD_REDIS_PASSWORD_FILE)\n"
            "  --wait-replicas N         announce an event only once N replicas acknowledged it\n"
            "                            (WAIT N on its claim's connection; fewer: held back,\n"
            "                            retried); 0..16, 0: off (env SEATD_REDIS_WAIT_REPLICAS)\n"
            "  --wait-ms MS              how long that WAIT waits, 1..60000 (env\n"
            "                            SEATD_REDIS_WAIT_MS)\n"
            "  --help                    this text\n");
    exit(status);
}

/* Parses 'v' as a whole integer in ['min', 'max'] into '*out'; 0, or -1 (with a message naming
 * 'what') when it is not one. */
static int parse_bounded(const char *what, const char *v, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (v[0] == '\0' || *end != '\0' || errno == ERANGE || n < min || n > max) {
        fprintf(stderr, "seatd-notify: %s: '%s' is not an integer in %ld..%ld\n", what, v, min,
                max);
        return -1;
    }
    *out = n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *redis = "127.0.0.1:6379";
    G.group = "notifiers";
    G.max_deliveries = 5;
    G.retry_base_ms = 500;
    G.refresh_ms = 1000;
    G.batch = DEFAULT_BATCH;
    G.walk = 1;
    G.wait_replicas = 0;
    G.wait_ms = 100;
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    snprintf(G.consumer, sizeof(G.consumer), "%s-%ld", host, (long)getpid());
    const char *user = getenv("SEATD_REDIS_USER");
    const char *pass_file = getenv("SEATD_REDIS_PASSWORD_FILE");
    const char *wait_replicas = getenv("SEATD_REDIS_WAIT_REPLICAS");
    const char *wait_ms = getenv("SEATD_REDIS_WAIT_MS");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0)
            usage(stdout, 0);
        if (i + 1 >= argc)
            usage(stderr, 2);
        const char *v = argv[++i];
        if (strcmp(a, "--redis") == 0)
            redis = v;
        else if (strcmp(a, "--group") == 0)
            G.group = v;
        else if (strcmp(a, "--consumer") == 0)
            snprintf(G.consumer, sizeof(G.consumer), "%s", v);
        else if (strcmp(a, "--log") == 0)
            G.log_path = v;
        else if (strcmp(a, "--max-deliveries") == 0)
            G.max_deliveries = atol(v);
        else if (strcmp(a, "--retry-base-ms") == 0)
            G.retry_base_ms = atol(v);
        else if (strcmp(a, "--refresh-ms") == 0)
            G.refresh_ms = atol(v);
        else if (strcmp(a, "--deliver-delay-ms") == 0)
            G.delay_ms = atol(v);
        else if (strcmp(a, "--redis-user") == 0)
            user = v;
        else if (strcmp(a, "--redis-password-file") == 0)
            pass_file = v;
        else if (strcmp(a, "--batch") == 0)
            G.batch = atol(v);
        else if (strcmp(a, "--wait-replicas") == 0)
            wait_replicas = v;
        else if (strcmp(a, "--wait-ms") == 0)
            wait_ms = v;
        else
            usage(stderr, 2);
    }
    if ((wait_replicas && parse_bounded("--wait-replicas / SEATD_REDIS_WAIT_REPLICAS",
                                        wait_replicas, 0, 16, &G.wait_replicas) < 0) ||
        (wait_ms &&
         parse_bounded("--wait-ms / SEATD_REDIS_WAIT_MS", wait_ms, 1, 60000, &G.wait_ms) < 0))
        return 2;
    snprintf(G.redis_user, sizeof(G.redis_user), "%s", user ? user : "");
    if (pass_file && pass_file[0]) {
        FILE *pf = fopen(pass_file, "r");
        if (pf == NULL || fgets(G.redis_password, sizeof(G.redis_password), pf) == NULL) {
            fprintf(stderr, "seatd-notify: cannot read %s\n", pass_file);
            return 2;
        }
        fclose(pf);
        G.redis_password[strcspn(G.redis_password, "\r\n")] = '\0';
    }
    const char *colon = strrchr(redis, ':');
    if (G.log_path == NULL || colon == NULL || G.max_deliveries < 1 || G.retry_base_ms < 1 ||
        G.refresh_ms < 1 || G.delay_ms < 0 || G.batch < 1 || G.batch > 100000 ||
        !seatd_keys_valid_idem_key(G.group))
        usage(stderr, 2);
    snprintf(G.host, sizeof(G.host), "%.*s", (int)(colon - redis), redis);
    G.port = atoi(colon + 1);
    G.log_fd = open(G.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (G.log_fd < 0) {
        fprintf(stderr, "seatd-notify: cannot open %s: %s\n", G.log_path, strerror(errno));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (G.wait_replicas > 0)
        logf_("started; group %s, log %s, announcing only what %ld replicas acknowledged "
              "within %ld ms",
              G.group, G.log_path, G.wait_replicas, G.wait_ms);
    else
        logf_("started; group %s, log %s", G.group, G.log_path);

    long long next_refresh = 0;
    while (!stop_flag) {
        long long now = now_ms();
        if (now >= next_refresh) {
            refresh_streams();
            next_refresh = now + G.refresh_ms;
        }
        int busy = 0;
        for (size_t i = 0; i < G.nstreams && !stop_flag; i++)
            if (G.streams[i].grouped && G.streams[i].next_read <= now)
                busy += read_new(&G.streams[i]);
        for (size_t i = 0; i < G.nstreams && !stop_flag; i++)
            if (G.streams[i].grouped)
                reclaim_when_due(&G.streams[i], now);
        if (!busy) {
            /* until the first stream is due, and at most IDLE_MIN_MS (new streams, reclaims) */
            long long wake = now_ms() + IDLE_MIN_MS;
            for (size_t i = 0; i < G.nstreams; i++)
                if (G.streams[i].grouped && G.streams[i].next_read < wake)
                    wake = G.streams[i].next_read;
            long long left = wake - now_ms();
            if (left > 0)
                sleep_ms((long)left);
        }
    }
    logf_("stopped");
    seatd_redis_free(G.c);
    close(G.log_fd);
    free(G.streams);
    return 0;
}
