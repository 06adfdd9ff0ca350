/*
 * store.c - typed seat operations over the seatd Functions library; see store.h.
 *
 * Every operation validates its ids (keys.h), formats KEYS/ARGV, queues one FCALL through
 * scripts.c and decodes the reply in on_reply(), which runs the caller's callback exactly
 * once. The only operation made of two calls is create_show: the show (its own slot) and
 * then the catalogue entry (seatd:shows, another slot).
 *
 * hiredis is included here only to read the reply structure handed to us by rds.c.
 */
#include "store.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "keys.h"
#include "log.h"
#include "mem.h"

struct seatd_store_s {
    seatd_scripts_t *scripts; /* borrowed */
};

/* One queued operation: the caller's callback and what create_show needs to chain. */
typedef struct store_op_s {
    seatd_store_t *st;          /* borrowed */
    seatd_store_cb cb;          /* the caller's callback, run exactly once */
    void *data;                 /* the caller's context */
    char show_id[SEATD_ID_MAX]; /* create_show: the show to catalogue */
    char starts_at[24];         /* create_show: its catalogue score */
} store_op_t;

#define MAX_DECODED_FIELDS 4096 /* list_shows pages are bounded well below this */

/* ---------------------------------------------------------------------- results */

const char *seatd_store_get(const seatd_store_result_t *res, const char *name, size_t *len)
{
    for (size_t i = 0; res != NULL && i < res->nfields; i++) {
        if (strcmp(res->names[i], name) == 0) {
            if (len != NULL)
                *len = res->lens[i];
            return res->values[i];
        }
    }
    return NULL;
}

int64_t seatd_store_get_int(const seatd_store_result_t *res, const char *name, int64_t dflt)
{
    const char *v = seatd_store_get(res, name, NULL);
    if (v == NULL || *v == '\0')
        return dflt;
    char *end;
    long long n = strtoll(v, &end, 10);
    return *end == '\0' ? (int64_t)n : dflt;
}

/* Storage behind a decoded result, freed after the callback. */
typedef struct decoded_s {
    seatd_store_result_t res; /* what the callback sees */
    char *detail;             /* owned copy of the error detail */
    char *wordbuf;            /* owned, the detail with spaces replaced by NULs */
    const char **words;       /* owned array */
    const char **names;       /* owned array */
    const char **values;      /* owned array */
    size_t *lens;             /* owned array */
    char (*ints)[24];         /* owned: integer elements printed as text */
} decoded_t;

static void decoded_free(decoded_t *d)
{
    free(d->detail);
    free(d->wordbuf);
    free(d->words);
    free(d->names);
    free(d->values);
    free(d->lens);
    free(d->ints);
}

/* An error reply "<WORD> detail…" (possibly "ERR <WORD> …") -> err, detail, words. */
static void decode_error(decoded_t *d, const char *s, size_t len)
{
    const char *p = s, *end = s + len;
    if (len >= 4 && memcmp(s, "ERR ", 4) == 0)
        p += 4;
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    const char *wend = sp ? sp : end;
    d->res.err = seatd_err_from_lua_word(p, (unsigned long)(wend - p));
    /* Redis's own transient states: replaying its AOF, a busy script, a read-only replica
     * after failover, out of memory under noeviction. Retry later, elsewhere: 503. */
    static const char *transient[] = {"LOADING", "BUSY", "READONLY", "OOM", "MASTERDOWN",
                                      "TRYAGAIN", "CLUSTERDOWN"};
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        if ((size_t)(wend - p) == strlen(transient[i]) &&
            memcmp(p, transient[i], (size_t)(wend - p)) == 0)
            d->res.err = SEATD_EUNAVAILABLE;
    if (d->res.err == SEATD_EINTERNAL || d->res.err == SEATD_EUNAVAILABLE) {
        seatd_buf_t b = SEATD_BUF_INIT;
        seatd_buf_json_escape(&b, s, len > 200 ? 200 : len);
        seatd_log(SEATD_LOG_WARN, NULL, "unexpected redis error", "\"reply\":\"%s\"",
                  b.data ? b.data : "");
        seatd_buf_free(&b);
    }
    const char *rest = sp ? sp + 1 : end;
    size_t rlen = (size_t)(end - rest);
    if (rlen == 1 && rest[0] == '-')
        rlen = 0; /* the scripts' "no detail" placeholder */
    d->detail = seatd_strndup(rest, rlen);
    d->wordbuf = seatd_strndup(rest, rlen);
    d->words = seatd_calloc(rlen / 2 + 1, sizeof(*d->words));
    size_t nw = 0;
    char *q = d->wordbuf;
    while (*q) {
        while (*q == ' ')
            *q++ = '\0';
        if (*q == '\0')
            break;
        d->words[nw++] = q;
        while (*q && *q != ' ')
            q++;
    }
    d->res.detail = d->detail;
    d->res.words = d->words;
    d->res.nwords = nw;
}

