/*
 * best.c - candidate blocks for best available, named runs and alternatives; see best.h.
 * This file holds the three calls and the text they append (the candidates lua/hold.lua
 * reads); the seat index they search is built in best_index.c, the blocks are judged and
 * chosen in best_choose.c and best_window.c (best_internal.h).
 */
#include "domain/best_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* ---------------------------------------------------------------------- output */

void seatd_best_list_free(seatd_best_list_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->items[i]);
    free(b->items);
    memset(b, 0, sizeof(*b));
}

/* Writes "[,]<id>:<bit>" at 'p' (NUL-terminated); returns its length, or 0 when it does not
 * fit in 'cap'. By hand: a named hold writes dozens of these, and snprintf was a tenth of the
 * worker's time under load. */
static size_t put_seat(char *p, size_t cap, const seatd_layout_t *l, size_t i, int comma)
{
    const char *id = seatd_layout_seat(l, i)->id;
    size_t n = strlen(id), d = 0;
    char digits[24];
    do {
        digits[d++] = (char)('0' + i % 10);
        i /= 10;
    } while (i > 0);
    size_t len = (comma ? 1 : 0) + n + 1 + d;
    if (len >= cap)
        return 0;
    if (comma)
        *p++ = ',';
    memcpy(p, id, n);
    p += n;
    *p++ = ':';
    while (d > 0)
        *p++ = digits[--d];
    *p = '\0';
    return len;
}

/* Appends 'p' ('len' bytes, taken) to 'out'. Returns 0, or -1 (and frees 'p') when the byte
 * budget is spent. */
static int list_push(seatd_best_list_t *out, char *p, size_t len)
{
    if (out->bytes + len > SEATD_BEST_MAX_BYTES) {
        free(p);
        return -1;
    }
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->items = seatd_realloc(out->items, out->cap * sizeof(*out->items));
    }
    out->items[out->n++] = p;
    out->bytes += len;
    return 0;
}

/* Appends the block of places [k, k + count) of 'ord' as a '<kind>' candidate. Returns 0, or
 * -1 when the byte budget is spent. */
static int emit(seatd_best_list_t *out, const seatd_layout_t *l, const index_t *x, char kind,
                size_t k, size_t count)
{
    size_t cap = (count + 2 * SEATD_BEST_NEIGHBOURS) * 32 + 64, o = 0;
    char *p = seatd_malloc(cap);
    size_t s0 = x->seg[k], s1 = x->segend[k];
    const char *tier = seatd_layout_seat(l, x->ord[k])->tier; /* at most 32 bytes */
    size_t tier_len = strlen(tier);
    p[o++] = kind;
    p[o++] = '|';
    memcpy(p + o, tier, tier_len);
    o += tier_len;
    p[o++] = '|';
    for (size_t j = 0; j < count; j++)
        o += put_seat(p + o, cap - o, l, x->ord[k + j], j > 0);
    p[o++] = '|';
    for (size_t j = 1; j <= SEATD_BEST_NEIGHBOURS && k >= s0 + j; j++)
        o += put_seat(p + o, cap - o, l, x->ord[k - j], j > 1);
    p[o++] = '|';
    for (size_t j = 0; j < SEATD_BEST_NEIGHBOURS && k + count + j < s1; j++)
        o += put_seat(p + o, cap - o, l, x->ord[k + count + j], j > 0);
    p[o] = '\0';
    return list_push(out, p, o);
}

/* ---------------------------------------------- best available, named runs, alternatives */
static void emit_picks(seatd_best_list_t *out, const seatd_layout_t *l, const index_t *x, char kind,
                       const pick_t *picks, size_t np, size_t count)
{
    for (size_t j = 0; j < np; j++)
        if (emit(out, l, x, kind, picks[j].k, count) < 0)
            return;
}

int seatd_best_candidates(const seatd_layout_t *l, size_t count, const char *tier, int accessible,
                          const seatd_best_hint_t *hint, seatd_best_list_t *out)
{
    const index_t *x = best__index_of(l);
    int t = tier ? best__tier_find(x, l, tier) : -1;
    if (tier != NULL && t < 0)
        return SEATD_EINVAL;
    pick_t picks[SEATD_BEST_MAX_BLOCKS];
    want_t w = {.count = count, .tier = t, .accessible = accessible, .skip = SIZE_MAX};
    size_t np = best__choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_BLOCKS);
    emit_picks(out, l, x, 'b', picks, np, count);
    if (count < 2 || accessible)
        return 0; /* a wheelchair space is sold with its companions, never split */
    if (hint != NULL && np >= SEATD_BEST_SPLIT_BELOW)
        return 0; /* enough whole blocks look free: a split is not worth proposing */
    size_t a = (count + 1) / 2, b = count - a;
    w.count = a;
    np = best__choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_PIECES);
    emit_picks(out, l, x, 'p', picks, np, a);
    if (b != a) {
        w.count = b;
        np = best__choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_PIECES);
        emit_picks(out, l, x, 'p', picks, np, b);
    }
    return 0;
}

