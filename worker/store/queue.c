/* queue.c - the store's waiting-room operations (lua/queue.lua); see store.h. */
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

/* ------------------------------------------------------------------ waiting room */

int seatd_store_queue_join(seatd_store_t *st, const char *show_id, const char *ticket,
                           const char *user, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX], early[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (seatd_keys_parse_id(ticket, 'q', show) < 0 || strcmp(show, show_id) != 0 ||
        !seatd_keys_valid_sub(user))
        return SEATD_EBADID;
    /* The rank key of a join before the opening: uniform in [0, 2^50). */
    unsigned char rnd[8];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return SEATD_EINTERNAL;
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(rnd); i++)
        v = v << 8 | rnd[i];
    snprintf(early, sizeof(early), "%" PRIu64, v & ((UINT64_C(1) << 50) - 1));
    const char *args[3] = {ticket, user, early};
    store_op_t *op = store__op_new(st, KIND_QUEUE, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", show_id);
    op->hints = HINT_QUEUE;
    return store__fcall(op, SEATD_FN_QUEUE_JOIN, key, 3, args, NULL, store__on_reply);
}

int seatd_store_queue_status(seatd_store_t *st, const char *ticket, const char *user,
                             seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = store__meta_of_id(key, ticket, 'q');
    if (rc < 0)
        return rc;
    if (!seatd_keys_valid_sub(user))
        return SEATD_EBADID;
    const char *args[2] = {ticket, user};
    return store__fcall(store__op_new(st, KIND_QUEUE, cb, data), SEATD_FN_QUEUE_STATUS, key, 2,
                        args, NULL, store__on_reply);
}

int seatd_store_queue_advance(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    return store__fcall(store__op_new(st, KIND_QUEUE, cb, data), SEATD_FN_QUEUE_ADVANCE, key, 0,
                        NULL, NULL, store__on_reply);
}
