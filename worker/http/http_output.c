/*
 * http_output.c - a connection's output: writing responses (at once when the socket takes
 * them, else queued), and the output budget every queued byte counts against, whoever queued
 * it (a response, or a WebSocket frame of a connection taken over by live.c): past half of it
 * the connection stops reading and answering until the output drains below a quarter. See
 * http_server_internal.h.
 */
#include "http/http_server_internal.h"

#include <stdlib.h>

#include "base/mem.h"

typedef struct {
    uv_write_t req;  /* embedded; req.data unused */
    seatd_conn_t *c; /* the connection written to */
    char *data;      /* owned; freed in after_write */
    size_t len;      /* bytes in 'data' (accounted in c->out_bytes) */
} write_req_t;

/* ----------------------------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------------------------- */

/* Output accounting: every queued write of a connection, whoever queued it. */
static void output_add(seatd_conn_t *c, size_t len)
{
    seatd_http_server_stats_t *st = &c->srv->stats;
    c->out_bytes += len;
    st->output_bytes += len;
    if (c->out_bytes > st->output_peak)
        st->output_peak = c->out_bytes;
}

static void output_done(seatd_conn_t *c, size_t len)
{
    c->out_bytes -= len;
    c->srv->stats.output_bytes -= len;
}

/* Pauses an HTTP connection whose output passed the high-water mark (half the budget). */
static void output_check(seatd_conn_t *c)
{
    if (!c->out_paused && !c->taken && c->out_bytes >= c->srv->opts.output_budget / 2) {
        c->out_paused = 1;
        c->srv->stats.output_paused++;
    }
}

static void after_write(uv_write_t *req, int status)
{
    write_req_t *w = container_of(req, write_req_t, req);
    seatd_conn_t *c = w->c;
    output_done(c, w->len);
    free(w->data);
    free(w);
    c->writes_pending--;
    if (c->closing)
        return;
    if (status < 0) {
        http__conn_close(c);
        return;
    }
    if (c->close_after_write && c->writes_pending == 0 && c->cur == NULL) {
        http__conn_linger(c);
        return;
    }
    if (c->out_paused) {
        if (c->out_bytes < c->srv->opts.output_budget / 4) {
            c->out_paused = 0; /* below the low-water mark: read and answer again */
            if (!c->processing)
                http__process(c);
        } else if (c->phase == PH_OUTPUT) {
            uv_timer_start(&c->timer, http__on_timer, c->srv->opts.idle_timeout_ms,
                           0); /* progress */
        }
    }
}

/* Queues 'len' bytes of 'data' (taken) behind what 'c' has not written yet (freed in
 * after_write). */
static void conn_queue(seatd_conn_t *c, char *data, size_t len)
{
    write_req_t *w = seatd_malloc(sizeof(*w));
    w->c = c;
    w->data = data;
    w->len = len;
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    int rc = uv_write(&w->req, &c->h.stream, &b, 1, after_write);
    if (rc < 0) {
        free(data);
        free(w);
        http__conn_close(c);
        return;
    }
    c->writes_pending++;
    output_add(c, len);
    output_check(c);
}

/* Writes the bytes of 'b' on 'c': at once, from 'b' itself, when nothing is queued ahead and
 * the socket takes them all (the usual case: a response fits the socket buffer, and libuv's
 * queued write would turn POLLOUT on and off, an epoll_ctl per response); 'b' is then left
 * empty with its allocation, which a finished request keeps for the next one
 * (http_request_object.c recycles requests). Only what must wait for the socket is moved out
 * of 'b' and queued. The callers look at writes_pending afterwards (linger). */
void http__conn_write(seatd_conn_t *c, seatd_buf_t *b)
{
    if (c->closing || c->lingering || b->len == 0) {
        seatd_buf_reset(b);
        return;
    }
    if (c->writes_pending == 0) {
        uv_buf_t now = uv_buf_init(b->data, (unsigned)b->len);
        int n = uv_try_write(&c->h.stream, &now, 1);
        if (n == (int)b->len) {
            seatd_buf_reset(b);
            return;
        }
        if (n > 0) {
            seatd_buf_consume(b, (size_t)n);
        } else if (n != UV_EAGAIN) {
            seatd_buf_reset(b);
            http__conn_close(c);
            return;
        }
    }
    size_t len = 0;
    char *bytes = seatd_buf_steal(b, &len);
    conn_queue(c, bytes, len);
}

/* ----------------------------------------------------------------------------------------
 * The output budget of a taken connection
 * ---------------------------------------------------------------------------------------- */

size_t seatd_http_conn_output_budget(const uv_stream_t *stream)
{
    const seatd_conn_t *c = stream->data;
    return c->srv->opts.output_budget;
}

size_t seatd_http_conn_output_queued(uv_stream_t *stream, size_t len)
{
    seatd_conn_t *c = stream->data;
    output_add(c, len);
    return c->out_bytes;
}

size_t seatd_http_conn_output_written(uv_stream_t *stream, size_t len)
{
    seatd_conn_t *c = stream->data;
    output_done(c, len);
    return c->out_bytes;
}

void seatd_http_conn_output_note(uv_stream_t *stream, int closed)
{
    seatd_conn_t *c = stream->data;
    if (closed)
        c->srv->stats.output_closed++;
    else
        c->srv->stats.output_paused++;
}
