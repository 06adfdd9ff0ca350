/*
 * store_harness.h - a small synchronous driver over store.c for the Lua integration tests.
 *
 * th_open() builds a private uv loop + rds client + scripts + store against the runner's
 * redis-server; each th_* call queues one store operation and runs the loop until its
 * callback fired, copying the result into a th_res_t (owned by the caller, no frees needed).
 * Functions return codes instead of asserting, so forked racers can use them too.
 * Header-only (static inline) so that every test file can include it without a build edit.
 */
#ifndef SEATD_TEST_STORE_HARNESS_H
#define SEATD_TEST_STORE_HARNESS_H

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "loop.h"
#include "clients/rds.h"
#include "redis_fixture.h"
#include "store/scripts.h"
#include "store/store.h"

#define TH_MAX_FIELDS 64
#define TH_WAIT_MS 5000

typedef struct th_s {
    uv_loop_t *loop;          /* owned */
    seatd_rds_t *rds;         /* owned until th_close */
    seatd_scripts_t *scripts; /* owned */
    seatd_store_t *store;     /* owned */
} th_t;

typedef struct th_res_s {
    int done;                      /* callback count */
    int err;                       /* result err */
    char detail[512];              /* error detail */
    size_t nfields;                /* fields copied */
    char names[TH_MAX_FIELDS][32]; /* field names */
    char *values[TH_MAX_FIELDS];   /* owned copies (th_res_clear) */
    size_t lens[TH_MAX_FIELDS];    /* value lengths */
} th_res_t;

static inline void th_res_clear(th_res_t *r)
{
    for (size_t i = 0; i < r->nfields; i++)
        free(r->values[i]);
    memset(r, 0, sizeof(*r));
}

static inline void th_on_result(const seatd_store_result_t *res, void *data)
{
    th_res_t *r = data;
    r->done++;
    r->err = res->err;
    snprintf(r->detail, sizeof(r->detail), "%s", res->detail ? res->detail : "");
    for (size_t i = 0; i < res->nfields && r->nfields < TH_MAX_FIELDS; i++) {
        size_t k = r->nfields++;
        snprintf(r->names[k], sizeof(r->names[k]), "%s", res->names[i]);
        r->values[k] = malloc(res->lens[i] + 1);
        memcpy(r->values[k], res->values[i], res->lens[i] + 1);
        r->lens[k] = res->lens[i];
    }
}

/* The value of field 'name' or NULL. */
static inline const char *th_get(const th_res_t *r, const char *name)
{
    for (size_t i = 0; i < r->nfields; i++)
        if (strcmp(r->names[i], name) == 0)
            return r->values[i];
    return NULL;
}

static inline long long th_get_ll(const th_res_t *r, const char *name)
{
    const char *v = th_get(r, name);
    return v ? atoll(v) : -1;
}

static inline int th_open(th_t *t)
{
    memset(t, 0, sizeof(*t));
    seatd_log_set_level(SEATD_LOG_WARN);
    t->loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {0};
    o.port = seatd_test_redis_port();
    o.cluster_nodes = getenv("SEATD_TEST_CLUSTER_NODES"); /* cluster mode when set */
    o.pool_size = 1;
    o.timeout_ms = 4000;
    t->rds = seatd_rds_new(t->loop, &o);
    if (t->rds == NULL)
        return -1;
    t->scripts = seatd_scripts_new(t->rds);
    t->store = seatd_store_new(t->scripts);
    return 0;
}

/* Returns 0 if the loop closed cleanly. */
static inline int th_close(th_t *t)
{
    seatd_store_free(t->store);
    seatd_scripts_free(t->scripts);
    seatd_rds_close(t->rds);
    return seatd_test_loop_free(t->loop);
}

/* Runs the loop until 'r' got its callback. Returns r->err, or -1 on a watchdog timeout. */
static inline int th_wait(th_t *t, th_res_t *r)
{
    if (seatd_test_loop_run_until(t->loop, &r->done, TH_WAIT_MS) < 0 || r->done != 1)
        return -1;
    return r->err;
}

/* Queued-or-not helper: 'rc' is the synchronous return of a store call. */
static inline int th_finish(th_t *t, th_res_t *r, int rc)
{
    if (rc < 0) {
        r->err = rc;
        return rc;
    }
    return th_wait(t, r);
}

/* ---------------------------------------------------------------------- operations */

/* The seats array of a layout of the NULL-terminated 'seats' (index order, tier "standard",
 * row the id's first letter) into 'out' ('cap' bytes). Returns the number of seats. */
