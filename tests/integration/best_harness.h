/*
 * best_harness.h - store_harness.h for the box-office rules (issue 13): a small theatre,
 * best-available and named holds through seatd_hold_sell with best.c's candidates.
 *
 * The theatre (y = 0 is the screen; the sweet spot is x = 5, y = 20, row B):
 *   row A (y 10)  A1 A2 A3 A4 | aisle | A5 A6 A7 A8    standard; A1 a wheelchair space with
 *                                                      companions A2, A3
 *   row B (y 20)  B1 B2 B3 B4 | aisle | B5 B6 B7 B8    standard
 *   row C (y 30)  C1 … C6 (x 2 … 7)                     premium
 * Seats are x 1..4 and 6..9 (the aisle is a gap of 2 against a pitch of 1).
 *
 * Header-only (static inline), like store_harness.h.
 */
#ifndef SEATD_TEST_BEST_HARNESS_H
#define SEATD_TEST_BEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/best.h"
#include "domain/layout.h"
#include "store_harness.h"

#define TB_SEATS 22

/* Creates the theatre as show 'show'; 'orphan_block': orphanRule "block". */
static inline int tb_create_theatre(th_t *t, const char *show, int orphan_block)
{
    static char ids[TB_SEATS][16];
    const char *seat_ids[TB_SEATS + 1];
    char layout[8192];
    size_t n = 0, off = 0;
    off += (size_t)snprintf(layout, sizeof(layout), "{\"showId\":\"%s\",\"seats\":[", show);
    for (int row = 0; row < 3; row++) {
        int count = row < 2 ? 8 : 6;
        for (int k = 1; k <= count; k++) {
            int x = row < 2 ? (k <= 4 ? k : k + 1) : k + 1;
            snprintf(ids[n], sizeof(ids[n]), "%c%d", 'A' + row, k);
            const char *extra = "";
            if (row == 0 && k == 1)
                extra = ",\"accessible\":true,\"companions\":[\"A2\",\"A3\"]";
            off += (size_t)snprintf(layout + off, sizeof(layout) - off,
                                    "%s{\"id\":\"%s\",\"row\":\"%c\",\"number\":%d,\"tier\":\"%s\","
                                    "\"x\":%d,\"y\":%d%s}",
                                    n ? "," : "", ids[n], 'A' + row, k,
                                    row < 2 ? "standard" : "premium", x, 10 * (row + 1), extra);
            seat_ids[n] = ids[n];
            n++;
        }
    }
    snprintf(layout + off, sizeof(layout) - off, "]}");
    seat_ids[n] = NULL;
    seatd_show_args_t a = {0};
    a.show_id = show;
    a.title = "Theatre";
    a.starts_at_ms = 1800000000000LL;
    a.hold_ttl_ms = 60000;
    a.price_tiers_json = "{\"standard\":1200,\"premium\":1800}";
    a.layout_json = layout;
    a.seat_ids = seat_ids;
    a.nseats = n;
    a.extra_json = orphan_block ? "{\"orphanRule\":\"block\"}" : NULL;
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    return rc;
}

/* Holds through seatd_hold_sell: 'request' and the candidates in 'c' (freed); 'ttl_ms' and
 * 'max' as th_hold's. */
static inline int tb_sell_ttl(th_t *t, th_res_t *r, const char *show, const char *owner,
                              const char *const *seats, size_t n, const char *request,
                              seatd_best_list_t *c, const char *idem, long long ttl_ms, int max)
{
    char hold_id[SEATD_ID_MAX];
    th_res_clear(r);
    seatd_hold_args_t a;
    if (th_hold_args(&a, hold_id, show, owner, seats, n, idem, ttl_ms, max) < 0) {
        seatd_best_list_free(c);
        return -1;
    }
    a.request = request;
    a.cands = (const char *const *)c->items;
    a.ncands = c->n;
    int rc = th_finish(t, r, seatd_store_hold(t->store, &a, th_on_result, r));
    seatd_best_list_free(c);
    return rc;
}

static inline int tb_sell(th_t *t, th_res_t *r, const char *show, const char *owner,
                          const char *const *seats, size_t n, const char *request,
                          seatd_best_list_t *c, const char *idem)
{
    return tb_sell_ttl(t, r, show, owner, seats, n, request, c, idem, 0, 0);
}

/* Best available: 'count' seats, 'tier' (NULL: any), 'accessible'. */
static inline int tb_best(th_t *t, th_res_t *r, const char *show, const char *owner, int count,
                          const char *tier, int accessible, const char *idem)
{
    const seatd_layout_t *l = seatd_layout_cache_get(show);
    seatd_best_list_t c = {0};
    if (l == NULL)
        return -1;
    th_res_clear(r);
    int rc = seatd_best_candidates(l, (size_t)count, tier, accessible, NULL, &c);
    if (rc < 0)
        return rc;
    char request[64];
    snprintf(request, sizeof(request), "best:%d:%s:%d", count, tier ? tier : "-", accessible);
    return tb_sell(t, r, show, owner, NULL, 0, request, &c, idem);
}

/* A named hold of the NULL-terminated 'seats' with its runs (a refusal's alternatives are
 * proposed by store.c from the bitmaps the script answers with). */
static inline int tb_named(th_t *t, th_res_t *r, const char *show, const char *owner,
                           const char *const *seats, const char *idem)
{
    const seatd_layout_t *l = seatd_layout_cache_get(show);
    seatd_best_list_t c = {0};
    size_t n = 0;
    if (l == NULL)
        return -1;
    while (seats[n])
        n++;
    seatd_best_named(l, seats, n, &c);
    return tb_sell(t, r, show, owner, seats, n, "named", &c, idem);
}

/* Seats in a comma-joined list. */
static inline int tb_count(const char *csv)
{
    int n = csv && *csv ? 1 : 0;
    for (; csv && *csv; csv++)
        n += *csv == ',';
    return n;
}

/* The theatre's x of seat 'id'. */
static inline int tb_x(const char *id)
{
    int k = atoi(id + 1);
    return id[0] == 'C' ? k + 1 : (k <= 4 ? k : k + 1);
}

/* Blocks of adjacent seats (same row, consecutive numbers, no aisle) in a list given in
 * block order, as seatd_hold_sell answers. */
static inline int tb_pieces(const char *csv)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", csv);
    int pieces = 0;
    char prev[8] = "";
    for (char *save = NULL, *id = strtok_r(buf, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        int adjacent =
            prev[0] == id[0] && atoi(id + 1) == atoi(prev + 1) + 1 && tb_x(id) - tb_x(prev) == 1;
        pieces += !adjacent;
        snprintf(prev, sizeof(prev), "%s", id);
    }
    return pieces;
}

#endif
