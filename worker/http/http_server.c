/*
 * http_server.c - the HTTP server: its options, the listener (TCP or a unix socket),
 * accepting connections (or refusing them past the limit and while draining), its stats, and
 * the drain that closes it; see http_server.h. A connection's life is in http_conn.c, its
 * output in http_output.c, the request pipeline in http_pipeline.c (http_server_internal.h).
 */
#include "http/http_server_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/list.h"
#include "base/log.h"
#include "base/mem.h"

#define LISTEN_BACKLOG 511

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
    SEATD_LIST_PUSH(srv->conns, c);
    srv->nconns++;

    if (uv_accept(server, &c->h.stream) < 0) {
        http__conn_close(c);
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
        http__conn_close(c);
        return;
    }
    http__start_reading(c);
    http__update_phase(c);
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
    http__maybe_drain_done(srv);
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

void http__maybe_drain_done(seatd_http_server_t *srv)
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
        http__conn_close(c);
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
        next = c->next; /* http__conn_close() keeps 'c' in the list until its close callback */
        if (c->closing || c->lingering)
            continue;
        if (c->taken) {
            if (c->owner.on_drain)
                c->owner.on_drain(c->owner.data); /* the owner closes when it is ready */
            else
                http__conn_close(c);
            continue;
        }
        if (c->cur) {
            seatd__req_set_close(c->cur); /* answered with Connection: close, then closed */
        } else if (c->writes_pending > 0) {
            c->close_after_write = 1;
        } else {
            http__conn_close(c); /* idle, or only part of a request: nothing is lost */
        }
    }
    http__maybe_drain_done(srv);
    return 0;
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
