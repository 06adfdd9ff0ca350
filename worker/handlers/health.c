/* health.c - GET /healthz (liveness + readiness) and GET /metrics (Prometheus text). */
#include <cjson/cJSON.h>

#include "app.h"
#include "buf.h"
#include "handlers.h"
#include "http_request.h"
#include "metrics.h"
#include "rds.h"

int seatd_handle_health(seatd_req_t *r)
{
    seatd_app_t *app = seatd_req_app(r);
    int redis_up = app->rds && seatd_rds_is_ready(app->rds);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", app->draining ? "draining" : redis_up ? "ok" : "degraded");
    cJSON_AddStringToObject(o, "redis", redis_up ? "up" : "down");
    if (!redis_up || app->draining)
        seatd_req_add_header(r, "Retry-After", "1");
    seatd_req_finish_json(r, redis_up && !app->draining ? 200 : 503, o);
    return 0;
}

int seatd_handle_metrics(seatd_req_t *r)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_metrics_render(seatd_req_app(r), &b);
    seatd_req_finish(r, 200, "text/plain; version=0.0.4", b.data, b.len);
    seatd_buf_free(&b);
    return 0;
}
