/* http_server.c - listener, connections, the request pipeline; see http_server.h. */
#include "http/http_server.h"
#include "http/auth.h"
#include "base/buf.h"
#include "http/http_request.h"
#include "base/log.h"
#include "base/mem.h"
#include "http/router.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define READ_CHUNK 16384 /* bytes reserved per read */
#define LINGER_MS 2000   /* how long to drain a closing client's input */
#define LISTEN_BACKLOG 511
#define CLIENT_GONE 499 /* nginx's status for a client that went away first */

typedef struct seatd_conn_s seatd_conn_t;

enum { PH_NONE, PH_IDLE, PH_HEADER, PH_BODY, PH_HANDLER, PH_OUTPUT, PH_LINGER };

struct seatd_conn_s {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;                            /* the client stream; h.handle.data = this */
    uv_timer_t timer;               /* idle / header / body / linger timeout; data = this */
    uv_shutdown_t shutdown_req;     /* used once, for the lingering close */
    seatd_http_server_t *srv;       /* the owner */
    seatd_conn_t *prev, *next;      /* the server's list of connections */
    seatd_req_parser_t *parser;     /* owned */
    seatd_buf_t in;                 /* bytes read and not yet consumed by the parser */
    seatd_req_t *cur;               /* the running request (owned) or NULL */
    uint64_t started_ns;            /* uv_hrtime() when 'cur' was parsed */
    unsigned long served;           /* requests dispatched on this connection */
    size_t writes_pending;          /* uv_write calls without their callback yet */
    size_t out_bytes;               /* queued output: bytes written (by us, or by the owner of a
                                       taken connection) whose write has not called back */
    int closes_pending;             /* handle closes without their callback yet */
    int phase;                      /* PH_*: which timeout is armed */
    unsigned closing : 1;           /* uv_close() was called */
    unsigned reading : 1;           /* uv_read_start() is active */
    unsigned close_after_write : 1; /* close once the queued responses are written */
    unsigned lingering : 1;         /* shut down for writing; discarding input until EOF */
    unsigned processing : 1;        /* inside process(): no re-entry */
    unsigned taken : 1;             /* upgraded: the stream belongs to 'owner' */
    unsigned out_paused : 1;        /* output over the high-water mark: no reading, no next
                                       request until it drains below the low-water mark */
    seatd_http_owner_t owner;       /* the new owner's hooks (when 'taken') */
};

typedef struct {
    uv_write_t req;  /* embedded; req.data unused */
    seatd_conn_t *c; /* the connection written to */
    char *data;      /* owned; freed in after_write */
    size_t len;      /* bytes in 'data' (accounted in c->out_bytes) */
} write_req_t;

struct seatd_http_server_s {
    uv_loop_t *loop;        /* borrowed */
    seatd_http_opts_t opts; /* copied; 'listen' points at 'listen' below */
    char *listen;           /* owned copy of opts.listen */
    seatd_route_t *routes;  /* borrowed; stats updated in place */
    size_t nroutes;         /* rows in 'routes' */
    void *app;              /* handed to every request */
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } lis;                           /* the listener */
    int lis_state;                   /* 0 never opened, 1 open, 2 closing, 3 closed */
    char *unix_path;                 /* owned; the socket file to unlink, or NULL */
    int port;                        /* bound TCP port */
    seatd_conn_t *conns;             /* every connection until its close callback */
    size_t nconns;                   /* entries in 'conns' */
    int draining;                    /* seatd_http_server_drain() was called */
    int drain_done;                  /* the drain timer is closing: 'drain_cb' is next */
    uv_timer_t drain_timer;          /* forces the end of a drain */
    seatd_http_drain_cb drain_cb;    /* runs once when everything is closed */
    void *drain_data;                /* for 'drain_cb' */
    size_t norphans;                 /* requests still running whose client went away */
    int drain_forced;                /* the drain timer fired once: connections were closed */
    seatd_http_server_stats_t stats; /* output budget figures */
};

