/* shows.c - the store's show operations (lua/create_show.lua, lua/read.lua); see store.h. */
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
#include "domain/areas.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/seats.h"

/* ---------------------------------------------------------------------- shows */

/* The catalogue answer of a created show: success whatever happened to the catalogue entry
 * (the show exists; a missing entry is logged and reported as catalogued=0). */
static void on_catalogued(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    int ok = err == 0 && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ARRAY;
    if (!ok)
        seatd_log(SEATD_LOG_WARN, NULL, "show created but not catalogued", "\"showId\":\"%s\"",
                  op->show_id);
    const char *names[] = {"showId", "version", "catalogued"};
    const char *values[] = {op->show_id, "0", ok ? "1" : "0"};
    size_t lens[] = {strlen(op->show_id), 1, 1};
    decoded_t d = {
        .res = {.detail = "", .nfields = 3, .names = names, .values = values, .lens = lens}};
    store__decode_typed(&d, KIND_SHOW);
    op->cb(&d.res, op->data);
    store__decoded_free(&d);
    store__op_free(op);
}

static void on_show_created(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    if (!store__link_ok(op, NULL, reply, err))
        return;
    /* The show exists with this layout: later holds of this process start from the cache. */
    seatd_layout_cache_put(op->show_id, op->layout);
    op->layout = NULL;
    const char *keys[1] = {SEATD_KEY_CATALOGUE};
    const char *args[2] = {op->starts_at, op->show_id};
    if (seatd_scripts_fcall(op->st->scripts, SEATD_FN_CATALOGUE_ADD, 1, keys, 2, args, NULL,
                            on_catalogued, op) < 0)
        on_catalogued(NULL, SEATD_EUNAVAILABLE, op);
}

/* The shared layout is stored (or already was): now the show, with the arguments kept. */
static void on_layout_put(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    if (!store__link_ok(op, NULL, reply, err))
        return;
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show(key, op->show_id, "meta") < 0) { /* checked before queueing */
        store__op_fail(op, SEATD_EBADID);
        return;
    }
    store__chain(op, SEATD_FN_CREATE_SHOW, key, op->argc, (const char **)op->argv, on_show_created);
}

/* The channels of a new show as create_show.lua's ARGV[10] wants them: each seat id with its
 * bit in 'l', each channel's places as a places text (domain/areas.h). Returns 0 and an owned
 * '*out', or SEATD_EINVAL / SEATD_EUNKNOWNSEAT. */
static int channels_arg(const char *json, const seatd_layout_t *l, char **out)
{
    cJSON *in = cJSON_Parse(json), *c = NULL;
    cJSON *o = cJSON_CreateObject();
    int rc = cJSON_IsObject(in) ? 0 : SEATD_EINVAL;
    cJSON_ArrayForEach(c, in)
    {
        cJSON *ch = cJSON_AddObjectToObject(o, c->string);
        cJSON *seats = cJSON_AddArrayToObject(ch, "seats");
        const cJSON *id = NULL, *at = cJSON_GetObjectItemCaseSensitive(c, "releaseAt");
        cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(c, "seatIds"))
        {
            long bit = cJSON_IsString(id) ? seatd_layout_find(l, id->valuestring) : -1;
            if (bit < 0) {
                rc = SEATD_EUNKNOWNSEAT;
                continue;
            }
            cJSON *pair = cJSON_CreateArray();
            cJSON_AddItemToArray(pair, cJSON_CreateString(id->valuestring));
            cJSON_AddItemToArray(pair, cJSON_CreateNumber((double)bit));
            cJSON_AddItemToArray(seats, pair);
        }
        const cJSON *areas = cJSON_GetObjectItemCaseSensitive(c, "areas");
        char text[SEATD_AREAS_TEXT_MAX] = "", why[128];
        long long places = 0;
        if (areas && seatd_areas_request(areas, SEATD_AREA_CAPACITY_MAX, text, &places, why,
                                         sizeof(why)) < 0)
            rc = SEATD_EINVAL;
        cJSON_AddStringToObject(ch, "areas", text);
        cJSON_AddNumberToObject(ch, "releaseAt", cJSON_IsNumber(at) ? at->valuedouble : 0);
    }
    *out = rc == 0 ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    cJSON_Delete(in);
    return rc;
}

