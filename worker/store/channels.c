/* channels.c - seats and places kept for a sales channel (lua/channels.lua, issue 30); see
 * store.h. */
#include "store/store_internal.h"
#include "store/functions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fmt.h"
#include "base/mem.h"
#include "domain/keys.h"
#include "domain/layout.h"

int seatd_store_channel_set(seatd_store_t *st, const seatd_channel_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX], at[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    if (a->name == NULL || a->layout == NULL || a->release_at_ms < 0)
        return SEATD_EINVAL;
    const char **args = seatd_calloc(4 + 2 * a->nseats, sizeof(*args));
    char(*bits)[24] = seatd_calloc(a->nseats ? a->nseats : 1, sizeof(*bits));
    snprintf(at, sizeof(at), "%lld", (long long)a->release_at_ms);
    int argc = 0;
    args[argc++] = a->name;
    args[argc++] = at;
    args[argc++] = seatd_layout_digest(a->layout);
    args[argc++] = a->areas ? a->areas : "";
    for (size_t i = 0; i < a->nseats; i++) {
        long bit = seatd_layout_find(a->layout, a->seat_ids[i]);
        if (bit < 0) {
            free(bits);
            free(args);
            return SEATD_EUNKNOWNSEAT;
        }
        seatd_fmt_int(bits[i], bit);
        args[argc++] = a->seat_ids[i];
        args[argc++] = bits[i];
    }
    store_op_t *op = store__op_new(st, KIND_SHOW, cb, data);
    /* a release time: the sweepers come by then (lua/reap.lua releases it) */
    if (a->release_at_ms > 0 && seatd_keys_valid_show_id(a->show_id)) {
        snprintf(op->show_id, sizeof(op->show_id), "%s", a->show_id);
        op->hints = HINT_DUE;
    }
    rc = store__fcall(op, SEATD_FN_CHANNEL_SET, key, argc, args, NULL, store__on_reply);
    free(bits);
    free(args);
    return rc;
}

int seatd_store_channel_release(seatd_store_t *st, const char *show_id, const char *name,
                                seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    const char *args[1] = {name};
    return store__fcall(store__op_new(st, KIND_SHOW, cb, data), SEATD_FN_CHANNEL_RELEASE, key, 1,
                        args, NULL, store__on_reply);
}