/* A request whose connection closed while it ran (the client went away): it runs to
 * completion (twemproxy's rule: a request outlives its client), then its finish is logged
 * and counted as 499 client_gone (nginx's code) with the status it would have answered, and
 * nothing is written. The server owns it until that finish; the drain waits for it. */
typedef struct orphan_s {
    seatd_http_server_t *srv;
    seatd_req_t *r;
    uint64_t started_ns;
    struct orphan_s *next;
} orphan_t;

/* Every orphan of this thread (one loop, one thread: a plain static, as 'taking' below). */
static orphan_t *orphans;

/* The request being taken over by seatd_req_take_connection(): its finish hook does the
 * takeover instead of writing a response. One loop, one thread: a plain static. */
static struct {
    seatd_req_t *r;  /* the request whose finish is a takeover */
    seatd_conn_t *c; /* set by the finish hook when it took the connection */
} taking;

static void process(seatd_conn_t *c);
static void start_reading(seatd_conn_t *c);
static void conn_close(seatd_conn_t *c);
static void maybe_drain_done(seatd_http_server_t *srv);
static void orphan_adopt(seatd_conn_t *c, seatd_req_t *r);

/* ----------------------------------------------------------------------------------------
 * Connection teardown
 * ---------------------------------------------------------------------------------------- */

static void on_conn_close(uv_handle_t *handle)
{
    seatd_conn_t *c = handle->data;
    if (--c->closes_pending > 0)
        return;
    seatd_http_server_t *srv = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    seatd_req_parser_free(c->parser);
    seatd_buf_free(&c->in);
    seatd_http_owner_t owner = c->owner;
    int taken = c->taken;
    free(c);
    if (taken && owner.on_closed)
        owner.on_closed(owner.data);
    maybe_drain_done(srv);
}

/* Closes both handles; the struct dies in the last close callback. A running request is
 * detached: its pending operations own it from now on. */
static void conn_close(seatd_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (c->cur) {
        seatd_req_t *r = c->cur;
        c->cur = NULL;
        orphan_adopt(c, r);
    }
    c->closes_pending = 2;
    uv_close(&c->h.handle, on_conn_close);
    uv_close((uv_handle_t *)&c->timer, on_conn_close);
}

static void on_timer(uv_timer_t *t)
{
    seatd_conn_t *c = t->data;
    if (c->phase == PH_OUTPUT) {
        c->srv->stats.output_closed++;
        seatd_log(SEATD_LOG_INFO, NULL, "closing a client that does not read its responses",
                  "\"queued\":%zu", c->out_bytes);
    } else if (c->phase != PH_LINGER && c->phase != PH_IDLE)
        seatd_log(SEATD_LOG_DEBUG, NULL, "connection timed out", "\"phase\":%d", c->phase);
    conn_close(c);
}

static void set_phase(seatd_conn_t *c, int phase, unsigned ms)
{
    if (c->phase == phase)
        return;
    c->phase = phase;
    if (ms == 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* Arms the timeout that fits what the connection is waiting for. */
static void update_phase(seatd_conn_t *c)
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
        conn_close(c);
}

/* All responses are written and the connection must close: shut down our side, then keep
 * reading (and discarding) until the client closes or LINGER_MS pass, so that unread input
 * does not turn our close into a reset that destroys the response in flight. */
static void conn_linger(seatd_conn_t *c)
{
    if (c->closing || c->lingering)
        return;
    c->lingering = 1;
    c->phase = PH_LINGER;
    uv_timer_start(&c->timer, on_timer, LINGER_MS, 0);
    if (uv_shutdown(&c->shutdown_req, &c->h.stream, after_shutdown) < 0) {
        conn_close(c);
        return;
    }
    seatd_buf_reset(&c->in);
    start_reading(c); /* to see the client's EOF */
}

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
        conn_close(c);
        return;
    }
    if (c->close_after_write && c->writes_pending == 0 && c->cur == NULL) {
        conn_linger(c);
        return;
    }
    if (c->out_paused) {
        if (c->out_bytes < c->srv->opts.output_budget / 4) {
            c->out_paused = 0; /* below the low-water mark: read and answer again */
            if (!c->processing)
                process(c);
        } else if (c->phase == PH_OUTPUT) {
            uv_timer_start(&c->timer, on_timer, c->srv->opts.idle_timeout_ms, 0); /* progress */
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
        conn_close(c);
        return;
    }
    c->writes_pending++;
    output_add(c, len);
    output_check(c);
}

