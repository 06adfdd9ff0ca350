/* holds.c - the store's hold operations (lua/hold.lua, lua/release.lua); see store.h. */
#include "store/store_internal.h"
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
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/seats.h"

/* ---------------------------------------------------------------------- holds */

/* Queues seatd_hold for 'op' (its reply runs store__on_reply): 'base' = hold id, owner, ttl, max,
 * idem; then the layout's digest and each seat with its bit in 'l', or "-" for a seat that is
 * not in 'l' (the script answers UNKNOWN_SEAT for it, in its own order of checks, once it has
 * checked that 'l' is the show's layout). With a 'request' (seatd_hold_args_t.request) the
 * call is seatd_hold_sell: the request, the number of pairs, the pairs, the candidates.
 * All borrowed, copied. Returns 0, or an error with 'op' untouched. */
static int hold_queue(store_op_t *op, const char *key, const char *const *base, const char *request,
                      const char *const *seats, size_t n, const char *const *cands, size_t ncands,
                      const seatd_layout_t *l)
{
    const char **args = seatd_calloc(8 + 2 * n + ncands, sizeof(*args));
    char(*bits)[24] = seatd_calloc(n ? n : 1, sizeof(*bits));
    char np[24];
    int argc = 0;
    for (int i = 0; i < 5; i++)
        args[argc++] = base[i];
    args[argc++] = seatd_layout_digest(l);
    if (request != NULL) {
        seatd_fmt_uint(np, n);
        args[argc++] = request;
        args[argc++] = np;
    }
    for (size_t i = 0; i < n; i++) {
        long bit = seatd_layout_find(l, seats[i]);
        if (bit >= 0)
            seatd_fmt_int(bits[i], bit);
        else
            memcpy(bits[i], "-", 2);
        args[argc++] = seats[i];
        args[argc++] = bits[i];
    }
    for (size_t i = 0; request != NULL && i < ncands; i++)
        args[argc++] = cands[i];
    char qkey[SEATD_KEY_MAX];
    const char *keys[2] = {key, qkey};
    int nkeys = 1;
    if (op->admitted && seatd_keys_show(qkey, op->show_id, "qadmit") == 0)
        nkeys = 2; /* the verified admission (hold.lua) */
    int rc;
    if (request != NULL && op->st->batch != NULL) /* with the show's other holds of this turn */
        rc = seatd_hold_batch_add(op->st->batch, key, nkeys == 2 ? qkey : NULL, argc, args,
                                  store__on_reply, op);
    else
        rc = seatd_scripts_fcall(op->st->scripts, request ? SEATD_FN_HOLD_SELL : SEATD_FN_HOLD,
                                 nkeys, keys, argc, args, NULL, store__on_reply, op);
    free(bits);
    free(args);
    return rc;
}

/* hold, slow path, last step: the show's layout 'l' (borrowed from the cache) is known to
 * be the one its meta names; op->argv = base arguments, the request ("" for none), the number
 * of seats, the seats, the candidates. */
static void hold_with_layout(store_op_t *op, const seatd_layout_t *l)
{
    const char *const *argv = (const char *const *)op->argv;
    size_t n = (size_t)strtoull(argv[6], NULL, 10);
    const char *request = argv[5][0] ? argv[5] : NULL;
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, op->show_id, "meta");
    if (rc == 0)
        rc = hold_queue(op, key, argv, request, argv + 7, n, argv + 7 + n, (size_t)op->argc - 7 - n,
                        l);
    if (rc < 0)
        store__op_fail(op, rc);
}

/* hold, slow path: the shared layout, parsed, checked against the show's layoutHash, cached. */
static void on_hold_layout_text(store_op_t *op, const char *text, size_t len)
{
    cJSON *arr = cJSON_ParseWithLength(text, len);
    seatd_layout_t *l = NULL;
    int rc = seatd_layout_from_json(arr, NULL, &l, NULL, 0);
    cJSON_Delete(arr);
    if (rc < 0 || strcmp(seatd_layout_digest(l), op->hash) != 0) {
        seatd_layout_free(l);
        store__layout_mismatch(op);
        return;
    }
    seatd_layout_cache_put(op->show_id, l);
    hold_with_layout(op, l);
}

