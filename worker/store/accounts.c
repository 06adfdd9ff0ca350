/* accounts.c - the store's account operations (lua/accounts.lua); see store.h. */
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

/* ---------------------------------------------------------------------- accounts */

static int account_call(seatd_store_t *st, const char *fn, const char *key, int nargs,
                        const char **args, seatd_store_cb cb, void *data)
{
    return store__fcall(store__op_new(st, KIND_ACCOUNT, cb, data), fn, key, nargs, args, NULL,
                        store__on_reply);
}

static int email_call(seatd_store_t *st, const char *fn, const char *email, const char *user_id,
                      seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_email(key, email) < 0 || (user_id && !seatd_keys_valid_sub(user_id)))
        return SEATD_EBADID;
    const char *args[1] = {user_id};
    return account_call(st, fn, key, user_id ? 1 : 0, args, cb, data);
}

int seatd_store_email_claim(seatd_store_t *st, const char *email, const char *user_id,
                            seatd_store_cb cb, void *data)
{
    if (user_id == NULL)
        return SEATD_EBADID;
    return email_call(st, SEATD_FN_EMAIL_CLAIM, email, user_id, cb, data);
}

int seatd_store_email_release(seatd_store_t *st, const char *email, const char *user_id,
                              seatd_store_cb cb, void *data)
{
    if (user_id == NULL)
        return SEATD_EBADID;
    return email_call(st, SEATD_FN_EMAIL_RELEASE, email, user_id, cb, data);
}

int seatd_store_email_get(seatd_store_t *st, const char *email, seatd_store_cb cb, void *data)
{
    return email_call(st, SEATD_FN_EMAIL_GET, email, NULL, cb, data);
}

int seatd_store_user_create(seatd_store_t *st, const seatd_user_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, a->user_id, "user") < 0 || a->email == NULL || a->hash == NULL)
        return SEATD_EBADID;
    const char *args[4] = {a->email, a->name ? a->name : "", a->hash, a->admin ? "1" : "0"};
    return account_call(st, SEATD_FN_USER_CREATE, key, 4, args, cb, data);
}

int seatd_store_user_get(seatd_store_t *st, const char *user_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0)
        return SEATD_EBADID;
    return account_call(st, SEATD_FN_USER_GET, key, 0, NULL, cb, data);
}

int seatd_store_session_start(seatd_store_t *st, const char *user_id, const char *family_id,
                              const char *token_hash, int64_t ttl_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], ttl[24];
    if (seatd_keys_user(key, user_id, "user") < 0 || family_id == NULL || token_hash == NULL)
        return SEATD_EBADID;
    if (ttl_ms < 1)
        return SEATD_EINVAL;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *args[3] = {family_id, token_hash, ttl};
    return account_call(st, SEATD_FN_SESSION_START, key, 3, args, cb, data);
}

int seatd_store_session_refresh(seatd_store_t *st, const char *user_id, const char *old_hash,
                                const char *new_hash, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0 || old_hash == NULL || new_hash == NULL)
        return SEATD_EBADID;
    const char *args[2] = {old_hash, new_hash};
    return account_call(st, SEATD_FN_SESSION_REFRESH, key, 2, args, cb, data);
}

int seatd_store_session_revoke(seatd_store_t *st, const char *user_id, const char *token_hash,
                               seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0 || token_hash == NULL)
        return SEATD_EBADID;
    const char *args[1] = {token_hash};
    return account_call(st, SEATD_FN_SESSION_REVOKE, key, 1, args, cb, data);
}

/* A side step in the buyer's own keys (index, idempotency record) of a request whose work is
 * in a show's slot: on a cluster the user's shard may be another, and it never waits for it
 * when it cannot be reached (SEATD_RDS_NO_WAIT: fails at once, the caller goes on). */