/* Writes the bytes of 'b' on 'c': at once, from 'b' itself, when nothing is queued ahead and
 * the socket takes them all (the usual case: a response fits the socket buffer, and libuv's
 * queued write would turn POLLOUT on and off, an epoll_ctl per response); 'b' is then left
 * empty with its allocation, which a finished request keeps for the next one (http_request.c
 * recycles requests). Only what must wait for the socket is moved out of 'b' and queued. The
 * callers look at writes_pending afterwards (linger). */
static void conn_write(seatd_conn_t *c, seatd_buf_t *b)
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
            conn_close(c);
            return;
        }
    }
    size_t len = 0;
    char *bytes = seatd_buf_steal(b, &len);
    conn_queue(c, bytes, len);
}

/* ----------------------------------------------------------------------------------------
 * The pipeline: route -> auth -> handler; finish -> log -> stats
 * ---------------------------------------------------------------------------------------- */

/* One line per request; 'answer' is the status a client that went away would have got (0
 * when the client is still there). Written member by member (no printf per request), the
 * duration from whole microseconds (no floating-point formatting). */
static void log_request(seatd_req_t *r, int status, double seconds, int answer)
{
    int level = status >= 500 ? SEATD_LOG_WARN : SEATD_LOG_INFO;
    seatd_buf_t *b = seatd_log_begin(level, seatd_req_id(r), "request");
    if (b == NULL)
        return;
    long long us = seconds > 0 ? (long long)(seconds * 1e6 + 0.5) : 0;
    const seatd_route_t *rt = seatd_req_route(r);
    const seatd_principal_t *who = seatd_req_principal(r);
    seatd_buf_json_member(b, "method", seatd_req_method(r));
    seatd_buf_json_member(b, "path", seatd_req_path(r));
    seatd_buf_json_member(b, "route", rt ? rt->name : "");
    seatd_buf_puts(b, ",\"status\":");
    seatd_buf_put_uint(b, (unsigned)status);
    seatd_buf_puts(b, ",\"ms\":");
    seatd_buf_put_uint(b, (unsigned long long)(us / 1000));
    char frac[5] = {'.', (char)('0' + us / 100 % 10), (char)('0' + us / 10 % 10),
                    (char)('0' + us % 10), '\0'};
    seatd_buf_puts(b, frac);
    seatd_buf_json_member(b, "user", who ? who->sub : "");
    if (answer) {
        seatd_buf_puts(b, ",\"outcome\":\"client_gone\",\"answer\":");
        seatd_buf_put_uint(b, (unsigned)answer);
    }
    seatd_log_end();
}

