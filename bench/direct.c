/*
 * direct.c - the "direct" driver: the blockbuster scenario straight against the seatd Redis
 * Functions library, with no worker in between (see loadgen.h).
 *
 * One blocking hiredis connection per load process keeps 'pipeline' FCALLs in flight: replies
 * come back in order, so the calls in flight are a FIFO. A won hold is then booked
 * (seatd_book_begin then seatd_book_confirm, no payment gateway) with probability P %,
 * released (seatd_release) with probability Q %, or left to expire. Latency is from the
 * moment a call is appended to the moment its reply is read, so it includes the pipeline's
 * queueing: compare throughput, not latency, with the HTTP paths.
 *
 * A hold that asks for places in standing areas (--areas) is a seatd_hold_sell call with the
 * request "named;FLOOR:2" (as store.c sends it); its refusal of taken seats is a reply
 * ("refused", …), not an error, and counts as a 409 like seatd_hold's CONFLICT.
 */
#include "loadgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

enum call_kind_e { CALL_HOLD, CALL_BOOK_BEGIN, CALL_BOOK_CONFIRM, CALL_RELEASE };

typedef struct call_s {
    int kind;            /* enum call_kind_e */
    int nseats;          /* seats of the hold */
    int places;          /* places of the hold (--areas), 0 without */
    uint64_t t0;         /* when the call (or the booking's first call) was appended, us */
    char hold_id[72];    /* the hold it is about */
    char owner[24];      /* the virtual user */
    char booking_id[72]; /* book calls: the booking */
} call_t;

typedef struct direct_s {
    const seatd_bench_cfg_t *cfg;     /* borrowed */
    seatd_bench_slot_t *slot;         /* borrowed (shared memory) */
    redisContext *rc;                 /* owned */
    seatd_bench_rng_t rng;            /* this process's randomness */
    char meta_key[64];                /* {s:<id>}:meta */
    char layout_hash[72];             /* the show's layoutHash (meta) */
    char bits[SEATD_BENCH_SEATS][12]; /* scenario seat i -> its bit in the show's layout, or "-" */
    call_t *ring;                     /* calls in flight, FIFO; owned */
    size_t cap, head, n;              /* ring capacity, first, count */
    uint64_t record_from_us;          /* calls appended before are warm-up, not measured */
} direct_t;

/* The HTTP status the worker would have answered for a Lua error word (errors.h's table,
 * for the words these calls can raise). */
static int status_of(const char *err)
{
    static const struct {
        const char *word;
        int status;
    } map[] = {{"CONFLICT", 409},      {"STATE", 409},        {"LIMIT", 422},
               {"NOSHOW", 404},        {"NOTFOUND", 404},     {"EXPIRED", 410},
               {"INVAL", 400},         {"UNKNOWN_SEAT", 400}, {"EMPTY", 400},
               {"TOOMANY", 400},       {"DUPSEAT", 400},      {"IDEM_MISMATCH", 422},
               {"AREA_SOLD_OUT", 409}, {"UNKNOWN_AREA", 400}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t l = strlen(map[i].word);
        if (strncmp(err, map[i].word, l) == 0 && (err[l] == ' ' || err[l] == '\0'))
            return map[i].status;
    }
    return 500;
}

static void new_id(direct_t *d, char kind, char *out, size_t cap)
{
    uint64_t a = seatd_bench_rng_next(&d->rng), b = seatd_bench_rng_next(&d->rng);
    snprintf(out, cap, "%s-%c%016llx%04x", d->cfg->show_id, kind, (unsigned long long)a,
             (unsigned)(b & 0xffff));
}

