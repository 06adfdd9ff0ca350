/* show_audit.c - the seat invariant of one show, read straight from Redis; see show_audit.h. */
#include "show_audit.h"
#include "show_audit_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include "redis_sync.h"

__attribute__((format(printf, 3, 4))) void audit__violation(audit_t *a, const char *check,
                                                            const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    a->rep->violations++;
    if (a->o->on_violation)
        a->o->on_violation(check, text, a->o->data);
}

/* Sends the command again on the node a "MOVED|ASK <slot> <host>:<port>" reply 'moved' (freed)
 * names, on a connection of its own authenticated with the options' credentials. Returns the
 * reply there, or an error reply / NULL (with 'a->err' written). */
static redisReply *redirected(audit_t *a, redisReply *moved, const char *fmt, va_list ap)
{
    int ask = moved->str[0] == 'A';
    const char *addr = strchr(moved->str + (ask ? 4 : 6), ' ');
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (!colon)
        return moved;
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr - 1), addr + 1);
    int port = atoi(colon + 1);
    freeReplyObject(moved);
    struct timeval tv = {.tv_sec = 5};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    redisReply *r = NULL;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        if (a->o->password)
            r = a->o->user ? redisCommand(c, "AUTH %s %s", a->o->user, a->o->password)
                           : redisCommand(c, "AUTH %s", a->o->password);
        if (!a->o->password || (r && r->type != REDIS_REPLY_ERROR)) {
            freeReplyObject(r);
            r = NULL;
            if (ask)
                freeReplyObject(redisCommand(c, "ASKING"));
            r = redisvCommand(c, fmt, ap);
        }
    }
    if (!r) {
        snprintf(a->err, a->errlen, "redis %s:%d: %s", host, port, c ? c->errstr : "out of memory");
        a->failed = 1;
    }
    redisFree(c);
    return r;
}

/* Runs one command; NULL (and 'failed' set, 'err' written) on a connection error or an error
 * reply. */