/* The finish hook: runs inside seatd_req_finish*() for a request this connection owns. */
static void on_req_finish(seatd_req_t *r, void *data)
{
    seatd_conn_t *c = data;
    seatd_http_server_t *srv = c->srv;
    assert(c->cur == r);
    int status = seatd__req_status(r);
    double seconds = (double)(uv_hrtime() - c->started_ns) / 1e9;

    log_request(r, status, seconds, 0);
    const seatd_route_t *rt = seatd_req_route(r);
    if (rt) /* the rows belong to srv->routes, which is mutable */
        seatd_route_stats_observe(&((seatd_route_t *)rt)->stats, status, seconds);
    if (srv->opts.on_finish)
        srv->opts.on_finish(r, status, seconds, srv->app);

    if (taking.r == r) {
        /* An upgrade: nothing is written, the stream leaves the state machine. */
        taking.c = c;
        c->taken = 1;
        c->cur = NULL;
        seatd__req_disown(r); /* may free 'r' */
        if (c->reading)
            uv_read_stop(&c->h.stream);
        c->reading = 0;
        c->phase = PH_NONE;
        uv_timer_stop(&c->timer);
        return;
    }

    if (seatd__req_wants_close(r))
        c->close_after_write = 1;
    c->cur = NULL;
    conn_write(c, seatd__req_response(r));
    seatd__req_disown(r); /* may free 'r' */
    if (!c->processing)
        process(c); /* an asynchronous finish: start the next pipelined request */
}

/* The finish hook of an orphan: one log line and the metrics, as status 499. */
static void on_orphan_finish(seatd_req_t *r, void *data)
{
    orphan_t *o = data;
    seatd_http_server_t *srv = o->srv;
    for (orphan_t **pp = &orphans; *pp; pp = &(*pp)->next) {
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    }
    double seconds = (double)(uv_hrtime() - o->started_ns) / 1e9;
    int answer = seatd__req_status(r);
    log_request(r, CLIENT_GONE, seconds, answer > 0 ? answer : 500);
    const seatd_route_t *rt = seatd_req_route(r);
    if (rt)
        seatd_route_stats_observe(&((seatd_route_t *)rt)->stats, CLIENT_GONE, seconds);
    if (srv->opts.on_finish) /* it sees the request as it was done, client gone or not */
        srv->opts.on_finish(r, answer > 0 ? answer : 500, seconds, srv->app);
    free(o);
    if (srv->norphans > 0)
        srv->norphans--;
    seatd__req_disown(r); /* may free 'r' */
    maybe_drain_done(srv);
}

static orphan_t *orphan_find(const seatd_req_t *r)
{
    for (orphan_t *o = orphans; o; o = o->next)
        if (o->r == r)
            return o;
    return NULL;
}

/* The connection of 'r' closes while 'r' runs: the server keeps it until its finish. */
static void orphan_adopt(seatd_conn_t *c, seatd_req_t *r)
{
    orphan_t *o = seatd_calloc(1, sizeof(*o));
    o->srv = c->srv;
    o->r = r;
    o->started_ns = c->started_ns;
    o->next = orphans;
    orphans = o;
    c->srv->norphans++;
    seatd__req_set_finish_cb(r, on_orphan_finish, o);
}

/* Routes, authenticates and runs the handler. Returns the handler's code, or the pipeline's
 * own error for the caller to answer. */
static int route_and_run(seatd_http_server_t *srv, seatd_req_t *r)
{
    const char *method = seatd_req_method(r);
    if (strcmp(method, "HEAD") == 0)
        method = "GET"; /* rendered without a body */
    seatd_route_match_t m;
    int rc = seatd_router_match(srv->routes, srv->nroutes, method, seatd__req_raw_path(r), &m);
    if (rc == SEATD_EMETHOD) {
        seatd_req_add_header(r, "Allow", m.allow);
        return rc;
    }
    if (rc < 0)
        return rc;
    seatd__req_set_route(r, &m);
    int flags = m.route->flags;
    if (flags & (SEATD_ROUTE_AUTH | SEATD_ROUTE_ADMIN)) {
        seatd_principal_t who;
        seatd_auth_fault_t why = SEATD_AUTH_FAULT_MISSING;
        if (srv->opts.auth == NULL ||
            seatd_auth_verify_bearer_why(srv->opts.auth, seatd_req_header(r, "authorization"), &who,
                                         &why) < 0) {
            /* Say why (RFC 6750 section 3: the challenge's error and error_description). */
            char challenge[SEATD_AUTH_CHALLENGE_MAX];
            seatd_auth_challenge(why, challenge, sizeof(challenge));
            seatd_req_add_header(r, "WWW-Authenticate", challenge);
            seatd_req_finish_problem(r, SEATD_EUNAUTH, seatd_auth_fault_text(why), NULL);
            return SEATD_EUNAUTH;
        }
        seatd__req_set_principal(r, &who);
        if ((flags & SEATD_ROUTE_ADMIN) && !who.admin)
            return SEATD_EFORBIDDEN;
    }
    return m.route->handler(r);
}

