/*
 * http_server.h - the HTTP/1.1 listener and its connections, on one libuv loop.
 *
 * Each connection owns a stream handle (TCP or unix socket), a timer, a read buffer, a
 * seatd_req_parser_t and at most one running request. The pipeline for each request runs in
 * a fixed order (STYLE rule 20): parse -> route (404 / 405 with Allow) -> auth when the route
 * has SEATD_ROUTE_AUTH or SEATD_ROUTE_ADMIN (401 with WWW-Authenticate: Bearer, for a token
 * that was sent with error="invalid_token" and the reason, RFC 6750, which the problem's detail
 * gives too; 403 without the admin role) -> handler -> finish -> one JSON log line -> route stats
 * and the on_finish hook. Keep-alive and pipelining are supported: pipelined requests are answered
 * in order, and the next one starts only after the current one finished. "Connection: close" and
 * HTTP/1.0 are honoured; Content-Length is always sent.
 *
 * Limits: the request line plus headers (431), header count (431), body (413), connections
 * (beyond max_connections a new connection gets a 503 and is closed), a header timeout (from
 * the first byte of a request to the end of its headers), a body timeout (end of headers to
 * end of body) and an idle keep-alive timeout; a timed-out connection is closed without reply.
 * While a request runs, at most (max_header + max_body) further bytes are buffered, then
 * reading pauses until it finishes.
 *
 * Output budget (one per connection, HTTP and WebSocket alike, control frames included):
 * a connection's queued output is every byte handed to uv_write whose write has not called
 * back. When it reaches half of opts.output_budget (the high-water mark), the connection
 * reads nothing and starts no further pipelined request until it drains below a quarter of
 * the budget (the low-water mark); so an HTTP connection's output passes the high-water mark
 * by at most one response. A connection that stays paused without a single write
 * completing for idle_timeout_ms is closed (a client that does not read). The owner of a
 * taken connection reports its writes through seatd_http_conn_output_queued/_written and
 * applies the same marks itself (live.c: reads paused, a client that would pass the whole
 * budget is closed with 1008). seatd_http_server_get_stats() has the figures (/metrics).
 *
 * Lifecycle: seatd_http_server_new() -> seatd_http_server_listen() -> ... ->
 * seatd_http_server_drain(cb) -> cb runs once every handle is closed -> seatd_http_server_free().
 * Connections are freed only in their last close callback. A request still running when its
 * connection dies runs to completion (a request outlives its client): the server keeps it,
 * and its finish writes nothing but is logged and counted as status 499 with
 * "outcome":"client_gone" and the status it would have answered; a drain waits for such
 * requests however long they take (each of their steps has its own deadline).
 *
 * The upgrade seam (WebSocket): a handler that accepts an upgrade calls
 * seatd_req_take_connection(). The request is finished as status 101 (logged, counted, the
 * on_finish hook runs) but nothing is rendered: the connection's stream leaves the HTTP state
 * machine (no timeouts, no parsing, no keep-alive) and belongs to the new owner, together
 * with any bytes already read past the request. The connection struct stays (it still counts
 * towards max_connections and drains) until the owner calls seatd_http_conn_close(); the
 * owner's on_closed hook then runs once both handles are closed.
 *
 * Loop and threads: one loop, one thread.
 */
#ifndef SEATD_HTTP_SERVER_H
#define SEATD_HTTP_SERVER_H

#include <stddef.h>

#include "base/buf.h"
#include "base/errors.h"

struct uv_loop_s;
struct uv_stream_s;
typedef struct seatd_req_s seatd_req_t;
typedef struct seatd_route_s seatd_route_t;
typedef struct seatd_auth_s seatd_auth_t;
typedef struct seatd_http_server_s seatd_http_server_t;

/* Called once per answered request, after the log line, with the final 'status' and the
 * 'seconds' from the end of parsing to the finish; for a request whose client went away,
 * 'status' is the one it would have answered (the log line and route stats say 499). 'r' is
 * borrowed for the call. */
typedef void (*seatd_http_finish_cb)(seatd_req_t *r, int status, double seconds, void *app);
/* Called once when a drain completes (every connection and the listener are closed). */
typedef void (*seatd_http_drain_cb)(seatd_http_server_t *srv, void *data);

#define SEATD_HTTP_OUTPUT_BUDGET ((size_t)1 << 20)

typedef struct seatd_http_opts_s {
    const char *listen;     /* "127.0.0.1:8081", "[::1]:8081", ":8081" or "unix:/path"; borrowed */
    size_t max_connections; /* open connections; 10000 when 0 */
    unsigned idle_timeout_ms;   /* keep-alive idle time before close; 60000 when 0 */
    unsigned header_timeout_ms; /* first byte -> end of headers; 10000 when 0 */
    unsigned body_timeout_ms;   /* end of headers -> end of body; 10000 when 0 */
    unsigned drain_timeout_ms;  /* in-flight grace on drain before a forced close; 10000 when 0 */
    size_t max_header;          /* request line + headers; 8192 when 0 */
    size_t max_body;            /* body bytes; 16384 when 0 */
    size_t output_budget;       /* queued output per connection (see above); 1 MiB when 0 */
    const seatd_auth_t *auth;   /* borrowed; verifies bearer tokens for AUTH routes (NULL: 401) */
    seatd_http_finish_cb on_finish; /* may be NULL; runs after each request is finished */
} seatd_http_opts_t;

