/* groups.c - event groups and group holds (lua/groups.lua, issue 30); see store.h. */
#include "store/store_internal.h"
#include "store/functions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/mem.h"
#include "domain/keys.h"
#include "domain/layout.h"

#define GROUP_MAX 20

/* "{s:<first>}:<word>:<id>" for group or group hold 'id' of kind 'kind' ('g', 'm'). */
static int group_key(char *out, const char *id, char kind, const char *word)
{
    char first[SEATD_ID_MAX], suffix[SEATD_ID_MAX + 16];
    if (seatd_keys_parse_id(id, kind, first) < 0)
        return SEATD_EBADID;
    snprintf(suffix, sizeof(suffix), "%s:%s", word, id);
    return seatd_keys_show(out, first, suffix);
}

/* KEYS = 'key' then the meta key of each of the 'n' shows. Returns an owned array of 'n' + 1
 * keys (each SEATD_KEY_MAX bytes) or NULL when a show id is malformed. */
static char (*metas(const char *key, const char *const *show_ids, size_t n))[SEATD_KEY_MAX]
{
    char(*keys)[SEATD_KEY_MAX] = seatd_calloc(n + 1, sizeof(*keys));
    snprintf(keys[0], SEATD_KEY_MAX, "%s", key);
    for (size_t i = 0; i < n; i++)
        if (seatd_keys_show(keys[i + 1], show_ids[i], "meta") < 0) {
            free(keys);
            return NULL;
        }
    return keys;
}

static int group_call(seatd_store_t *st, const char *fn, char (*keys)[SEATD_KEY_MAX], int nkeys,
                      int nargs, const char **args, seatd_store_cb cb, void *data)
{
    const char **kp = seatd_calloc((size_t)nkeys, sizeof(*kp));
    for (int i = 0; i < nkeys; i++)
        kp[i] = keys[i];
    store_op_t *op = store__op_new(st, KIND_GROUP, cb, data);
    int rc =
        seatd_scripts_fcall(st->scripts, fn, nkeys, kp, nargs, args, NULL, store__on_reply, op);
    if (rc < 0)
        store__op_free(op);
    free(kp);
    return rc;
}

int seatd_store_group_create(seatd_store_t *st, const char *group_id, const char *title,
                             const char *const *show_ids, size_t n, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (n < 2 || n > GROUP_MAX || title == NULL || group_key(key, group_id, 'g', "group") < 0)
        return SEATD_EINVAL;
    char(*keys)[SEATD_KEY_MAX] = metas(key, show_ids, n);
    if (keys == NULL)
        return SEATD_EBADID;
    const char *args[GROUP_MAX + 1] = {title};
    for (size_t i = 0; i < n; i++)
        args[i + 1] = show_ids[i];
    int rc = group_call(st, SEATD_FN_GROUP_CREATE, keys, (int)n + 1, (int)n + 1, args, cb, data);
    free(keys);
    return rc;
}

int seatd_store_group_get(seatd_store_t *st, const char *group_id, seatd_store_cb cb, void *data)
{
    char key[1][SEATD_KEY_MAX];
    int rc = group_key(key[0], group_id, 'g', "group");
    if (rc < 0)
        return rc;
    return group_call(st, SEATD_FN_GROUP_GET, key, 1, 0, NULL, cb, data);
}

int seatd_store_group_hold(seatd_store_t *st, const seatd_group_hold_args_t *a, seatd_store_cb cb,
                           void *data)
{
    char key[SEATD_KEY_MAX], max[24];
    if (a->nlegs < 1 || a->nlegs > GROUP_MAX || a->owner == NULL || a->request == NULL ||
        group_key(key, a->group_id, 'g', "group") < 0)
        return SEATD_EINVAL;
    const char **ids = seatd_calloc(a->nlegs, sizeof(*ids));
    for (size_t i = 0; i < a->nlegs; i++)
        ids[i] = a->legs[i].show_id;
    char(*keys)[SEATD_KEY_MAX] = metas(key, ids, a->nlegs);
    free(ids);
    if (keys == NULL)
        return SEATD_EBADID;
    /* per show: its hold id, layoutHash, P, the pairs */
    size_t per = 3 + 2 * a->nseats, argc = 0;
    const char **args = seatd_calloc(6 + a->nlegs * per, sizeof(*args));
    char(*hold_ids)[SEATD_ID_MAX] = seatd_calloc(a->nlegs, sizeof(*hold_ids));
    char(*bits)[24] = seatd_calloc(a->nlegs * a->nseats + 1, sizeof(*bits));
    char np[24];
    snprintf(max, sizeof(max), "%d", a->max_per_user);
    snprintf(np, sizeof(np), "%zu", a->nseats);
    args[argc++] = a->hold_id;
    args[argc++] = a->owner;
    args[argc++] = "0";
    args[argc++] = max;
    args[argc++] = a->request;
    args[argc++] = a->idem_key ? a->idem_key : "";
    int rc = 0;
    for (size_t i = 0; i < a->nlegs && rc == 0; i++) {
        rc = seatd_keys_new_id(hold_ids[i], a->legs[i].show_id, 'h');
        args[argc++] = hold_ids[i];
        args[argc++] = seatd_layout_digest(a->legs[i].layout);
        args[argc++] = np;
        for (size_t k = 0; k < a->nseats; k++) {
            char *b = bits[i * a->nseats + k];
            long bit = seatd_layout_find(a->legs[i].layout, a->seat_ids[k]);
            if (bit >= 0)
                seatd_fmt_int(b, bit);
            else
                memcpy(b, "-", 2); /* UNKNOWN_SEAT, from that show's script */
            args[argc++] = a->seat_ids[k];
            args[argc++] = b;
        }
    }
    if (rc == 0)
        rc =
            group_call(st, SEATD_FN_GROUP_HOLD, keys, (int)a->nlegs + 1, (int)argc, args, cb, data);
    free(bits);
    free(hold_ids);
    free(args);
    free(keys);
    return rc;
}

int seatd_store_group_release(seatd_store_t *st, const char *hold_id, const char *owner,
                              seatd_store_cb cb, void *data)
{
    char key[1][SEATD_KEY_MAX];
    int rc = group_key(key[0], hold_id, 'm', "ghold");
    if (rc < 0)
        return rc;
    const char *args[1] = {owner ? owner : ""};
    return group_call(st, SEATD_FN_GROUP_RELEASE, key, 1, 1, args, cb, data);
}
