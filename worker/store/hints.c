/*
 * hints.c - filing the sweeper's and the reconciler's hints; see hints.h.
 */
#include "store/hints.h"

#include <stdio.h>

#include "base/errors.h"
#include "domain/keys.h"
#include "base/log.h"
#include "clients/rds.h"

/* The key of hint set 'base' for 'show_id' into 'key' (SEATD_KEY_MAX bytes). Returns 0 when
 * no hint can be filed: no connection, or a show id no key can be made of. */
static int hint_key(char *key, const seatd_rds_t *rds, const char *base, const char *show_id)
{
    return rds != NULL && seatd_keys_valid_show_id(show_id) &&
           seatd_keys_show_hint(key, base, show_id) == 0;
}

static void on_due_reply(const struct redisReply *reply, int err, void *data)
{
    (void)data;
    if (err || seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR)
        seatd_log(SEATD_LOG_DEBUG, NULL, "sweeper hint not written; the rescan will find the show",
                  "\"err\":%d", err);
}

void seatd_hints_due(seatd_rds_t *rds, const char *show_id)
{
    char key[SEATD_KEY_MAX];
    if (!hint_key(key, rds, SEATD_KEY_DUE, show_id))
        return;
    const char *argv[] = {"ZADD", key, "LT", "0", show_id};
    if (seatd_rds_callv(rds, 5, argv, NULL, on_due_reply, NULL) < 0)
        on_due_reply(NULL, SEATD_EOVERLOAD, NULL);
}

/* The reply to a hint nobody waits for: a failure is logged with 'data', the static text of
 * what then finds the show instead. */
static void on_hint_reply(const struct redisReply *reply, int err, void *data)
{
    (void)reply;
    if (err)
        seatd_log(SEATD_LOG_WARN, NULL, (const char *)data, "\"err\":%d", err);
}

/* Sends a hint's command; one that cannot be queued fails as an overload. */
static void send_hint(seatd_rds_t *rds, int argc, const char **argv, const char *failed)
{
    void *data = (void *)failed;
    if (seatd_rds_callv(rds, argc, argv, NULL, on_hint_reply, data) < 0)
        on_hint_reply(NULL, SEATD_EOVERLOAD, data);
}

void seatd_hints_pending(seatd_rds_t *rds, const char *show_id)
{
    /* The score counts hints, so a reconciler clears the entry only if none came since. */
    char key[SEATD_KEY_MAX];
    if (!hint_key(key, rds, SEATD_KEY_PENDING_SHOWS, show_id))
        return;
    const char *argv[] = {"ZINCRBY", key, "1", show_id};
    send_hint(rds, 4, argv, "reconcile hint not written; the catalogue rescan will find the show");
}

void seatd_hints_queue(seatd_rds_t *rds, const char *show_id, long long close_ms)
{
    char score[24], key[SEATD_KEY_MAX];
    if (!hint_key(key, rds, SEATD_KEY_QUEUES, show_id))
        return;
    snprintf(score, sizeof(score), "%lld", close_ms > 0 ? close_ms : 0);
    const char *argv[] = {"ZADD", key, score, show_id};
    send_hint(rds, 4, argv, "queue hint not written; the next join or status read files it again");
}