static int user_side_call(seatd_store_t *st, const char *fn, const char *key, int nargs,
                          const char **args, seatd_store_cb cb, void *data)
{
    const char *keys[1] = {key};
    store_op_t *op = store__op_new(st, KIND_ACCOUNT, cb, data);
    int rc = seatd_scripts_fcall_ex(st->scripts, fn, SEATD_RDS_NO_WAIT, 1, keys, nargs, args, NULL,
                                    store__on_reply, op);
    if (rc < 0)
        store__op_free(op);
    return rc;
}

static int valid_index(const char *index)
{
    return index && (strcmp(index, "holds") == 0 || strcmp(index, "bookings") == 0);
}

int seatd_store_me_add(seatd_store_t *st, const char *sub, const char *index, const char *id,
                       int64_t retain_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], retain[24];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0 || id == NULL || !id[0])
        return SEATD_EBADID;
    if (retain_ms < 0)
        return SEATD_EINVAL;
    snprintf(retain, sizeof(retain), "%" PRId64, retain_ms);
    const char *args[2] = {id, retain};
    return user_side_call(st, SEATD_FN_ME_ADD, key, 2, args, cb, data);
}

/* The key of user 'sub''s idempotency record for 'key' on 'route' ("book") into 'out'
 * (SEATD_KEY_MAX): 0, SEATD_EINVAL or SEATD_EBADID. */
static int idem_record_key(char *out, const char *sub, const char *route, const char *key)
{
    char suffix[SEATD_KEY_MAX];
    if (route == NULL || strcmp(route, "book") != 0 || !seatd_keys_valid_idem_key(key))
        return SEATD_EINVAL;
    snprintf(suffix, sizeof(suffix), "idem:%s:%s", route, key);
    return seatd_keys_user(out, sub, suffix) < 0 ? SEATD_EBADID : 0;
}

int seatd_store_idem_claim(seatd_store_t *st, const char *sub, const char *route, const char *key,
                           const char *fingerprint, int64_t ttl_ms, seatd_store_cb cb, void *data)
{
    char rkey[SEATD_KEY_MAX], ttl[24];
    if (fingerprint == NULL || !fingerprint[0] || ttl_ms < 1)
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *args[2] = {fingerprint, ttl};
    return user_side_call(st, SEATD_FN_IDEM_CLAIM, rkey, 2, args, cb, data);
}

int seatd_store_idem_settle(seatd_store_t *st, const char *sub, const char *route, const char *key,
                            const char *fingerprint, const char *outcome, seatd_store_cb cb,
                            void *data)
{
    char rkey[SEATD_KEY_MAX];
    if (fingerprint == NULL || !fingerprint[0] || outcome == NULL || !outcome[0])
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    const char *args[2] = {fingerprint, outcome};
    return user_side_call(st, SEATD_FN_IDEM_SETTLE, rkey, 2, args, cb, data);
}

int seatd_store_idem_release(seatd_store_t *st, const char *sub, const char *route, const char *key,
                             const char *fingerprint, seatd_store_cb cb, void *data)
{
    char rkey[SEATD_KEY_MAX];
    if (fingerprint == NULL || !fingerprint[0])
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    const char *args[1] = {fingerprint};
    return user_side_call(st, SEATD_FN_IDEM_RELEASE, rkey, 1, args, cb, data);
}

int seatd_store_me_remove(seatd_store_t *st, const char *sub, const char *index,
                          const char *const *ids, size_t n, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0 || ids == NULL)
        return SEATD_EBADID;
    if (n < 1 || n > 64)
        return SEATD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == NULL || !ids[i][0])
            return SEATD_EBADID;
    return user_side_call(st, SEATD_FN_ME_REMOVE, key, (int)n, (const char **)ids, cb, data);
}

int seatd_store_me_list(seatd_store_t *st, const char *sub, const char *index, const char *before,
                        int limit, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], n[24];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0)
        return SEATD_EBADID;
    if (limit < 1 || limit > 1000)
        return SEATD_EINVAL;
    snprintf(n, sizeof(n), "%d", limit);
    const char *args[2] = {before ? before : "", n};
    return account_call(st, SEATD_FN_ME_LIST, key, 2, args, cb, data);
}
