/* health.c - the Redis readiness probe; see health.h. */
#include "flows/health.h"

#include <stdlib.h>
#include <uv.h>

#include "app.h"
#include "base/mem.h"
#include "clients/rds.h"

/* Freed when both the PING callback (which runs exactly once) and the timer's close have run. */
typedef struct probe_s {
    uv_timer_t timer; /* the deadline */
    seatd_health_cb cb;
    void *data;
    int answered; /* 'cb' has run */
    int refs;     /* PING callback + timer close still to come */
} probe_t;

static void probe_put(probe_t *p)
{
    if (--p->refs == 0)
        free(p);
}

static void on_timer_closed(uv_handle_t *h)
{
    probe_put(h->data);
}

/* The first of PING and deadline answers and closes the timer; the later one only lets go. */
static void probe_answer(probe_t *p, int redis_up)
{
    if (p->answered)
        return;
    p->answered = 1;
    uv_timer_stop(&p->timer);
    uv_close((uv_handle_t *)&p->timer, on_timer_closed);
    p->cb(redis_up, p->data);
}

static void on_deadline(uv_timer_t *t)
{
    probe_answer(t->data, 0);
}

static void on_ping(const struct redisReply *reply, int err, void *data)
{
    probe_t *p = data;
    probe_answer(p, !err && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_STATUS);
    probe_put(p);
}

int seatd_health_connected(const seatd_app_t *app)
{
    return app->rds != NULL && seatd_rds_is_ready(app->rds);
}

int seatd_health_probe(seatd_app_t *app, uint64_t timeout_ms, seatd_health_cb cb, void *data)
{
    if (!seatd_health_connected(app))
        return SEATD_EUNAVAILABLE;
    probe_t *p = seatd_calloc(1, sizeof(*p));
    p->cb = cb;
    p->data = data;
    const char *ping[] = {"PING"};
    if (seatd_rds_callv(app->rds, 1, ping, NULL, on_ping, p) != 0) {
        free(p);
        return SEATD_EUNAVAILABLE;
    }
    p->refs = 2;
    uv_timer_init(app->loop, &p->timer);
    p->timer.data = p;
    uv_timer_start(&p->timer, on_deadline, timeout_ms, 0);
    return 0;
}
