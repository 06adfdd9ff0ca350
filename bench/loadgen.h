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
} seatd_bench_cfg_t;

/* Runs process number 'proc' of the HTTP driver until done; counters go to 'slot'.
 * Returns 0, or -1 if the loop could not run at all. */
int seatd_bench_http_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot);

/* The same for the direct driver (direct.c). */
int seatd_bench_direct_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot);

/* Creates the 2,000-seat show straight in Redis (FCALL seatd_create_show) and writes its id
 * into 'cfg->show_id'. Returns 0 or -1 with a message on stderr. (direct.c) */
int seatd_bench_direct_create_show(seatd_bench_cfg_t *cfg, int hold_ttl_s);

#endif
