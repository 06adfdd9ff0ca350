/*
 * store.c - typed seat operations over the seatd Functions library; see store.h.
 *
 * Every operation validates its ids (keys.h), formats KEYS/ARGV, queues one FCALL through
 * scripts.c and decodes the reply in on_reply(), which runs the caller's callback exactly
 * once. The only operation made of two calls is create_show: the show (its own slot) and
 * then the catalogue entry (seatd:shows, another slot).
 *
 * Replies are read through rds.h's accessors (hiredis stays inside rds.c). Each reply is
 * decoded once, in decode(): the raw name/value pairs, then the typed member of the
 * operation's kind from the field tables below.
 */
#include "store/store.h"
#include "store/functions.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/best.h"
#include "base/buf.h"
#include "base/fmt.h"
#include "store/hints.h"
#include "store/hold_batch.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/seats.h"
#include "store/store_internal.h"

/* ---------------------------------------------------------------------- calling */

void store__op_free(store_op_t *op)
{
    for (int i = 0; i < op->argc; i++)
        free(op->argv[i]);
    free(op->argv);
    seatd_layout_free(op->layout);
    free(op);
}

/* Keeps owned copies of 'n' strings as the op's arguments. */
void store__op_keep_args(store_op_t *op, int n, const char *const *args)
{
    op->argv = seatd_calloc((size_t)n + 1, sizeof(*op->argv));
    op->argc = n;
    for (int i = 0; i < n; i++)
        op->argv[i] = seatd_strdup(args[i]);
}

/* Ends a chain with the error 'err' through the callback. */
void store__op_fail(store_op_t *op, int err)
{
    decoded_t d = {.res = {.err = err, .detail = ""}};
    store__decode_typed(&d, (kind_t)op->kind);
    op->cb(&d.res, op->data);
    store__decoded_free(&d);
    store__op_free(op);
}

/* Decodes the reply of a link of a chain into 'd' (NULL: only whether it succeeded matters).
 * Returns 1 when it succeeded ('d' is then the caller's to free); else ends the chain with the
 * decoded error through the callback and returns 0. */
int store__link_ok(store_op_t *op, decoded_t *d, const struct redisReply *reply, int err)
{
    decoded_t own;
    if (d == NULL)
        d = &own;
    store__decode(d, reply, err, (kind_t)op->kind);
    if (d->res.err == 0) {
        if (d == &own)
            store__decoded_free(d);
        return 1;
    }
    op->cb(&d->res, op->data);
    store__decoded_free(d);
    store__op_free(op);
    return 0;
}

/* Files the hints of a succeeded operation (the need it created) before its callback runs. */
static void file_hints(const store_op_t *op, const seatd_store_result_t *res)
{
    /* A failed operation files nothing and must not reach the store: the replies of calls
     * still in flight when the Redis client closes arrive (as errors) after
     * seatd_store_free(). */
    if ((res->err != 0 && res->err != SEATD_ENOTDURABLE) || op->hints == 0)
        return; /* (a write not yet on a replica was made: its need is filed) */
    seatd_rds_t *rds = op->st->hints;
    const seatd_booking_result_t *b = &res->booking;
    if (rds == NULL)
        return;
    if (op->hints & HINT_DUE)
        seatd_hints_due(rds, op->show_id);
    if ((op->hints & HINT_PENDING) && !b->replayed)
        seatd_hints_pending(rds, op->show_id);
    if (op->hints & HINT_QUEUE)
        seatd_hints_queue(rds, op->show_id, (long long)res->queue.sales_close_at_ms);
    if ((op->hints & HINT_REFUND) && strcmp(b->refund_status, "pending") == 0 && b->refund > 0 &&
        b->payment_ref[0])
        seatd_hints_pending(rds, op->show_id);
    /* A group payment moved every show's hold (begin extends them, a failure gives them back
     * or ends them) and filed every show's booking: each show's sweeper and reconciler are
     * told, not only the first show's. */
    seatd_payment_member_t m;
    for (size_t at = 0; b->members && seatd_store_payment_member(b->members, &at, &m);) {
        if (op->hints & HINT_DUE)
            seatd_hints_due(rds, m.show_id);
        if ((op->hints & HINT_PENDING) && !b->replayed)
            seatd_hints_pending(rds, m.show_id);
    }
}

/* Marks 'op' to file 'hints' for the show named by 'id' (a hold or booking id of 'kind').
 * Returns 'op'. */
store_op_t *store__op_hint(store_op_t *op, unsigned hints, const char *id, char kind)
{
    if (seatd_keys_parse_id(id, kind, op->show_id) == 0)
        op->hints = hints;
    return op;
}

void store__on_reply(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    store__decode(&d, reply, err, (kind_t)op->kind);
    if (d.refused && op->kind == KIND_HOLD)
        store__propose_alternatives(&d, op->show_id);
    file_hints(op, &d.res);
    op->cb(&d.res, op->data);
    store__decoded_free(&d);
    store__op_free(op);
}

store_op_t *store__op_new(seatd_store_t *st, kind_t kind, seatd_store_cb cb, void *data)
{
    store_op_t *op = seatd_calloc(1, sizeof(*op));
    op->st = st;
    op->kind = kind;
    op->cb = cb;
    op->data = data;
    return op;
}

/* Queues FCALL 'fn' with one key; takes 'op' (freed here if nothing was queued). */
int store__fcall(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                 const size_t *lens, seatd_rds_reply_cb cb)
{
    const char *keys[1] = {key};
    int rc = seatd_scripts_fcall(op->st->scripts, fn, 1, keys, nargs, args, lens, cb, op);
    if (rc < 0)
        store__op_free(op);
    return rc;
}

