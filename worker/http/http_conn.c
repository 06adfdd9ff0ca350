/*
 * http_conn.c - one client connection of the HTTP server: the timeout that fits what it waits
 * for (idle, header, body, output, linger), reading with backpressure, the loop that feeds the
 * parser and runs complete requests one at a time, the lingering close after a last response,
 * and the teardown (a request still running is detached, not cancelled). See
 * http_server_internal.h.
 */
#include "http/http_server_internal.h"

#include <stdlib.h>

#include "base/list.h"
#include "base/log.h"

#define READ_CHUNK 16384 /* bytes reserved per read */
#define LINGER_MS 2000   /* how long to drain a closing client's input */

/* ----------------------------------------------------------------------------------------
 * Connection teardown
 * ---------------------------------------------------------------------------------------- */

static void on_conn_close(uv_handle_t *handle)
{
    seatd_conn_t *c = handle->data;
    if (--c->closes_pending > 0)
        return;
    seatd_http_server_t *srv = c->srv;
    SEATD_LIST_UNLINK(srv->conns, c);
    srv->nconns--;
    seatd_req_parser_free(c->parser);
    seatd_buf_free(&c->in);
    seatd_http_owner_t owner = c->owner;
    int taken = c->taken;
    free(c);
    if (taken && owner.on_closed)
        owner.on_closed(owner.data);
    http__maybe_drain_done(srv);
}

/* Closes both handles; the struct dies in the last close callback. A running request is
 * detached: its pending operations own it from now on. */
void http__conn_close(seatd_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (c->cur) {
        seatd_req_t *r = c->cur;
        c->cur = NULL;
        http__orphan_adopt(c, r);
    }
    c->closes_pending = 2;
    uv_close(&c->h.handle, on_conn_close);
    uv_close((uv_handle_t *)&c->timer, on_conn_close);
}

void http__on_timer(uv_timer_t *t)
{
    seatd_conn_t *c = t->data;
    if (c->phase == PH_OUTPUT) {
        c->srv->stats.output_closed++;
        seatd_log(SEATD_LOG_INFO, NULL, "closing a client that does not read its responses",
                  "\"queued\":%zu", c->out_bytes);
    } else if (c->phase != PH_LINGER && c->phase != PH_IDLE)
        seatd_log(SEATD_LOG_DEBUG, NULL, "connection timed out", "\"phase\":%d", c->phase);
    http__conn_close(c);
}

static void set_phase(seatd_conn_t *c, int phase, unsigned ms)
{
    if (c->phase == phase)
        return;
    c->phase = phase;
    if (ms == 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, http__on_timer, ms, 0);
}

/* Arms the timeout that fits what the connection is waiting for. */
void http__update_phase(seatd_conn_t *c)
{
    if (c->closing || c->lingering || c->taken)
        return;
    const seatd_http_opts_t *o = &c->srv->opts;
    if (c->cur)
        set_phase(c, PH_HANDLER, 0); /* handlers own their deadlines */
    else if (c->out_paused)
        set_phase(c, PH_OUTPUT, o->idle_timeout_ms); /* re-armed whenever a write completes */
    else if (seatd_req_parser_in_body(c->parser))
        set_phase(c, PH_BODY, o->body_timeout_ms);
    else if (seatd_req_parser_in_message(c->parser) || c->in.len > 0 || c->served == 0)
        set_phase(c, PH_HEADER, o->header_timeout_ms);
    else
        set_phase(c, PH_IDLE, o->idle_timeout_ms);
}

static void after_shutdown(uv_shutdown_t *req, int status)
{
    seatd_conn_t *c = container_of(req, seatd_conn_t, shutdown_req);
    if (status < 0)
        http__conn_close(c);
}

/* All responses are written and the connection must close: shut down our side, then keep
 * reading (and discarding) until the client closes or LINGER_MS pass, so that unread input
 * does not turn our close into a reset that destroys the response in flight. */
void http__conn_linger(seatd_conn_t *c)
{
    if (c->closing || c->lingering)
        return;
    c->lingering = 1;
    c->phase = PH_LINGER;
    uv_timer_start(&c->timer, http__on_timer, LINGER_MS, 0);
    if (uv_shutdown(&c->shutdown_req, &c->h.stream, after_shutdown) < 0) {
        http__conn_close(c);
        return;
    }
    seatd_buf_reset(&c->in);
    http__start_reading(c); /* to see the client's EOF */
}

/* Feeds buffered bytes to the parser and runs complete requests, one at a time. */
void http__process(seatd_conn_t *c)
{
    if (c->processing || c->closing || c->lingering)
        return;
    c->processing = 1;
    while (!c->closing && !c->taken && c->cur == NULL && !c->close_after_write && !c->out_paused &&
           c->in.len > 0) {
        size_t used = 0;
        seatd_req_t *r = NULL;
        int rc = seatd_req_parser_feed(c->parser, c->in.data, c->in.len, &used, &r);
        seatd_buf_consume(&c->in, used);
        if (rc < 0) {
            seatd_buf_t out = SEATD_BUF_INIT;
            seatd_req_parser_error_response(rc, &out);
            seatd_log(SEATD_LOG_INFO, NULL, "bad request", "\"status\":%d,\"error\":\"%s\"",
                      seatd_err_http_status(rc), seatd_err_name(rc));
            c->close_after_write = 1;
            http__conn_write(c, &out);
            seatd_buf_free(&out);
            break;
        }
        if (seatd_req_parser_take_continue(c->parser)) {
            seatd_buf_t cont = SEATD_BUF_INIT;
            seatd_buf_puts(&cont, "HTTP/1.1 100 Continue\r\n\r\n");
            http__conn_write(c, &cont);
            seatd_buf_free(&cont);
        }
        if (r == NULL)
            break;
        http__dispatch(c, r);
    }
    c->processing = 0;
    if (c->closing || c->taken)
        return;
    if (c->close_after_write && c->cur == NULL && c->writes_pending == 0) {
        http__conn_linger(c);
        return;
    }
    http__update_phase(c);
    /* Backpressure: while a request runs, buffer at most one more request's worth; while
     * the output is over its high-water mark, read nothing. */
    size_t cap = c->srv->opts.max_header + c->srv->opts.max_body;
    if (c->reading && (c->in.len > cap || c->out_paused)) {
        uv_read_stop(&c->h.stream);
        c->reading = 0;
    } else if (!c->reading && c->in.len <= cap && !c->out_paused) {
        http__start_reading(c);
    }
}

/* ----------------------------------------------------------------------------------------
 * Reading
 * ---------------------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    seatd_conn_t *c = handle->data;
    seatd_buf_reserve(&c->in, READ_CHUNK);
    *buf = uv_buf_init(c->in.data + c->in.len, READ_CHUNK);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    seatd_conn_t *c = stream->data;
    if (nread == 0 || c->closing)
        return;
    if (nread < 0) {
        /* EOF or error. A request still running is detached (nginx does the same). */
        http__conn_close(c);
        return;
    }
    if (c->lingering)
        return; /* discard: the connection is ending */
    c->in.len += (size_t)nread;
    c->in.data[c->in.len] = '\0';
    http__process(c);
}

void http__start_reading(seatd_conn_t *c)
{
    if (c->reading || c->closing || c->taken)
        return;
    if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
        c->reading = 1;
    else
        http__conn_close(c);
}