static call_t *push(direct_t *d, int kind)
{
    call_t *c = &d->ring[(d->head + d->n) % d->cap];
    d->n++;
    c->kind = kind;
    c->t0 = seatd_bench_now_us();
    return c;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void append_hold(direct_t *d)
{
    call_t *c = push(d, CALL_HOLD);
    int idx[SEATD_BENCH_MAX_PICK];
    char ids[SEATD_BENCH_MAX_PICK][8], ttl[24], maxu[16];
    const char *sorted[SEATD_BENCH_MAX_PICK], *bitarg[SEATD_BENCH_MAX_PICK];
    int n = seatd_bench_pick(&d->rng, idx);
    int alone = 0, places = seatd_bench_pick_places(d->cfg, &d->rng, &alone);
    if (alone)
        n = 0;
    for (int k = 0; k < n; k++) {
        seatd_bench_seat_id(idx[k], ids[k]);
        sorted[k] = ids[k];
    }
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_str); /* the worker sends them sorted */
    for (int k = 0; k < n; k++) /* each with its bit in the show's layout, as store.c does */
        for (int j = 0; j < n; j++)
            if (sorted[k] == ids[j])
                bitarg[k] = d->bits[idx[j]];
    c->nseats = n;
    c->places = places ? d->cfg->places : 0;
    new_id(d, 'h', c->hold_id, sizeof c->hold_id);
    snprintf(c->owner, sizeof c->owner, "u%lld",
             (long long)seatd_bench_rng_range(&d->rng, 0, d->cfg->users - 1));
    snprintf(ttl, sizeof ttl, "%ld", d->cfg->ttl_ms);
    snprintf(maxu, sizeof maxu, "%d", d->cfg->max_per_user);
    const char *argv[12 + 2 * SEATD_BENCH_MAX_PICK] = {"FCALL",    "seatd_hold",  "1", d->meta_key,
                                                       c->hold_id, c->owner,      ttl, maxu,
                                                       "",         d->layout_hash};
    int argc = 10;
    char request[80], np[8];
    if (places) { /* seatd_hold_sell: the request and the number of pairs before the pairs */
        snprintf(request, sizeof request, "named;%s", d->cfg->areas);
        snprintf(np, sizeof np, "%d", n);
        argv[1] = "seatd_hold_sell";
        argv[argc++] = request;
        argv[argc++] = np;
    }
    for (int k = 0; k < n; k++) {
        argv[argc++] = sorted[k];
        argv[argc++] = bitarg[k];
    }
    redisAppendCommandArgv(d->rc, argc, argv, NULL);
}

/* Reads the show's layoutHash and its shared layout, and maps every scenario seat to its bit
 * (its index in the layout's seats array). Returns 0 or -1. */
static int load_bits(direct_t *d)
{
    redisReply *h = redisCommand(d->rc, "HGET %s layoutHash", d->meta_key);
    if (!h || h->type != REDIS_REPLY_STRING || h->len >= sizeof d->layout_hash) {
        fprintf(stderr, "loadgen(direct): show %s has no layoutHash\n", d->cfg->show_id);
        freeReplyObject(h);
        return -1;
    }
    snprintf(d->layout_hash, sizeof d->layout_hash, "%s", h->str);
    freeReplyObject(h);
    redisReply *l = redisCommand(d->rc, "GET seatd:layout:%s", d->layout_hash);
    if (!l || l->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "loadgen(direct): shared layout %s missing\n", d->layout_hash);
        freeReplyObject(l);
        return -1;
    }
    for (int i = 0; i < SEATD_BENCH_SEATS; i++)
        memcpy(d->bits[i], "-", 2);
    /* The canonical layout lists {"id":"…",…} objects in bit order. */
    int bit = 0;
    for (const char *p = strstr(l->str, "{\"id\":\""); p; p = strstr(p + 1, "{\"id\":\""), bit++) {
        const char *id = p + 7, *q = strchr(id, '"');
        char seat[8];
        if (!q || q - id >= (long)sizeof seat)
            continue;
        snprintf(seat, sizeof seat, "%.*s", (int)(q - id), id);
        for (int i = 0; i < SEATD_BENCH_SEATS; i++) {
            char mine[16];
            seatd_bench_seat_id(i, mine);
            if (strcmp(mine, seat) == 0) {
                snprintf(d->bits[i], sizeof d->bits[i], "%d", bit);
                break;
            }
        }
    }
    freeReplyObject(l);
    return 0;
}

static void append_release(direct_t *d, const call_t *won)
{
    call_t *c = push(d, CALL_RELEASE);
    memcpy(c->hold_id, won->hold_id, sizeof c->hold_id);
    memcpy(c->owner, won->owner, sizeof c->owner);
    const char *argv[] = {"FCALL", "seatd_release", "1", d->meta_key, c->hold_id, c->owner};
    redisAppendCommandArgv(d->rc, 6, argv, NULL);
}