/* The next link of a chain, from a callback: a call that cannot be queued ends the chain
 * with its error through the callback. */
void store__chain(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                  seatd_rds_reply_cb cb)
{
    const char *keys[1] = {key};
    int rc = seatd_scripts_fcall(op->st->scripts, fn, 1, keys, nargs, args, NULL, cb, op);
    if (rc < 0)
        store__op_fail(op, rc);
}

/* "seatd:layout:<hash>" into 'out' (SEATD_KEY_MAX bytes). */
void store__layout_key(char *out, const char *hash)
{
    snprintf(out, SEATD_KEY_MAX, LAYOUT_KEY_PREFIX "%s", hash);
}

static int valid_digest(const char *s, size_t len)
{
    if (s == NULL || len != SEATD_LAYOUT_DIGEST_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* The shared layout text from a seatd_layout_fetch reply; NULL after ending the chain with
 * an error (a show whose shared layout is missing is an internal error). 'd' is freed by the
 * caller when non-NULL was returned. */
static const char *shared_layout_text(store_op_t *op, decoded_t *d, const struct redisReply *reply,
                                      int err, size_t *len)
{
    store__decode(d, reply, err, (kind_t)op->kind);
    const char *text = d->res.err == 0 ? store__raw_get(&d->res, "seats", len) : NULL;
    if (text != NULL)
        return text;
    int e = d->res.err;
    if (e == 0 || e == SEATD_ENOTFOUND) {
        seatd_log(SEATD_LOG_ERROR, NULL, "shared layout missing",
                  "\"showId\":\"%s\",\"layoutHash\":\"%s\"", op->show_id, op->hash);
        e = SEATD_EINTERNAL;
    }
    store__decoded_free(d);
    store__op_fail(op, e);
    return NULL;
}

/* The last link of a layout fetch: the text to the chain's reader. */
static void on_shared_layout(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    size_t len = 0;
    const char *text = shared_layout_text(op, &d, reply, err, &len);
    if (text == NULL)
        return;
    op->layout_text(op, text, len); /* may end the chain: 'op' is not touched after */
    store__decoded_free(&d);
}

/* Keeps the show's layoutHash from a seatd_layout_get reply in op->hash and queues the read
 * of the shared layout, whose text goes to 'use'; or ends the chain with the reply's error. */
void store__fetch_shared_layout(store_op_t *op, const struct redisReply *reply, int err,
                                store_layout_text_cb use)
{
    decoded_t d;
    if (!store__link_ok(op, &d, reply, err))
        return;
    size_t len = 0;
    const char *hash = store__raw_get(&d.res, "layoutHash", &len);
    if (!valid_digest(hash, len)) {
        store__decoded_free(&d);
        seatd_log(SEATD_LOG_ERROR, NULL, "show meta has no valid layoutHash", "\"showId\":\"%s\"",
                  op->show_id);
        store__op_fail(op, SEATD_EINTERNAL);
        return;
    }
    memcpy(op->hash, hash, len + 1);
    store__decoded_free(&d);
    char key[SEATD_KEY_MAX];
    store__layout_key(key, op->hash);
    op->layout_text = use;
    store__chain(op, SEATD_FN_LAYOUT_FETCH, key, 0, NULL, on_shared_layout);
}

/* Ends the chain: the shared layout read is not the one the show's layoutHash names. */
void store__layout_mismatch(store_op_t *op)
{
    seatd_log(SEATD_LOG_ERROR, NULL, "shared layout does not match its hash",
              "\"showId\":\"%s\",\"layoutHash\":\"%s\"", op->show_id, op->hash);
    store__op_fail(op, SEATD_EINTERNAL);
}

/* The meta key of the show named by 'id' (a hold or booking id of kind 'kind'). */
int store__meta_of_id(char *key, const char *id, char kind)
{
    char show[SEATD_ID_MAX];
    int rc = seatd_keys_parse_id(id, kind, show);
    if (rc < 0)
        return rc;
    return seatd_keys_show(key, show, "meta");
}

/* store__meta_of_id(), and SEATD_EBADID when 'owner' (NULL: any) is not a valid user id. */
int store__meta_of_owned_id(char *key, const char *id, char kind, const char *owner)
{
    int rc = store__meta_of_id(key, id, kind);
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    return 0;
}

seatd_store_t *seatd_store_new(seatd_scripts_t *scripts)
{
    seatd_store_t *st = seatd_calloc(1, sizeof(*st));
    st->scripts = scripts;
    return st;
}

void seatd_store_set_hints(seatd_store_t *st, seatd_rds_t *rds)
{
    st->hints = rds;
}

void seatd_store_set_batching(seatd_store_t *st, struct uv_loop_s *loop, unsigned max,
                              unsigned in_flight)
{
    seatd_hold_batch_free(st->batch);
    st->batch = max > 1 ? seatd_hold_batch_new(loop, st->scripts, max, in_flight) : NULL;
}

void seatd_store_free(seatd_store_t *st)
{
    if (st == NULL)
        return;
    seatd_hold_batch_free(st->batch);
    free(st);
}

/* ------------------------------------------------------------------ fire and forget */

void seatd_store_forgotten(const seatd_store_result_t *res, void *what)
{
    if (res->err)
        seatd_store_forget(res->err, what);
}

void seatd_store_forget(int rc, const char *what)
{
    if (rc >= 0)
        return;
    seatd_metrics_inc(SEATD_METRIC_STORE_FORGOTTEN_FAILED);
    seatd_log(SEATD_LOG_WARN, NULL, "a write nobody waits for failed",
              "\"what\":\"%s\",\"error\":\"%s\"", what ? what : "?", seatd_err_name(rc));
}