__attribute__((format(printf, 2, 3))) redisReply *audit__cmd(audit_t *a, const char *fmt, ...)
{
    if (a->failed)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = NULL;
    if (a->rc) {
        r = redisvCommand(a->rc, fmt, ap);
    } else {
        r = seatd_redis_vcommand(a->rs, fmt, ap);
    }
    va_end(ap);
    if (r && r->type == REDIS_REPLY_ERROR &&
        (strncmp(r->str, "MOVED ", 6) == 0 || strncmp(r->str, "ASK ", 4) == 0)) {
        va_start(ap, fmt);
        r = redirected(a, r, fmt, ap);
        va_end(ap);
    }
    if (!r) {
        if (!a->failed) /* else redirected() wrote why */
            snprintf(a->err, a->errlen, "redis: %s",
                     a->rc ? a->rc->errstr : seatd_redis_errstr(a->rs));
        a->failed = 1;
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(a->err, a->errlen, "redis: %s", r->str);
        a->failed = 1;
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Runs the read-only script 'lua' (EVAL_RO) with 'nkeys' keys then args, all strings. */
redisReply *audit__probe(audit_t *a, const char *lua, int nkeys, int nargs, const char **args)
{
    if (a->failed)
        return NULL;
    const char *argv[3 + PROBE_ARGS_MAX];
    char nk[8];
    snprintf(nk, sizeof nk, "%d", nkeys);
    argv[0] = "EVAL_RO";
    argv[1] = lua;
    argv[2] = nk;
    if (nargs > PROBE_ARGS_MAX)
        nargs = PROBE_ARGS_MAX;
    for (int i = 0; i < nargs; i++)
        argv[3 + i] = args[i];
    redisReply *r = a->rc ? redisCommandArgv(a->rc, 3 + nargs, argv, NULL)
                          : seatd_redis_commandv(a->rs, 3 + nargs, argv, NULL);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(a->err, a->errlen, "redis: %s",
                 r       ? r->str
                 : a->rc ? a->rc->errstr
                         : seatd_redis_errstr(a->rs));
        a->failed = 1;
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

static const char *const *sort_ids; /* qsort's comparator has no context argument */

static int cmp_by_id(const void *x, const void *y)
{
    const char *p = sort_ids[*(const int *)x], *q = sort_ids[*(const int *)y];
    return strcmp(p ? p : "", q ? q : "");
}

/* Seat id -> index in the layout (a binary search over the ids sorted once). */
int audit__seat_index(const audit_t *a, const char *seat)
{
    size_t lo = 0, hi = (size_t)a->nseats;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *id = a->seat_ids[a->by_id[mid]];
        int c = strcmp(id ? id : "", seat);
        if (c == 0)
            return a->by_id[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int audit__bit(const redisReply *bm, int i)
{
    if (!bm || bm->type != REDIS_REPLY_STRING || (size_t)(i / 8) >= bm->len)
        return 0;
    return (bm->str[i / 8] >> (7 - i % 8)) & 1;
}

/* Calls 'fn' for every key matching "<prefix>:<kind>:*". */
static void scan(audit_t *a, const char *kind, void (*fn)(audit_t *, const char *))
{
    char cursor[32] = "0";
    do {
        redisReply *r = audit__cmd(a, "SCAN %s MATCH %s:%s:* COUNT 1000", cursor, a->prefix, kind);
        if (!r)
            return;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            snprintf(a->err, a->errlen, "redis: SCAN answered no cursor");
            a->failed = 1;
            freeReplyObject(r);
            return;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements && !a->failed; i++)
            fn(a, r->element[1]->element[i]->str);
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0 && !a->failed);
}

const char *audit__hfield(const redisReply *h, size_t from, const char *name)
{
    for (size_t i = from; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
        if (h->element[i]->str && strcmp(h->element[i]->str, name) == 0)
            return h->element[i + 1]->str;
    return NULL;
}

int audit__live_status(const char *s)
{
    return s && (strcmp(s, "HELD") == 0 || strcmp(s, "PENDING_PAYMENT") == 0);
}

/* 1 if 'seat' is one of the comma-joined 'list'. */
int audit__lists_seat(const char *list, const char *seat)
{
    size_t n = strlen(seat);
    for (const char *p = list; p && *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len == n && memcmp(p, seat, n) == 0)
            return 1;
        p = q ? q + 1 : NULL;
    }
    return 0;
}

long audit__count_csv(const char *list)
{
    if (!list || !*list)
        return 0;
    long n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    return n;
}

/* The places in a record's 'areas' text ("FLOOR:2,BALC:1"), named 'what' by a violation of
 * 'areas' when in an area the show does not have; with 'book', each is also added to its
 * area's booked sum. */
long audit__count_places(audit_t *a, const char *text, int book, const char *what)
{
    long total = 0;
    for (const char *p = text; p && *p;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        long n = colon ? strtol(colon + 1, NULL, 10) : 0;
        size_t idlen = colon ? (size_t)(colon - p) : len;
        total += n;
        int i = 0;
        while (i < a->nareas &&
               !(strlen(a->areas[i].id) == idlen && memcmp(a->areas[i].id, p, idlen) == 0))
            i++;
        if (i == a->nareas || n <= 0)
            audit__violation(a, "areas", "%s holds places \"%.*s\" the show has no area for", what,
                             (int)len, p);
        else if (book)
            a->areas[i].booked += n;
        p = q ? q + 1 : NULL;
    }
    return total;
}

/* Check 'bits': the record 'what' lists 'seats' with 'bits' (comma-joined, aligned); each bit
 * must be the seat's index in the layout. With 'only' non-NULL, only that seat is checked. */
void audit__check_bits(audit_t *a, const char *what, const char *seats, const char *bits,
                       const char *only)
{
    char *s = strdup(seats ? seats : ""), *b = strdup(bits ? bits : "");
    if (!s || !b)
        abort();
    char *ss = NULL, *bs = NULL;
    char *seat = strtok_r(s, ",", &ss), *bt = strtok_r(b, ",", &bs);
    for (; seat; seat = strtok_r(NULL, ",", &ss), bt = bt ? strtok_r(NULL, ",", &bs) : NULL) {
        if (only && strcmp(only, seat) != 0)
            continue;
        int i = audit__seat_index(a, seat);
        if (!bt || i < 0 || atoi(bt) != i || strspn(bt, "0123456789") != strlen(bt))
            audit__violation(a, "bits",
                             "%s records bit %s for seat %s, whose index in the layout is %d", what,
                             bt ? bt : "(none)", seat, i);
    }
    free(s);
    free(b);
}

void audit__owner_add(audit_t *a, const char *name, long seats)
{
    for (size_t i = 0; i < a->nowners; i++)
        if (strcmp(a->owners[i].name, name) == 0) {
            a->owners[i].seats += seats;
            return;
        }
    if (a->nowners == a->capowners) {
        a->capowners = a->capowners ? a->capowners * 2 : 64;
        a->owners = realloc(a->owners, a->capowners * sizeof *a->owners);
        if (!a->owners)
            abort();
    }
    snprintf(a->owners[a->nowners].name, sizeof a->owners[a->nowners].name, "%s", name);
    a->owners[a->nowners++].seats = seats;
}

/* ---- the layout -------------------------------------------------------------------------- */

static int load_layout(audit_t *a, const char *show_id)
{
    redisReply *lh = audit__cmd(a, "HGET %s:meta layoutHash", a->prefix);
    if (!lh)
        return SEATD_AUDIT_EREDIS;
    if (lh->type != REDIS_REPLY_STRING) {
        snprintf(a->err, a->errlen, "show %s does not exist (no %s:meta)", show_id, a->prefix);
        freeReplyObject(lh);
        return SEATD_AUDIT_ENOSHOW;
    }
    redisReply *lay = audit__cmd(a, "GET seatd:layout:%s", lh->str);
    if (!lay) {
        freeReplyObject(lh);
        return SEATD_AUDIT_EREDIS;
    }
    if (lay->type != REDIS_REPLY_STRING) {
        snprintf(a->err, a->errlen, "show %s: its layout seatd:layout:%s is missing", show_id,
                 lh->str);
        freeReplyObject(lh);
        freeReplyObject(lay);
        return SEATD_AUDIT_ENOSHOW;
    }
    freeReplyObject(lh);
    cJSON *doc = cJSON_ParseWithLength(lay->str, lay->len);
    freeReplyObject(lay);
    /* The stored layout is the canonical seats array (keys.h); accept {"seats":[…]} too. */
    const cJSON *seats = cJSON_IsArray(doc) ? doc : cJSON_GetObjectItemCaseSensitive(doc, "seats");
    int n = cJSON_GetArraySize(seats);
    if (!cJSON_IsArray(seats) || n <= 0 || n > MAX_SEATS) {
        snprintf(a->err, a->errlen, "show %s: its layout is not a seats array", show_id);
        cJSON_Delete(doc);
        return SEATD_AUDIT_EREDIS;
    }
    a->nseats = n;
    a->seat_ids = calloc((size_t)n, sizeof *a->seat_ids);
    a->booked_by = calloc((size_t)n, sizeof *a->booked_by);
    if (!a->seat_ids || !a->booked_by)
        abort();
    int k = 0;
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, seats)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));
        if (id && !(a->seat_ids[k] = strdup(id)))
            abort();
        k++;
    }
    cJSON_Delete(doc);
    a->by_id = malloc((size_t)n * sizeof *a->by_id);
    if (!a->by_id)
        abort();
    for (int i = 0; i < n; i++)
        a->by_id[i] = i;
    sort_ids = (const char *const *)a->seat_ids;
    qsort(a->by_id, (size_t)n, sizeof *a->by_id, cmp_by_id);
    sort_ids = NULL;
    return 0;
}