static inline size_t th_seats_json(char *out, size_t cap, const char *const *seats)
{
    size_t n = 0, off = (size_t)snprintf(out, cap, "[");
    for (; seats[n]; n++)
        off += (size_t)snprintf(out + off, cap - off,
                                "%s{\"id\":\"%s\",\"row\":\"%c\",\"number\":%zu,"
                                "\"tier\":\"standard\",\"x\":%zu,\"y\":0}",
                                n ? "," : "", seats[n], seats[n][0], n, n);
    snprintf(out + off, cap - off, "]");
    return n;
}

/* Creates show 'show' with the NULL-terminated 'seats' (index order), holdTtlMs 'ttl_ms',
 * the price tiers 'tiers' (JSON), and the optional meta extras 'extra' and channels
 * 'channels' (seatd_show_args_t's; NULL for none). */
static inline int th_create_show_with(th_t *t, const char *show, const char *const *seats,
                                      long long ttl_ms, const char *tiers, const char *extra,
                                      const char *channels)
{
    char layout[8192], arr[8000];
    size_t n = th_seats_json(arr, sizeof(arr), seats);
    snprintf(layout, sizeof(layout), "{\"showId\":\"%s\",\"seats\":%s}", show, arr);
    seatd_show_args_t a = {0};
    a.show_id = show;
    a.title = "Test show";
    a.starts_at_ms = 1800000000000LL;
    a.hold_ttl_ms = ttl_ms;
    a.price_tiers_json = tiers;
    a.layout_json = layout;
    a.seat_ids = seats;
    a.nseats = n;
    a.extra_json = extra;
    a.channels_json = channels;
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

/* Creates show 'show' with the NULL-terminated 'seats' (index order), holdTtlMs 'ttl_ms'. */
static inline int th_create_show(th_t *t, const char *show, const char *const *seats,
                                 long long ttl_ms)
{
    return th_create_show_with(t, show, seats, ttl_ms, "{\"standard\":1200}", NULL, NULL);
}

/* Creates group 'gid' (a fresh id of the first show's, into 'gid') of the 'n' shows 'ids'. */
static inline int th_group_create(th_t *t, const char *const *ids, size_t n, char *gid)
{
    th_res_t r = {0};
    if (seatd_keys_new_id(gid, ids[0], 'g') < 0)
        return -1;
    int rc = th_finish(t, &r,
                       seatd_store_group_create(t->store, gid, "Season", ids, n, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

/* Holds 'seats' ('n') of layout 'seats_all' (NULL-terminated: the shows' seats) in shows
 * 'shows[0..nshows)' of group 'gid' for 'owner' (one group hold; its id into 'mid'). */
static inline int th_group_hold(th_t *t, th_res_t *r, const char *gid, const char *owner,
                                const char *const *shows, size_t nshows,
                                const char *const *seats_all, const char *const *seats, size_t n,
                                char *mid)
{
    seatd_layout_t *l = NULL;
    char arr[1024];
    th_seats_json(arr, sizeof(arr), seats_all);
    cJSON *doc = cJSON_Parse(arr);
    seatd_group_leg_t legs[4];
    if (nshows > 4 || seatd_layout_from_json(doc, NULL, &l, NULL, 0) < 0 ||
        seatd_keys_new_id(mid, shows[0], 'm') < 0) {
        cJSON_Delete(doc);
        return -1;
    }
    for (size_t i = 0; i < nshows; i++)
        legs[i] = (seatd_group_leg_t){shows[i], l};
    seatd_group_hold_args_t a = {.group_id = gid,
                                 .hold_id = mid,
                                 .owner = owner,
                                 .max_per_user = 0,
                                 .request = "named",
                                 .legs = legs,
                                 .nlegs = nshows,
                                 .seat_ids = seats,
                                 .nseats = n};
    th_res_clear(r);
    int rc = th_finish(t, r, seatd_store_group_hold(t->store, &a, th_on_result, r));
    seatd_layout_free(l);
    cJSON_Delete(doc);
    return rc;
}

/* book_begin of group hold 'mid' (of first show 'show') for 'owner': one payment for every
 * show's hold, priced in the store, under a fresh id (into 'pay_id'). */
static inline int th_pay_begin(th_t *t, th_res_t *r, const char *show, const char *mid,
                               const char *owner, char *pay_id)
{
    th_res_clear(r);
    if (seatd_keys_new_id(pay_id, show, 'b') < 0)
        return -1;
    seatd_book_args_t a = {.hold_id = mid,
                           .owner = owner,
                           .booking_id = pay_id,
                           .amount = SEATD_BOOK_PRICE_IN_STORE,
                           .currency = "EUR",
                           .payment_method = "tok_ok",
                           .payment_window_ms = 60000};
    return th_finish(t, r, seatd_store_book_begin(t->store, &a, th_on_result, r));
}

/* The booking of show 'show' in group payment 'pay_id' of show "1" (its record's 'members'),
 * into 'out' (SEATD_ID_MAX). Returns 0, or -1 when the payment names none. */
static inline int th_payment_member(redisContext *c, const char *pay_id, const char *show,
                                    char *out)
{
    char members[512], want[SEATD_ID_MAX + 2];
    redisReply *rep = seatd_test_redis_command(c, "HGET {s:1}:booking:%s members", pay_id);
    int ok = rep && rep->type == REDIS_REPLY_STRING && rep->len < sizeof(members);
    if (ok)
        memcpy(members, rep->str, rep->len + 1);
    freeReplyObject(rep);
    if (!ok)
        return -1;
    snprintf(want, sizeof(want), "%s:", show);
    for (char *save = NULL, *m = strtok_r(members, ",", &save); m; m = strtok_r(NULL, ",", &save))
        if (strncmp(m, want, strlen(want)) == 0) {
            snprintf(out, SEATD_ID_MAX, "%s", m + strlen(want));
            return 0;
        }
    return -1;
}

/* Holds the NULL-terminated 'seats' with a fresh hold id; 'idem' may be NULL. */
/* Fills 'a' for a hold of the 'n' seats 'seats' (may be NULL when 'n' is 0) by 'owner' on
 * 'show', with idempotency key 'idem' (may be NULL), 'ttl_ms' and 'max' as th_hold's, under a
 * fresh hold id written to 'hold_id' (SEATD_ID_MAX bytes, which 'a' then points at). Returns
 * 0, or -1 when no id could be made. */
static inline int th_hold_args(seatd_hold_args_t *a, char *hold_id, const char *show,
                               const char *owner, const char *const *seats, size_t n,
                               const char *idem, long long ttl_ms, int max)
{
    if (seatd_keys_new_id(hold_id, show, 'h') < 0)
        return -1;
    memset(a, 0, sizeof(*a));
    a->show_id = show;
    a->hold_id = hold_id;
    a->owner = owner;
    a->seat_ids = seats;
    a->nseats = n;
    a->idem_key = idem;
    a->ttl_ms = ttl_ms;
    a->max_per_user = max;
    return 0;
}

static inline int th_hold(th_t *t, th_res_t *r, const char *show, const char *owner,
                          const char *const *seats, long long ttl_ms, int max, const char *idem)
{
    char hold_id[SEATD_ID_MAX];
    size_t n = 0;
    while (seats[n])
        n++;
    th_res_clear(r);
    seatd_hold_args_t a;
    if (th_hold_args(&a, hold_id, show, owner, seats, n, idem, ttl_ms, max) < 0)
        return -1;
    return th_finish(t, r, seatd_store_hold(t->store, &a, th_on_result, r));
}

static inline int th_release(th_t *t, th_res_t *r, const char *hold_id, const char *owner)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_release(t->store, hold_id, owner, th_on_result, r));
}

static inline int th_hold_get(th_t *t, th_res_t *r, const char *hold_id, const char *owner)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_hold_get(t->store, hold_id, owner, th_on_result, r));
}

