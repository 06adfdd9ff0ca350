/*
 * best_window.c - the windowed scan: best__choose() for one tier and no wheelchair space over a
 * bounded stretch of places (the alternatives to a refused hold), judging only the starts
 * inside the free runs of each segment's bitmap of unfit places, built 64 places at a time,
 * and visiting the segments nearest first. The same blocks, order and scores as the plain
 * scan of best_choose.c. See best_internal.h.
 */
#include "domain/best_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/mem.h"

/* ---------------------------------------------------------------- the windowed scan's bits */

#define WINDOW_WORDS (SCAN_WINDOW_MAX / 64 + 2)

/* The 64 bits of bitmap 'map' (len bytes, bit 0 the most significant of byte 0) from bit
 * 'at' on, bit 'at' the most significant; bits past the map are 0 (a missing bit is free). */
static uint64_t map_bits(const unsigned char *map, size_t len, size_t at)
{
    if (map == NULL)
        return 0;
    size_t byte = at / 8;
    unsigned char b[9] = {0};
    if (byte + 9 <= len)
        memcpy(b, map + byte, 9);
    else if (byte < len)
        memcpy(b, map + byte, len - byte);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | b[i];
    unsigned sh = at % 8;
    return sh ? v << sh | (uint64_t)(b[8] >> (8 - sh)) : v;
}

/* The 64 bits of the place-order words 'w' from place 'at' on (place 'at' on top). */
static uint64_t word_bits(const uint64_t *w, size_t at)
{
    unsigned sh = at % 64;
    return sh ? w[at / 64] << sh | w[at / 64 + 1] >> (64 - sh) : w[at / 64];
}

/* ORs 'v' (its top 'm' bits) into window bits at offset 'j'. */
static void window_or(uint64_t *win, size_t j, uint64_t v, unsigned m)
{
    if (m < 64)
        v &= ~(~0ULL >> m);
    win[j / 64] |= v >> (j % 64);
    if (j % 64)
        win[j / 64 + 1] |= v << (64 - j % 64);
}

/* The first offset at or after 'j' whose bit is 'one' in the 'nw' words of 'win', or
 * nw * 64 when there is none. */
static size_t window_find(const uint64_t *win, size_t nw, size_t j, int one)
{
    for (size_t i = j / 64; i < nw; i++) {
        uint64_t w = one ? win[i] : ~win[i];
        if (i == j / 64)
            w &= ~0ULL >> (j % 64);
        if (w)
            return i * 64 + (size_t)__builtin_clzll(w);
    }
    return nw * 64;
}

/* Tier t's "another tier" bitmap, built on first use; NULL when t is not indexed so. */
static const uint64_t *tier_bits(const index_t *cx, int t)
{
    index_t *x = (index_t *)cx; /* a memo, not part of the value */
    if (t < 0 || t >= INDEX_TIERS || t >= x->ntiers)
        return NULL;
    if (x->tierbits[t] == NULL) {
        uint64_t *b = seatd_calloc(x->nwords, sizeof(*b));
        for (size_t k = 0; k < x->n; k++)
            if (x->tier[x->ord[k]] != t)
                b[k / 64] |= 1ULL << (63 - k % 64);
        x->tierbits[t] = b;
    }
    return x->tierbits[t];
}

/* A segment of the window (its places [first, end) inside it) and the least score a block of
 * it can have. */
typedef struct window_seg_s {
    double bound;
    uint32_t first, end;
} window_seg_t;

/* Whether segment 'a' is visited before 'b': nearer, or as near and earlier. */
static inline int seg_before(const window_seg_t *a, const window_seg_t *b)
{
    return a->bound < b->bound || (a->bound == b->bound && a->first < b->first);
}

/* Moves segs[i] down the binary min-heap segs[0..n) (seg_before() order) to its place. */
static void seg_sift_down(window_seg_t *segs, size_t n, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && seg_before(&segs[c + 1], &segs[c]))
            c++;
        if (!seg_before(&segs[c], &segs[i]))
            return;
        window_seg_t t = segs[i];
        segs[i] = segs[c];
        segs[c] = t;
        i = c;
    }
}

/* Takes the first segment (seg_before() order) off the heap segs[0..*n). */
static window_seg_t seg_pop(window_seg_t *segs, size_t *n)
{
    window_seg_t top = segs[0];
    segs[0] = segs[--*n];
    seg_sift_down(segs, *n, 0);
    return top;
}

/* The least squared distance from (nx, ny) of a point in box 'b' (least and greatest x, least
 * and greatest y), less a margin for the rounding of a block's centre (a sum of up to
 * SCAN_WINDOW_MAX coordinates divided: off by far less than 1e-9 of their size). */
static double box_bound(const double *b, double nx, double ny)
{
    double ex = 1e-9 * (1 + fabs(nx) + fabs(b[0]) + fabs(b[1]));
    double ey = 1e-9 * (1 + fabs(ny) + fabs(b[2]) + fabs(b[3]));
    double dx = fmax(0, fmax(b[0] - nx, nx - b[1]) - ex);
    double dy = fmax(0, fmax(b[2] - ny, ny - b[3]) - ey);
    return dx * dx + dy * dy;
}