/* ---- standing areas ---------------------------------------------------------------------- */

/* The show's areas from its meta text "FLOOR:5000:standing,BALC:200:balcony" (NULL: none). */
static void load_areas(audit_t *a, const char *text)
{
    for (const char *p = text; p && *p && a->nareas < MAX_AREAS;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (colon && (size_t)(colon - p) < sizeof a->areas[0].id) {
            area_t *ar = &a->areas[a->nareas++];
            snprintf(ar->id, sizeof ar->id, "%.*s", (int)(colon - p), p);
            ar->capacity = strtol(colon + 1, NULL, 10);
            ar->booked = 0;
        } else {
            audit__violation(a, "areas", "the show's meta has a malformed area \"%.*s\"", (int)len,
                             p);
        }
        p = q ? q + 1 : NULL;
    }
}

/* The places taken per area ({s}:areas) and those of the live holds, read in one atomic step:
 * the reaper gives a due hold's places back while the audit runs, and a hold counted by a
 * scan before and the counter read after would differ by them. The live holds are the
 * members of {s}:expiry whose record is HELD or PENDING_PAYMENT, due or not (check 'expiry'
 * ties the two). Returns {{id, taken, …}, {id, places, …}}. */
static const char areas_probe_lua[] =
    "local live, out = {}, {} "
    "for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do "
    "  local h = redis.call('HMGET', ARGV[1] .. id, 'status', 'areas') "
    "  if (h[1] == 'HELD' or h[1] == 'PENDING_PAYMENT') and h[2] then "
    "    for a, n in string.gmatch(h[2], '([^,:]+):(%d+)') do "
    "      live[a] = (live[a] or 0) + tonumber(n) "
    "    end "
    "  end "
    "end "
    "for a, n in pairs(live) do out[#out + 1] = a; out[#out + 1] = tostring(n) end "
    "return {redis.call('HGETALL', KEYS[2]), out}";