static void append_book_begin(direct_t *d, const call_t *won)
{
    call_t *c = push(d, CALL_BOOK_BEGIN);
    memcpy(c->hold_id, won->hold_id, sizeof c->hold_id);
    memcpy(c->owner, won->owner, sizeof c->owner);
    c->nseats = won->nseats;
    c->places = won->places;
    new_id(d, 'b', c->booking_id, sizeof c->booking_id);
    char amount[24];
    /* (an amount given is taken as is: the seats at the standard price, places at their
     * area's) */
    snprintf(amount, sizeof amount, "%d",
             1200 * won->nseats +
                 (strcmp(d->cfg->area_tier, "premium") == 0 ? 1800 : 1200) * won->places);
    const char *argv[] = {"FCALL",    "seatd_book_begin", "1",           d->meta_key,
                          c->hold_id, c->owner,           c->booking_id, amount,
                          "EUR",      "tok_ok",           "60000"};
    redisAppendCommandArgv(d->rc, 11, argv, NULL);
}

static void append_book_confirm(direct_t *d, const call_t *begun)
{
    call_t *c = push(d, CALL_BOOK_CONFIRM);
    *c = *begun; /* keeps t0: the booking's latency covers both calls */
    c->kind = CALL_BOOK_CONFIRM;
    char ref[96];
    snprintf(ref, sizeof ref, "bench-%s", c->booking_id);
    const char *argv[] = {"FCALL", "seatd_book_confirm", "1", d->meta_key, c->booking_id, ref};
    redisAppendCommandArgv(d->rc, 6, argv, NULL);
}

/* A name/value array reply's value for 'name', or NULL. */
static const char *field(const redisReply *r, const char *name)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, name) == 0)
            return r->element[i + 1]->type == REDIS_REPLY_STRING ? r->element[i + 1]->str : NULL;
    return NULL;
}

/* Books the outcome of the oldest call from its reply 'r' and appends any follow-up. */
static void on_reply(direct_t *d, const call_t *c, const redisReply *r, int draining)
{
    seatd_bench_slot_t *s = d->slot;
    int rec = c->t0 >= d->record_from_us; /* not a warm-up call */
    /* seatd_hold_sell refuses taken seats with a reply: {"refused", "CONFLICT …", …} */
    int refused = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "refused") == 0;
    int ok = r->type != REDIS_REPLY_ERROR && !refused;
    int status = refused ? 409 : ok ? (c->kind == CALL_HOLD ? 201 : 200) : status_of(r->str);
    int op = c->kind == CALL_HOLD      ? SEATD_BENCH_OP_HOLD
             : c->kind == CALL_RELEASE ? SEATD_BENCH_OP_RELEASE
                                       : SEATD_BENCH_OP_BOOK;
    uint64_t now = seatd_bench_now_us();
    if (rec && (c->kind != CALL_BOOK_BEGIN || !ok)) { /* a booking is timed when it ends */
        seatd_hist_add(&s->lat[op], now - c->t0);
        s->status[op][status]++;
        s->bytes[op] += r->type == REDIS_REPLY_ERROR ? r->len : 0;
    }
    if (!ok && status == 500 && s->status[op][500] <= 3)
        fprintf(stderr, "loadgen(direct): %s\n", r->str);
    switch (c->kind) {
    case CALL_HOLD:
        if (ok) {
            s->all_wins++;
            s->wins += (uint64_t)rec;
            s->seats_won += rec ? (uint64_t)c->nseats : 0;
            s->places_won += rec ? (uint64_t)c->places : 0;
            s->area_wins += (uint64_t)(rec && c->places);
            double u = seatd_bench_rng_unit(&d->rng) * 100.0;
            if (u < d->cfg->book_pct)
                append_book_begin(d, c);
            else if (u < d->cfg->book_pct + d->cfg->release_pct && !draining)
                append_release(d, c);
        } else if (status == 409) {
            s->conflicts += (uint64_t)rec;
        }
        break;
    case CALL_BOOK_BEGIN:
        if (ok)
            append_book_confirm(d, c);
        break;
    case CALL_BOOK_CONFIRM: {
        const char *st = field(r, "status");
        if (ok && st && strcmp(st, "CONFIRMED") == 0) {
            s->all_bookings++;
            s->bookings += (uint64_t)rec;
        }
        break;
    }
    case CALL_RELEASE:
        if (ok)
            s->releases += (uint64_t)rec;
        break;
    }
}

