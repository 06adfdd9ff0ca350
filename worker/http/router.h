/*
 * router.h - match (method, path) against the route table.
 *
 * The route table itself lives in routes.c (one row per route, the API at a glance); this
 * module only walks a table it is given. Patterns are made of '/'-separated segments, each
 * either a literal ("shows") or a parameter ("{id}"). When several patterns fit a path, the
 * one whose first differing segment is literal wins ("/v1/shows/new" beats "/v1/shows/{id}").
 * Parameters are percent-decoded and bounded (SEATD_ROUTE_PARAM_MAX bytes each, at most
 * SEATD_ROUTE_MAX_PARAMS per pattern).
 *
 * Each row also carries its runtime statistics (as redis's struct redisCommand does); the
 * server updates them with seatd_route_stats_observe() when a request finishes, and the
 * metrics renderer (metrics_render.h) reads them for /metrics.
 *
 * Pure: no I/O, no allocation. Single-threaded (the stats are plain counters).
 */
#ifndef SEATD_ROUTER_H
#define SEATD_ROUTER_H

#include <stddef.h>

#include "base/errors.h"

typedef struct seatd_req_s seatd_req_t;

/* A handler: returns 0 after calling (or arranging) seatd_req_finish*(), or a negative
 * SEATD_E* without replying, and the pipeline answers seatd_req_finish_problem(r, rc, ...). */
typedef int (*seatd_handler_fn)(seatd_req_t *r);

enum {
    SEATD_ROUTE_AUTH = 1,      /* a valid bearer token is required (401 otherwise) */
    SEATD_ROUTE_ADMIN = 2,     /* the token must carry role "admin" (403 otherwise); implies AUTH */
    SEATD_ROUTE_JSON_BODY = 4, /* informational: the handler parses a JSON body */
    SEATD_ROUTE_LARGE_BODY = 8, /* bodies up to SEATD_ROUTE_LARGE_BODY_MAX instead of the
                                   server's max_body (one route at most, a literal path:
                                   http_request.h seatd_req_set_large_body_route) */
};

/* The body limit of the SEATD_ROUTE_LARGE_BODY route: POST /v1/shows carries a whole layout
 * (2,000 seats ~130 KB, an 80,000-seat stadium ~6 MB). */
#define SEATD_ROUTE_LARGE_BODY_MAX (16u << 20)

#define SEATD_ROUTE_MAX_PARAMS 4    /* path parameters per pattern */
#define SEATD_ROUTE_PARAM_MAX 64    /* decoded bytes per parameter, NUL excluded */
#define SEATD_ROUTE_MAX_SEGMENTS 16 /* segments per path or pattern */

/* Upper bounds (seconds) of the latency histogram buckets, ascending; +Inf is implicit. */
#define SEATD_LATENCY_BUCKETS 13
extern const double seatd_latency_bounds[SEATD_LATENCY_BUCKETS];

/* 'count' comes first so that a route row can end with `{0}` (the universal zero
 * initializer) without -Wmissing-braces / -Wmissing-field-initializers warnings. */
typedef struct seatd_route_stats_s {
    unsigned long long count;        /* observations (the +Inf bucket) */
    double latency_sum_s;            /* sum of all observed latencies, seconds */
    unsigned long long by_status[6]; /* responses by class: [1]=1xx … [5]=5xx; [0] unused */
    unsigned long long latency_buckets[SEATD_LATENCY_BUCKETS]; /* cumulative: seconds <= bound[i] */
} seatd_route_stats_t;

typedef struct seatd_route_s {
    const char *method;        /* "GET", "POST", "DELETE" (exact, upper case) */
    const char *pattern;       /* "/v1/shows/{id}/holds": literal segments and {name} params */
    const char *name;          /* metric label, e.g. "holds_create" */
    seatd_handler_fn handler;  /* called after routing and auth */
    int flags;                 /* SEATD_ROUTE_* */
    seatd_route_stats_t stats; /* runtime stats, updated by the server on finish */
} seatd_route_t;

typedef struct seatd_route_param_s {
    char name[32];                         /* parameter name from the pattern, e.g. "id" */
    char value[SEATD_ROUTE_PARAM_MAX + 1]; /* percent-decoded value, NUL-terminated */
} seatd_route_param_t;

typedef struct seatd_route_match_s {
    seatd_route_t *route; /* the matched row (borrowed from the table) */
    size_t nparams;       /* used entries of 'params' */
    seatd_route_param_t params[SEATD_ROUTE_MAX_PARAMS]; /* in pattern order */
    char allow[64]; /* on SEATD_EMETHOD: "GET, POST" - the methods that path accepts */
} seatd_route_match_t;

/*
 * Finds the route for 'method' and 'path' (the raw, still percent-encoded path without the
 * query string) in 'table' ('n' rows, borrowed). On success fills 'out' and returns 0.
 * Returns SEATD_ENOROUTE when no pattern fits the path, SEATD_EMETHOD when patterns fit but
 * none for this method ('out->allow' lists the methods that would be accepted), or
 * SEATD_EBADID when the matching pattern's parameter is malformed (bad percent-encoding, a
 * NUL byte, or longer than SEATD_ROUTE_PARAM_MAX once decoded).
 */
SEATD_MUSTCHECK int seatd_router_match(seatd_route_t *table, size_t n, const char *method,
                                       const char *path, seatd_route_match_t *out);

/*
 * Checks every row of 'table': method, pattern syntax, parameter count and names, handler
 * present, no two rows with the same method and pattern. Returns 0 or SEATD_EINVAL and, if
 * 'bad' is not NULL, points '*bad' at the offending row. Call once at start-up.
 */
SEATD_MUSTCHECK int seatd_router_check(const seatd_route_t *table, size_t n,
                                       const seatd_route_t **bad);

/* Records one finished request in 'stats': 'status' (100..599) and 'seconds' of latency. */
void seatd_route_stats_observe(seatd_route_stats_t *stats, int status, double seconds);

#endif