/* Check 'areas': each area's field of {s}:areas (places taken) = the places of its live holds
 * (areas_probe_lua) + those of its CONFIRMED bookings (the bookings' scan: they change only
 * when a booking settles or is cancelled, which the version catches), within [0, capacity];
 * no field names an area the show does not have (unless 0). A PENDING_PAYMENT booking's
 * places are its live hold's. */
static void check_areas(audit_t *a)
{
    char expiry[96], areas[96], hold_prefix[96];
    snprintf(expiry, sizeof expiry, "%s:expiry", a->prefix);
    snprintf(areas, sizeof areas, "%s:areas", a->prefix);
    snprintf(hold_prefix, sizeof hold_prefix, "%s:hold:", a->prefix);
    const char *args[] = {expiry, areas, hold_prefix};
    redisReply *r = audit__probe(a, areas_probe_lua, 2, 3, args);
    if (!r)
        return;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        snprintf(a->err, a->errlen, "redis: the areas probe answered no pair");
        a->failed = 1;
        freeReplyObject(r);
        return;
    }
    const redisReply *h = r->element[0], *live = r->element[1];
    for (int i = 0; i < a->nareas; i++) {
        const area_t *ar = &a->areas[i];
        const char *v = audit__hfield(h, 0, ar->id), *l = audit__hfield(live, 0, ar->id);
        long taken = v ? strtol(v, NULL, 10) : 0, held = l ? strtol(l, NULL, 10) : 0;
        a->rep->areas++;
        a->rep->area_places += taken;
        if (taken != held + ar->booked)
            audit__violation(
                a, "areas",
                "area %s: %s:areas counts %ld places taken, its live holds hold %ld and "
                "its CONFIRMED bookings %ld",
                ar->id, a->prefix, taken, held, ar->booked);
        if (taken < 0 || taken > ar->capacity)
            audit__violation(a, "areas", "area %s: %ld places taken, outside [0, %ld]", ar->id,
                             taken, ar->capacity);
    }
    for (size_t k = 0; h->type == REDIS_REPLY_ARRAY && k + 1 < h->elements; k += 2) {
        int i = 0;
        while (i < a->nareas && strcmp(a->areas[i].id, h->element[k]->str) != 0)
            i++;
        if (i == a->nareas && strtol(h->element[k + 1]->str, NULL, 10) != 0)
            audit__violation(a, "areas",
                             "%s:areas counts %s places in area %s, which the show lacks",
                             a->prefix, h->element[k + 1]->str, h->element[k]->str);
    }
    freeReplyObject(r);
}

