/*
 * scenario.h - what the benchmark's virtual users do, and what they count.
 *
 * The blockbuster show: SEATD_BENCH_ROWS rows of SEATD_BENCH_PER_ROW seats (2,000 seats),
 * row 0 ("A") the best. Seat index i is row i / PER_ROW, number i % PER_ROW + 1; its id is the
 * row label and the number ("A1" … "AN50"). A virtual user asks for 1-4 adjacent seats
 * (40/40/10/10 %), the row drawn from a truncated exponential towards row A and the first
 * seat from a truncated gaussian around the middle of the row: the same formulas as
 * pgbench's random_exponential(0, 39, 4.0) and random_gaussian(0, 50-n, 2.5), so the
 * PostgreSQL anchor (bench/pg/hold.sql) fights over the same seats with the same skew.
 *
 * The counters of one load process live in a seatd_bench_slot_t, which the parent maps
 * shared before fork() and sums after waitpid(). Latencies, statuses and rates count only
 * requests started after the warm-up; all_wins / all_bookings count everything, for the audit.
 *
 * Pure apart from the clock: no I/O.
 */
#ifndef SEATD_BENCH_SCENARIO_H
#define SEATD_BENCH_SCENARIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"

#define SEATD_BENCH_ROWS 40
#define SEATD_BENCH_PER_ROW 50
#define SEATD_BENCH_SEATS (SEATD_BENCH_ROWS * SEATD_BENCH_PER_ROW)
#define SEATD_BENCH_MAX_PICK 4
#define SEATD_BENCH_NSTATUS 600 /* HTTP statuses 0..599; 0 = transport error */

/* The operations we time. */
#define SEATD_BENCH_OP_MAP(XX)                                                                     \
    XX(HOLD, "hold")                                                                               \
    XX(BOOK, "book")                                                                               \
    XX(RELEASE, "release")                                                                         \
    XX(SEATMAP, "seatmap")                                                                         \
    XX(GHOLD, "ghold")

enum seatd_bench_op_e {
#define SEATD_BENCH_OP_ENUM(name, str) SEATD_BENCH_OP_##name,
    SEATD_BENCH_OP_MAP(SEATD_BENCH_OP_ENUM)
#undef SEATD_BENCH_OP_ENUM
        SEATD_BENCH_NOPS
};

const char *seatd_bench_op_name(int op);

/* One load process's counters (shared memory, one writer). */
typedef struct seatd_bench_slot_s {
    seatd_hist_t lat[SEATD_BENCH_NOPS];                     /* latency per operation */
    uint64_t status[SEATD_BENCH_NOPS][SEATD_BENCH_NSTATUS]; /* answers by status */
    uint64_t bytes[SEATD_BENCH_NOPS];                       /* response bytes, headers
                                                               included */
    uint64_t wins;                                          /* holds created (201) */
    uint64_t conflicts;                                     /* holds refused with 409 conflict */
    uint64_t seats_won;                                     /* seats in the holds created */
    uint64_t places_won;      /* places (standing areas) in the holds created (measured) */
    uint64_t area_wins;       /* holds created that carry places (measured) */
    uint64_t group_wins;      /* group holds created (measured; counted in wins too) */
    uint64_t group_conflicts; /* group holds refused with 409 (measured; in conflicts too) */
    uint64_t all_group_wins;  /* group holds created, warm-up included */
    uint64_t bookings;        /* bookings answered CONFIRMED */
    uint64_t releases;        /* holds released */
    uint64_t conn_errors;     /* connects/reads/writes that failed */
    uint64_t all_wins;        /* holds created, warm-up included (what the audit counts) */
    uint64_t all_bookings;    /* bookings CONFIRMED, warm-up included */
    double elapsed_s;         /* time this process drove load */
    int done;                 /* set by the child when it finished cleanly */
} seatd_bench_slot_t;

/* Adds 'src' into 'dst'; elapsed_s becomes the largest. */
void seatd_bench_slot_merge(seatd_bench_slot_t *dst, const seatd_bench_slot_t *src);

/*
 * Prints the report of 'total' over 'elapsed_s' seconds to 'f': one line per operation
 * ("op=hold count=… per_s=… p50_ms=… p90_ms=… p99_ms=… p999_ms=… max_ms=… bytes_per_resp=…"),
 * one line per (operation, status) pair ("status op=hold code=409 count=…"), and the
 * scenario line ("holds attempts_per_s=… wins_per_s=… conflict_ratio=… bookings_per_s=… …
 * group_attempts_per_s=… group_wins_per_s=…"; a group hold counts as one hold) and the totals
 * line ("totals wins=… bookings=… … group_wins=…") that
 * bench/run hands to the audit.
 */
void seatd_bench_report(FILE *f, const seatd_bench_slot_t *total, double elapsed_s);

/* Copies the string value of JSON member 'name' of 'body' (borrowed) into 'out' ('cap'
 * bytes). Returns 0 or -1. A scan, not a parser: enough for the flat answers of the hold,
 * booking and show routes. */
int seatd_bench_json_str(const char *body, const char *name, char *out, size_t cap);

/* ---- randomness ------------------------------------------------------------------------ */

typedef struct seatd_bench_rng_s {
    uint64_t s[4]; /* xoshiro256** state */
} seatd_bench_rng_t;

void seatd_bench_rng_seed(seatd_bench_rng_t *r, uint64_t seed);
uint64_t seatd_bench_rng_next(seatd_bench_rng_t *r);
/* Uniform in [0, 1). */
double seatd_bench_rng_unit(seatd_bench_rng_t *r);
/* Uniform integer in [lo, hi]. */
int64_t seatd_bench_rng_range(seatd_bench_rng_t *r, int64_t lo, int64_t hi);
/* pgbench's random_exponential(lo, hi, param) and random_gaussian(lo, hi, param). */
int64_t seatd_bench_rng_exponential(seatd_bench_rng_t *r, int64_t lo, int64_t hi, double param);
int64_t seatd_bench_rng_gaussian(seatd_bench_rng_t *r, int64_t lo, int64_t hi, double param);

/* ---- seats ----------------------------------------------------------------------------- */

/* Writes the id of seat index 'i' ("A1", "AN50") into 'out' (at least 8 bytes). */
void seatd_bench_seat_id(int i, char *out);
/* Writes the row label of row 'row' ("A" … "Z", "AA" …) into 'out' (at least 4 bytes). */
void seatd_bench_row_label(int row, char *out);

/*
 * Picks one virtual user's wish: writes 1-4 adjacent seat indexes into 'idx' and returns how
 * many. The ids of adjacent seats of one row sort in byte order except across a digit
 * boundary ("A9" > "A10"): callers that need ids sorted sort them.
 */
int seatd_bench_pick(seatd_bench_rng_t *r, int *idx);

/*
 * Returns the owned JSON body of POST /v1/shows for the 2,000-seat show (free()): rows A-J
 * "premium", the rest "standard", hold TTL 'hold_ttl_s' seconds, and the members of the JSON
 * object text 'extra' (borrowed; NULL or "" for none, else "{\"areas\":[…]}") merged in.
 */
char *seatd_bench_show_json(const char *title, int hold_ttl_s, const char *extra);

/* Monotonic clock in microseconds. */
uint64_t seatd_bench_now_us(void);

#endif