int seatd_bench_direct_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot)
{
    direct_t d = {.cfg = cfg, .slot = slot};
    seatd_bench_rng_seed(&d.rng, cfg->seed + (uint64_t)proc * 104729u);
    snprintf(d.meta_key, sizeof d.meta_key, "{s:%s}:meta", cfg->show_id);
    struct timeval tv = {.tv_sec = 5};
    d.rc = redisConnectWithTimeout(cfg->redis.host, cfg->redis.port, tv);
    if (!d.rc || d.rc->err) {
        fprintf(stderr, "loadgen(direct): cannot connect to redis %s:%d\n", cfg->redis.host,
                cfg->redis.port);
        redisFree(d.rc);
        return -1;
    }
    {
        /* deploy/up's Redis refuses anonymous clients: AUTH as redis-cli does. */
        const char *pw = getenv("REDISCLI_AUTH");
        redisReply *ar = pw && pw[0] ? redisCommand(d.rc, "AUTH %s", pw) : NULL;
        if (ar)
            freeReplyObject(ar);
    }
    redisSetTimeout(d.rc, (struct timeval){.tv_sec = 10});
    if (load_bits(&d) < 0) {
        redisFree(d.rc);
        return -1;
    }
    d.cap = (size_t)cfg->pipeline * 2 + 4;
    d.ring = calloc(d.cap, sizeof *d.ring);
    if (!d.ring)
        abort();
    long left = cfg->count > 0 ? (cfg->count + cfg->procs - 1 - proc) / cfg->procs : -1;
    uint64_t start = seatd_bench_now_us();
    d.record_from_us = start + (uint64_t)(cfg->warmup_s * 1e6);
    uint64_t end_at =
        cfg->duration_s > 0 ? d.record_from_us + (uint64_t)(cfg->duration_s * 1e6) : 0;
    double per_us = cfg->rate > 0 ? cfg->rate / cfg->procs / 1e6 : 0;
    uint64_t started = 0;
    int rc = 0, draining = 0;
    for (;;) {
        uint64_t now = seatd_bench_now_us();
        if (!draining && ((end_at && now >= end_at) || left == 0))
            draining = 1;
        while (!draining && d.n < (size_t)cfg->pipeline && left != 0 &&
               (per_us == 0 || (double)started < per_us * (double)(now - start))) {
            append_hold(&d);
            started++;
            if (left > 0)
                left--;
        }
        if (d.n == 0) {
            if (draining)
                break;
            usleep(200); /* paced: nothing due yet */
            continue;
        }
        redisReply *r = NULL;
        if (redisGetReply(d.rc, (void **)&r) != REDIS_OK || !r) {
            fprintf(stderr, "loadgen(direct): redis connection failed: %s\n", d.rc->errstr);
            slot->conn_errors++;
            rc = -1;
            break;
        }
        call_t c = d.ring[d.head];
        d.head = (d.head + 1) % d.cap;
        d.n--;
        on_reply(&d, &c, r, draining);
        freeReplyObject(r);
    }
    uint64_t end = seatd_bench_now_us();
    slot->elapsed_s = end > d.record_from_us ? (double)(end - d.record_from_us) / 1e6 : 0;
    free(d.ring);
    redisFree(d.rc);
    return rc;
}

/* =================================== show creation ======================================= */

/* The id of seat 'i' of a show created here: "A1"… or the 12-digit numeric form. */
static void created_seat_id(const seatd_bench_cfg_t *cfg, int i, char *out)
{
    if (cfg->numeric_seats)
        snprintf(out, 16, "%012d", i);
    else
        seatd_bench_seat_id(i, out);
}

/* The canonical seats array of the bench layout: the bytes seatd's layout.c prints for it
 * (cJSON, unformatted, integers as integers), so its SHA-256 is the address workers expect. */
