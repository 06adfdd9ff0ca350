/*
 * loadgen.h - the load generator's configuration and its two drivers.
 *
 * seatd_loadgen forks 'procs' load processes. Each one runs one driver on its own, writes its
 * counters into its seatd_bench_slot_t (shared memory) and exits; the parent sums the slots
 * and prints the report (scenario.h). Two drivers:
 *   - HTTP (loadgen.c): 'conns' keep-alive connections on one libuv loop, http-parser for
 *     the answers, against one or more host:port targets (nginx, or one worker);
 *   - direct (direct.c): a hiredis connection pipelining 'pipeline' FCALLs of the seatd
 *     library straight to Redis, no worker in between.
 * Both stop by themselves after 'duration_s' seconds or 'count' hold attempts.
 */
#ifndef SEATD_BENCH_LOADGEN_H
#define SEATD_BENCH_LOADGEN_H

#include <stdint.h>

#include "scenario.h"

#define SEATD_BENCH_MAX_TARGETS 16
#define SEATD_BENCH_MAX_GROUP 8 /* shows in a --group */

typedef struct seatd_bench_target_s {
    char host[108]; /* numeric IPv4 address, or a unix socket path when port is 0 */
    int port;       /* TCP port, 0 for a unix socket */
} seatd_bench_target_t;

typedef struct seatd_bench_cfg_s {
    int direct;         /* 1: FCALL straight to Redis; 0: HTTP */
    int seatmap;        /* 1: the seat-map reads scenario instead of holds */
    int inm;            /* seat map: send If-None-Match with the last ETag */
    int gzip;           /* seat map: send Accept-Encoding: gzip */
    int procs;          /* load processes (fork) */
    int conns;          /* HTTP connections per process */
    int pipeline;       /* direct: FCALLs in flight per process */
    double duration_s;  /* measure this long after the warm-up (0: no limit) */
    double warmup_s;    /* run this long first without measuring */
    long count;         /* stop after this many hold attempts in all (0: none) */
    double rate;        /* attempts (or reads) per second in all; 0: closed loop */
    double book_pct;    /* % of won holds booked */
    double release_pct; /* % of won holds released */
    int users;          /* distinct virtual users (JWT subs u0 … uN-1) */
    int max_per_user;   /* direct: the per-user seat limit passed to seatd_hold */
    long ttl_ms;        /* direct: hold TTL in ms (the HTTP path uses the show's) */
    char show_id[32];   /* the show under load */
    const char *secret; /* JWT secret (HTTP) */
    seatd_bench_target_t targets[SEATD_BENCH_MAX_TARGETS]; /* HTTP targets */
    int ntargets;
    seatd_bench_target_t redis; /* direct: the Redis server */
    uint64_t seed;              /* randomness, varied per process */
    int numeric_seats;          /* direct show creation: seat ids "000000000000" … (the
                                   12-digit form of redis-benchmark's __rand_int__) */
    /* The fault suite's additions (HTTP driver; see tests/faults/run): */
    char pay[8][32];      /* payment methods, one picked at random per booking (tok_ok) */
    int npay;             /* their count (0: tok_ok) */
    int idem;             /* send a unique idempotencyKey with every hold */
    const char *log_path; /* append one line per hold/booking/release outcome (see loadgen.c) */
    /* Standing areas (issue 30): places asked with the holds, and the show's area. */
    char areas[64];        /* --areas: places per hold, "FLOOR:2,BALC:1" (ids sorted), "" none */
    char areas_json[96];   /* the same as the request's JSON object, {"FLOOR":2,"BALC":1} */
    int places;            /* the places per hold, summed */
    double areas_pct;      /* % of holds that ask for the places (100) */
    double areas_only_pct; /* % of those that ask for places alone, no seats (--areas-only: 100) */
    long area_capacity;    /* show creation: one area of this capacity (0: none) */
    char area_id[20];      /* its id (the first of --areas, else FLOOR) */
    char area_tier[24];    /* its tier, a priceTiers name of the bench show (standard) */
    /* Event groups (issue 30): group holds (HTTP driver). */
    int group;         /* --group N: the shows of the group (2..8), 0: no group holds */
    double group_pct;  /* % of the holds that are group holds (--group-pct; 100) */
    char group_id[64]; /* the group held (created by --create-show, or --group-id) */
} seatd_bench_cfg_t;

/* Runs process number 'proc' of the HTTP driver until done; counters go to 'slot'.
 * Returns 0, or -1 if the loop could not run at all. */
int seatd_bench_http_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot);

/* The same for the direct driver (direct.c). */
int seatd_bench_direct_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot);

/* 1 if the next hold of a driver drawing from 'r' asks for places, and *'alone' whether for
 * places alone (loadgen.c). */
int seatd_bench_pick_places(const seatd_bench_cfg_t *cfg, seatd_bench_rng_t *r, int *alone);

/* The show's extra JSON with its area ({"areas":[…]}), "" without one (loadgen.c). */
void seatd_bench_area_extra(const seatd_bench_cfg_t *cfg, char *out, size_t cap);

/* Creates the 2,000-seat show straight in Redis (FCALL seatd_create_show) and writes its id
 * into 'cfg->show_id'. Returns 0 or -1 with a message on stderr. (direct.c) */
int seatd_bench_direct_create_show(seatd_bench_cfg_t *cfg, int hold_ttl_s);

#endif
