/*
 * best_internal.h - what the files of the best-available module share: the seat index of a
 * layout, what a search wants and what it picks, and the functions one file calls in another.
 * Not an interface: include it only from best.c (the three calls and their output),
 * best_index.c (the seat index), best_choose.c (judging and choosing blocks) and
 * best_window.c (the windowed scan); everything else goes through best.h.
 */
#ifndef SEATD_BEST_INTERNAL_H
#define SEATD_BEST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "domain/best.h"
#include "domain/layout.h"

#define INDEX_TIERS 64 /* tiers numbered by tier_number(); more are not indexed by bitmap */

/* The seat index of a layout, built once and kept with it (seatd_layout_set_aux). */
typedef struct index_s {
    size_t n;             /* seats */
    size_t *ord;          /* seat indexes by (row, number) */
    size_t *pos;          /* seat index -> its place in 'ord' */
    size_t *seg;          /* place in 'ord' -> first place of its segment */
    size_t *segend;       /* place in 'ord' -> one past the last place of its segment */
    double *qual;         /* seat index -> quality, lower is better */
    double *px, *py;      /* place in 'ord' -> its seat's position (a scan reads these in order) */
    int *tier;            /* seat index -> tier number (order of first appearance) */
    unsigned char *space; /* seat index -> 1: a wheelchair space */
    int ntiers;           /* tiers of the layout */
    uint32_t *ranked[SEATD_BEST_RANKED_MAX + 1]; /* count -> the blocks of that many seats
                                                  * (first place), best first; built on first
                                                  * use */
    size_t nranked[SEATD_BEST_RANKED_MAX + 1];   /* their number */
    /* Place-order bitmaps for best__choose_window(), in 64-bit words (place p: bit 63 - p % 64 of
     * word p / 64), one word of padding past the last place. */
    size_t nwords;
    uint64_t *spacebits;             /* 1: the seat at that place is a wheelchair space */
    uint64_t *tierbits[INDEX_TIERS]; /* tier -> 1: the seat is of another tier (on first use) */
    size_t *runend; /* place -> one past the last place of its run, the places whose seat
                     * indexes follow each other (a row listed in order is one run) */
    double *box;    /* place of a segment's first seat -> 4 values: the segment's seats' least
                     * and greatest x, least and greatest y (a block's centre is inside) */
} index_t;

typedef struct pick_s {
    double score;
    size_t k; /* first place in 'ord' */
} pick_t;

typedef struct want_s {
    size_t count;
    int tier; /* tier number, -1: any one tier */
    int accessible;
    int spaces; /* wheelchair spaces may be proposed without 'accessible' (see want_spaces) */
    int near;   /* score by distance to (nx, ny) instead of quality */
    double nx, ny;
    size_t skip;   /* a place whose block is left out (the seats asked themselves), or SIZE_MAX */
    int no_strand; /* leave out blocks that strand a seat in the hint (see best__strands()) */
} want_t;

/* Places: a scan this long or shorter may use best__choose_window(). */
#define SCAN_WINDOW_MAX 4096

/* ---------------------------------------------------------------- best_index.c */

const index_t *best__index_of(const seatd_layout_t *l);
int best__tier_find(const index_t *x, const seatd_layout_t *l, const char *name);

/* ---------------------------------------------------------------- best_choose.c */

size_t best__pick_insert(pick_t *picks, size_t np, size_t max, double score, size_t k);
int best__strands(const index_t *x, const seatd_best_hint_t *maps, size_t k, size_t count);
size_t best__choose(const seatd_layout_t *l, const index_t *x, const want_t *w,
                    const seatd_best_hint_t *hint, pick_t *picks, size_t max, size_t k0, size_t k1);
size_t best__choose_unstranding_first(const seatd_layout_t *l, const index_t *x, const want_t *w,
                                      const seatd_best_hint_t *hint, pick_t *picks, size_t max);

/* ---------------------------------------------------------------- best_window.c */

size_t best__choose_window(const index_t *x, const want_t *w, const seatd_best_hint_t *hint,
                           pick_t *picks, size_t max, size_t k0, size_t k1);

#endif
