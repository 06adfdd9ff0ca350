/*
 * best.h - best available, orphan seats and alternatives: the worker's half.
 *
 * The worker proposes, the hold Function decides. From a show's frozen layout this module
 * derives (once per layout, kept with it: seatd_layout_set_aux) the row segments — seats of
 * one row ordered by number, cut where numbers are not consecutive or where the x gap is
 * larger than SEATD_BEST_AISLE_GAP times the row's usual seat pitch (an aisle) — and a
 * quality per seat, lower is better:
 *
 *   - the seat's own "rank" when any seat of the layout has one (seats without one rank
 *     after every ranked seat);
 *   - else the distance from the sweet spot (the centre of the plan's x range, at 2/3 of the
 *     depth from the screen or stage at y = 0, i.e. y = 2/3 of the largest y) plus a quarter
 *     of the distance from the centre of its own row.
 *
 * It then writes candidate blocks as the text seatd_hold_sell (lua/hold.lua) reads, each one
 * argument:  <kind>|<tier>|<seats>|<left>|<right>  where <seats> is "id:bit,id:bit,…" in
 * seat-number order, <left> and <right> the up to SEATD_BEST_NEIGHBOURS nearest seats of the
 * same segment on each side, nearest first ("" at a row end or an aisle), and <kind> one of
 *   b  a whole block of N adjacent seats (best available), best first
 *   p  a piece of a split (sizes ceil(N/2) and floor(N/2)), best first
 *   n  a run of adjacent seats of a named hold, for the orphan check
 * Tier names are [A-Za-z0-9_-] (shows.c checks the price tiers), so '|', ',' and ':' are free.
 *
 * A seat known taken in 'hint' (this worker's last read of the held and booked bitmaps, may
 * be NULL) is left out of the candidates: the hint only saves the script work, the script
 * checks the live state of every seat it takes.
 *
 * Alternatives to a refused named hold are not judged by the script: its refusal carries the
 * show's two bitmaps as it read them, and seatd_best_alternatives() proposes blocks free in
 * those (store.c, on the refusal's way back).
 *
 * Pure: no I/O. Not thread-safe (one loop per process).
 */
#ifndef SEATD_BEST_H
#define SEATD_BEST_H

#include <stddef.h>

#include "base/errors.h"

struct seatd_layout_s;

#define SEATD_BEST_MAX_BLOCKS 64   /* whole-block candidates per best-available call */
#define SEATD_BEST_MAX_PIECES 32   /* split pieces per call (per piece size) */
#define SEATD_BEST_RANKED_MAX 16   /* block sizes whose ranking is kept with the layout */
#define SEATD_BEST_SPLIT_BELOW 8   /* pieces are proposed when fewer whole blocks look free */
#define SEATD_BEST_MAX_ALTS 12     /* nearest free blocks judged for the alternatives */
#define SEATD_BEST_ALT_SCAN 400    /* alternatives: places scanned on each side of the seats */
#define SEATD_BEST_MAX_BYTES 32768 /* candidate text per call, at most */
#define SEATD_BEST_NEIGHBOURS 2    /* neighbour seats sent on each side of a block */
#define SEATD_BEST_AISLE_GAP 1.5   /* an x gap above this many usual pitches is an aisle */
#define SEATD_BEST_ALTERNATIVES 3  /* alternatives in a refusal, at most */

/* The seat map as last read, a hint only: bit i (MSB first) of either is seat i taken. */
typedef struct seatd_best_hint_s {
    const unsigned char *held, *booked; /* may be NULL */
    size_t held_len, booked_len;
} seatd_best_hint_t;

/* A list of candidate arguments: owned strings, freed with seatd_best_list_free. */
typedef struct seatd_best_list_s {
    char **items;
    size_t n, cap;
    size_t bytes; /* text so far, bounded by SEATD_BEST_MAX_BYTES */
} seatd_best_list_t;

void seatd_best_list_free(seatd_best_list_t *b);

/*
 * Best available: appends to 'out' up to SEATD_BEST_MAX_BLOCKS "b" blocks of 'count' adjacent
 * seats (all of tier 'tier', or all of one tier when 'tier' is NULL; with 'accessible', a
 * wheelchair space and only its companions; without, no wheelchair space: those are held back
 * for the buyers who ask for one, as box offices do), best first among those that strand no
 * seat in 'hint' (the orphan rule's test), then best first among the others (without a hint:
 * all in one order), then (count > 1, and without a 'hint' or when it leaves fewer than
 * SEATD_BEST_SPLIT_BELOW whole blocks) the "p" pieces of a split into two. 'l', 'tier' and
 * 'hint' (may be NULL) borrowed. Returns 0, or SEATD_EINVAL when 'tier' is not a tier of the
 * layout.
 */
SEATD_MUSTCHECK int seatd_best_candidates(const struct seatd_layout_s *l, size_t count,
                                          const char *tier, int accessible,
                                          const seatd_best_hint_t *hint, seatd_best_list_t *out);

/*
 * Named hold: appends the "n" runs of the 'n' seats 'ids' (all in 'l'), for the script's
 * orphan check. All borrowed.
 */
void seatd_best_named(const struct seatd_layout_s *l, const char *const *ids, size_t n,
                      seatd_best_list_t *out);

/*
 * Alternatives to a refused named hold of the 'n' seats 'ids': up to SEATD_BEST_ALTERNATIVES
 * blocks of 'n' adjacent seats in the tier of the first seat, nearest to the seats asked first
 * (never those seats themselves as one block), looked for among SEATD_BEST_ALT_SCAN places on
 * each side, every seat free in 'maps' (the show's bitmaps as the script that refused the hold
 * read them: the blocks were free when it ran) and, with 'orphan_rule', stranding no seat in
 * 'maps'; wheelchair spaces only when one of the seats asked is one. Appends each block to 'out' as
 * its seat ids, comma-joined. All borrowed.
 */
void seatd_best_alternatives(const struct seatd_layout_s *l, const char *const *ids, size_t n,
                             const seatd_best_hint_t *maps, int orphan_rule,
                             seatd_best_list_t *out);

/* Tests: 0 turns the windowed scan of the alternatives off, so a test can compare it with the
 * per-start scan it replaces (the reference); 1 (the default) turns it back on. */
void seatd_best_set_window_scan(int on);

#endif
