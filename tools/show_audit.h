/*
 * show_audit.h - the seat invariant of one show, checked straight in Redis (keys.h's schema).
 *
 * Shared by bench/audit.c (seatd_audit, after a benchmark or a fault scenario) and
 * tools/seatctl/ (`seatctl audit SHOW`, on a live show). Reads only: every multi-key check
 * runs as one EVAL_RO probe, so a hold that ends or a booking that settles while the audit
 * runs cannot look like a violation. Checks (the 'check' name each violation carries):
 *
 *   double_booking   no seat is in two CONFIRMED bookings
 *   booked_bits      booked bits = the seats of CONFIRMED bookings
 *   held_and_booked  no seat is both held and booked
 *   seat_keys        every live seat key names a live hold (HELD / PENDING_PAYMENT) that lists
 *                    the seat, and its held bit is set
 *   held_bits        every held bit has a live seat key, or a due hold not yet reaped lists
 *                    the seat (reaping is lazy)
 *   bits             the bits a live hold or a CONFIRMED booking carries are its seats'
 *                    indexes in the show's layout
 *   expiry           live hold <=> member of {s}:expiry, scored with its expiresAt; every
 *                    member of {s}:expiry has a hold record
 *   user_holds       live hold <=> field of its owner's {s}:user:<sub>, valued with its seat
 *                    and place count; no field names a hold that is not live
 *   owner_counts     each owner's "booked" = the seats and places of their CONFIRMED bookings
 *   areas            for each standing area of the meta's 'areas' ("FLOOR:5000:standing,…"),
 *                    its field of {s}:areas = the places ('areas' "FLOOR:2,…") of the live
 *                    holds (as held bits: a due hold counts until reaped) and the CONFIRMED
 *                    bookings, and 0 <= taken <= capacity; no record or field names an area
 *                    the show lacks (the counter and the live holds' places are read in one
 *                    atomic probe, as the reaper gives places back while the audit runs)
 *   pending          PENDING_PAYMENT booking <=> member of {s}:pending
 *   payments         a group payment (a booking record with 'members', issue 30) has every
 *                    show booking it names in its own state (CONFIRMED: or CANCELLED since)
 *   failed           a member of {s}:failed (watched for a late charge) is a FAILED booking
 *                    with no refund recorded
 *   outbox           booking.confirmed minus booking.cancelled events on {s}:bookings =
 *                    the CONFIRMED bookings
 *   counts           seatCount = the layout's seats; with the options below, hold records
 *                    and CONFIRMED bookings as expected
 *   settled          (opts.settled) no seat key, held bit or live hold is left
 *
 * The comparisons of whole-show sets (booked_bits, held_and_booked, outbox, owner_counts, areas)
 * read several keys one after the other: on a show that changes meanwhile they may see a
 * transient difference, so seatd_audit_show() reads the show's version before and after
 * and 'report->stable' says whether nothing changed in between (callers retry if not).
 */
#ifndef SEATD_SHOW_AUDIT_H
#define SEATD_SHOW_AUDIT_H

#include <stddef.h>

struct redisContext;

#define SEATD_AUDIT_ENOSHOW (-1) /* no such show (no meta, or its layout is missing) */
#define SEATD_AUDIT_EREDIS (-2)  /* Redis failed or refused a command */

/* One violation: 'check' is a name from the list above, 'text' a sentence; both borrowed
 * for the call. */
typedef void (*seatd_audit_violation_cb)(const char *check, const char *text, void *data);

typedef struct seatd_audit_opts_s {
    int settled;   /* every deadline passed and was reaped: nothing may be live */
    long wins;     /* expected hold records, or -1 */
    long bookings; /* expected CONFIRMED bookings, or -1 */
    seatd_audit_violation_cb on_violation; /* may be NULL */
    void *data;
    /* On a Redis Cluster the show's keys share one slot but its shared layout
     * (seatd:layout:<hash>) has its own: a read answered MOVED/ASK is sent again once on a
     * connection to the named node, authenticated with these (NULL: no AUTH). */
    const char *user;
    const char *password;
} seatd_audit_opts_t;

typedef struct seatd_audit_report_s {
    int nseats;        /* seats in the layout */
    long holds;        /* hold records (live and ended within the retention) */
    long live_holds;   /* HELD / PENDING_PAYMENT */
    long confirmed;    /* CONFIRMED bookings */
    long pending;      /* PENDING_PAYMENT bookings */
    long payments;     /* group payments (booking records with 'members') */
    long seat_keys;    /* live seat keys */
    long held_seats;   /* held bits */
    long booked_seats; /* booked bits */
    long areas;        /* standing areas in the meta */
    long area_places;  /* places taken in them ({s}:areas, summed) */
    long long version; /* the show's version at the start */
    int stable;        /* 1: the version did not change while the audit ran */
    long violations;   /* violations found */
} seatd_audit_report_t;

/*
 * Audits show 'show_id' over 'c' (borrowed, connected and authenticated; on a cluster, to the
 * primary of the show's slot). Returns 0 when the
 * audit ran (its result is 'report->violations'), SEATD_AUDIT_ENOSHOW or SEATD_AUDIT_EREDIS
 * with a message in 'err' ('errlen' bytes) otherwise.
 */
int seatd_audit_show(struct redisContext *c, const char *show_id, const seatd_audit_opts_t *o,
                     seatd_audit_report_t *report, char *err, size_t errlen);

/* As seatd_audit_show() over a tools/redis_sync.h client, which also reaches a show on a
 * Redis Cluster (its keys share the {s:<id>} slot; the layout key has its own). */
struct seatd_redis_s;
int seatd_audit_show_sync(struct seatd_redis_s *c, const char *show_id, const seatd_audit_opts_t *o,
                          seatd_audit_report_t *report, char *err, size_t errlen);

#endif
