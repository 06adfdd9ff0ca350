/*
 * layout_fetch.h - a show's layout, read from Redis once however many requests want it.
 *
 * Layouts are immutable, so each worker caches them (domain/layout.h). A cold worker (just
 * started, or a show it has not served yet) may get hundreds of requests for one show before
 * its layout arrives: they wait on one fetch per show instead of each reading the ~160 KB
 * layout (one Redis read per show, many waiters). The fetched layout goes into the cache
 * before any waiter hears of it.
 *
 * Loop and threads: the worker's loop; 'store' must outlive every fetch (its close fails what
 * is in flight, which ends the waiters with an error).
 */
#ifndef SEATD_FLOWS_LAYOUT_FETCH_H
#define SEATD_FLOWS_LAYOUT_FETCH_H

#include "base/errors.h"
#include "store/store.h"

struct seatd_layout_s;

/* The end of a wait, once per waiter, oldest waiter first. 'layout' (borrowed from the cache,
 * valid for the callback) is the show's, or NULL: then 'res->err' is the store's error, or, if
 * 0, 'why' says what went wrong (SEATD_EINTERNAL: the stored layout is unreadable;
 * SEATD_EOVERLOAD: the cache could not keep it). */
typedef void (*seatd_layout_fetch_cb)(const seatd_store_result_t *res,
                                      const struct seatd_layout_s *layout, int why, void *data);

/* Waits for show 'show_id''s layout (which must not be in the cache: read it there first).
 * 0: 'cb' runs once, later; < 0: it never runs. */
SEATD_MUSTCHECK int seatd_layout_fetch(seatd_store_t *store, const char *show_id,
                                       seatd_layout_fetch_cb cb, void *data);

#endif
