/*
 * audit.c - checks the seat invariant of one show straight in Redis, after a benchmark.
 *
 *   seatd_audit --redis H:P --show ID [--wins N] [--bookings N] [--settle]
 *
 * Reads every key of the show (keys.h's schema) and reports each violation on its own line
 * ("VIOLATION <what>"), then one line "audit show=… violations=N holds=… bookings=…". Exit
 * status: 0 with no violation, 1 with any, 2 when the audit could not run. Checks:
 *   1. no seat is in two CONFIRMED bookings;
 *   2. booked bits = the seats of CONFIRMED bookings (each booked bit belongs to exactly one);
 *   3. no seat is both held and booked;
 *   4. every live seat key names a live hold (HELD / PENDING_PAYMENT) that lists that seat,
 *      and its held bit is set;
 *   5. with --settle: waits until every hold's deadline has passed, runs seatd_reap until
 *      nothing is due, then held bits = live seat keys = none, and no hold is live;
 *   6. --wins N: the hold records of the show number N (records outlive their hold by an
 *      hour, and the show is fresh per scenario); --bookings N: N CONFIRMED bookings;
 *   7. the outbox: one booking.confirmed event per CONFIRMED booking on {s}:bookings;
 *   8. each owner's "booked" count = the seats of their CONFIRMED bookings;
 *   9. the bits a live hold or a CONFIRMED booking carries ('bits', aligned with its seats)
 *      are its seats' indexes in the show's layout (the shared seatd:layout:<layoutHash>).
 * Reads only, except seatd_reap under --settle (what the sweeper would do anyway).
 * With REDISCLI_AUTH set it authenticates first (as SEATD_AUDIT_REDIS_USER when set).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "scenario.h"

#define MAX_SEATS 20000

typedef struct audit_s {
    redisContext *rc;       /* owned */
    char prefix[64];        /* {s:<id>} */
    long violations;        /* found so far */
    int nseats;             /* seats in the layout */
    char **seat_ids;        /* index -> seat id, owned */
    int *booked_by;         /* index -> CONFIRMED bookings listing it */
    long holds, live_holds; /* hold records, and those HELD / PENDING_PAYMENT */
    long confirmed;         /* CONFIRMED bookings */
} audit_t;

