/*
 * live_watcher.c - one WebSocket client of the live seat map: the upgrade that makes a request
 * a watcher (seatd_live_accept), moving its codec's output to the socket, the output budget
 * that pauses a slow reader and closes a client too slow to keep up, reading its frames, the
 * housekeeping (pings, idle, close deadlines, read retries) and closing. See live_internal.h.
 */
#include "flows/live_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/http_request.h"
#include "http/http_server.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

typedef struct {
    uv_write_t req; /* embedded */
    watcher_t *w;   /* the writer */
    char *data;     /* owned; freed in after_write */
    size_t len;
} write_req_t;

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* ---------------------------------------------------------------------------------------
 * Writing frames
 * --------------------------------------------------------------------------------------- */

static void after_write(uv_write_t *req, int status)
{
    write_req_t *wr = container_of(req, write_req_t, req);
    watcher_t *w = wr->w;
    w->frames_pending--;
    w->bytes_pending -= wr->len;
    seatd_http_conn_output_written(w->stream, wr->len);
    free(wr->data);
    free(wr);
    if (w->hard_closed)
        return;
    if (status < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
        return;
    }
    if (w->paused && !w->closing && w->bytes_pending < w->budget / 4) {
        w->paused = 0; /* below the low-water mark: read the client again */
        if (uv_read_start(w->stream, on_alloc, on_read) < 0) {
            w->hard_closed = 1;
            seatd_http_conn_close(w->stream);
            return;
        }
    }
    if (w->closing && w->frames_pending == 0 && seatd_ws_close_sent(w->ws)) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
    }
}

/* Moves the codec's output to the socket. */
static void pump(watcher_t *w)
{
    if (w->hard_closed)
        return;
    seatd_buf_t out = SEATD_BUF_INIT;
    if (seatd_ws_output(w->ws, &out) == 0) {
        seatd_buf_free(&out);
        return;
    }
    /* At once when nothing is queued ahead and the socket takes it all (the usual case):
     * libuv's queued write turns POLLOUT on and off, an epoll_ctl per frame per watcher. */
    if (w->frames_pending == 0) {
        uv_buf_t now = uv_buf_init(out.data, (unsigned)out.len);
        int n = uv_try_write(w->stream, &now, 1);
        if (n == (int)out.len) {
            seatd_buf_free(&out);
            if (w->closing && seatd_ws_close_sent(w->ws)) { /* as after_write() */
                w->hard_closed = 1;
                seatd_http_conn_close(w->stream);
            }
            return;
        }
        if (n < 0 && n != UV_EAGAIN) {
            seatd_buf_free(&out);
            w->hard_closed = 1;
            seatd_http_conn_close(w->stream);
            return;
        }
        if (n > 0) { /* the rest waits for the socket */
            memmove(out.data, out.data + n, out.len - (size_t)n);
            out.len -= (size_t)n;
        }
    }
    write_req_t *wr = seatd_malloc(sizeof(*wr));
    wr->w = w;
    wr->data = seatd_buf_steal(&out, &wr->len);
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)wr->len);
    if (uv_write(&wr->req, w->stream, &b, 1, after_write) < 0) {
        free(wr->data);
        free(wr);
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
        return;
    }
    w->frames_pending++;
    w->bytes_pending += wr->len;
    seatd_http_conn_output_queued(w->stream, wr->len);
}

/* Queues our close frame; the stream is closed once it is written (or after a grace). */
void live__watcher_close(watcher_t *w, unsigned status, const char *reason)
{
    if (w->closing || w->hard_closed)
        return;
    w->closing = 1;
    w->close_deadline_ms = live__now_ms(w->lv) + CLOSE_GRACE_MS;
    if (seatd_ws_close(w->ws, status, reason) == 0)
        pump(w);
    if (w->frames_pending == 0 && !w->hard_closed) {
        w->hard_closed = 1;
        seatd_http_conn_close(w->stream);
    }
}

static void close_slow(watcher_t *w)
{
    seatd_live_t *lv = w->lv;
    lv->stats.slow_closed++;
    seatd_http_conn_output_note(w->stream, 1);
    seatd_log(SEATD_LOG_INFO, NULL, "live: closing a slow client",
              "\"show\":\"%s\",\"frames\":%u,\"bytes\":%zu", w->show ? w->show->id : "",
              w->frames_pending, w->bytes_pending);
    live__watcher_close(w, SEATD_WS_CLOSE_POLICY, "too slow"); /* see live.h on 1013 */
}

/*
 * The output budget, after anything was queued (data frames, pongs, pings): a client whose
 * unsent bytes passed the budget is closed; at half the budget its reading pauses (so pings
 * it keeps sending queue no pongs) until the output drains below a quarter (after_write).
 */
