/* health.c - GET /healthz (liveness + readiness) and GET /metrics (Prometheus text). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <uv.h>

#include "app.h"
#include "base/buf.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "base/mem.h"
#include "flows/metrics_render.h"
#include "clients/rds.h"

/*
 * /healthz is ready only when Redis answers a PING within --health-timeout-ms: a connected
 * but hung Redis (SIGSTOP, a stuck script) must fail it, not just a lost connection. The PING
 * and a deadline timer race; the first one answers, the later one only lets go. The op is
 * freed when both the PING callback (which runs exactly once) and the timer's close have run.
 */
typedef struct health_op_s {
    seatd_req_t *r;   /* held until the first of PING / deadline */
    uv_timer_t timer; /* the deadline */
    int answered;     /* the request has been let go */
    int refs;         /* PING callback + timer close still to come */
} health_op_t;

static void health_reply(seatd_req_t *r, int redis_up, int draining)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", draining ? "draining" : redis_up ? "ok" : "degraded");
    cJSON_AddStringToObject(o, "redis", redis_up ? "up" : "down");
    if (!redis_up || draining)
        seatd_req_add_header(r, "Retry-After", "1");
    seatd_req_finish_json(r, redis_up && !draining ? 200 : 503, o);
}

static void health_op_put(health_op_t *op)
{
    if (--op->refs == 0)
        free(op);
}

/* Answers once: 'redis_up' is 1 for a PONG in time. */
static void health_answer(health_op_t *op, int redis_up)
{
    if (op->answered)
        return;
    op->answered = 1;
    seatd_req_t *r = op->r;
    if (!uv_is_closing((uv_handle_t *)&op->timer)) {
        uv_timer_stop(&op->timer);
    }
    if (seatd__step_end(&r))
        return;
    seatd_app_t *app = seatd_req_app(r);
    health_reply(r, redis_up, app->draining);
}

static void on_health_timer_closed(uv_handle_t *h)
{
    health_op_put(h->data);
}

static void on_health_deadline(uv_timer_t *t)
{
    health_op_t *op = t->data;
    health_answer(op, 0);
    uv_close((uv_handle_t *)t, on_health_timer_closed);
}

static void on_health_ping(const struct redisReply *reply, int err, void *data)
{
    health_op_t *op = data;
    int pong = !err && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_STATUS;
    if (!op->answered) {
        health_answer(op, pong);
        uv_close((uv_handle_t *)&op->timer, on_health_timer_closed);
    }
    health_op_put(op);
}

int seatd_handle_health(seatd_req_t *r)
{
    seatd_app_t *app = seatd_req_app(r);
    if (app->draining || !app->rds || !seatd_rds_is_ready(app->rds)) {
        health_reply(r, app->rds && seatd_rds_is_ready(app->rds), app->draining);
        return 0;
    }
    health_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    const char *ping[] = {"PING"};
    if (seatd_rds_callv(app->rds, 1, ping, NULL, on_health_ping, op) != 0) {
        free(op);
        health_reply(r, 0, 0);
        return 0;
    }
    op->refs = 2;
    uv_timer_init(app->loop, &op->timer);
    op->timer.data = op;
    uv_timer_start(&op->timer, on_health_deadline,
                   app->cfg ? (uint64_t)app->cfg->health_timeout_ms : 250, 0);
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