/* The places [first, end) of one segment unfit for 'w' as bits of 'win' (bit j: place
 * first + j): of another tier ('other'), a space not asked for, or taken (the taken bits copied
 * run by run from the show's bitmaps); every bit from end - first on is set. Returns the
 * words of 'win' to search (one more, all ones, follows them). */
static size_t segment_unfit(const index_t *x, const want_t *w, const seatd_best_hint_t *hint,
                            const uint64_t *other, size_t first, size_t end, uint64_t *win)
{
    size_t span = end - first, nw = span / 64 + 1;
    for (size_t i = 0; i < nw; i++) {
        win[i] = word_bits(other, first + 64 * i);
        if (!w->spaces)
            win[i] |= word_bits(x->spacebits, first + 64 * i);
    }
    win[nw] = ~0ULL;
    win[span / 64] |= ~0ULL >> (span % 64); /* past the segment: unfit */
    if (hint == NULL)
        return nw;
    for (size_t p = first; p < end;) {
        size_t e = x->runend[p] < end ? x->runend[p] : end;
        for (size_t off = 0; off < e - p; off += 64) {
            size_t at = x->ord[p] + off;
            uint64_t v = map_bits(hint->held, hint->held_len, at) |
                         map_bits(hint->booked, hint->booked_len, at);
            size_t m = e - p - off;
            window_or(win, p + off - first, v, m < 64 ? (unsigned)m : 64);
        }
        p = e;
    }
    return nw;
}

/*
 * best__choose() for one tier, no wheelchair space, over at most SCAN_WINDOW_MAX places (the
 * alternatives to a refused hold: most of the places around a hot seat are taken). The same
 * blocks, in the same order, with the same scores as block_ok() gives them, at a fraction of
 * the cost: blocks never cross a segment, so the segments are visited one by one, and only
 * the starts inside the free runs of a segment's bitmap of unfit places (segment_unfit(),
 * built 64 places at a time) are judged. Scoring by distance, the segments are visited
 * nearest first, from a heap, and the scan stops at the first whose nearest point is farther
 * than the worst of 'max' blocks found: the bitmaps of the segments never visited are never
 * built.
 */
size_t best__choose_window(const index_t *x, const want_t *w, const seatd_best_hint_t *hint,
                           pick_t *picks, size_t max, size_t k0, size_t k1)
{
    const uint64_t *other = tier_bits(x, w->tier);
    if (other == NULL)
        return SIZE_MAX;
    size_t end = k1 + w->count - 1 < x->n ? k1 + w->count - 1 : x->n; /* places looked at */
    window_seg_t segs[SCAN_WINDOW_MAX];
    size_t ns = 0;
    for (size_t p = k0; p < end; p = x->segend[p]) {
        size_t e = x->segend[p] < end ? x->segend[p] : end;
        if (e - p < w->count)
            continue; /* no block fits in it */
        double bound = w->near ? box_bound(x->box + 4 * x->seg[p], w->nx, w->ny) : 0;
        segs[ns++] = (window_seg_t){bound, (uint32_t)p, (uint32_t)e};
    }
    if (w->near)
        for (size_t i = ns / 2; i-- > 0;)
            seg_sift_down(segs, ns, i);
    uint64_t win[WINDOW_WORDS + 1];
    size_t np = 0;
    for (size_t i = 0; w->near ? ns > 0 : i < ns; i++) {
        window_seg_t seg = w->near ? seg_pop(segs, &ns) : segs[i];
        if (w->near && np == max && seg.bound > picks[np - 1].score)
            break; /* no block of this segment or a later one can be picked */
        size_t len = seg.end - seg.first;
        size_t nw = segment_unfit(x, w, hint, other, seg.first, seg.end, win);
        for (size_t a = window_find(win, nw, 0, 0); a < len; a = window_find(win, nw, a, 0)) {
            size_t b = window_find(win, nw, a, 1); /* places [first + a, first + b) fit */
            if (b > len)
                b = len;
            for (size_t k = seg.first + a; k < k1 && k + w->count <= seg.first + b; k++) {
                if (k == w->skip || (w->no_strand && best__strands(x, hint, k, w->count)))
                    continue;
                double score = 0, cx = 0, cy = 0; /* added as block_ok() adds them */
                if (w->near) {
                    for (size_t j = 0; j < w->count; j++) {
                        cx += x->px[k + j];
                        cy += x->py[k + j];
                    }
                    double dx = cx / (double)w->count - w->nx, dy = cy / (double)w->count - w->ny;
                    score = dx * dx + dy * dy;
                } else {
                    for (size_t j = 0; j < w->count; j++)
                        score += x->qual[x->ord[k + j]];
                }
                np = best__pick_insert(picks, np, max, score, k);
            }
            a = b;
        }
    }
    return np;
}