/* hold, slow path: the show's layoutHash; the cached layout if it is that one. */
static void on_hold_layout_ref(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    const seatd_layout_t *l = seatd_layout_cache_get(op->show_id);
    if (l != NULL && err == 0 && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ARRAY) {
        decoded_t d;
        store__decode(&d, reply, err, (kind_t)op->kind);
        const char *hash = store__raw_get(&d.res, "layoutHash", NULL);
        int same = d.res.err == 0 && hash != NULL && strcmp(hash, seatd_layout_digest(l)) == 0;
        store__decoded_free(&d);
        if (same) {
            hold_with_layout(op, l);
            return;
        }
    }
    store__fetch_shared_layout(op, reply, err, on_hold_layout_text);
}

static int hold_start(seatd_store_t *st, const seatd_hold_args_t *a, seatd_store_cb cb, void *data)
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
    if (a->nseats > SEATD_SEATS_MAX_PER_HOLD)
        return SEATD_ETOOMANY;
    if (a->request != NULL && (strlen(a->request) > 64 || strchr(a->request, ' ') != NULL))
        return SEATD_EINVAL;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    seatd_fmt_int(ttl, a->ttl_ms);
    seatd_fmt_int(max, a->max_per_user);
    const char *base[5] = {a->hold_id, a->owner, ttl, max, a->idem_key ? a->idem_key : ""};
    store_op_t *op =
        store__op_hint(store__op_new(st, KIND_HOLD, cb, data), HINT_DUE, a->hold_id, 'h');
    seatd_fmt_copy(op->show_id, sizeof(op->show_id), a->show_id);
    op->admitted = a->admitted;
    /* Fast path: the layout is cached (the script checks that it is the show's). Otherwise ask
     * the show which layout it has, and read that one. */
    const seatd_layout_t *l = seatd_layout_cache_get(a->show_id);
    if (l != NULL) {
        rc = hold_queue(op, key, base, a->request, a->seat_ids, a->nseats, a->cands, a->ncands, l);
        if (rc < 0)
            store__op_free(op);
        return rc;
    }
    char nseats[SEATD_FMT_INT_MAX];
    seatd_fmt_uint(nseats, a->nseats);
    size_t nall = 7 + a->nseats + (a->request ? a->ncands : 0);
    const char **all = seatd_calloc(nall, sizeof(*all));
    memcpy(all, base, sizeof(base));
    all[5] = a->request ? a->request : "";
    all[6] = nseats;
    for (size_t i = 0; i < a->nseats; i++)
        all[7 + i] = a->seat_ids[i];
    for (size_t i = 0; a->request && i < a->ncands; i++)
        all[7 + a->nseats + i] = a->cands[i];
    store__op_keep_args(op, (int)nall, all);
    free(all);
    return store__fcall(op, SEATD_FN_LAYOUT_GET, key, 0, NULL, NULL, on_hold_layout_ref);
}

/* The per-user hold rate limit (issue 9): a fixed-window counter in Redis, counted before the
 * hold is tried (so refused and conflicting attempts count too). The hold's arguments are
 * copied to survive the round trip. */
typedef struct rate_op_s {
    seatd_store_t *st;
    seatd_store_cb cb;
    void *data;
    seatd_hold_args_t a; /* strings below, owned */
    char **seats;        /* owned copies of the seat ids */
    char **cands;        /* owned copies of the candidates */
    char *strings;       /* owned: the block of the other strings of 'a' (seatd_strs_own) */
} rate_op_t;

static void rate_op_free(rate_op_t *r)
{
    for (size_t i = 0; i < r->a.nseats; i++)
        free(r->seats[i]);
    free(r->seats);
    for (size_t i = 0; i < r->a.ncands; i++)
        free(r->cands[i]);
    free(r->cands);
    free(r->strings);
    free(r);
}

static void on_rate_reply(const struct redisReply *reply, int err, void *data)
{
    rate_op_t *r = data;
    decoded_t d;
    store__decode(&d, reply, err, KIND_HOLD);
    if (d.res.err != 0) {
        r->cb(&d.res, r->data);
    } else {
        int rc = hold_start(r->st, &r->a, r->cb, r->data);
        if (rc < 0) {
            decoded_t e = {.res = {.err = rc, .detail = ""}};
            store__decode_typed(&e, KIND_HOLD);
            r->cb(&e.res, r->data);
            store__decoded_free(&e);
        }
    }
    store__decoded_free(&d);
    rate_op_free(r);
}