/* book_begin with a fresh booking id, amount 2400 EUR, tok_ok. */
static inline int th_book_begin(th_t *t, th_res_t *r, const char *show, const char *hold_id,
                                const char *owner, long long window_ms)
{
    char booking_id[SEATD_ID_MAX];
    th_res_clear(r);
    if (seatd_keys_new_id(booking_id, show, 'b') < 0)
        return -1;
    seatd_book_args_t a = {0};
    a.hold_id = hold_id;
    a.owner = owner;
    a.booking_id = booking_id;
    a.amount = 2400;
    a.currency = "EUR";
    a.payment_method = "tok_ok";
    a.payment_window_ms = window_ms;
    return th_finish(t, r, seatd_store_book_begin(t->store, &a, th_on_result, r));
}

static inline int th_book_confirm(th_t *t, th_res_t *r, const char *booking_id)
{
    th_res_clear(r);
    return th_finish(t, r,
                     seatd_store_book_confirm(t->store, booking_id, "pay_1", th_on_result, r));
}

static inline int th_book_fail(th_t *t, th_res_t *r, const char *booking_id)
{
    th_res_clear(r);
    return th_finish(t, r,
                     seatd_store_book_fail(t->store, booking_id, "declined", th_on_result, r));
}

static inline int th_reap(th_t *t, th_res_t *r, const char *show)
{
    th_res_clear(r);
    return th_finish(t, r, seatd_store_reap(t->store, show, 1000, th_on_result, r));
}