static int by_place(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The places in 'ord' of the 'n' seats 'ids', sorted (owned), and the centre of the seats in
 * '*cx', '*cy'; NULL when 'n' is 0 or a seat is not in the layout (the script answers
 * UNKNOWN_SEAT). */
static size_t *named_places(const seatd_layout_t *l, const index_t *x, const char *const *ids,
                            size_t n, double *cx, double *cy)
{
    if (n == 0)
        return NULL;
    size_t *places = seatd_calloc(n, sizeof(*places));
    *cx = *cy = 0;
    for (size_t j = 0; j < n; j++) {
        long i = seatd_layout_find(l, ids[j]);
        if (i < 0) {
            free(places);
            return NULL;
        }
        places[j] = x->pos[i];
        *cx += seatd_layout_seat(l, (size_t)i)->x;
        *cy += seatd_layout_seat(l, (size_t)i)->y;
    }
    *cx /= (double)n;
    *cy /= (double)n;
    qsort(places, n, sizeof(*places), by_place);
    return places;
}

void seatd_best_named(const seatd_layout_t *l, const char *const *ids, size_t n,
                      seatd_best_list_t *out)
{
    const index_t *x = best__index_of(l);
    double cx, cy;
    size_t *places = named_places(l, x, ids, n, &cx, &cy);
    if (places == NULL)
        return;
    for (size_t j = 0; j < n;) {
        size_t e = j + 1;
        while (e < n && places[e] == places[e - 1] + 1 && x->seg[places[e]] == x->seg[places[j]])
            e++;
        emit(out, l, x, 'n', places[j], e - j);
        j = e;
    }
    free(places);
}

void seatd_best_alternatives(const seatd_layout_t *l, const char *const *ids, size_t n,
                             const seatd_best_hint_t *maps, int orphan_rule, seatd_best_list_t *out)
{
    const index_t *x = best__index_of(l);
    double cx, cy;
    size_t *places = named_places(l, x, ids, n, &cx, &cy);
    if (places == NULL)
        return;
    /* The seats asked, when they are one block, are no alternative to themselves. */
    int one_run = places[n - 1] - places[0] == n - 1 && x->seg[places[n - 1]] == x->seg[places[0]];
    /* Wheelchair spaces are proposed to a buyer who asked for one, and to nobody else. */
    int spaces = 0;
    for (size_t j = 0; j < n; j++)
        spaces |= x->space[x->ord[places[j]]];
    want_t w = {.count = n,
                .tier = x->tier[x->ord[places[0]]],
                .spaces = spaces,
                .near = 1,
                .nx = cx,
                .ny = cy,
                .skip = one_run ? places[0] : SIZE_MAX};
    /* Alternatives are looked for among the places around the seats asked (rows are
     * consecutive in 'ord'), so a refusal on a stadium costs a bounded scan. */
    size_t k0 = places[0] > SEATD_BEST_ALT_SCAN ? places[0] - SEATD_BEST_ALT_SCAN : 0;
    size_t k1 = places[n - 1] + SEATD_BEST_ALT_SCAN;
    free(places);
    pick_t picks[SEATD_BEST_MAX_ALTS];
    size_t np = best__choose(l, x, &w, maps, picks, SEATD_BEST_MAX_ALTS, k0, k1);
    for (size_t j = 0, found = 0; j < np && found < SEATD_BEST_ALTERNATIVES; j++) {
        if (orphan_rule && best__strands(x, maps, picks[j].k, n))
            continue;
        size_t cap = 1, o = 0;
        for (size_t i = 0; i < n; i++)
            cap += strlen(seatd_layout_seat(l, x->ord[picks[j].k + i])->id) + 1;
        char *p = seatd_malloc(cap);
        for (size_t i = 0; i < n; i++) {
            const char *id = seatd_layout_seat(l, x->ord[picks[j].k + i])->id;
            size_t len = strlen(id);
            if (i > 0)
                p[o++] = ',';
            memcpy(p + o, id, len);
            o += len;
        }
        p[o] = '\0';
        if (list_push(out, p, o) < 0)
            return;
        found++;
    }
}