int seatd_store_create_show(seatd_store_t *st, const seatd_show_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX], starts[24], ttl[24], count[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    if (a->title == NULL || a->price_tiers_json == NULL || a->layout_json == NULL ||
        a->hold_ttl_ms <= 0 || a->nseats == 0 || a->nseats > SEATD_LAYOUT_MAX_SEATS)
        return SEATD_EINVAL;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    /* The layout as stored and shared: its canonical seats array, addressed by its digest.
     * seat_ids must be the layout's ids in index order (bit i is seat i). */
    cJSON *doc = cJSON_Parse(a->layout_json);
    seatd_layout_t *l = NULL;
    rc = seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l, NULL, 0);
    cJSON_Delete(doc);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < a->nseats; i++) {
        if (seatd_layout_count(l) != a->nseats ||
            strcmp(seatd_layout_seat(l, i)->id, a->seat_ids[i]) != 0) {
            seatd_layout_free(l);
            return SEATD_EINVAL;
        }
    }
    snprintf(starts, sizeof(starts), "%" PRId64, a->starts_at_ms);
    snprintf(ttl, sizeof(ttl), "%" PRId64, a->hold_ttl_ms);
    snprintf(count, sizeof(count), "%zu", a->nseats);
    const char *hash = seatd_layout_digest(l);
    /* Each seat's tier, so that seatd_book_begin prices a booking in Redis (none past 26
     * tiers: such a show's bookings are refused UNPRICED; priceTiers allows 16). */
    char *tier_names = NULL;
    char *tier_codes = seatd_layout_tier_codes(l, &tier_names);
    char *channels = NULL;
    if (a->channels_json != NULL && (rc = channels_arg(a->channels_json, l, &channels)) < 0) {
        seatd_layout_free(l);
        free(tier_names);
        free(tier_codes);
        return rc;
    }
    const char *show_args[10] = {a->title,
                                 starts,
                                 ttl,
                                 a->price_tiers_json,
                                 hash,
                                 a->extra_json ? a->extra_json : "",
                                 count,
                                 tier_names ? tier_names : "",
                                 tier_codes ? tier_codes : "",
                                 channels ? channels : ""};
    store_op_t *op = store__op_new(st, KIND_SHOW, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", a->show_id);
    memcpy(op->starts_at, starts, sizeof(starts));
    memcpy(op->hash, hash, sizeof(op->hash));
    store__op_keep_args(op, channels ? 10 : 9, show_args);
    free(channels);
    free(tier_names);
    free(tier_codes);
    op->layout = l;
    char lkey[SEATD_KEY_MAX];
    store__layout_key(lkey, op->hash);
    char *text = seatd_layout_seats_json(l);
    const char *put_args[1] = {text};
    rc = store__fcall(op, SEATD_FN_LAYOUT_PUT, lkey, 1, put_args, NULL, on_layout_put);
    free(text);
    return rc;
}

int seatd_store_show_tiers_put(seatd_store_t *st, const char *show_id, const seatd_layout_t *l,
                               seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    char *names = NULL;
    char *codes = seatd_layout_tier_codes(l, &names);
    if (codes == NULL)
        return SEATD_EINVAL;
    const char *args[2] = {names, codes};
    rc = store__fcall(store__op_new(st, KIND_SHOW, cb, data), SEATD_FN_SHOW_TIERS_PUT, key, 2, args,
                      NULL, store__on_reply);
    free(names);
    free(codes);
    return rc;
}

int seatd_store_next_show_id(seatd_store_t *st, seatd_store_cb cb, void *data)
{
    return store__fcall(store__op_new(st, KIND_SHOW, cb, data), SEATD_FN_NEXT_SHOW_ID,
                        SEATD_KEY_SHOW_SEQ, 0, NULL, NULL, store__on_reply);
}

int seatd_store_claim_show_id(seatd_store_t *st, long long id, seatd_store_cb cb, void *data)
{
    char text[24];
    snprintf(text, sizeof(text), "%lld", id);
    const char *args[1] = {text};
    return store__fcall(store__op_new(st, KIND_SHOW, cb, data), SEATD_FN_NEXT_SHOW_ID,
                        SEATD_KEY_SHOW_SEQ, 1, args, NULL, store__on_reply);
}

/* A no-argument read of one show's function 'fn'. */
static int show_read(seatd_store_t *st, const char *fn, kind_t kind, const char *show_id,
                     seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    return store__fcall(store__op_new(st, kind, cb, data), fn, key, 0, NULL, NULL, store__on_reply);
}

int seatd_store_show_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, SEATD_FN_SHOW_GET, KIND_SHOW, show_id, cb, data);
}

/* layout_get, last link: the shared layout, checked against its address, rendered as the
 * show's document. */
static void on_layout_text(store_op_t *op, const char *text, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1] = "";
    if (EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL))
        for (unsigned int i = 0; i < mdlen; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (strcmp(hex, op->hash) != 0) {
        store__layout_mismatch(op);
        return;
    }
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"showId\":\"%s\",\"seats\":", op->show_id);
    seatd_buf_append(&b, text, len);
    seatd_buf_append(&b, "}", 1);
    const char *names[] = {"layout", "layoutHash"};
    const char *values[] = {b.data, op->hash};
    size_t lens[] = {b.len, strlen(op->hash)};
    decoded_t res = {
        .res = {.detail = "", .nfields = 2, .names = names, .values = values, .lens = lens}};
    store__decode_typed(&res, KIND_SHOW);
    op->cb(&res.res, op->data);
    store__decoded_free(&res);
    seatd_buf_free(&b);
    store__op_free(op);
}

static void on_layout_ref(const struct redisReply *reply, int err, void *data)
{
    store__fetch_shared_layout(data, reply, err, on_layout_text);
}

int seatd_store_layout_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    store_op_t *op = store__op_new(st, KIND_SHOW, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", show_id);
    return store__fcall(op, SEATD_FN_LAYOUT_GET, key, 0, NULL, NULL, on_layout_ref);
}

int seatd_store_seatmap(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, SEATD_FN_SEATMAP, KIND_SEATMAP, show_id, cb, data);
}

int seatd_store_version_floor(seatd_store_t *st, const char *show_id, long long seen,
                              seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], v[24];
    if (seen < 0)
        return SEATD_EINVAL;
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    snprintf(v, sizeof(v), "%lld", seen);
    const char *args[1] = {v};
    return store__fcall(store__op_new(st, KIND_REAP, cb, data), SEATD_FN_VERSION_FLOOR, key, 1,
                        args, NULL, store__on_reply);
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
    return store__fcall(store__op_new(st, KIND_PAGE, cb, data), SEATD_FN_LIST_SHOWS,
                        SEATD_KEY_CATALOGUE, 2, args, NULL, store__on_reply);
}
