/* health.c - GET /healthz (liveness + readiness) and GET /metrics (Prometheus text). */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "app.h"
#include "base/buf.h"
#include "common.h"
#include "domain/config.h"
#include "flows/health.h"
#include "flows/metrics_render.h"
#include "handlers.h"
#include "http/http_request.h"

/* /healthz is ready only when Redis answers a PING in time (flows/health.h) and the worker is
 * not draining. */
static void health_reply(seatd_req_t *r, int redis_up, int draining)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", draining ? "draining" : redis_up ? "ok" : "degraded");
    cJSON_AddStringToObject(o, "redis", redis_up ? "up" : "down");
    if (!redis_up || draining)
        seatd_req_add_header(r, "Retry-After", "1");
    seatd_req_finish_json(r, redis_up && !draining ? 200 : 503, o);
}

static void on_probe(int redis_up, void *data)
{
    seatd_req_t *r = data;
    if (seatd__step_end(&r))
        return;
    seatd_app_t *app = seatd_req_app(r);
    health_reply(r, redis_up, app->draining);
}

int seatd_handle_health(seatd_req_t *r)
{
    seatd_app_t *app = seatd_req_app(r);
    if (app->draining) {
        health_reply(r, seatd_health_connected(app), 1);
        return 0;
    }
    uint64_t deadline = app->cfg ? (uint64_t)app->cfg->health_timeout_ms : 250;
    if (seatd_health_probe(app, deadline, on_probe, r) < 0) {
        health_reply(r, 0, 0);
        return 0;
    }
    return seatd__step_begin(&r, 0);
}

int seatd_handle_metrics(seatd_req_t *r)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_metrics_render(seatd_req_app(r), &b);
    seatd_req_finish(r, 200, "text/plain; version=0.0.4", b.data, b.len);
    seatd_buf_free(&b);
    return 0;
}