/* An array of name/value pairs -> fields. Returns 0 or SEATD_EPROTO. */
static int decode_fields(decoded_t *d, const redisReply *r)
{
    if (r->elements % 2 != 0 || r->elements / 2 > MAX_DECODED_FIELDS)
        return SEATD_EPROTO;
    size_t n = r->elements / 2;
    d->names = seatd_calloc(n + 1, sizeof(*d->names));
    d->values = seatd_calloc(n + 1, sizeof(*d->values));
    d->lens = seatd_calloc(n + 1, sizeof(*d->lens));
    d->ints = seatd_calloc(n + 1, sizeof(*d->ints));
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = r->element[2 * i], *v = r->element[2 * i + 1];
        if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS)
            return SEATD_EPROTO;
        d->names[i] = k->str;
        switch (v->type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
            d->values[i] = v->str;
            d->lens[i] = v->len;
            break;
        case REDIS_REPLY_INTEGER:
            snprintf(d->ints[i], sizeof(d->ints[i]), "%lld", v->integer);
            d->values[i] = d->ints[i];
            d->lens[i] = strlen(d->ints[i]);
            break;
        case REDIS_REPLY_NIL:
            d->values[i] = "";
            d->lens[i] = 0;
            break;
        default:
            return SEATD_EPROTO;
        }
    }
    d->res.nfields = n;
    d->res.names = d->names;
    d->res.values = d->values;
    d->res.lens = d->lens;
    return 0;
}

static void decode(decoded_t *d, const redisReply *r, int err)
{
    memset(d, 0, sizeof(*d));
    d->res.detail = "";
    if (err != 0) {
        d->res.err = err;
    } else if (r == NULL) {
        d->res.err = SEATD_EPROTO;
    } else if (r->type == REDIS_REPLY_ERROR) {
        decode_error(d, r->str ? r->str : "", r->str ? r->len : 0);
    } else if (r->type != REDIS_REPLY_ARRAY) {
        d->res.err = SEATD_EPROTO;
    } else {
        int rc = decode_fields(d, r);
        if (rc < 0) {
            d->res.err = rc;
            d->res.nfields = 0;
        }
    }
}

/* ---------------------------------------------------------------------- calling */

static void on_reply(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    decode(&d, reply, err);
    op->cb(&d.res, op->data);
    decoded_free(&d);
    free(op);
}

static store_op_t *op_new(seatd_store_t *st, seatd_store_cb cb, void *data)
{
    store_op_t *op = seatd_calloc(1, sizeof(*op));
    op->st = st;
    op->cb = cb;
    op->data = data;
    return op;
}

/* Queues FCALL 'fn' with one key; takes 'op' (freed here if nothing was queued). */
static int fcall(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                 const size_t *lens, seatd_rds_reply_cb cb)
{
    const char *keys[1] = {key};
    int rc = seatd_scripts_fcall(op->st->scripts, fn, 1, keys, nargs, args, lens, cb, op);
    if (rc < 0)
        free(op);
    return rc;
}