static void dispatch(seatd_conn_t *c, seatd_req_t *r)
{
    seatd_http_server_t *srv = c->srv;
    c->cur = r;
    c->served++;
    c->started_ns = uv_hrtime();
    seatd__req_set_app(r, srv->app);
    seatd__req_set_finish_cb(r, on_req_finish, c);
    if (srv->draining)
        seatd__req_set_close(r);
    /* Our own hold keeps 'r' alive while the handler runs, whatever it finishes. */
    seatd_req_hold(r);
    int rc = route_and_run(srv, r);
    if (rc < 0 && !seatd_req_is_finished(r) && !seatd_req_is_detached(r))
        seatd_req_finish_problem(r, rc, NULL, NULL);
    seatd_req_release(r);
}

/* Feeds buffered bytes to the parser and runs complete requests, one at a time. */
static void process(seatd_conn_t *c)
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
            conn_write(c, &out);
            seatd_buf_free(&out);
            break;
        }
        if (seatd_req_parser_take_continue(c->parser)) {
            seatd_buf_t cont = SEATD_BUF_INIT;
            seatd_buf_puts(&cont, "HTTP/1.1 100 Continue\r\n\r\n");
            conn_write(c, &cont);
            seatd_buf_free(&cont);
        }
        if (r == NULL)
            break;
        dispatch(c, r);
    }
    c->processing = 0;
    if (c->closing || c->taken)
        return;
    if (c->close_after_write && c->cur == NULL && c->writes_pending == 0) {
        conn_linger(c);
        return;
    }
    update_phase(c);
    /* Backpressure: while a request runs, buffer at most one more request's worth; while
     * the output is over its high-water mark, read nothing. */
    size_t cap = c->srv->opts.max_header + c->srv->opts.max_body;
    if (c->reading && (c->in.len > cap || c->out_paused)) {
        uv_read_stop(&c->h.stream);
        c->reading = 0;
    } else if (!c->reading && c->in.len <= cap && !c->out_paused) {
        start_reading(c);
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
        conn_close(c);
        return;
    }
    if (c->lingering)
        return; /* discard: the connection is ending */
    c->in.len += (size_t)nread;
    c->in.data[c->in.len] = '\0';
    process(c);
}

static void start_reading(seatd_conn_t *c)
{
    if (c->reading || c->closing || c->taken)
        return;
    if (uv_read_start(&c->h.stream, on_alloc, on_read) == 0)
        c->reading = 1;
    else
        conn_close(c);
}

/* ----------------------------------------------------------------------------------------
 * Accepting
 * ---------------------------------------------------------------------------------------- */

static int is_unix(const seatd_http_server_t *srv)
{
    return strncmp(srv->listen, "unix:", 5) == 0;
}