static long long show_version(audit_t *a)
{
    redisReply *v = audit__cmd(a, "GET %s:ver", a->prefix);
    long long n = v && v->type == REDIS_REPLY_STRING ? strtoll(v->str, NULL, 10) : 0;
    if (v)
        freeReplyObject(v);
    return n;
}

/* ---- the audit --------------------------------------------------------------------------- */

static void run_checks(audit_t *a)
{
    const seatd_audit_opts_t *o = a->o;
    seatd_audit_report_t *rep = a->rep;
    redisReply *sc = audit__cmd(a, "HMGET %s:meta seatCount areas", a->prefix);
    if (!sc)
        return;
    if (sc->type != REDIS_REPLY_ARRAY || sc->elements != 2 ||
        sc->element[0]->type != REDIS_REPLY_STRING || atoi(sc->element[0]->str) != a->nseats)
        audit__violation(a, "counts", "the show's seatCount disagrees with its layout's %d seats",
                         a->nseats);
    if (sc->type == REDIS_REPLY_ARRAY && sc->elements == 2)
        load_areas(a, sc->element[1]->str);
    freeReplyObject(sc);

    /* Bookings first (double_booking, booked_bits, owner_counts, pending), then the bitmaps. */
    scan(a, "booking", audit__on_booking);
    audit__check_members(a, "pending", "booking", "pending");
    redisReply *held = audit__cmd(a, "GET %s:held", a->prefix);
    redisReply *booked = audit__cmd(a, "GET %s:booked", a->prefix);
    if (!held || !booked)
        goto out;
    for (int i = 0; i < a->nseats; i++) {
        const char *id = a->seat_ids[i] ? a->seat_ids[i] : "?";
        rep->booked_seats += audit__bit(booked, i);
        rep->held_seats += audit__bit(held, i);
        if (audit__bit(booked, i) && a->booked_by[i] == 0)
            audit__violation(a, "booked_bits", "seat %s has a booked bit but no CONFIRMED booking",
                             id);
        if (!audit__bit(booked, i) && a->booked_by[i] > 0)
            audit__violation(a, "booked_bits",
                             "seat %s is in a CONFIRMED booking but has no booked bit", id);
        if (audit__bit(booked, i) && audit__bit(held, i))
            audit__violation(a, "held_and_booked", "seat %s is both held and booked", id);
    }
    scan(a, "seat", audit__on_seat_key);
    for (int i = 0; i < a->nseats && !a->failed; i++) {
        if (!audit__bit(held, i))
            continue;
        if (o->settled)
            audit__violation(a, "settled", "seat %s still has a held bit after every hold ended",
                             a->seat_ids[i] ? a->seat_ids[i] : "?");
        else
            audit__check_held_bit(a, i);
    }
    scan(a, "hold", audit__on_hold);
    check_areas(a);
    audit__check_members(a, "expiry", "hold", "expiry");
    scan(a, "user", audit__on_user);
    if (o->settled && rep->live_holds > 0)
        audit__violation(a, "settled", "%ld holds are still live after every deadline passed",
                         rep->live_holds);
    if (o->wins >= 0 && o->wins != rep->holds)
        audit__violation(a, "counts", "clients won %ld holds but the show has %ld hold records",
                         o->wins, rep->holds);
    if (o->bookings >= 0 && o->bookings != rep->confirmed)
        audit__violation(a, "counts", "clients saw %ld bookings CONFIRMED but the show has %ld",
                         o->bookings, rep->confirmed);

    /* The outbox: each CONFIRMED booking has one booking.confirmed event, and a cancelled
     * one a booking.cancelled event after it (the stream is never trimmed). */
    long confirmed_events = 0, cancelled_events = 0;
    char from[64] = "-";
    for (;;) {
        redisReply *ev = audit__cmd(a, "XRANGE %s:bookings %s + COUNT 1000", a->prefix, from);
        if (!ev)
            break;
        size_t n = ev->type == REDIS_REPLY_ARRAY ? ev->elements : 0;
        for (size_t i = 0; i < n; i++) {
            const char *type = audit__hfield(ev->element[i]->element[1], 0, "type");
            confirmed_events += type && strcmp(type, "booking.confirmed") == 0;
            cancelled_events += type && strcmp(type, "booking.cancelled") == 0;
        }
        if (n > 0)
            snprintf(from, sizeof from, "(%s", ev->element[n - 1]->element[0]->str);
        freeReplyObject(ev);
        if (n < 1000)
            break;
    }
    if (!a->failed && confirmed_events - cancelled_events != rep->confirmed)
        audit__violation(
            a, "outbox",
            "the outbox has %ld booking.confirmed and %ld booking.cancelled events for %ld "
            "CONFIRMED bookings",
            confirmed_events, cancelled_events, rep->confirmed);
    /* Owners' booked counts. */
    for (size_t i = 0; i < a->nowners && !a->failed; i++) {
        redisReply *b = audit__cmd(a, "HGET %s:user:%s booked", a->prefix, a->owners[i].name);
        long have = b && b->type == REDIS_REPLY_STRING ? atol(b->str) : 0;
        if (b && have != a->owners[i].seats)
            audit__violation(a, "owner_counts",
                             "owner %s's booked count is %ld, their bookings hold %ld "
                             "seats and places",
                             a->owners[i].name, have, a->owners[i].seats);
        if (b)
            freeReplyObject(b);
    }
out:
    if (held)
        freeReplyObject(held);
    if (booked)
        freeReplyObject(booked);
}