/* The meta key of the show named by 'id' (a hold or booking id of kind 'kind'). */
static int meta_of_id(char *key, const char *id, char kind)
{
    char show[SEATD_ID_MAX];
    int rc = seatd_keys_parse_id(id, kind, show);
    if (rc < 0)
        return rc;
    return seatd_keys_show(key, show, "meta");
}

seatd_store_t *seatd_store_new(seatd_scripts_t *scripts)
{
    seatd_store_t *st = seatd_calloc(1, sizeof(*st));
    st->scripts = scripts;
    return st;
}

void seatd_store_free(seatd_store_t *st)
{
    free(st);
}

/* ---------------------------------------------------------------------- shows */

/* The catalogue answer of a created show: success whatever happened to the catalogue entry
 * (the show exists; a missing entry is logged and reported as catalogued=0). */
static void on_catalogued(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    int ok = err == 0 && reply != NULL && reply->type == REDIS_REPLY_ARRAY;
    if (!ok)
        seatd_log(SEATD_LOG_WARN, NULL, "show created but not catalogued", "\"showId\":\"%s\"",
                  op->show_id);
    const char *names[] = {"showId", "version", "catalogued"};
    const char *values[] = {op->show_id, "0", ok ? "1" : "0"};
    size_t lens[] = {strlen(op->show_id), 1, 1};
    seatd_store_result_t res = {0, "", 0, NULL, 3, names, values, lens};
    op->cb(&res, op->data);
    free(op);
}

static void on_show_created(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    decode(&d, reply, err);
    if (d.res.err != 0) {
        op->cb(&d.res, op->data);
        decoded_free(&d);
        free(op);
        return;
    }
    decoded_free(&d);
    const char *keys[1] = {SEATD_KEY_CATALOGUE};
    const char *args[2] = {op->starts_at, op->show_id};
    if (seatd_scripts_fcall(op->st->scripts, "seatd_catalogue_add", 1, keys, 2, args, NULL,
                            on_catalogued, op) < 0)
        on_catalogued(NULL, SEATD_EUNAVAILABLE, op);
}

int seatd_store_create_show(seatd_store_t *st, const seatd_show_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX], starts[24], ttl[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    if (a->title == NULL || a->price_tiers_json == NULL || a->layout_json == NULL ||
        a->hold_ttl_ms <= 0 || a->nseats == 0 || a->nseats > 100000)
        return SEATD_EINVAL;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    snprintf(starts, sizeof(starts), "%" PRId64, a->starts_at_ms);
    snprintf(ttl, sizeof(ttl), "%" PRId64, a->hold_ttl_ms);
    const char **args = seatd_calloc(6 + a->nseats, sizeof(*args));
    args[0] = a->title;
    args[1] = starts;
    args[2] = ttl;
    args[3] = a->price_tiers_json;
    args[4] = a->layout_json;
    args[5] = a->extra_json ? a->extra_json : "";
    for (size_t i = 0; i < a->nseats; i++)
        args[6 + i] = a->seat_ids[i];
    store_op_t *op = op_new(st, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", a->show_id);
    memcpy(op->starts_at, starts, sizeof(starts));
    rc = fcall(op, "seatd_create_show", key, (int)(6 + a->nseats), args, NULL, on_show_created);
    free(args);
    return rc;
}

int seatd_store_next_show_id(seatd_store_t *st, seatd_store_cb cb, void *data)
{
    return fcall(op_new(st, cb, data), "seatd_next_show_id", SEATD_KEY_SHOW_SEQ, 0, NULL, NULL,
                 on_reply);
}

/* A no-argument read of one show's function 'fn'. */
static int show_read(seatd_store_t *st, const char *fn, const char *show_id, seatd_store_cb cb,
                     void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    return fcall(op_new(st, cb, data), fn, key, 0, NULL, NULL, on_reply);
}

int seatd_store_show_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, "seatd_show_get", show_id, cb, data);
}

int seatd_store_layout_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, "seatd_layout_get", show_id, cb, data);
}

