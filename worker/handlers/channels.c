/*
 * channels.c - PUT and DELETE /v1/admin/shows/{id}/channels/{name} (issue 30): what a sales
 * channel keeps, set or changed during the sale, and its release to everyone now. The shape
 * is domain/channels.h's; the decision (seats kept by another channel, places not free) is
 * the channel Function's (lua/channels.lua), one atomic step with a version and a delta.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "base/mem.h"
#include "common.h"
#include "domain/areas.h"
#include "domain/channels.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "domain/seatmap.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"

typedef struct {
    seatd__op_t base;
    cJSON *body; /* owned */
    char show_id[SEATD_ID_MAX];
    char name[40];
} channel_op_t;

static void channel_op_free(seatd__op_t *base)
{
    channel_op_t *op = (channel_op_t *)base;
    cJSON_Delete(op->body);
    free(op);
}

static void free_ctx(void *ctx)
{
    channel_op_free(ctx);
}

static void on_channel_changed(const seatd_store_result_t *res, void *data)
{
    channel_op_t *op = data;
    if (seatd__op_gone_or_failed(&op->base, res))
        return;
    seatd_seatmap_invalidate(op->show_id, res->show.version);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "showId", op->show_id);
    cJSON_AddStringToObject(o, "channel", op->name);
    cJSON_AddBoolToObject(o, "released", op->body == NULL);
    cJSON_AddNumberToObject(o, "version", (double)res->show.version);
    seatd_req_finish_json(op->base.r, 200, o);
    seatd__op_free(&op->base);
}

static void set_with_layout(seatd_req_t *r, const seatd_layout_t *l, void *ctx)
{
    channel_op_t *op = ctx;
    cJSON *checked = NULL;
    char why[200];
    if (seatd_channel_check(op->name, op->body, l, NULL, &checked, why, sizeof(why)) < 0) {
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, SEATD_EINVAL, "body", why, why);
        int rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 */
        (void)rc;
        channel_op_free(&op->base);
        return;
    }
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(checked, "seatIds"), *id = NULL;
    size_t n = (size_t)cJSON_GetArraySize(ids), i = 0;
    const char **seats = seatd_calloc(n ? n : 1, sizeof(*seats));
    cJSON_ArrayForEach(id, ids) seats[i++] = id->valuestring;
    char places[SEATD_AREAS_TEXT_MAX] = "";
    long long count = 0;
    const cJSON *areas = cJSON_GetObjectItemCaseSensitive(checked, "areas");
    if (areas &&
        seatd_areas_request(areas, SEATD_AREA_CAPACITY_MAX, places, &count, why, sizeof(why)) < 0)
        places[0] = '\0'; /* checked above: cannot happen */
    seatd_channel_args_t a = {
        .show_id = op->show_id,
        .name = op->name,
        .release_at_ms =
            (int64_t)cJSON_GetObjectItemCaseSensitive(checked, "releaseAt")->valuedouble,
        .layout = l,
        .seat_ids = seats,
        .nseats = n,
        .areas = places,
    };
    op->base.r = r;
    seatd__op_started(&op->base,
                      seatd_store_channel_set(seatd__app(r)->store, &a, on_channel_changed, op));
    free(seats);
    cJSON_Delete(checked);
}

/* The show and channel of the path into a new context, or NULL with the error in '*rc'. */
static channel_op_t *channel_op_new(seatd_req_t *r, int *rc)
{
    const char *show = seatd_req_param(r, "id"), *name = seatd_req_param(r, "name");
    *rc = !seatd_keys_valid_show_id(show)   ? SEATD_ENOSHOW
          : !seatd_channel_name_valid(name) ? SEATD_ENOTFOUND
                                            : 0;
    if (*rc < 0)
        return NULL;
    channel_op_t *op = seatd_calloc(1, sizeof(*op));
    seatd__op_init(&op->base, r, channel_op_free);
    snprintf(op->show_id, sizeof(op->show_id), "%s", show);
    snprintf(op->name, sizeof(op->name), "%s", name);
    return op;
}

int seatd_handle_admin_channels_set(seatd_req_t *r)
{
    int rc;
    channel_op_t *op = channel_op_new(r, &rc);
    if (op == NULL)
        return rc;
    if (seatd_json_parse_body_or_reply(r, &op->body) < 0) {
        channel_op_free(&op->base);
        return 0;
    }
    rc = seatd__with_layout(r, op->show_id, set_with_layout, free_ctx, op);
    if (rc < 0)
        channel_op_free(&op->base);
    return rc;
}

int seatd_handle_admin_channels_release(seatd_req_t *r)
{
    int rc;
    channel_op_t *op = channel_op_new(r, &rc);
    if (op == NULL)
        return rc;
    seatd__op_started(&op->base, seatd_store_channel_release(seatd__app(r)->store, op->show_id,
                                                             op->name, on_channel_changed, op));
    return 0;
}