static void output_check(watcher_t *w)
{
    if (w->closing || w->hard_closed)
        return;
    if (w->bytes_pending > w->budget) {
        close_slow(w);
        return;
    }
    if (!w->paused && w->bytes_pending >= w->budget / 2) {
        w->paused = 1;
        uv_read_stop(w->stream);
        seatd_http_conn_output_note(w->stream, 0);
    }
}

/* Sends one text message ('compressed': its permessage-deflate payload), or closes a client
 * that cannot keep up. */
void live__send_msg(watcher_t *w, const char *data, size_t len, int compressed)
{
    seatd_live_t *lv = w->lv;
    if (w->closing || w->hard_closed)
        return;
    if (w->frames_pending >= lv->opts.max_queue_frames || w->bytes_pending + len > w->budget) {
        close_slow(w);
        return;
    }
    int rc = compressed ? seatd_ws_send_deflated(w->ws, SEATD_WS_TEXT, data, len)
                        : seatd_ws_send(w->ws, SEATD_WS_TEXT, data, len);
    if (rc < 0)
        return;
    lv->stats.frames++;
    pump(w);
    output_check(w);
}

void live__send_text(watcher_t *w, const char *text, size_t len)
{
    live__send_msg(w, text, len, 0);
}
/* ---------------------------------------------------------------------------------------
 * Watchers: reading, housekeeping, closing
 * --------------------------------------------------------------------------------------- */

static void on_ws_msg(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len, unsigned status,
                      void *user)
{
    watcher_t *w = user;
    if (opcode == SEATD_WS_TEXT && w->show && len < 256) {
        char cmd[256];
        memcpy(cmd, data, len);
        cmd[len] = '\0';
        if (strstr(cmd, "\"resync\"")) {
            w->sent_ver = -1;
            if (w->show->synced)
                live__flush_one(w);
        }
    }
    /* Pongs only refresh last_rx_ms (done on every read); pings were answered by the codec;
     * a close was answered by the codec: the stream is closed once that is written. */
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    watcher_t *w = seatd_http_conn_owner((uv_stream_t *)h);
    seatd_live_t *lv = w->lv;
    if (lv->rbuf_busy) { /* never nested on one loop, but stay correct if it were */
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    lv->rbuf_busy = 1;
    *buf = uv_buf_init(lv->rbuf, READ_BUF);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    watcher_t *w = seatd_http_conn_owner(stream);
    seatd_live_t *lv = w->lv;
    if (buf->base == lv->rbuf)
        lv->rbuf_busy = 0;
    if (nread == 0 || w->hard_closed)
        return;
    if (nread < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        return;
    }
    w->last_rx_ms = live__now_ms(lv);
    int rc = seatd_ws_feed(w->ws, buf->base, (size_t)nread);
    if (seatd_ws_close_received(w->ws) || rc < 0) {
        w->closing = 1;
        w->close_deadline_ms = live__now_ms(lv) + CLOSE_GRACE_MS;
        uv_read_stop(stream);
    }
    pump(w); /* pongs, the answering close */
    output_check(w);
    if (w->closing && w->frames_pending == 0 && !w->hard_closed) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
    }
}

void live__on_house(uv_timer_t *t)
{
    seatd_live_t *lv = t->data;
    uint64_t now = live__now_ms(lv);
    for (size_t b = 0; b < SHOW_BUCKETS; b++) {
        for (show_t *s = lv->buckets[b]; s; s = s->hnext) {
            if (s->retry_ms && now >= s->retry_ms && s->subscribed && !s->synced)
                live__start_read(s);
            for (watcher_t *w = s->watchers, *next; w; w = next) {
                next = w->next;
                if (w->hard_closed)
                    continue;
                if (w->closing) {
                    if (now >= w->close_deadline_ms) {
                        w->hard_closed = 1;
                        seatd_http_conn_close(w->stream);
                    }
                    continue;
                }
                if (now - w->last_rx_ms >= lv->opts.idle_ms) {
                    live__watcher_close(w, SEATD_WS_CLOSE_GOING_AWAY, "no pong");
                    continue;
                }
                if (now - w->last_ping_ms >= lv->opts.ping_ms) {
                    w->last_ping_ms = now;
                    if (seatd_ws_send(w->ws, SEATD_WS_PING, "", 0) == 0) {
                        pump(w);
                        output_check(w);
                    }
                }
            }
        }
    }
}