int seatd_store_seatmap(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, "seatd_seatmap", show_id, cb, data);
}

int seatd_store_list_shows(seatd_store_t *st, long offset, long count, seatd_store_cb cb,
                           void *data)
{
    char off[24], cnt[24];
    if (offset < 0 || count < 0 || count > 1000)
        return SEATD_EINVAL;
    snprintf(off, sizeof(off), "%ld", offset);
    snprintf(cnt, sizeof(cnt), "%ld", count);
    const char *args[2] = {off, cnt};
    return fcall(op_new(st, cb, data), "seatd_list_shows", SEATD_KEY_CATALOGUE, 2, args, NULL,
                 on_reply);
}

/* ---------------------------------------------------------------------- holds */

int seatd_store_hold(seatd_store_t *st, const seatd_hold_args_t *a, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX], ttl[24], max[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    rc = seatd_keys_parse_id(a->hold_id, 'h', show);
    if (rc < 0 || strcmp(show, a->show_id) != 0 || !seatd_keys_valid_sub(a->owner))
        return SEATD_EBADID;
    if (a->idem_key != NULL && a->idem_key[0] != '\0' && !seatd_keys_valid_idem_key(a->idem_key))
        return SEATD_EBADID;
    if (a->ttl_ms < 0 || a->max_per_user < 0)
        return SEATD_EINVAL;
    if (a->nseats > 1000)
        return SEATD_ETOOMANY;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    snprintf(ttl, sizeof(ttl), "%" PRId64, a->ttl_ms);
    snprintf(max, sizeof(max), "%d", a->max_per_user);
    const char **args = seatd_calloc(5 + a->nseats, sizeof(*args));
    args[0] = a->hold_id;
    args[1] = a->owner;
    args[2] = ttl;
    args[3] = max;
    args[4] = a->idem_key ? a->idem_key : "";
    for (size_t i = 0; i < a->nseats; i++)
        args[5 + i] = a->seat_ids[i];
    rc = fcall(op_new(st, cb, data), "seatd_hold", key, (int)(5 + a->nseats), args, NULL, on_reply);
    free(args);
    return rc;
}

/* hold_get and release: (hold id, owner). */
static int hold_owner_call(seatd_store_t *st, const char *fn, const char *hold_id,
                           const char *owner, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, hold_id, 'h');
    if (rc < 0)
        return rc;
    if (!seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[2] = {hold_id, owner};
    return fcall(op_new(st, cb, data), fn, key, 2, args, NULL, on_reply);
}

int seatd_store_hold_get(seatd_store_t *st, const char *hold_id, const char *owner,
                         seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, "seatd_hold_get", hold_id, owner, cb, data);
}

int seatd_store_release(seatd_store_t *st, const char *hold_id, const char *owner,
                        seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, "seatd_release", hold_id, owner, cb, data);
}

/* ---------------------------------------------------------------------- bookings */

int seatd_store_book_begin(seatd_store_t *st, const seatd_book_args_t *a, seatd_store_cb cb,
                           void *data)
{
    char key[SEATD_KEY_MAX], show_h[SEATD_ID_MAX], show_b[SEATD_ID_MAX], amount[24], win[24];
    if (seatd_keys_parse_id(a->hold_id, 'h', show_h) < 0 ||
        seatd_keys_parse_id(a->booking_id, 'b', show_b) < 0 || strcmp(show_h, show_b) != 0 ||
        !seatd_keys_valid_sub(a->owner))
        return SEATD_EBADID;
    if (a->amount < 0 || a->payment_window_ms <= 0)
        return SEATD_EINVAL;
    int rc = seatd_keys_show(key, show_h, "meta");
    if (rc < 0)
        return rc;
    snprintf(amount, sizeof(amount), "%" PRId64, a->amount);
    snprintf(win, sizeof(win), "%" PRId64, a->payment_window_ms);
    const char *args[7] = {a->hold_id,
                           a->owner,
                           a->booking_id,
                           amount,
                           a->currency ? a->currency : "",
                           a->payment_method ? a->payment_method : "",
                           win};
    return fcall(op_new(st, cb, data), "seatd_book_begin", key, 7, args, NULL, on_reply);
}

