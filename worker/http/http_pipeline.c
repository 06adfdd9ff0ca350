/*
 * http_pipeline.c - what happens to a parsed request: route -> auth -> handler, then at its
 * finish the log line, the route's stats and the write; a request whose client went away runs
 * on as an orphan and is logged as 499; and the upgrade seam, through which a request hands
 * its connection to a new owner (live.c's WebSocket watchers). See http_server_internal.h.
 */
#include "http/http_server_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "http/auth.h"
#include "http/router.h"

#define CLIENT_GONE 499 /* nginx's status for a client that went away first */

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
    http__conn_write(c, seatd__req_response(r));
    seatd__req_disown(r); /* may free 'r' */
    if (!c->processing)
        http__process(c); /* an asynchronous finish: start the next pipelined request */
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
    http__maybe_drain_done(srv);
}

static orphan_t *orphan_find(const seatd_req_t *r)
{
    for (orphan_t *o = orphans; o; o = o->next)
        if (o->r == r)
            return o;
    return NULL;
}

/* The connection of 'r' closes while 'r' runs: the server keeps it until its finish. */
void http__orphan_adopt(seatd_conn_t *c, seatd_req_t *r)
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

void http__dispatch(seatd_conn_t *c, seatd_req_t *r)
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
    http__conn_close(stream->data);
}
