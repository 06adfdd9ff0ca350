/*
 * live.c (handlers) - GET /v1/shows/{id}/seats/ws: the WebSocket upgrade into the live seat
 * map (worker/flows/live.h has the protocol).
 *
 * Watching needs no token: the seat map is public, like GET /v1/shows/{id}/seats.
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "common.h"
#include "handlers.h"
#include "http/http_request.h"
#include "domain/keys.h"
#include "flows/live.h"
#include "base/mem.h"
#include "http/ws_codec.h"

typedef struct {
    long long since; /* ?since=, or -1 */
    int deflate;     /* the client offered permessage-deflate (ws_codec.h) */
    char key[32];    /* Sec-WebSocket-Key (24 characters when valid) */
} ws_op_t;

static void ws_op_free(void *ctx)
{
    free(ctx);
}

static void ws_upgrade(seatd_req_t *r, const struct seatd_layout_s *l, void *ctx)
{
    ws_op_t *op = ctx;
    int rc = seatd_live_accept(seatd__app(r)->live, r, seatd_req_param(r, "id"), l, op->key,
                               op->since, op->deflate);
    if (rc < 0)
        seatd_req_finish_problem(r, rc, NULL, NULL);
    free(op);
}

/* ?since=<version>: a non-negative integer, or absent. Returns 0 or SEATD_EINVAL. */
static int parse_since(const char *s, long long *out)
{
    *out = -1;
    if (s == NULL)
        return 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || v < 0)
        return SEATD_EINVAL;
    *out = v;
    return 0;
}

int seatd_handle_live_ws(seatd_req_t *r)
{
    const char *id = seatd_req_param(r, "id");
    if (!seatd_keys_valid_show_id(id))
        return SEATD_ENOSHOW;
    seatd_app_t *app = seatd__app(r);
    if (app->live == NULL || app->draining)
        return SEATD_ESHUTDOWN;
    const char *key = seatd_req_header(r, "sec-websocket-key");
    if (seatd_ws_check_upgrade(seatd_req_header(r, "upgrade"), seatd_req_header(r, "connection"),
                               seatd_req_header(r, "sec-websocket-version"), key) < 0) {
        seatd_req_add_header(r, "Sec-WebSocket-Version", "13");
        seatd_req_finish_problem(r, SEATD_EINVAL, "a WebSocket upgrade (version 13) is required",
                                 NULL);
        return 0;
    }
    ws_op_t *op = seatd_calloc(1, sizeof(*op));
    if (parse_since(seatd_req_query(r, "since"), &op->since) < 0) {
        free(op);
        seatd_req_finish_problem(r, SEATD_EINVAL, "since must be a version number", NULL);
        return 0;
    }
    snprintf(op->key, sizeof(op->key), "%s", key);
    op->deflate = seatd_ws_deflate_offered(seatd_req_header(r, "sec-websocket-extensions"));
    int rc = seatd__with_layout(r, id, ws_upgrade, ws_op_free, op);
    if (rc < 0)
        free(op);
    return rc;
}