static void on_connection(uv_stream_t *server, int status)
{
    seatd_http_server_t *srv = server->data;
    if (status < 0) {
        seatd_log(SEATD_LOG_WARN, NULL, "accept failed", "\"error\":\"%s\"", uv_err_name(status));
        return;
    }
    seatd_conn_t *c = seatd_calloc(1, sizeof(*c));
    c->srv = srv;
    if (is_unix(srv))
        uv_pipe_init(srv->loop, &c->h.pipe, 0);
    else
        uv_tcp_init(srv->loop, &c->h.tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->h.handle.data = c;
    c->timer.data = c;
    c->parser = seatd_req_parser_new(
        &(seatd_req_limits_t){.max_header = srv->opts.max_header, .max_body = srv->opts.max_body});
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;

    if (uv_accept(server, &c->h.stream) < 0) {
        conn_close(c);
        return;
    }
    if (!is_unix(srv))
        uv_tcp_nodelay(&c->h.tcp, 1);
    if (srv->draining || srv->nconns > srv->opts.max_connections) {
        /* Over the limit: a best-effort 503 and close, without reading anything. */
        seatd_buf_t out = SEATD_BUF_INIT;
        seatd_req_parser_error_response(srv->draining ? SEATD_ESHUTDOWN : SEATD_EOVERLOAD, &out);
        uv_buf_t b = uv_buf_init(out.data, (unsigned)out.len);
        int rc = uv_try_write(&c->h.stream, &b, 1);
        (void)rc;
        seatd_buf_free(&out);
        seatd_log(SEATD_LOG_WARN, NULL, "connection refused: too many connections", "\"max\":%zu",
                  srv->opts.max_connections);
        conn_close(c);
        return;
    }
    start_reading(c);
    update_phase(c);
}

/* ----------------------------------------------------------------------------------------
 * Server API
 * ---------------------------------------------------------------------------------------- */

seatd_http_server_t *seatd_http_server_new(uv_loop_t *loop, const seatd_http_opts_t *opts,
                                           seatd_route_t *routes, size_t nroutes, void *app)
{
    seatd_http_server_t *srv = seatd_calloc(1, sizeof(*srv));
    srv->loop = loop;
    srv->opts = *opts;
    srv->listen = seatd_strdup(opts->listen ? opts->listen : "127.0.0.1:8081");
    srv->opts.listen = srv->listen;
    if (srv->opts.max_connections == 0)
        srv->opts.max_connections = 10000;
    if (srv->opts.idle_timeout_ms == 0)
        srv->opts.idle_timeout_ms = 60000;
    if (srv->opts.header_timeout_ms == 0)
        srv->opts.header_timeout_ms = 10000;
    if (srv->opts.body_timeout_ms == 0)
        srv->opts.body_timeout_ms = 10000;
    if (srv->opts.drain_timeout_ms == 0)
        srv->opts.drain_timeout_ms = 10000;
    if (srv->opts.max_header == 0)
        srv->opts.max_header = SEATD_REQ_MAX_HEADER;
    if (srv->opts.max_body == 0)
        srv->opts.max_body = SEATD_REQ_MAX_BODY;
    if (srv->opts.output_budget == 0)
        srv->opts.output_budget = SEATD_HTTP_OUTPUT_BUDGET;
    srv->routes = routes;
    srv->nroutes = nroutes;
    srv->app = app;
    return srv;
}

static void on_listener_close(uv_handle_t *handle)
{
    seatd_http_server_t *srv = handle->data;
    srv->lis_state = 3;
    if (srv->unix_path) {
        unlink(srv->unix_path);
        free(srv->unix_path);
        srv->unix_path = NULL;
    }
    maybe_drain_done(srv);
}

static int listen_fail(seatd_http_server_t *srv, const char *what, int uverr)
{
    seatd_log(SEATD_LOG_ERROR, NULL, "cannot listen",
              "\"listen\":\"%s\",\"step\":\"%s\",\"error\":\"%s\"", srv->listen, what,
              uverr ? uv_strerror(uverr) : "malformed address");
    if (srv->lis_state == 1) {
        srv->lis_state = 2;
        free(srv->unix_path); /* not ours to unlink: we never bound it */
        srv->unix_path = NULL;
        uv_close(&srv->lis.handle, on_listener_close);
    }
    return SEATD_EINVAL;
}

/* Parses "host:port", "[v6]:port" or ":port" into 'addr'. Returns 0 or -1. */
static int parse_tcp(const char *spec, struct sockaddr_storage *addr)
{
    const char *colon = strrchr(spec, ':');
    if (colon == NULL)
        return -1;
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return -1;
    char host[128];
    size_t hlen = (size_t)(colon - spec);
    if (hlen >= sizeof(host))
        return -1;
    memcpy(host, spec, hlen);
    host[hlen] = '\0';
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        host[hlen - 1] = '\0';
        return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)addr) == 0 ? 0 : -1;
    }
    if (hlen == 0)
        strcpy(host, "0.0.0.0");
    else if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) == 0 ? 0 : -1;
}

