/*
 * seatmap.h - the seat-status projection as this worker serves it.
 *
 * A show's status is two bitmaps kept by the Lua library ({s:<id>}:held, {s:<id>}:booked;
 * bit i, MSB first, is seat i of the frozen layout) and a version bumped on every change.
 * Seat-map reads are by far the hottest read (a blockbuster: a million viewers), so each
 * worker keeps the last atomic read of each show it served (DESIGN.md: "a seat map for a few
 * milliseconds" is a cache, never a decision) together with its two renderings:
 *
 *   - availability: {"showId","version","seatCount","held":"<base64>","booked":"<base64>"},
 *     the bitmaps exactly as Redis stores them (a missing key is "", i.e. all zeros; Redis
 *     stores a bitmap up to its highest set byte), under 1 KB for 2,000 seats;
 *   - status: {"showId","version","seats":{"A1":"held",…}}, for simple clients (needs the
 *     layout for the seat ids).
 *
 * Freshness: an entry is served for SEATD_SEATMAP_FRESH_MS after its Redis read, and never to
 * a request that asks for a newer version than it holds (?minVersion=N: read-your-writes for
 * a client that passes the version of its own hold, release or booking answer). A change made
 * through this worker invalidates its entry at once, with a floor at the change's version.
 *
 * Pure memory: no I/O. Not thread-safe (one loop per process).
 */
#ifndef SEATD_SEATMAP_H
#define SEATD_SEATMAP_H

#include <stddef.h>
#include <stdint.h>

#include "domain/keys.h"

#define SEATD_SEATMAP_FRESH_MS 20 /* how long a worker serves one read of a show's status */
#define SEATD_SEATMAP_SLOTS 64    /* shows cached per worker (least recently read evicted) */

struct seatd_layout_s;

typedef struct seatd_seatmap_s {
    char show_id[SEATD_ID_MAX]; /* "" when the slot is free */
    long long version;          /* -1: no read kept (only a floor) */
    long long floor;     /* a change this worker made reached this version: never serve older */
    int64_t floor_at_ms; /* monotonic ms the floor was set (its change acknowledged) */
    size_t seat_count;
    unsigned char *held, *booked; /* owned copies of the bitmaps as Redis stores them */
    size_t held_len, booked_len;
    int64_t read_at_ms;     /* monotonic ms of the Redis read; stale once invalidated */
    int64_t answered_at_ms; /* monotonic ms the read was answered (never touched after) */
    long long lost_from;    /* the put that stored this read found Redis had lost writes: the
                               highest version known before it (seatd_store_version_floor);
                               -1 otherwise */
    char *areas;            /* owned: standing areas' free text ("FLOOR:5000:4862,…", areas.h),
                               NULL for none */
    unsigned char *blocked; /* owned: seats kept for a sales channel (issue 30), NULL for none */
    size_t blocked_len;
    char *availability; /* owned rendering, made on first use */
    size_t availability_len;
    char *status; /* owned rendering, made on first use */
    size_t status_len;
    char *status_gz; /* owned gzip of 'status', made on first use */
    size_t status_gz_len;
} seatd_seatmap_t;

/* The monotonic clock the cache ages by, in ms. */
int64_t seatd_seatmap_now_ms(void);

/*
 * The cached entry of 'show_id' when it is fresh (read less than SEATD_SEATMAP_FRESH_MS ago)
 * and at least at 'min_version' (0: any); else NULL. Borrowed until the next put.
 */
seatd_seatmap_t *seatd_seatmap_get(const char *show_id, long long min_version);

/*
 * Stores one atomic read of a show's projection (copies the bitmaps), sent at 'issued_at_ms'
 * and answered at 'read_at_ms' (monotonic), and returns the entry (borrowed until the next
 * put). A read of an older version than the entry cached for the show, sent before that
 * entry's read was answered (the two crossed), does not replace it: the newer entry is
 * returned instead. One sent after it (or after a change of this worker's was acknowledged)
 * is Redis's word on the show now, however old its version: Redis lost writes (a restart
 * that lost its last second, a failover), and the lost versions are forgotten, this worker's
 * own floor with them; the entry's 'lost_from' says which version was known.
 */
seatd_seatmap_t *seatd_seatmap_put(const char *show_id, long long version, size_t seat_count,
                                   const void *held, size_t held_len, const void *booked,
                                   size_t booked_len, int64_t issued_at_ms, int64_t read_at_ms);

/* Forgets the cached status of 'show_id' after a change this worker made itself, which
 * Redis answered with 'version': nothing older is served from here again, not even a read
 * that was already in flight when the change was made. */
/* Keeps with 'm' what was read with its bitmaps (issue 30): its standing areas' free counts
 * ('areas', the free text of areas.h; NULL or "" for none) and the bitmap of seats kept for a
 * sales channel ('blocked', 'blocked_len' bytes; none when 0). Both copied. A map with a
 * blocked bitmap shows its kept free seats as "unavailable" and carries "blocked". */
void seatd_seatmap_set_extras(seatd_seatmap_t *m, const char *areas, const void *blocked,
                              size_t blocked_len);

void seatd_seatmap_invalidate(const char *show_id, long long version);

/* Frees every entry (tests, shutdown). */
void seatd_seatmap_clear(void);

/* The availability document of 'm' (rendered once per entry). Borrowed like 'm'. */
const char *seatd_seatmap_availability(seatd_seatmap_t *m, size_t *len);

/* The status document of 'm' over layout 'l' (rendered once per entry). Borrowed like 'm'. */
const char *seatd_seatmap_status(seatd_seatmap_t *m, const struct seatd_layout_s *l, size_t *len);

/* The status document of 'm' gzip-compressed (made once per entry: a shared cache in front
 * keeps it, instead of compressing it again for every viewer); NULL when zlib fails. */
const char *seatd_seatmap_status_gzip(seatd_seatmap_t *m, const struct seatd_layout_s *l,
                                      size_t *len);

/* Seat i's state in 'm': 0 available, 1 held, 2 booked. */
int seatd_seatmap_seat_state(const seatd_seatmap_t *m, size_t i);

#endif
