/*
 * e2e.h - helpers for the end-to-end suites: real nginx -> real workers -> real Redis and the
 * fake gateway, started by tests/e2e/run (deploy/up on a private port), which exports
 * SEATD_E2E_PORT (nginx), SEATD_E2E_REDIS_PORT, SEATD_E2E_RUN (the stack's runtime folder)
 * and SEATD_JWT_SECRET. Every request goes through nginx on 127.0.0.1.
 */
#ifndef SEATD_TEST_E2E_H
#define SEATD_TEST_E2E_H

#include <stddef.h>

#include "http_client.h"

struct cJSON;
#include "redis_sync.h"

typedef struct e2e_res_s {
    seatd_test_http_response_t http; /* status, headers, raw body */
    struct cJSON *json;              /* parsed body or NULL */
} e2e_res_t;

/* nginx's port. */
int e2e_port(void);
/* A token for 'sub' (admin role if 'admin'). Returns a static buffer (overwritten per call). */
const char *e2e_token(const char *sub, int admin);
/* As e2e_token, with the "channels" claim 'channels' (comma-joined; NULL: none). */
const char *e2e_token_channels(const char *sub, int admin, const char *channels);

/* Sends a request as 'sub' (NULL: no Authorization header) with optional JSON 'body' and
 * extra header lines 'extra' ("Name: v\r\n…", may be NULL). Returns 0 or -1 (no answer). */
int e2e_call(const char *method, const char *path, const char *sub, const char *body,
             const char *extra, e2e_res_t *out);
/* As e2e_call, to 'host': "127.0.0.1" (nginx) or "unix:<socket>" (one worker, directly). */
int e2e_call_at(const char *host, const char *method, const char *path, const char *sub,
                const char *body, const char *extra, e2e_res_t *out);
void e2e_res_free(e2e_res_t *res);
/* A string member of the response JSON, or "". */
const char *e2e_str(const e2e_res_t *res, const char *name);

/* Creates a show with 'rows' x 'per_row' seats (ids A1.., B1..) and 'ttl_s' hold TTL as
 * admin; writes its id into 'id' (32 bytes). Returns 0 or -1. */
int e2e_create_show(int rows, int per_row, int ttl_s, char *id);
/* As e2e_create_show, through 'host' (see e2e_call_at). */
int e2e_create_show_at(const char *host, int rows, int per_row, int ttl_s, char *id);
/* Creates a show of seats A1-A3 and area FLOOR (capacity 2), in the group of show 'with'
 * ("groupWith") unless NULL, as admin; its id into 'id' (32 bytes). Returns 0 or -1. */
int e2e_create_groupable_show(const char *with, char *id);

/* Holds 'seats_json' (a JSON array text, e.g. ["A1"]) of 'show' as 'sub', asserting the 201;
 * the hold id into 'hold_id' ('n' bytes). */
void e2e_hold(const char *show, const char *sub, const char *seats_json, char *hold_id, size_t n);
/* Releases hold 'hold_id' as 'sub', asserting the 200. */
void e2e_release(const char *sub, const char *hold_id);

/* Waits until every worker of the stack answers 200 on its own /healthz (its metrics listener,
 * listed in run/<port>/prometheus-targets.json), i.e. each has its Redis connection back:
 * tests that stop or restart Redis end with it, so the next test does not meet a worker that
 * is still in its reconnect backoff. 0, or -1 after 'limit_ms'. */
int e2e_wait_workers_ready(int limit_ms);

/* The password in the stack's runtime folder file 'file' (e.g. "redis-admin.pass") into
 * 'out' ('size' bytes); 0, or -1 when there is none. */
int e2e_redis_password(const char *file, char *out, size_t size);
/* A synchronous connection to the stack's Redis as its admin user, through the first of its
 * nodes that answers (aborts when none does). Owned (seatd_redis_free). */
seatd_redis_t *e2e_redis(void);
/* 1 when the stack's Redis is a cluster (tests/e2e/run exports SEATD_E2E_CLUSTER). */
int e2e_cluster(void);
/* The ports of every Redis node of the stack (one, or each node of the cluster, primaries and
 * replicas, from the runtime folder's redis-nodes) into 'ports'; returns how many. */
int e2e_redis_ports(int *ports, int max);
struct redisContext;
/* A plain connection to the one node on 'port' as the admin user (no redirections), or NULL
 * when it does not answer. Owned (redisFree). */
struct redisContext *e2e_redis_node(int port);
/* 1 when the node on 'c' is a primary (ROLE). */
int e2e_redis_node_is_primary(struct redisContext *c);
/* The name the stack's Functions library registers seatd's function 'fn' (e.g. "seatd_hold")
 * under: 'fn' itself on one node, "seatd_v<hash>_hold" on a cluster (worker/store/scripts.c), read
 * from FUNCTION LIST; into 'out' ('size' bytes). */
void e2e_function_name(seatd_redis_t *c, const char *fn, char *out, size_t size);
/* Every key of show 'id' with its type and DUMP, sorted, as one owned string (free()). */
char *e2e_show_snapshot(const char *id);
/* Number of live seat keys and BITCOUNT of the held bitmap of show 'id'. */
void e2e_show_counts(const char *id, long *seat_keys, long *held_bits, long *booked_bits);
/* A number member of the response JSON, or NaN. */
double e2e_num(const e2e_res_t *res, const char *name);
/* The show's projection version in Redis now ({s:<id>}:ver). */
long long e2e_show_version(const char *id);
/* GET /v1/shows/{id}/seats?minVersion=min_version through nginx: never older than that
 * version (read-your-writes; no waiting out caches). Returns 0 or -1. */
int e2e_seat_map(const char *id, long long min_version, e2e_res_t *out);

#endif