int seatd_http_server_listen(seatd_http_server_t *srv)
{
    if (srv->lis_state != 0 || srv->draining)
        return SEATD_EINVAL;
    int rc;
    if (is_unix(srv)) {
        const char *path = srv->listen + 5;
        if (path[0] != '/')
            return listen_fail(srv, "parse", 0);
        /* A stale socket file from a previous run would make bind fail. */
        struct stat st;
        if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(path);
        uv_pipe_init(srv->loop, &srv->lis.pipe, 0);
        srv->lis.handle.data = srv;
        srv->lis_state = 1;
        if ((rc = uv_pipe_bind(&srv->lis.pipe, path)) < 0)
            return listen_fail(srv, "bind", rc);
        srv->unix_path = seatd_strdup(path);
    } else {
        struct sockaddr_storage addr;
        memset(&addr, 0, sizeof(addr));
        if (parse_tcp(srv->listen, &addr) < 0)
            return listen_fail(srv, "parse", 0);
        uv_tcp_init(srv->loop, &srv->lis.tcp);
        srv->lis.handle.data = srv;
        srv->lis_state = 1;
        if ((rc = uv_tcp_bind(&srv->lis.tcp, (const struct sockaddr *)&addr, 0)) < 0)
            return listen_fail(srv, "bind", rc);
    }
    if ((rc = uv_listen(&srv->lis.stream, LISTEN_BACKLOG, on_connection)) < 0)
        return listen_fail(srv, "listen", rc);
    if (!is_unix(srv)) {
        struct sockaddr_storage name;
        int len = sizeof(name);
        if (uv_tcp_getsockname(&srv->lis.tcp, (struct sockaddr *)&name, &len) == 0)
            srv->port = ntohs(name.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&name)->sin6_port
                                                         : ((struct sockaddr_in *)&name)->sin_port);
    }
    seatd_log(SEATD_LOG_INFO, NULL, "listening", "\"listen\":\"%s\",\"port\":%d", srv->listen,
              srv->port);
    return 0;
}

int seatd_http_server_port(const seatd_http_server_t *srv)
{
    return srv->port;
}

size_t seatd_http_server_connections(const seatd_http_server_t *srv)
{
    return srv->nconns;
}

void seatd_http_server_get_stats(const seatd_http_server_t *srv, seatd_http_server_stats_t *out)
{
    *out = srv->stats;
}

/* ----------------------------------------------------------------------------------------
 * Draining
 * ---------------------------------------------------------------------------------------- */

static void on_drain_timer_close(uv_handle_t *handle)
{
    seatd_http_server_t *srv = handle->data;
    if (srv->drain_cb)
        srv->drain_cb(srv, srv->drain_data);
}

static void maybe_drain_done(seatd_http_server_t *srv)
{
    if (!srv->draining || srv->drain_done || srv->nconns > 0 || srv->norphans > 0 ||
        srv->lis_state == 1 || srv->lis_state == 2)
        return;
    srv->drain_done = 1;
    uv_timer_stop(&srv->drain_timer);
    uv_close((uv_handle_t *)&srv->drain_timer, on_drain_timer_close);
}

