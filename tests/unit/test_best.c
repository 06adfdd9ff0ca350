/* Unit tests for best.c: row segments and aisles, seat quality, candidate texts. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/best.h"
#include "base/buf.h"
#include "domain/layout.h"

/* One row A1..A8 at x 1..4 and 6..9 (an aisle after A4), y 3; 'extra' is added to A8. */
static seatd_layout_t *row_with_aisle(const char *extra)
{
    char json[2048];
    size_t off = (size_t)snprintf(json, sizeof(json), "[");
    for (int k = 1; k <= 8; k++)
        off += (size_t)snprintf(json + off, sizeof(json) - off,
                                "%s{\"id\":\"A%d\",\"row\":\"A\",\"number\":%d,\"x\":%d,\"y\":3%s}",
                                k > 1 ? "," : "", k, k, k <= 4 ? k : k + 1, k == 8 ? extra : "");
    snprintf(json + off, sizeof(json) - off, "]");
    cJSON *arr = cJSON_Parse(json);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, NULL, &l, NULL, 0), 0);
    cJSON_Delete(arr);
    return l;
}

Test(best, proposes_the_centre_first_and_never_across_an_aisle)
{
    seatd_layout_t *l = row_with_aisle("");
    seatd_best_list_t c = {0};
    cr_assert_eq(seatd_best_candidates(l, 2, NULL, 0, NULL, &c), 0);
    cr_assert(c.n >= 1);
    cr_assert_str_eq(c.items[0], "b|standard|A3:2,A4:3|A2:1,A1:0|");
    for (size_t i = 0; i < c.n; i++)
        cr_assert_null(strstr(c.items[i], "A4:3,A5:4"), "%s crosses the aisle", c.items[i]);
    seatd_best_list_free(&c);
    /* 5 adjacent seats exist nowhere: only the pieces of a split (3 + 2) */
    cr_assert_eq(seatd_best_candidates(l, 5, NULL, 0, NULL, &c), 0);
    cr_assert(c.n > 0);
    for (size_t i = 0; i < c.n; i++)
        cr_assert_eq(c.items[i][0], 'p', "%s", c.items[i]);
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

Test(best, a_rank_wins_over_the_geometry)
{
    seatd_layout_t *l = row_with_aisle(",\"rank\":1");
    seatd_best_list_t c = {0};
    cr_assert_eq(seatd_best_candidates(l, 1, NULL, 0, NULL, &c), 0);
    cr_assert_str_eq(c.items[0], "b|standard|A8:7|A7:6,A6:5|");
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

Test(best, leaves_out_seats_the_hint_says_are_taken)
{
    seatd_layout_t *l = row_with_aisle("");
    unsigned char held[1] = {0x30}; /* A3, A4 */
    seatd_best_hint_t h = {held, NULL, 1, 0};
    seatd_best_list_t c = {0};
    cr_assert_eq(seatd_best_candidates(l, 2, NULL, 0, &h, &c), 0);
    cr_assert_str_eq(c.items[0], "b|standard|A5:4,A6:5||A7:6,A8:7");
    for (size_t i = 0; i < c.n; i++) {
        /* the block's own seats (neighbours may be taken: the orphan check reads them) */
        char seats[256];
        const char *p = strchr(strchr(c.items[i], '|') + 1, '|') + 1;
        snprintf(seats, sizeof(seats), "%.*s", (int)strcspn(p, "|"), p);
        cr_assert(!strstr(seats, "A3:") && !strstr(seats, "A4:"), "%s", c.items[i]);
    }
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

/* One row A1..A300 (no aisle), every third seat from A30 to A270 held: in between, each
 * free seat would strand its neighbour, and the 64 best-ranked (central) seats are all such.
 * The blocks that strand no seat come first (the script skips the others under the orphan
 * rule, and answered "no block" while A1 fitted); the others follow. */
Test(best, blocks_that_strand_no_seat_come_first)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "[");
    for (int k = 1; k <= 300; k++)
        seatd_buf_printf(&b, "%s{\"id\":\"A%d\",\"row\":\"A\",\"number\":%d,\"x\":%d,\"y\":3}",
                         k > 1 ? "," : "", k, k, k);
    seatd_buf_puts(&b, "]");
    cJSON *arr = cJSON_Parse(b.data);
    seatd_buf_free(&b);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, NULL, &l, NULL, 0), 0);
    cJSON_Delete(arr);
    unsigned char held[38] = {0};
    for (int k = 30; k <= 270; k += 3)
        held[(k - 1) / 8] |= (unsigned char)(0x80u >> ((k - 1) % 8));
    seatd_best_hint_t h = {held, NULL, sizeof(held), 0};
    /* the seats whose block strands none: A1..A27, A29, A271, A273..A300, but for A2 and
     * A299 (each would leave a row end alone) */
    int fits[301] = {0}, nfit = 0;
    for (int k = 1; k <= 300; k++)
        nfit += fits[k] = (k <= 27 || k == 29 || k == 271 || k >= 273) && k != 2 && k != 299;
    seatd_best_list_t c = {0};
    cr_assert_eq(seatd_best_candidates(l, 1, NULL, 0, &h, &c), 0);
    cr_assert_eq(c.n, SEATD_BEST_MAX_BLOCKS);
    for (size_t i = 0; i < c.n; i++) {
        int k = atoi(strchr(c.items[i], 'A') + 1);
        cr_assert(!(held[(k - 1) / 8] & (0x80u >> ((k - 1) % 8))), "%s is held", c.items[i]);
        if (i < (size_t)nfit)
            cr_assert(fits[k], "candidate %zu, %s, strands a seat", i, c.items[i]);
        else
            cr_assert(!fits[k], "candidate %zu, %s, proposed twice", i, c.items[i]);
    }
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