/*
 * Creates a server on 'loop' (borrowed). 'opts' is copied (its strings too); 'routes' ('n'
 * rows) is borrowed for the server's life and its stats are updated in place; 'app' is
 * returned by seatd_req_app() for every request. Returns an owned server (see lifecycle).
 */
seatd_http_server_t *seatd_http_server_new(struct uv_loop_s *loop, const seatd_http_opts_t *opts,
                                           seatd_route_t *routes, size_t nroutes, void *app);

/*
 * Binds and listens on opts->listen. Returns 0, or SEATD_EINVAL for a malformed listen spec
 * or a bind/listen failure (the reason is logged).
 */
SEATD_MUSTCHECK int seatd_http_server_listen(seatd_http_server_t *srv);

/* The bound TCP port (useful after listening on port 0), or 0 for unix sockets / not bound. */
int seatd_http_server_port(const seatd_http_server_t *srv);

/* Currently open connections. */
size_t seatd_http_server_connections(const seatd_http_server_t *srv);

typedef struct seatd_http_server_stats_s {
    size_t output_bytes;              /* queued output of every connection now */
    size_t output_peak;               /* the most one connection ever had queued */
    unsigned long long output_paused; /* times a connection paused for its output */
    unsigned long long output_closed; /* connections closed for not reading their output */
} seatd_http_server_stats_t;
/* Copies the output budget figures into 'out'. */
void seatd_http_server_get_stats(const seatd_http_server_t *srv, seatd_http_server_stats_t *out);

/*
 * Graceful stop: stops accepting, closes idle connections (no request running, nothing
 * buffered), answers "Connection: close" on the rest, and after opts->drain_timeout_ms
 * force-closes whatever is left (their requests are detached). 'cb' runs exactly once, from
 * a callback (never before this returns), when every handle is closed. Returns 0, or
 * SEATD_ESHUTDOWN if a drain is already in progress (then 'cb' never runs).
 */
SEATD_MUSTCHECK int seatd_http_server_drain(seatd_http_server_t *srv, seatd_http_drain_cb cb,
                                            void *data);

/* ---------------------------------------------------------------------------------------
 * The upgrade seam
 * ------------------------------------------------------------------------------------- */

/* The new owner of a taken connection. Both hooks get 'data'. */
typedef struct seatd_http_owner_s {
    void (*on_drain)(void *data);  /* the server drains: close soon (may be NULL) */
    void (*on_closed)(void *data); /* after seatd_http_conn_close() or a forced close: the
                                      stream is closed, pending writes have called back; the
                                      owner may free its state now. Runs exactly once. */
    void *data;
} seatd_http_owner_t;

/*
 * Takes the connection of 'r' out of the HTTP server: 'r' is answered as 101 (and must not
 * be touched afterwards; it may be freed), nothing is written, reading stops. On success
 * returns 0, '*stream' is the connection's stream (borrowed until on_closed: read and write
 * it, restart reading with your own callbacks, but never close it or change its 'data';
 * find 'owner->data' again with seatd_http_conn_owner()), and the bytes read past the
 * request are appended to 'leftover'. 'owner' is copied. Call it at most once per request,
 * from its handler or a later callback. Returns SEATD_ESHUTDOWN if the client already went
 * away (nothing was taken; 'r' is still the caller's to release) or SEATD_EINVAL when 'r' is
 * not a request of a connection of this server.
 */
SEATD_MUSTCHECK int seatd_req_take_connection(seatd_req_t *r, const seatd_http_owner_t *owner,
                                              struct uv_stream_s **stream, seatd_buf_t *leftover);

/* The owner data of a taken connection's 'stream'. */
void *seatd_http_conn_owner(const struct uv_stream_s *stream);

/* Closes a taken connection's 'stream' (its pending writes call back with an error first);
 * the owner's on_closed runs once it is closed. Idempotent. */
void seatd_http_conn_close(struct uv_stream_s *stream);

/* The output budget of a taken connection's 'stream' (opts.output_budget). */
size_t seatd_http_conn_output_budget(const struct uv_stream_s *stream);
/* The owner queued a write of 'len' bytes on 'stream' / a write of 'len' bytes called back
 * (call it from the write callback, also on error). Both return the connection's queued
 * output bytes afterwards. */
size_t seatd_http_conn_output_queued(struct uv_stream_s *stream, size_t len);
size_t seatd_http_conn_output_written(struct uv_stream_s *stream, size_t len);
/* Counts one pause of reading (closed = 0) or one close (closed = 1) the owner made for the
 * connection's output budget. */
void seatd_http_conn_output_note(struct uv_stream_s *stream, int closed);

/* Frees 'srv'. Only valid when it never listened or after the drain callback ran. NULL is a
 * no-op. */
void seatd_http_server_free(seatd_http_server_t *srv);

#endif