static void on_drain_timeout(uv_timer_t *t)
{
    seatd_http_server_t *srv = t->data;
    if (srv->drain_forced) {
        /* Requests still running after their clients (a payment, a confirm, a refund) are
         * waited for however long they take: the drain callback tears down the store and
         * the payment client they use. Each of their steps has its own deadline (Redis
         * command, gateway), so they end; meanwhile, say so once per timeout. */
        seatd_log(SEATD_LOG_WARN, NULL, "drain waits for requests still running",
                  "\"requests\":%zu", srv->norphans);
        uv_timer_start(&srv->drain_timer, on_drain_timeout, srv->opts.drain_timeout_ms, 0);
        return;
    }
    srv->drain_forced = 1;
    seatd_log(SEATD_LOG_WARN, NULL, "drain timed out: closing connections", "\"connections\":%zu",
              srv->nconns);
    for (seatd_conn_t *c = srv->conns; c; c = c->next)
        conn_close(c);
    if (srv->norphans > 0) /* their requests run to completion, one more timeout at most */
        uv_timer_start(&srv->drain_timer, on_drain_timeout, srv->opts.drain_timeout_ms, 0);
}

int seatd_http_server_drain(seatd_http_server_t *srv, seatd_http_drain_cb cb, void *data)
{
    if (srv->draining)
        return SEATD_ESHUTDOWN;
    srv->draining = 1;
    srv->drain_cb = cb;
    srv->drain_data = data;
    uv_timer_init(srv->loop, &srv->drain_timer);
    srv->drain_timer.data = srv;
    uv_timer_start(&srv->drain_timer, on_drain_timeout, srv->opts.drain_timeout_ms, 0);
    if (srv->lis_state == 1) {
        srv->lis_state = 2;
        uv_close(&srv->lis.handle, on_listener_close);
    }
    for (seatd_conn_t *c = srv->conns, *next; c; c = next) {
        next = c->next; /* conn_close() keeps 'c' in the list until its close callback */
        if (c->closing || c->lingering)
            continue;
        if (c->taken) {
            if (c->owner.on_drain)
                c->owner.on_drain(c->owner.data); /* the owner closes when it is ready */
            else
                conn_close(c);
            continue;
        }
        if (c->cur) {
            seatd__req_set_close(c->cur); /* answered with Connection: close, then closed */
        } else if (c->writes_pending > 0) {
            c->close_after_write = 1;
        } else {
            conn_close(c); /* idle, or only part of a request: nothing is lost */
        }
    }
    maybe_drain_done(srv);
    return 0;
}

/* ----------------------------------------------------------------------------------------
 * The upgrade seam
 * ---------------------------------------------------------------------------------------- */

int seatd_req_take_connection(seatd_req_t *r, const seatd_http_owner_t *owner, uv_stream_t **stream,
                              seatd_buf_t *leftover)
{
    if (seatd_req_is_detached(r) || seatd_req_is_finished(r) || orphan_find(r))
        return SEATD_ESHUTDOWN;
    assert(taking.r == NULL);
    taking.r = r;
    taking.c = NULL;
    seatd_req_finish(r, 101, NULL, NULL, 0); /* the finish hook takes the connection */
    seatd_conn_t *c = taking.c;
    taking.r = NULL;
    taking.c = NULL;
    if (c == NULL)
        return SEATD_EINVAL;
    c->owner = *owner;
    if (c->in.len > 0)
        seatd_buf_append(leftover, c->in.data, c->in.len);
    seatd_buf_free(&c->in);
    *stream = &c->h.stream;
    return 0;
}

void *seatd_http_conn_owner(const uv_stream_t *stream)
{
    const seatd_conn_t *c = stream->data;
    return c->owner.data;
}

void seatd_http_conn_close(uv_stream_t *stream)
{
    conn_close(stream->data);
}

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

void seatd_http_server_free(seatd_http_server_t *srv)
{
    if (srv == NULL)
        return;
    assert(srv->nconns == 0 && srv->lis_state != 1 && srv->lis_state != 2);
    free(srv->unix_path);
    free(srv->listen);
    free(srv);
}