/* Wheelchair spaces are held back for the buyers who ask for one: best available without
 * 'accessible' never proposes one (it did: a quarter of random best-available holds took
 * one), nor do the alternatives of seats that are not spaces. */
Test(best, a_wheelchair_space_goes_only_to_a_buyer_who_asks_for_one)
{
    seatd_layout_t *l = row_with_aisle(",\"accessible\":true,\"companions\":[\"A7\"]");
    seatd_best_list_t c = {0};
    for (size_t count = 1; count <= 4; count++) {
        cr_assert_eq(seatd_best_candidates(l, count, NULL, 0, NULL, &c), 0);
        cr_assert(c.n > 0);
        for (size_t i = 0; i < c.n; i++) {
            char seats[256];
            const char *p = strchr(strchr(c.items[i], '|') + 1, '|') + 1;
            snprintf(seats, sizeof(seats), "%.*s", (int)strcspn(p, "|"), p);
            cr_assert(strncmp(seats, "A8:", 3) != 0 && !strstr(seats, ",A8:"), "%zu: %s", count,
                      c.items[i]);
        }
        seatd_best_list_free(&c);
    }
    cr_assert_eq(seatd_best_candidates(l, 2, NULL, 1, NULL, &c), 0);
    cr_assert_eq(c.n, 1);
    cr_assert_str_eq(c.items[0], "b|standard|A7:6,A8:7|A6:5,A5:4|");
    seatd_best_list_free(&c);
    /* A6 refused: A5 and A7 are proposed, A8 (the space) is not */
    const char *ids[] = {"A6"};
    const unsigned char held[] = {0x04}; /* A6 */
    seatd_best_hint_t maps = {held, NULL, 1, 0};
    seatd_best_alternatives(l, ids, 1, &maps, 0, &c);
    for (size_t i = 0; i < c.n; i++)
        cr_assert_str_neq(c.items[i], "A8");
    cr_assert_eq(c.n, 3);
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

Test(best, an_unknown_tier_is_refused)
{
    seatd_layout_t *l = row_with_aisle("");
    seatd_best_list_t c = {0};
    cr_assert_eq(seatd_best_candidates(l, 2, "premium", 0, NULL, &c), SEATD_EINVAL);
    cr_assert_eq(c.n, 0);
    seatd_layout_free(l);
}

Test(best, a_named_hold_gets_its_runs)
{
    seatd_layout_t *l = row_with_aisle("");
    const char *ids[] = {"A2", "A3", "A6"};
    seatd_best_list_t c = {0};
    seatd_best_named(l, ids, 3, &c);
    cr_assert_eq(c.n, 2);
    cr_assert_str_eq(c.items[0], "n|standard|A2:1,A3:2|A1:0|A4:3");
    cr_assert_str_eq(c.items[1], "n|standard|A6:5|A5:4|A7:6,A8:7");
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

/* The seats asked for, when they are one block, are not their own alternative (a refusal
 * means they are taken); a block that only overlaps them is. */
Test(best, a_named_block_is_not_its_own_alternative)
{
    seatd_layout_t *l = row_with_aisle("");
    const char *ids[] = {"A2", "A3"};
    seatd_best_list_t c = {0};
    seatd_best_hint_t none = {0};
    seatd_best_alternatives(l, ids, 2, &none, 0, &c);
    cr_assert_eq(c.n, SEATD_BEST_ALTERNATIVES);
    int overlapping = 0;
    for (size_t i = 0; i < c.n; i++) {
        cr_assert_str_neq(c.items[i], "A2,A3", "the asked block offered");
        overlapping += strcmp(c.items[i], "A1,A2") == 0 || strcmp(c.items[i], "A3,A4") == 0;
    }
    cr_assert_eq(overlapping, 2, "the blocks next to it are offered");
    seatd_best_list_free(&c);
    seatd_layout_free(l);
}

/* Alternatives are free in the refusal's bitmaps, nearest first, and with the orphan rule
 * strand no seat of those bitmaps. */
Test(best, alternatives_are_free_in_the_refusals_bitmaps_and_strand_none_with_the_rule)
{
    seatd_layout_t *l = row_with_aisle("");
    const char *ids[] = {"A2", "A3"};
    const unsigned char held[] = {0x80}, booked[] = {0x10}; /* A1 held, A4 booked */
    seatd_best_hint_t maps = {held, booked, 1, 1};
    seatd_best_list_t c = {0};
    seatd_best_alternatives(l, ids, 2, &maps, 0, &c);
    cr_assert_eq(c.n, 3);
    cr_assert_str_eq(c.items[0], "A5,A6");
    cr_assert_str_eq(c.items[1], "A6,A7");
    cr_assert_str_eq(c.items[2], "A7,A8");
    seatd_best_list_free(&c);
    /* A6,A7 would leave A5 alone at the aisle */
    seatd_best_alternatives(l, ids, 2, &maps, 1, &c);
    cr_assert_eq(c.n, 2);
    cr_assert_str_eq(c.items[0], "A5,A6");
    cr_assert_str_eq(c.items[1], "A7,A8");
    seatd_best_list_free(&c);
    /* an unknown seat: no alternatives (the script answered UNKNOWN_SEAT anyway) */
    const char *bad[] = {"Z9"};
    seatd_best_alternatives(l, bad, 1, &maps, 0, &c);
    cr_assert_eq(c.n, 0);
    seatd_layout_free(l);
}

/* The layout of the seats written into 'b' (a JSON array without its closing bracket; freed
 * here) with price tiers 'tiers_json'. */
static seatd_layout_t *layout_of(seatd_buf_t *b, const char *tiers_json)
{
    seatd_buf_puts(b, "]");
    cJSON *arr = cJSON_Parse(b->data);
    seatd_buf_free(b);
    cJSON *tiers = cJSON_Parse(tiers_json);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, tiers, &l, NULL, 0), 0);
    cJSON_Delete(arr);
    cJSON_Delete(tiers);
    return l;
}

