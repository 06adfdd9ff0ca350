/*
 * seats.h - seat-set normalisation before anything reaches Redis.
 *
 * A request's seat ids are checked one by one against the id grammar (keys.h), rejected on
 * duplicates, sorted (byte order) and bounded; then, given the show's layout, checked to
 * exist. Sorting gives every request over the same seats the same fingerprint and the hold
 * script a deterministic order.
 *
 * Pure: no I/O, no allocation beyond the output array.
 */
#ifndef SEATD_SEATS_H
#define SEATD_SEATS_H

#include <stddef.h>

#include "base/errors.h"

struct seatd_layout_s;

/* Seats in one hold, at most: --max-seats-per-hold is bounded by it, the store refuses more,
 * and the hold script checks it too (generated into the Lua library as MAX_SEATS_PER_HOLD,
 * see cmake/embed_lua.cmake). */
#define SEATD_SEATS_MAX_PER_HOLD 100 /* lua: MAX_SEATS_PER_HOLD */
/* Holds of one show a worker sends in one seatd_hold_batch call (store.c, lua/hold.lua). */
#define SEATD_HOLD_BATCH_MAX 64 /* lua: HOLD_BATCH_MAX */

/*
 * Normalises 'n' seat ids ('ids' borrowed) into 'out' (an array of at least 'n' pointers,
 * each pointing into 'ids', so valid as long as 'ids' is). 'max_seats' bounds 'n' (0: no bound).
 * 'layout' (borrowed, may be NULL to skip the check) must contain every id.
 * Returns 0, or SEATD_EEMPTY, SEATD_ETOOMANY, SEATD_EBADSEAT, SEATD_EDUPSEAT,
 * SEATD_EUNKNOWNSEAT; on error '*bad' (may be NULL) points at the offending id.
 */
SEATD_MUSTCHECK int seatd_seats_normalise(const char *const *ids, size_t n, size_t max_seats,
                                          const struct seatd_layout_s *layout, const char **out,
                                          const char **bad);

#endif
