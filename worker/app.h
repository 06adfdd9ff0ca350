/*
 * app.h - the process-wide context a handler reaches through seatd_req_app(r).
 *
 * It holds only what STYLE calls process-wide state: the configuration, the Redis client and
 * the typed store on top of it, the payment client, the token verifier and the metrics. All
 * of it is created by main.c before the loop runs and torn down after the HTTP server drained.
 * Nothing in here is per-request or per-user: a worker stays stateless.
 */
#ifndef SEATD_APP_H
#define SEATD_APP_H

struct uv_loop_s;
struct seatd_config_s;
struct seatd_rds_s;
struct seatd_scripts_s;
struct seatd_store_s;
struct seatd_payment_s;
struct seatd_auth_s;
struct seatd_http_server_s;
struct seatd_route_s;
struct seatd_live_s;
struct seatd_sweeper_s;
struct seatd_booking_ctx_s;

typedef struct seatd_app_s {
    const struct seatd_config_s *cfg;          /* borrowed from main() */
    struct uv_loop_s *loop;                    /* the worker's one loop */
    struct seatd_rds_s *rds;                   /* the Redis connection pool */
    struct seatd_scripts_s *scripts;           /* the seatd Functions library on 'rds' */
    struct seatd_store_s *store;               /* typed seat operations on 'scripts' */
    struct seatd_payment_s *payment;           /* the payment gateway client */
    const struct seatd_booking_ctx_s *booking; /* the booking flow's store + payment (flows/) */
    struct seatd_auth_s *auth;                 /* bearer token verifier */
    struct seatd_http_server_s *server;        /* for /metrics (connection gauge) */
    struct seatd_route_s *routes;              /* the route table (stats live in its rows) */
    unsigned long nroutes;                     /* rows in 'routes' */
    struct seatd_live_s *live;                 /* WebSocket watchers of the live seat map */
    struct seatd_sweeper_s *sweeper;           /* prompt reaping of due holds */
    int draining;                              /* 1 after SIGTERM: /healthz reports not ready */
} seatd_app_t;

#endif