/* A 2,000-seat house: 40 rows A..Z, AA..AN (so the row order is not the seats' order) of 50
 * seats with an aisle after seat 25, the front 10 rows tier "front", the rest "back". The
 * 'mixed' house lists every other row from its last seat to its first (the rows' places are
 * no longer runs of consecutive seats), makes seats 10-12 of rows F and G wheelchair spaces
 * and seats 40-50 of rows K..T a third tier. */
static seatd_layout_t *house_of(int mixed)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "[");
    for (int r = 0; r < 40; r++) {
        char row[4];
        if (r < 26)
            snprintf(row, sizeof(row), "%c", 'A' + r);
        else
            snprintf(row, sizeof(row), "A%c", 'A' + r - 26);
        for (int j = 1; j <= 50; j++) {
            int k = mixed && r % 2 ? 51 - j : j;
            const char *tier = r < 10 ? "front" : "back";
            if (mixed && r >= 10 && r < 20 && k >= 40)
                tier = "side";
            int space = mixed && (r == 5 || r == 6) && k >= 10 && k <= 12;
            seatd_buf_printf(&b,
                             "%s{\"id\":\"%s%d\",\"row\":\"%s\",\"number\":%d,\"x\":%d,\"y\":%d,"
                             "\"tier\":\"%s\"%s}",
                             r + j > 1 ? "," : "", row, k, row, k, k <= 25 ? k : k + 2, r, tier,
                             space ? ",\"accessible\":true" : "");
        }
    }
    return layout_of(&b, "{\"front\":9000,\"back\":5000,\"side\":4000}");
}