static char *layout_seats(const seatd_bench_cfg_t *cfg)
{
    size_t cap = 64 + (size_t)SEATD_BENCH_SEATS * 96;
    char *out = malloc(cap);
    if (!out)
        abort();
    size_t len = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < SEATD_BENCH_SEATS; i++) {
        char id[16], row[4];
        int rown = i / SEATD_BENCH_PER_ROW, num = i % SEATD_BENCH_PER_ROW + 1;
        created_seat_id(cfg, i, id);
        seatd_bench_row_label(rown, row);
        len += (size_t)snprintf(out + len, cap - len,
                                "%s{\"id\":\"%s\",\"row\":\"%s\",\"number\":%d,\"tier\":\"%s\","
                                "\"x\":%d,\"y\":%d}",
                                i ? "," : "", id, row, num, rown < 10 ? "premium" : "standard", num,
                                rown + 1);
    }
    snprintf(out + len, cap - len, "]");
    return out;
}

/* Lowercase hex SHA-256 of 'text' into 'hex' (65 bytes). */
static void sha256_hex(const char *text, char *hex)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL) || n != 32)
        abort();
    for (unsigned int i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

int seatd_bench_direct_create_show(seatd_bench_cfg_t *cfg, int hold_ttl_s)
{
    struct timeval tv = {.tv_sec = 5};
    redisContext *rc = redisConnectWithTimeout(cfg->redis.host, cfg->redis.port, tv);
    char *layout = NULL;
    int ret = -1;
    if (!rc || rc->err) {
        fprintf(stderr, "loadgen(direct): cannot connect to redis %s:%d\n", cfg->redis.host,
                cfg->redis.port);
        goto out;
    }
    {
        /* deploy/up's Redis refuses anonymous clients: AUTH as redis-cli does. */
        const char *pw = getenv("REDISCLI_AUTH");
        redisReply *ar = pw && pw[0] ? redisCommand(rc, "AUTH %s", pw) : NULL;
        if (ar)
            freeReplyObject(ar);
    }
    redisReply *r = redisCommand(rc, "FCALL seatd_next_show_id 1 seatd:show_seq");
    const char *id = r ? field(r, "showId") : NULL;
    if (!id) {
        fprintf(stderr, "loadgen(direct): seatd_next_show_id failed: %s\n",
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        freeReplyObject(r);
        goto out;
    }
    snprintf(cfg->show_id, sizeof cfg->show_id, "%s", id);
    freeReplyObject(r);

    char meta[64], ttl[24], hash[65], count[16];
    snprintf(meta, sizeof meta, "{s:%s}:meta", cfg->show_id);
    snprintf(ttl, sizeof ttl, "%d", hold_ttl_s * 1000);
    snprintf(count, sizeof count, "%d", SEATD_BENCH_SEATS);
    layout = layout_seats(cfg);
    sha256_hex(layout, hash);
    /* The shared layout first (once per distinct layout: --shows N stores it once), then the
     * show naming it. */
    static char stored[65];
    if (strcmp(stored, hash) != 0) {
        r = redisCommand(rc, "FCALL seatd_layout_put 1 seatd:layout:%s %s", hash, layout);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "loadgen(direct): seatd_layout_put failed: %s\n", r ? r->str : "-");
            freeReplyObject(r);
            goto out;
        }
        freeReplyObject(r);
        memcpy(stored, hash, sizeof stored);
    }
    char extra[256];
    seatd_bench_area_extra(cfg, extra, sizeof extra);
    const char *argv[] = {"FCALL",
                          "seatd_create_show",
                          "1",
                          meta,
                          "Blockbuster (bench)",
                          "1893528000000",
                          ttl,
                          "{\"standard\":1200,\"premium\":1800}",
                          hash,
                          extra,
                          count};
    r = redisCommandArgv(rc, (int)(sizeof argv / sizeof argv[0]), argv, NULL);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "loadgen(direct): seatd_create_show failed: %s\n", r ? r->str : "-");
        freeReplyObject(r);
        goto out;
    }
    freeReplyObject(r);
    r = redisCommand(rc, "FCALL seatd_catalogue_add 1 seatd:shows 1893528000000 %s", cfg->show_id);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "loadgen(direct): seatd_catalogue_add failed: %s\n", r ? r->str : "-");
        freeReplyObject(r);
        goto out;
    }
    freeReplyObject(r);
    ret = 0;
out:
    free(layout);
    redisFree(rc);
    return ret;
}