/* book_confirm, book_fail: (booking id, text). */
static int booking_text_call(seatd_store_t *st, const char *fn, const char *booking_id,
                             const char *text, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    const char *args[2] = {booking_id, text ? text : ""};
    return fcall(op_new(st, cb, data), fn, key, 2, args, NULL, on_reply);
}

int seatd_store_book_confirm(seatd_store_t *st, const char *booking_id, const char *payment_ref,
                             seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_book_confirm", booking_id, payment_ref, cb, data);
}

int seatd_store_book_fail(seatd_store_t *st, const char *booking_id, const char *reason,
                          seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_book_fail", booking_id, reason, cb, data);
}

int seatd_store_booking_get(seatd_store_t *st, const char *booking_id, const char *owner,
                            seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[2] = {booking_id, owner ? owner : ""};
    return fcall(op_new(st, cb, data), "seatd_booking_get", key, 2, args, NULL, on_reply);
}

int seatd_store_cancel(seatd_store_t *st, const char *booking_id, const char *owner, int64_t refund,
                       seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    if (refund < 0)
        return SEATD_EINVAL;
    snprintf(amount, sizeof(amount), "%" PRId64, refund);
    const char *args[3] = {booking_id, owner ? owner : "", amount};
    return fcall(op_new(st, cb, data), "seatd_cancel", key, 3, args, NULL, on_reply);
}

int seatd_store_book_fail_refunded(seatd_store_t *st, const char *booking_id, const char *reason,
                                   int64_t refund, const char *refund_ref, seatd_store_cb cb,
                                   void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (refund < 0)
        return SEATD_EINVAL;
    snprintf(amount, sizeof(amount), "%" PRId64, refund);
    const char *args[4] = {booking_id, reason ? reason : "", amount, refund_ref ? refund_ref : ""};
    return fcall(op_new(st, cb, data), "seatd_book_fail", key, 4, args, NULL, on_reply);
}

int seatd_store_cancel_by_policy(seatd_store_t *st, const char *booking_id, const char *owner,
                                 seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[3] = {booking_id, owner ? owner : "", "policy"};
    return fcall(op_new(st, cb, data), "seatd_cancel", key, 3, args, NULL, on_reply);
}

int seatd_store_refund_done(seatd_store_t *st, const char *booking_id, const char *refund_ref,
                            seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_refund_done", booking_id, refund_ref, cb, data);
}

int seatd_store_pending_due(seatd_store_t *st, const char *show_id, int64_t min_age_ms, int max,
                            seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], age[24], n[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (min_age_ms < 0 || max < 1 || max > 1000)
        return SEATD_EINVAL;
    snprintf(age, sizeof(age), "%" PRId64, min_age_ms);
    snprintf(n, sizeof(n), "%d", max);
    const char *args[2] = {age, n};
    return fcall(op_new(st, cb, data), "seatd_pending_due", key, 2, args, NULL, on_reply);
}

int seatd_store_hint_clear(seatd_store_t *st, const char *show_id, const char *score,
                           seatd_store_cb cb, void *data)
{
    if (!seatd_keys_valid_show_id(show_id) || score == NULL)
        return SEATD_EBADID;
    const char *args[2] = {show_id, score};
    return fcall(op_new(st, cb, data), "seatd_hint_clear", SEATD_KEY_PENDING_SHOWS, 2, args, NULL,
                 on_reply);
}

int seatd_store_reap(seatd_store_t *st, const char *show_id, int max, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], n[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (max < 1 || max > 10000)
        return SEATD_EINVAL;
    snprintf(n, sizeof(n), "%d", max);
    const char *args[1] = {n};
    return fcall(op_new(st, cb, data), "seatd_reap", key, 1, args, NULL, on_reply);
}