/* ---------------------------------------------------------------------- direct reads */

/* The name of function 'fn' ("seatd_hold") to FCALL directly: versioned on a cluster
 * (scripts.h). Returns one of 8 static buffers, reused in turn. */
static inline const char *th_fn(const char *fn)
{
    static char names[8][64];
    static int next;
    char *out = names[next++ % 8];
    return seatd_scripts_function_name(seatd_test_redis_is_cluster(), fn, out, sizeof(names[0]));
}

/* A synchronous command on 'c' returning an integer (or -1000 on anything else); it follows
 * a cluster's redirections (seatd_test_redis_command). */
static inline long long th_int(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = seatd_test_redis_vcommand(c, fmt, ap);
    va_end(ap);
    long long v = (rep && rep->type == REDIS_REPLY_INTEGER) ? rep->integer : -1000;
    freeReplyObject(rep);
    return v;
}

/* A synchronous command returning a string copied into 'out' ("" for nil). Returns 1 if a
 * string came back, 0 for nil, -1 otherwise. */
static inline int th_str(redisContext *c, char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = seatd_test_redis_vcommand(c, fmt, ap);
    va_end(ap);
    int rc = -1;
    out[0] = '\0';
    if (rep && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS)) {
        snprintf(out, cap, "%.*s", (int)rep->len, rep->str);
        rc = 1;
    } else if (rep && rep->type == REDIS_REPLY_NIL) {
        rc = 0;
    }
    freeReplyObject(rep);
    return rc;
}

/* For tests that call the functions raw: opens 't', creates show "1" of the NULL-terminated
 * 'seats' with holdTtlMs 'ttl_ms', connects to Redis directly ('*c', owned) and copies the
 * show's layoutHash into 'hash'. Returns 0, or -1 when a step failed. */
static inline int th_open_raw_show(th_t *t, const char *const *seats, long long ttl_ms,
                                   redisContext **c, char *hash, size_t cap)
{
    if (th_open(t) != 0 || th_create_show(t, "1", seats, ttl_ms) != 0)
        return -1;
    *c = seatd_test_redis_connect();
    if (*c == NULL)
        return -1;
    return th_str(*c, hash, cap, "HGET {s:1}:meta layoutHash") == 1 ? 0 : -1;
}

static int th_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A snapshot of the whole keyspace: every key with its type, its value (DUMP, hex) and
 * whether it has a TTL, sorted by key. Returns owned text (free()).
 */
static inline char *th_snapshot(redisContext *c)
{
    redisReply *keys = redisCommand(c, "KEYS *");
    if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(keys);
        return strdup("?");
    }
    char **names = calloc(keys->elements + 1, sizeof(*names));
    for (size_t i = 0; i < keys->elements; i++)
        names[i] = keys->element[i]->str;
    qsort(names, keys->elements, sizeof(*names), th_cmp_str);
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *d = redisCommand(c, "DUMP %s", names[i]);
        long long ttl = th_int(c, "PTTL %s", names[i]);
        size_t need = strlen(names[i]) + (d ? d->len * 2 : 0) + 64;
        while (len + need >= cap) {
            cap *= 2;
            out = realloc(out, cap);
        }
        len += (size_t)snprintf(out + len, cap - len, "%s ttl=%d ", names[i], ttl >= 0);
        for (size_t k = 0; d && d->type == REDIS_REPLY_STRING && k < d->len; k++)
            len += (size_t)snprintf(out + len, cap - len, "%02x", (unsigned char)d->str[k]);
        len += (size_t)snprintf(out + len, cap - len, "\n");
        freeReplyObject(d);
    }
    free(names);
    freeReplyObject(keys);
    return out;
}

static inline void th_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Redis's clock (TIME) in epoch ms, or -1. */
static inline long long th_redis_ms(redisContext *c)
{
    redisReply *t = redisCommand(c, "TIME");
    long long ms = -1;
    if (t && t->type == REDIS_REPLY_ARRAY && t->elements == 2)
        ms = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    return ms;
}

/* Waits until Redis's clock reads 'at' ms or later: the event a hold's deadline is measured
 * against (every script takes its time from TIME). Polls every millisecond; gives up after
 * 'limit_ms' of Redis time past the call. Returns 0, or -1 if the clock never got there. */
static inline int th_wait_redis_ms(redisContext *c, long long at, long limit_ms)
{
    long long now = th_redis_ms(c), stop = now + limit_ms;
    while (now >= 0 && now < at && now < stop) {
        th_sleep_ms(1);
        now = th_redis_ms(c);
    }
    return now >= at ? 0 : -1;
}

#endif
