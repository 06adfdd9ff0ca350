/* show_audit_internal.h - what the audit's files share (show_audit.c: the run, the layout, the
 * areas and the helpers; show_audit_records.c: the per-key probes of bookings, holds, users and
 * seat keys). Not an interface: show_audit.h is. */
#ifndef SEATD_SHOW_AUDIT_INTERNAL_H
#define SEATD_SHOW_AUDIT_INTERNAL_H

#include <hiredis/hiredis.h>

#include "redis_sync.h"
#include "show_audit.h"

#define MAX_SEATS 200000

typedef struct owner_s {
    char name[72]; /* the sub */
    long seats;    /* seats in their CONFIRMED bookings */
} owner_t;

#define MAX_AREAS 32 /* create_show.lua's limit */

typedef struct area_s {
    char id[24];   /* the area's id, from the meta's 'areas' */
    long capacity; /* its capacity */
    long booked;   /* places of its CONFIRMED bookings, summed by the bookings' scan */
} area_t;

typedef struct audit_s {
    redisContext *rc;  /* borrowed; one node, or NULL */
    seatd_redis_t *rs; /* borrowed; one node or a cluster, when 'rc' is NULL */
    const seatd_audit_opts_t *o;
    seatd_audit_report_t *rep;
    char prefix[64]; /* {s:<id>} */
    int failed;      /* a Redis command failed: 'err' says which */
    char *err;
    size_t errlen;
    int nseats;      /* seats in the layout */
    char **seat_ids; /* index -> seat id, owned */
    int *by_id;      /* seat indexes sorted by id, owned */
    int *booked_by;  /* index -> CONFIRMED bookings listing it */
    owner_t *owners; /* owners of CONFIRMED bookings, owned */
    size_t nowners, capowners;
    area_t areas[MAX_AREAS]; /* the show's standing areas (meta 'areas'), in the meta's order */
    int nareas;
} audit_t;

enum { PROBE_ARGS_MAX = 24 }; /* a group payment and its (up to 20) show bookings */

/* ---- show_audit.c: helpers ---- */

/* Counts one violation of 'check' and hands its text to the options' on_violation. */
__attribute__((format(printf, 3, 4))) void audit__violation(audit_t *a, const char *check,
                                                            const char *fmt, ...);

/* Runs one command; NULL (and 'failed' set, 'err' written) on a connection error or an error
 * reply. */
__attribute__((format(printf, 2, 3))) redisReply *audit__cmd(audit_t *a, const char *fmt, ...);

/* Runs the read-only script 'lua' (EVAL_RO) with 'nkeys' keys then args, all strings. */
redisReply *audit__probe(audit_t *a, const char *lua, int nkeys, int nargs, const char **args);

/* Seat id -> index in the layout (a binary search over the ids sorted once). */
int audit__seat_index(const audit_t *a, const char *seat);

/* Bit 'i' of bitmap reply 'bm' (0 when the bitmap is missing or shorter). */
int audit__bit(const redisReply *bm, int i);

/* Field 'name' of an HGETALL-shaped reply 'h' whose pairs begin at element 'from', or NULL. */
const char *audit__hfield(const redisReply *h, size_t from, const char *name);

/* 1 for a hold status that still keeps its seats (HELD, PENDING_PAYMENT). */
int audit__live_status(const char *s);

/* 1 if 'seat' is one of the comma-joined 'list'. */
int audit__lists_seat(const char *list, const char *seat);

/* The number of items in the comma-joined 'list' (0 for NULL or ""). */
long audit__count_csv(const char *list);

/* The places in a record's 'areas' text ("FLOOR:2,BALC:1"), named 'what' by a violation of
 * 'areas' when in an area the show does not have; with 'book', each is also added to its
 * area's booked sum. */
long audit__count_places(audit_t *a, const char *text, int book, const char *what);

/* Check 'bits': the record 'what' lists 'seats' with 'bits' (comma-joined, aligned); each bit
 * must be the seat's index in the layout. With 'only' non-NULL, only that seat is checked. */
void audit__check_bits(audit_t *a, const char *what, const char *seats, const char *bits,
                       const char *only);

/* Adds 'seats' to buyer 'name''s CONFIRMED total (the per-user cap check). */
void audit__owner_add(audit_t *a, const char *name, long seats);

/* ---- show_audit_records.c: per-key probes, run by the scans of show_audit.c ---- */

/* A booking record 'key' ({s}:booking:<id>): its indexes, bits, payment, owner's count. */
void audit__on_booking(audit_t *a, const char *key);

/* Every member of {s}:<zset> names an existing {s}:<record>:<id> (violation 'check'). */
void audit__check_members(audit_t *a, const char *zset, const char *record, const char *check);

/* A hold record 'key' ({s}:hold:<id>): its seat keys, bits, expiry entry and user count. */
void audit__on_hold(audit_t *a, const char *key);

/* A buyer's holds 'key' ({s}:user:<sub>): every hold it counts is live. */
void audit__on_user(audit_t *a, const char *key);

/* A seat key 'key' ({s}:seat:<id>): it names a live hold that lists it, with its held bit. */
void audit__on_seat_key(audit_t *a, const char *key);

/* A set held bit of seat index 'i' has a seat key and a live hold behind it. */
void audit__check_held_bit(audit_t *a, int i);

#endif
