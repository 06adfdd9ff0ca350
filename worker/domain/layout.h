/*
 * layout.h - a show's seat layout: parsing, validating and looking seats up.
 *
 * A layout is frozen when the show is created: seat i of the "seats" array has bit index i
 * in the held/booked bitmaps. seatd_layout_parse() validates a client's POST /v1/shows
 * "seats" array (ids, rows, numbers, tiers known to the price tiers, finite x/y, at most
 * SEATD_LAYOUT_MAX_SEATS; optional: a finite "rank", "accessible": true and "companions", up
 * to SEATD_LAYOUT_COMPANIONS ids of seats of the same row within 3 numbers of the space) and builds
 * an index for id lookup. Workers cache parsed layouts per show (they never change), see
 * seatd_layout_cache_*.
 *
 * Pure: no I/O. Not thread-safe (one loop per process).
 */
#ifndef SEATD_LAYOUT_H
#define SEATD_LAYOUT_H

#include <stddef.h>

#include "base/errors.h"

#define SEATD_LAYOUT_MAX_SEATS                                                                     \
    100000 /* an 80,000-seat stadium fits; a show body stays under 16 MiB */

typedef struct seatd_layout_seat_s {
    char id[17];        /* seat id, ^[A-Za-z0-9_-]{1,16}$ */
    char row[17];       /* row label */
    int number;         /* seat number within the row */
    char tier[33];      /* price tier name */
    double x, y;        /* position on the plan */
    double rank;        /* the show's own quality of the seat, lower is better (has_rank) */
    int has_rank;       /* 'rank' was given */
    int accessible;     /* a wheelchair space */
    int ncompanions;    /* companion seats of a wheelchair space, 0..SEATD_LAYOUT_COMPANIONS */
    long companions[3]; /* their seat indexes (same row, adjacent numbers) */
} seatd_layout_seat_t;

#define SEATD_LAYOUT_COMPANIONS 3 /* companion seats per wheelchair space, at most */

typedef struct seatd_layout_s seatd_layout_t;

/*
 * Parses a JSON array of seats ('seats_json' borrowed, a cJSON item: struct cJSON *) .
 * 'tiers' (a cJSON object of tier -> price, may be NULL to skip) must contain every tier.
 * Returns 0 and an owned layout in '*out' (seatd_layout_free), or SEATD_EINVAL /
 * SEATD_EBADSEAT / SEATD_EDUPSEAT / SEATD_EEMPTY / SEATD_ETOOMANY with a message in 'why'
 * ('why_len' bytes).
 */
SEATD_MUSTCHECK int seatd_layout_from_json(const void *seats_json, const void *tiers,
                                           seatd_layout_t **out, char *why, size_t why_len);
void seatd_layout_free(seatd_layout_t *l);

size_t seatd_layout_count(const seatd_layout_t *l);
/* Seat 'i' (borrowed until seatd_layout_free). */
const seatd_layout_seat_t *seatd_layout_seat(const seatd_layout_t *l, size_t i);
/* Index of 'id' or -1. */
long seatd_layout_find(const seatd_layout_t *l, const char *id);

/* The canonical layout document {"showId":…,"seats":[…]}: returns owned text (free()). */
char *seatd_layout_to_json(const seatd_layout_t *l, const char *show_id);

/* The canonical "seats" array alone (what seatd_layout_to_json() puts under "seats"): the
 * content that is stored once per distinct layout, shared by shows. Returns owned text. */
char *seatd_layout_seats_json(const seatd_layout_t *l);

/* The layout's content address: lowercase hex SHA-256 of seatd_layout_seats_json(),
 * SEATD_LAYOUT_DIGEST_LEN characters. Computed on first use and kept with the layout;
 * borrowed until seatd_layout_free. Two layouts with the same digest have the same seats in
 * the same order, so bit i means the same seat for both. */
#define SEATD_LAYOUT_DIGEST_LEN 64
const char *seatd_layout_digest(const seatd_layout_t *l);

/* The layout's seat tiers as the store keeps them for pricing (lua/create_show.lua):
 * '*names_out' gets the distinct tier names, comma-joined, in the order of their first seat;
 * the return value is one letter per seat in index order, 'a' for the first name, 'b' for
 * the second, ... Both owned (free()). NULL (and '*names_out' NULL) when the layout has more
 * than SEATD_LAYOUT_TIER_CODES_MAX tiers. */
#define SEATD_LAYOUT_TIER_CODES_MAX 26
char *seatd_layout_tier_codes(const seatd_layout_t *l, char **names_out);

/* A value derived from the layout and kept with it (best.h's seat index): 'aux' is taken and
 * freed with 'aux_free' when the layout is freed; a second set replaces (frees) the first.
 * seatd_layout_aux returns it borrowed until seatd_layout_free, or NULL. */
void seatd_layout_set_aux(const seatd_layout_t *l, void *aux, void (*aux_free)(void *));
void *seatd_layout_aux(const seatd_layout_t *l);

/* Process-wide cache of parsed layouts by show id, bounded to 'max' entries (LRU-ish).
 * seatd_layout_cache_put takes 'l'. seatd_layout_cache_get returns borrowed (valid until the
 * next put). */
void seatd_layout_cache_put(const char *show_id, seatd_layout_t *l);
const seatd_layout_t *seatd_layout_cache_get(const char *show_id);
void seatd_layout_cache_clear(void);

#endif
