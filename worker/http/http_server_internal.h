/*
 * http_server_internal.h - what the files of the HTTP server share: a connection's and the
 * server's state, and the functions one file calls in another. Not an interface: include it
 * only from http_server.c (the listener, accepting, draining), http_conn.c (a connection: its
 * timeouts, reading, the parse loop, closing), http_output.c (writing and the output budget)
 * and http_pipeline.c (route -> auth -> handler, finish -> log, orphans, the upgrade seam);
 * everything else goes through http_server.h.
 */
#ifndef SEATD_HTTP_SERVER_INTERNAL_H
#define SEATD_HTTP_SERVER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"
#include "http/http_request.h"
#include "http/http_server.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

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
    unsigned processing : 1;        /* inside http__process(): no re-entry */
    unsigned taken : 1;             /* upgraded: the stream belongs to 'owner' */
    unsigned out_paused : 1;        /* output over the high-water mark: no reading, no next
                                       request until it drains below the low-water mark */
    seatd_http_owner_t owner;       /* the new owner's hooks (when 'taken') */
};

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

/* ---------------------------------------------------------------- http_server.c */

void http__maybe_drain_done(seatd_http_server_t *srv);

/* ---------------------------------------------------------------- http_conn.c */

void http__conn_close(seatd_conn_t *c);
void http__on_timer(uv_timer_t *t);
void http__update_phase(seatd_conn_t *c);
void http__conn_linger(seatd_conn_t *c);
void http__process(seatd_conn_t *c);
void http__start_reading(seatd_conn_t *c);

/* ---------------------------------------------------------------- http_output.c */

void http__conn_write(seatd_conn_t *c, seatd_buf_t *b);

/* ---------------------------------------------------------------- http_pipeline.c */

void http__orphan_adopt(seatd_conn_t *c, seatd_req_t *r);
void http__dispatch(seatd_conn_t *c, seatd_req_t *r);

#endif