void seatd_store_set_hold_rate(seatd_store_t *st, long long per_window, long long window_ms)
{
    st->hold_rate = per_window > 0 && window_ms > 0 ? per_window : 0;
    st->hold_window_ms = window_ms;
}

int seatd_store_hold(seatd_store_t *st, const seatd_hold_args_t *a, seatd_store_cb cb, void *data)
{
    if (st->hold_rate == 0 || a->owner == NULL)
        return hold_start(st, a, cb, data);
    char key[SEATD_KEY_MAX], limit[24], window[24];
    if (!seatd_keys_valid_sub(a->owner) || a->nseats > SEATD_SEATS_MAX_PER_HOLD ||
        a->show_id == NULL || a->hold_id == NULL)
        return hold_start(st, a, cb, data); /* its own checks answer */
    /* In the show's slot: a counter of its own slot would make every hold of this user, on
     * any show, wait for the one shard that keeps it (on a cluster, a dead shard would stop
     * holds on shows it does not own). So the limit is per user and show. */
    char suffix[SEATD_KEY_MAX];
    if (seatd_fmt_cat(suffix, sizeof(suffix), "rate:hold:", a->owner) < 0 ||
        seatd_keys_show(key, a->show_id, suffix) < 0)
        return hold_start(st, a, cb, data); /* its own checks answer the bad show id */
    seatd_fmt_int(limit, st->hold_rate);
    seatd_fmt_int(window, st->hold_window_ms);
    rate_op_t *r = seatd_calloc(1, sizeof(*r));
    r->st = st;
    r->cb = cb;
    r->data = data;
    r->a = *a;
    const char **const strings[] = {&r->a.show_id, &r->a.hold_id, &r->a.owner, &r->a.idem_key,
                                    &r->a.request};
    r->strings = seatd_strs_own(strings, sizeof(strings) / sizeof(strings[0]));
    r->seats = seatd_calloc(a->nseats + 1, sizeof(*r->seats));
    for (size_t i = 0; i < a->nseats; i++)
        r->seats[i] = seatd_strdup(a->seat_ids[i] ? a->seat_ids[i] : "");
    r->a.seat_ids = (const char *const *)r->seats;
    r->cands = seatd_calloc(a->ncands + 1, sizeof(*r->cands));
    for (size_t i = 0; i < a->ncands; i++)
        r->cands[i] = seatd_strdup(a->cands[i] ? a->cands[i] : "");
    r->a.cands = (const char *const *)r->cands;
    const char *keys[1] = {key};
    const char *args[2] = {limit, window};
    int rc = seatd_scripts_fcall(st->scripts, SEATD_FN_RATE_HIT, 1, keys, 2, args, NULL,
                                 on_rate_reply, r);
    if (rc < 0)
        rate_op_free(r);
    return rc;
}

/* hold_get and release: (hold id, owner[, mode]); 'mode' may be NULL. */
static int hold_owner_call(seatd_store_t *st, const char *fn, const char *hold_id,
                           const char *owner, const char *mode, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = store__meta_of_owned_id(key, hold_id, 'h', owner);
    if (rc < 0)
        return rc;
    const char *args[3] = {hold_id, owner ? owner : "", mode};
    return store__fcall(store__op_new(st, KIND_HOLD, cb, data), fn, key, mode ? 3 : 2, args, NULL,
                        store__on_reply);
}

int seatd_store_hold_get(seatd_store_t *st, const char *hold_id, const char *owner,
                         seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, SEATD_FN_HOLD_GET, hold_id, owner, NULL, cb, data);
}

int seatd_store_release(seatd_store_t *st, const char *hold_id, const char *owner,
                        seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, SEATD_FN_RELEASE, hold_id, owner, NULL, cb, data);
}

int seatd_store_release_unclaimed(seatd_store_t *st, const char *hold_id, const char *owner,
                                  seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, SEATD_FN_RELEASE, hold_id, owner, "unclaimed", cb, data);
}