/* A 2,000-seat house of 20 rows A..T of 100 seats without an aisle (a row is one segment of
 * two 64-place words), the front 5 rows tier "front", the rest "back". */
static seatd_layout_t *wide_house(void)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "[");
    for (int r = 0; r < 20; r++)
        for (int k = 1; k <= 100; k++)
            seatd_buf_printf(&b,
                             "%s{\"id\":\"%c%d\",\"row\":\"%c\",\"number\":%d,\"x\":%d,"
                             "\"y\":%d,\"tier\":\"%s\"}",
                             r + k > 1 ? "," : "", 'A' + r, k, 'A' + r, k, k, r,
                             r < 5 ? "front" : "back");
    return layout_of(&b, "{\"front\":9000,\"back\":5000}");
}

/* The windowed scan of the alternatives proposes exactly what the per-start scan does: the
 * same blocks in the same order, over houses from empty to nearly full, 1 to 6 seats asked,
 * with and without the orphan rule; in the mixed house too (rows listed backwards, spaces, a
 * third tier), in the wide house (segments longer than a 64-place word), and with bitmaps
 * shorter than the house (the seats past them are free). */
Test(best, the_windowed_scan_proposes_what_the_per_start_scan_does)
{
    seatd_layout_t *houses[3] = {house_of(0), house_of(1), wide_house()};
    unsigned char held[250], booked[250];
    unsigned seed = 12345;
    int compared = 0, nonempty = 0;
    for (int round = 0; round < 1200; round++) {
        int wide = round % 3 == 2, rows = wide ? 20 : 40, width = wide ? 100 : 50;
        seatd_layout_t *l = houses[round % 3];
        int fill = round % 10; /* tenths of the house taken */
        for (int i = 0; i < 250; i++) {
            held[i] = booked[i] = 0;
            for (int bit = 0; bit < 8; bit++) {
                seed = seed * 1103515245u + 12345u;
                if ((int)((seed >> 16) % 10) < fill)
                    ((seed >> 8) & 1 ? held : booked)[i] |= (unsigned char)(0x80u >> bit);
            }
        }
        size_t held_len = round % 7 == 3 ? 131 : 250, booked_len = round % 5 == 2 ? 77 : 250;
        seatd_best_hint_t maps = {held, booked, held_len, booked_len};
        seed = seed * 1103515245u + 12345u;
        int row = (int)((seed >> 16) % (unsigned)rows), n = 1 + (int)((seed >> 8) % 6);
        int first = 1 + (int)((seed >> 4) % (unsigned)(width - n));
        char ids[6][8];
        const char *idp[6];
        for (int j = 0; j < n; j++) {
            if (row < 26)
                snprintf(ids[j], sizeof(ids[j]), "%c%d", 'A' + row, first + j);
            else
                snprintf(ids[j], sizeof(ids[j]), "A%c%d", 'A' + row - 26, first + j);
            idp[j] = ids[j];
        }
        for (int rule = 0; rule < 2; rule++) {
            seatd_best_list_t fast = {0}, ref = {0};
            seatd_best_alternatives(l, idp, (size_t)n, &maps, rule, &fast);
            seatd_best_set_window_scan(0);
            seatd_best_alternatives(l, idp, (size_t)n, &maps, rule, &ref);
            seatd_best_set_window_scan(1);
            cr_assert_eq(fast.n, ref.n, "round %d: %zu alternatives, the reference %zu", round,
                         fast.n, ref.n);
            for (size_t j = 0; j < ref.n; j++)
                cr_assert_str_eq(fast.items[j], ref.items[j], "round %d, alternative %zu", round,
                                 j);
            compared++;
            nonempty += ref.n > 0;
            seatd_best_list_free(&fast);
            seatd_best_list_free(&ref);
        }
    }
    cr_assert_eq(compared, 2400);
    cr_assert_gt(nonempty, 1800, "most rounds have alternatives to compare");
    for (int i = 0; i < 3; i++)
        seatd_layout_free(houses[i]);
}