/* The connection is closed: detach from the show, free. */
static void on_watcher_closed(void *data)
{
    watcher_t *w = data;
    seatd_live_t *lv = w->lv;
    show_t *s = w->show;
    if (s) {
        live__pass_skip(s, w); /* before the unlink, which clears w->next */
        SEATD_LIST_UNLINK(s->watchers, w);
        s->nwatchers--;
        live__show_maybe_free(s);
    }
    lv->stats.watchers--;
    seatd_ws_free(w->ws);
    free(w);
    live__maybe_free(lv);
}

static void on_watcher_drain(void *data)
{
    watcher_t *w = data;
    live__watcher_close(w, SEATD_WS_CLOSE_GOING_AWAY, "server shutting down");
}

/* ---------------------------------------------------------------------------------------
 * Accepting a watcher
 * --------------------------------------------------------------------------------------- */
int seatd_live_accept(seatd_live_t *lv, seatd_req_t *r, const char *show_id,
                      const seatd_layout_t *layout, const char *ws_key, long long since,
                      int deflate)
{
    if (lv->closing)
        return SEATD_ESHUTDOWN;
    char accept[SEATD_WS_ACCEPT_LEN + 1];
    if (seatd_ws_accept_key(ws_key, accept) < 0)
        return SEATD_EINVAL;
    char id[SEATD_ID_MAX]; /* 'show_id' may live in 'r', which the takeover frees */
    if (snprintf(id, sizeof(id), "%s", show_id) >= (int)sizeof(id))
        return SEATD_EINVAL;
    show_id = id;
    watcher_t *w = seatd_calloc(1, sizeof(*w));
    w->lv = lv;
    w->sent_ver = since >= 0 ? since : -1;
    seatd_http_owner_t owner = {on_watcher_drain, on_watcher_closed, w};
    seatd_buf_t leftover = SEATD_BUF_INIT;
    uv_stream_t *stream = NULL;
    int rc = seatd_req_take_connection(r, &owner, &stream, &leftover);
    if (rc < 0) {
        free(w);
        seatd_buf_free(&leftover);
        return rc;
    }
    /* From here on the watcher is the connection's owner: every path ends in on_closed. */
    w->stream = stream;
    w->budget = seatd_http_conn_output_budget(stream);
    if (lv->opts.max_queue_bytes && lv->opts.max_queue_bytes < w->budget)
        w->budget = lv->opts.max_queue_bytes;
    w->ws = seatd_ws_new(0, MAX_CLIENT_MSG, on_ws_msg, w);
    if (deflate) {
        seatd_ws_set_deflate(w->ws);
        w->deflate = 1;
    }
    w->last_rx_ms = w->last_ping_ms = live__now_ms(lv);
    lv->stats.watchers++;

    show_t *s = live__show_find(lv, show_id);
    if (s == NULL) {
        s = live__show_new(lv, show_id, layout);
        if (seatd_pubsub_subscribe(lv->ps, s->channel) < 0)
            seatd_log(SEATD_LOG_WARN, NULL, "live: cannot subscribe", "\"show\":\"%s\"", s->id);
    }
    w->show = s;
    SEATD_LIST_PUSH(s->watchers, w);
    s->nwatchers++;

    char head[320];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
                     accept,
                     deflate ? "Sec-WebSocket-Extensions: " SEATD_WS_DEFLATE_RESPONSE "\r\n" : "");
    write_req_t *wr = seatd_malloc(sizeof(*wr));
    wr->w = w;
    wr->data = seatd_strndup(head, (size_t)n);
    wr->len = (size_t)n;
    uv_buf_t b = uv_buf_init(wr->data, (unsigned)wr->len);
    if (uv_write(&wr->req, stream, &b, 1, after_write) < 0) {
        free(wr->data);
        free(wr);
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        seatd_buf_free(&leftover);
        return 0;
    }
    w->frames_pending++;
    w->bytes_pending += wr->len;
    seatd_http_conn_output_queued(stream, wr->len);
    if (uv_read_start(stream, on_alloc, on_read) < 0) {
        w->hard_closed = 1;
        seatd_http_conn_close(stream);
        seatd_buf_free(&leftover);
        return 0;
    }
    if (leftover.len > 0) { /* client frames pipelined behind the upgrade request */
        if (seatd_ws_feed(w->ws, leftover.data, leftover.len) < 0 || seatd_ws_close_received(w->ws))
            w->closing = 1;
        pump(w);
        output_check(w);
    }
    seatd_buf_free(&leftover);
    if (w->closing) {
        w->close_deadline_ms = live__now_ms(lv) + CLOSE_GRACE_MS;
        return 0;
    }
    if (s->synced)
        live__flush_one(w);
    w->qgen = s->qgen;
    if (s->qframe.len > 0) /* a queued show: where its waiting room stands */
        live__send_text(w, s->qframe.data, s->qframe.len);
    return 0;
}