__attribute__((format(printf, 2, 3))) static void violation(audit_t *a, const char *fmt, ...)
{
    a->violations++;
    if (a->violations <= 50) {
        va_list ap;
        va_start(ap, fmt);
        printf("VIOLATION ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    } else if (a->violations == 51) {
        printf("VIOLATION (more violations not printed)\n");
    }
}

__attribute__((format(printf, 2, 3))) static redisReply *cmd(audit_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(a->rc, fmt, ap);
    va_end(ap);
    if (!r) {
        fprintf(stderr, "audit: redis: %s\n", a->rc->errstr);
        exit(2);
    }
    return r;
}

/* Seat id -> index in the layout (an array scan). */
static int seat_index(const audit_t *a, const char *seat)
{
    /* Seats are few (<= 20,000) and lookups happen once per booked/held seat. */
    for (int i = 0; i < a->nseats; i++)
        if (a->seat_ids[i] && strcmp(a->seat_ids[i], seat) == 0)
            return i;
    return -1;
}

static int bit(const redisReply *bm, int i)
{
    if (bm->type != REDIS_REPLY_STRING || (size_t)(i / 8) >= bm->len)
        return 0;
    return (bm->str[i / 8] >> (7 - i % 8)) & 1;
}

/* Calls 'fn' for every key matching "<prefix>:<kind>:*". */
static void scan(audit_t *a, const char *kind, void (*fn)(audit_t *, const char *))
{
    char cursor[32] = "0";
    do {
        redisReply *r = cmd(a, "SCAN %s MATCH %s:%s:* COUNT 1000", cursor, a->prefix, kind);
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            fprintf(stderr, "audit: SCAN failed\n");
            exit(2);
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            fn(a, r->element[1]->element[i]->str);
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
}

static const char *hfield(const redisReply *h, const char *name)
{
    for (size_t i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        if (strcmp(h->element[i]->str, name) == 0)
            return h->element[i + 1]->str;
    return NULL;
}

/* Check 9: the record 'what' lists 'seats' with 'bits' (comma-joined, aligned); each bit must
 * be the seat's index in the layout. With 'only' non-NULL, only that seat is checked. */
static void check_bits(audit_t *a, const char *what, const char *seats, const char *bits,
                       const char *only)
{
    char *s = strdup(seats ? seats : ""), *b = strdup(bits ? bits : "");
    char *ss = NULL, *bs = NULL;
    char *seat = strtok_r(s, ",", &ss), *bit = strtok_r(b, ",", &bs);
    for (; seat; seat = strtok_r(NULL, ",", &ss), bit = bit ? strtok_r(NULL, ",", &bs) : NULL) {
        if (only && strcmp(only, seat) != 0)
            continue;
        int i = seat_index(a, seat);
        if (!bit || i < 0 || atoi(bit) != i || strspn(bit, "0123456789") != strlen(bit))
            violation(a, "%s records bit %s for seat %s, whose index in the layout is %d", what,
                      bit ? bit : "(none)", seat, i);
    }
    free(s);
    free(b);
}

/* ---- owners' booked counts (check 8) ----------------------------------------------------- */

typedef struct owner_s {
    char name[72]; /* the sub */
    long seats;    /* seats in their CONFIRMED bookings */
} owner_t;

static owner_t *owners;
static size_t nowners, capowners;

static void owner_add(const char *name, long seats)
{
    for (size_t i = 0; i < nowners; i++)
        if (strcmp(owners[i].name, name) == 0) {
            owners[i].seats += seats;
            return;
        }
    if (nowners == capowners) {
        capowners = capowners ? capowners * 2 : 256;
        owners = realloc(owners, capowners * sizeof *owners);
        if (!owners)
            abort();
    }
    snprintf(owners[nowners].name, sizeof owners[nowners].name, "%s", name);
    owners[nowners++].seats = seats;
}

/* ---- per-key checks ---------------------------------------------------------------------- */

static void on_booking(audit_t *a, const char *key)
{
    redisReply *h = cmd(a, "HGETALL %s", key);
    const char *status = hfield(h, "status"), *seats = hfield(h, "seatIds");
    const char *owner = hfield(h, "owner");
    if (status && strcmp(status, "CONFIRMED") == 0) {
        a->confirmed++;
        check_bits(a, key, seats, hfield(h, "bits"), NULL);
        long n = 0;
        char *copy = strdup(seats ? seats : ""), *save = NULL;
        for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            int i = seat_index(a, s);
            n++;
            if (i < 0)
                violation(a, "booking %s lists unknown seat %s", key, s);
            else if (++a->booked_by[i] == 2)
                violation(a, "seat %s is in two CONFIRMED bookings (second: %s)", s, key);
        }
        free(copy);
        if (owner)
            owner_add(owner, n);
    }
    freeReplyObject(h);
}

static void on_hold(audit_t *a, const char *key)
{
    a->holds++;
    redisReply *st = cmd(a, "HGET %s status", key);
    if (st->type == REDIS_REPLY_STRING &&
        (strcmp(st->str, "HELD") == 0 || strcmp(st->str, "PENDING_PAYMENT") == 0))
        a->live_holds++;
    freeReplyObject(st);
}

/* Reads a seat key, the hold it names and the seat's held bit in one atomic step, so a hold
 * that expires or is reaped while the audit runs cannot look like a violation. */
static const char seat_probe_lua[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if not v then return {} end "
    "local h = redis.call('HMGET', ARGV[1] .. v, 'status', 'seats', 'bits') "
    "return {v, h[1] or '', h[2] or '', redis.call('GETBIT', KEYS[2], tonumber(ARGV[2])), "
    "h[3] or ''}";

static void on_seat_key(audit_t *a, const char *key)
{
    const char *seat = strrchr(key, ':') + 1;
    int i = seat_index(a, seat);
    if (i < 0) {
        violation(a, "seat key %s names a seat not in the layout", key);
        return;
    }
    char held_key[96], hold_prefix[96];
    snprintf(held_key, sizeof held_key, "%s:held", a->prefix);
    snprintf(hold_prefix, sizeof hold_prefix, "%s:hold:", a->prefix);
    redisReply *r = cmd(a, "EVAL %s 2 %s %s %s %d", seat_probe_lua, key, held_key, hold_prefix, i);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) { /* expired meanwhile: fine */
        freeReplyObject(r);
        return;
    }
    const char *hold = r->element[0]->str, *status = r->element[1]->str;
    const char *seats = r->element[2]->str;
    if (r->element[3]->integer != 1)
        violation(a, "seat %s has a live seat key but no held bit", seat);
    if (!status[0])
        violation(a, "seat key %s names hold %s which has no record", key, hold);
    else if (strcmp(status, "HELD") != 0 && strcmp(status, "PENDING_PAYMENT") != 0)
        violation(a, "seat key %s names a hold that is %s", key, status);
    else {
        char pat[40];
        snprintf(pat, sizeof pat, ",%s,", seat);
        char *list = malloc(strlen(seats) + 3);
        if (!list)
            abort();
        sprintf(list, ",%s,", seats);
        if (!strstr(list, pat))
            violation(a, "seat key %s names a hold that does not list the seat (%s)", key, seats);
        else
            check_bits(a, hold, seats, r->element[4]->str, seat);
        free(list);
    }
    freeReplyObject(r);
}

static long count_seat_keys;

static void on_seat_key_count(audit_t *a, const char *key)
{
    redisReply *v = cmd(a, "EXISTS %s", key);
    if (v->type == REDIS_REPLY_INTEGER && v->integer == 1) {
        count_seat_keys++;
        violation(a, "seat key %s is still live after every deadline passed", key);
    }
    freeReplyObject(v);
}

/* Waits past the last hold deadline, then reaps until nothing is due. */
static void settle(audit_t *a)
{
    char meta[80];
    snprintf(meta, sizeof meta, "%s:meta", a->prefix);
    for (int round = 0; round < 600; round++) {
        redisReply *last = cmd(a, "ZRANGE %s:expiry -1 -1 WITHSCORES", a->prefix);
        redisReply *t = cmd(a, "TIME");
        double now = atof(t->element[0]->str) * 1000.0 + atof(t->element[1]->str) / 1000.0;
        double due = last->elements == 2 ? atof(last->element[1]->str) : 0;
        freeReplyObject(last);
        freeReplyObject(t);
        if (due >= now) {
            usleep((useconds_t)((due - now + 50) * 1000));
            continue;
        }
        redisReply *r = cmd(a, "FCALL seatd_reap 1 %s 10000", meta);
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "audit: seatd_reap: %s\n", r->str);
            exit(2);
        }
        freeReplyObject(r);
        redisReply *z = cmd(a, "ZCARD %s:expiry", a->prefix);
        long left = z->integer;
        freeReplyObject(z);
        if (left == 0)
            return;
    }
    fprintf(stderr, "audit: holds still due after 60 s of settling\n");
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *show = NULL;
    int port = 0, do_settle = 0;
    long wins = -1, bookings = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--redis") == 0 && i + 1 < argc) {
            static char h[64];
            const char *v = argv[++i], *colon = strrchr(v, ':');
            if (!colon)
                return 2;
            snprintf(h, sizeof h, "%.*s", (int)(colon - v), v);
            host = h;
            port = atoi(colon + 1);
        } else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc) {
            show = argv[++i];
        } else if (strcmp(argv[i], "--wins") == 0 && i + 1 < argc) {
            wins = atol(argv[++i]);
        } else if (strcmp(argv[i], "--bookings") == 0 && i + 1 < argc) {
            bookings = atol(argv[++i]);
        } else if (strcmp(argv[i], "--settle") == 0) {
            do_settle = 1;
        } else {
            fprintf(stderr, "usage: seatd_audit --redis H:P --show ID [--wins N] "
                            "[--bookings N] [--settle]\n");
            return 2;
        }
    }
    if (!show || port <= 0) {
        fprintf(stderr, "usage: seatd_audit --redis H:P --show ID [--wins N] [--bookings N] "
                        "[--settle]\n");
        return 2;
    }
    audit_t a = {0};
    snprintf(a.prefix, sizeof a.prefix, "{s:%s}", show);
    a.rc = redisConnectWithTimeout(host, port, (struct timeval){.tv_sec = 5});
    if (!a.rc || a.rc->err) {
        fprintf(stderr, "audit: cannot connect to redis %s:%d\n", host, port);
        return 2;
    }
    {
        /* deploy/up's Redis refuses anonymous clients: AUTH as redis-cli does. */
        const char *pw = getenv("REDISCLI_AUTH");
        redisReply *ar = pw && pw[0] ? redisCommand(a.rc, "AUTH %s", pw) : NULL;
        if (ar)
            freeReplyObject(ar);
    }
    redisSetTimeout(a.rc, (struct timeval){.tv_sec = 60});
    /* A Redis with ACLs: the password as redis-cli takes it (REDISCLI_AUTH), for the user
     * SEATD_AUDIT_REDIS_USER (default: the default user). */
    const char *pass = getenv("REDISCLI_AUTH"), *user = getenv("SEATD_AUDIT_REDIS_USER");
    if (pass && pass[0]) {
        redisReply *r =
            user && user[0] ? cmd(&a, "AUTH %s %s", user, pass) : cmd(&a, "AUTH %s", pass);
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "audit: AUTH: %s\n", r->str);
            return 2;
        }
        freeReplyObject(r);
    }

    /* The layout: seat i of the shared layout the show names has bit i. */
    redisReply *lh = cmd(&a, "HGET %s:meta layoutHash", a.prefix);
    if (lh->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "audit: show %s has no layoutHash (%s:meta)\n", show, a.prefix);
        return 2;
    }
    redisReply *lay = cmd(&a, "GET seatd:layout:%s", lh->str);
    if (lay->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "audit: show %s: shared layout seatd:layout:%s is missing\n", show,
                lh->str);
        return 2;
    }
    freeReplyObject(lh);
    for (const char *p = strstr(lay->str, "{\"id\":\""); p; p = strstr(p + 1, "{\"id\":\""))
        a.nseats++;
    if (a.nseats == 0 || a.nseats > MAX_SEATS)
        return 2;
    a.seat_ids = calloc((size_t)a.nseats, sizeof *a.seat_ids);
    a.booked_by = calloc((size_t)a.nseats, sizeof *a.booked_by);
    int k = 0;
    for (const char *p = strstr(lay->str, "{\"id\":\""); p && k < a.nseats;
         p = strstr(p + 1, "{\"id\":\""), k++) {
        const char *id = p + 7, *q = strchr(id, '"');
        if (q)
            a.seat_ids[k] = strndup(id, (size_t)(q - id));
    }
    freeReplyObject(lay);
    redisReply *sc = cmd(&a, "HGET %s:meta seatCount", a.prefix);
    if (sc->type != REDIS_REPLY_STRING || atoi(sc->str) != a.nseats)
        violation(&a, "the show's seatCount disagrees with its layout's %d seats", a.nseats);
    freeReplyObject(sc);

    if (do_settle)
        settle(&a);

    /* Bookings first (checks 1, 2, 8), then the bitmaps. */
    scan(&a, "booking", on_booking);
    redisReply *held = cmd(&a, "GET %s:held", a.prefix);
    redisReply *booked = cmd(&a, "GET %s:booked", a.prefix);
    for (int i = 0; i < a.nseats; i++) {
        const char *id = a.seat_ids[i] ? a.seat_ids[i] : "?";
        if (bit(booked, i) && a.booked_by[i] == 0)
            violation(&a, "seat %s has a booked bit but no CONFIRMED booking", id);
        if (!bit(booked, i) && a.booked_by[i] > 0)
            violation(&a, "seat %s is in a CONFIRMED booking but has no booked bit", id);
        if (bit(booked, i) && bit(held, i))
            violation(&a, "seat %s is both held and booked", id);
    }
    /* Check 4 (and 5 when settled). */
    if (do_settle) {
        scan(&a, "seat", on_seat_key_count);
        for (int i = 0; i < a.nseats; i++)
            if (bit(held, i))
                violation(&a, "seat %s still has a held bit after every hold ended",
                          a.seat_ids[i] ? a.seat_ids[i] : "?");
    } else {
        scan(&a, "seat", on_seat_key);
    }
    scan(&a, "hold", on_hold);
    if (do_settle && a.live_holds > 0) {
        char n[32];
        snprintf(n, sizeof n, "%ld", a.live_holds);
        violation(&a, "%s holds are still live after every deadline passed", n);
    }
    char x[32], y[32];
    if (wins >= 0 && wins != a.holds) {
        snprintf(x, sizeof x, "%ld", wins);
        snprintf(y, sizeof y, "%ld", a.holds);
        violation(&a, "clients won %s holds but the show has %s hold records", x, y);
    }
    if (bookings >= 0 && bookings != a.confirmed) {
        snprintf(x, sizeof x, "%ld", bookings);
        snprintf(y, sizeof y, "%ld", a.confirmed);
        violation(&a, "clients saw %s bookings CONFIRMED but the show has %s", x, y);
    }
    /* Check 7: the outbox. */
    redisReply *ev = cmd(&a, "XRANGE %s:bookings - +", a.prefix);
    long confirmed_events = 0;
    for (size_t i = 0; ev->type == REDIS_REPLY_ARRAY && i < ev->elements; i++) {
        redisReply *fields = ev->element[i]->element[1];
        if (hfield(fields, "type") && strcmp(hfield(fields, "type"), "booking.confirmed") == 0)
            confirmed_events++;
    }
    freeReplyObject(ev);
    if (confirmed_events != a.confirmed) {
        snprintf(x, sizeof x, "%ld", confirmed_events);
        snprintf(y, sizeof y, "%ld", a.confirmed);
        violation(&a, "the outbox has %s booking.confirmed events for %s CONFIRMED bookings", x, y);
    }
    /* Check 8. */
    for (size_t i = 0; i < nowners; i++) {
        redisReply *b = cmd(&a, "HGET %s:user:%s booked", a.prefix, owners[i].name);
        long have = b->type == REDIS_REPLY_STRING ? atol(b->str) : 0;
        freeReplyObject(b);
        if (have != owners[i].seats)
            violation(&a, "owner %s's booked count disagrees with their bookings", owners[i].name);
    }

    long booked_bits = 0, held_bits = 0;
    for (int i = 0; i < a.nseats; i++) {
        booked_bits += bit(booked, i);
        held_bits += bit(held, i);
    }
    printf("audit show=%s seats=%d holds=%ld live_holds=%ld bookings=%ld booked_seats=%ld "
           "held_seats=%ld settled=%d violations=%ld\n",
           show, a.nseats, a.holds, a.live_holds, a.confirmed, booked_bits, held_bits, do_settle,
           a.violations);
    freeReplyObject(held);
    freeReplyObject(booked);
    for (int i = 0; i < a.nseats; i++)
        free(a.seat_ids[i]);
    free(a.seat_ids);
    free(a.booked_by);
    free(owners);
    redisFree(a.rc);
    return a.violations ? 1 : 0;
}
