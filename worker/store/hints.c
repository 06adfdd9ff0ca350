/*
 * hints.c - filing the sweeper's and the reconciler's hints; see hints.h.
 */
#include "store/hints.h"

#include <stdio.h>

#include "base/errors.h"
#include "domain/keys.h"
#include "base/log.h"
#include "clients/rds.h"

static void on_due_reply(const struct redisReply *reply, int err, void *data)
{
    (void)data;
    if (err || seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR)
        seatd_log(SEATD_LOG_DEBUG, NULL, "sweeper hint not written; the rescan will find the show",
                  "\"err\":%d", err);
}

void seatd_hints_due(seatd_rds_t *rds, const char *show_id)
{
    if (rds == NULL || !seatd_keys_valid_show_id(show_id))
        return;
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_DUE, show_id) < 0)
        return;
    const char *argv[] = {"ZADD", key, "LT", "0", show_id};
    if (seatd_rds_callv(rds, 5, argv, NULL, on_due_reply, NULL) < 0)
        on_due_reply(NULL, SEATD_EOVERLOAD, NULL);
}

static void on_pending_reply(const struct redisReply *reply, int err, void *data)
{
    (void)reply;
    (void)data;
    if (err)
        seatd_log(SEATD_LOG_WARN, NULL,
                  "reconcile hint not written; the catalogue rescan will find the show",
                  "\"err\":%d", err);
}

void seatd_hints_pending(seatd_rds_t *rds, const char *show_id)
{
    if (rds == NULL || !seatd_keys_valid_show_id(show_id))
        return;
    /* The score counts hints, so a reconciler clears the entry only if none came since. */
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_PENDING_SHOWS, show_id) < 0)
        return;
    const char *argv[] = {"ZINCRBY", key, "1", show_id};
    if (seatd_rds_callv(rds, 4, argv, NULL, on_pending_reply, NULL) < 0)
        on_pending_reply(NULL, SEATD_EOVERLOAD, NULL);
}

static void on_queue_reply(const struct redisReply *reply, int err, void *data)
{
    (void)reply;
    (void)data;
    if (err)
        seatd_log(SEATD_LOG_WARN, NULL,
                  "queue hint not written; the next join or status read files it again",
                  "\"err\":%d", err);
}

void seatd_hints_queue(seatd_rds_t *rds, const char *show_id, long long close_ms)
{
    if (rds == NULL || !seatd_keys_valid_show_id(show_id))
        return;
    char score[24], key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_QUEUES, show_id) < 0)
        return;
    snprintf(score, sizeof(score), "%lld", close_ms > 0 ? close_ms : 0);
    const char *argv[] = {"ZADD", key, score, show_id};
    if (seatd_rds_callv(rds, 4, argv, NULL, on_queue_reply, NULL) < 0)
        on_queue_reply(NULL, SEATD_EOVERLOAD, NULL);
}