static int audit_show(audit_t *ap, const char *show_id)
{
    audit_t a = *ap;
    seatd_audit_report_t *report = a.rep;
    char *err = a.err;
    size_t errlen = a.errlen;
    memset(report, 0, sizeof *report);
    if (errlen)
        err[0] = '\0';
    if (!show_id || !show_id[0] || strspn(show_id, "0123456789") != strlen(show_id) ||
        strlen(show_id) > 18) {
        snprintf(err, errlen, "'%s' is not a show id", show_id ? show_id : "");
        return SEATD_AUDIT_ENOSHOW;
    }
    snprintf(a.prefix, sizeof a.prefix, "{s:%s}", show_id);
    int rc = load_layout(&a, show_id);
    if (rc == 0) {
        report->nseats = a.nseats;
        report->version = show_version(&a);
        run_checks(&a);
        report->stable = !a.failed && show_version(&a) == report->version;
        rc = a.failed ? SEATD_AUDIT_EREDIS : 0;
    }
    for (int i = 0; i < a.nseats; i++)
        free(a.seat_ids[i]);
    free(a.seat_ids);
    free(a.by_id);
    free(a.booked_by);
    free(a.owners);
    return rc;
}

int seatd_audit_show(redisContext *c, const char *show_id, const seatd_audit_opts_t *o,
                     seatd_audit_report_t *report, char *err, size_t errlen)
{
    audit_t a = {.rc = c, .o = o, .rep = report, .err = err, .errlen = errlen};
    return audit_show(&a, show_id);
}

int seatd_audit_show_sync(seatd_redis_t *c, const char *show_id, const seatd_audit_opts_t *o,
                          seatd_audit_report_t *report, char *err, size_t errlen)
{
    audit_t a = {.rs = c, .o = o, .rep = report, .err = err, .errlen = errlen};
    return audit_show(&a, show_id);
}
