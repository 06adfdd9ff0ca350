/*
 * best_choose.c - judging and choosing blocks: whether a block of adjacent seats fits what is
 * wanted (one tier, taken seats in the hint, wheelchair spaces and their companions, the
 * orphan rule) and its score, and the searches that keep the best: the ranked blocks of a
 * layout (built once per block size), the plain scan, and the windowed scan of best_window.c
 * when it applies. See best_internal.h.
 */
#include "domain/best_internal.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/mem.h"

/* ---------------------------------------------------------------------- choosing blocks */

static inline int taken_hint(const seatd_best_hint_t *h, size_t i)
{
    if (h == NULL)
        return 0;
    unsigned char m = (unsigned char)(0x80u >> (i % 8));
    return (h->held && i / 8 < h->held_len && (h->held[i / 8] & m)) ||
           (h->booked && i / 8 < h->booked_len && (h->booked[i / 8] & m));
}

/* Whether the block at places [k, k + count) fits 'w' and 'hint'; its score in '*score'. When
 * it does not, '*next' is the first place after k where a fitting block may start: a block
 * over a taken seat, or over a seat of another tier than the one asked, cannot fit, so a scan
 * skips every start that covers it (with any one tier, the start at the seat of the other
 * tier may). */
static int block_ok(const seatd_layout_t *l, const index_t *x, const want_t *w,
                    const seatd_best_hint_t *hint, size_t k, double *score, size_t *next)
{
    int tier = w->tier >= 0 ? w->tier : x->tier[x->ord[k]];
    double q = 0, cx = 0, cy = 0;
    long space = -1;
    *next = k + 1;
    for (size_t j = 0; j < w->count; j++) {
        size_t i = x->ord[k + j];
        if (taken_hint(hint, i)) {
            *next = k + j + 1;
            return 0;
        }
        if (x->tier[i] != tier) {
            *next = w->tier >= 0 ? k + j + 1 : k + j;
            return 0;
        }
        if (!w->accessible && !w->spaces && x->space[i]) {
            *next = k + j + 1;
            return 0;
        }
        const seatd_layout_seat_t *s = seatd_layout_seat(l, i);
        if (w->accessible && s->accessible && space < 0)
            space = (long)i;
        q += x->qual[i];
        cx += s->x;
        cy += s->y;
    }
    if (w->accessible) {
        /* one wheelchair space, every other seat one of its companions */
        if (space < 0)
            return 0;
        const seatd_layout_seat_t *sp = seatd_layout_seat(l, (size_t)space);
        for (size_t j = 0; j < w->count; j++) {
            long i = (long)x->ord[k + j];
            int ok = i == space;
            for (int c = 0; c < sp->ncompanions; c++)
                ok |= sp->companions[c] == i;
            if (!ok)
                return 0;
        }
    }
    if (w->no_strand && best__strands(x, hint, k, w->count))
        return 0; /* '*next': the block at k + 1 may strand none */
    /* near: the squared distance (it orders blocks as the distance does, without a sqrt per
     * block on every named hold's scan) */
    double dx = cx / (double)w->count - w->nx, dy = cy / (double)w->count - w->ny;
    *score = w->near ? dx * dx + dy * dy : q;
    return 1;
}

/* Whether a block at place 'k' with 'score' comes before pick 'p': it scores better, or as
 * well from an earlier place. */
static inline int pick_before(double score, size_t k, const pick_t *p)
{
    return score < p->score || (score == p->score && k < p->k);
}

/* Keeps 'picks' (np of at most 'max', best first) the best blocks seen, in the order of
 * pick_before() whatever the order they are seen in. Returns the new count. */
size_t best__pick_insert(pick_t *picks, size_t np, size_t max, double score, size_t k)
{
    if (np == max && !pick_before(score, k, &picks[np - 1]))
        return np;
    size_t at = np < max ? np++ : np - 1;
    while (at > 0 && pick_before(score, k, &picks[at - 1])) {
        picks[at] = picks[at - 1];
        at--;
    }
    picks[at] = (pick_t){score, k};
    return np;
}

static int window_scan = 1; /* seatd_best_set_window_scan() */

void seatd_best_set_window_scan(int on)
{
    window_scan = on;
}

static size_t choose_ranked(const seatd_layout_t *l, const index_t *x, const want_t *w,
                            const seatd_best_hint_t *hint, pick_t *picks, size_t max);

/* The best 'max' blocks for 'w' starting at places [k0, k1) into 'picks' (sorted, best
 * first); returns how many. */
size_t best__choose(const seatd_layout_t *l, const index_t *x, const want_t *w,
                    const seatd_best_hint_t *hint, pick_t *picks, size_t max, size_t k0, size_t k1)
{
    size_t np = 0;
    if (w->count == 0)
        return 0;
    if (!w->near && !w->accessible && w->count <= SEATD_BEST_RANKED_MAX && k0 == 0 && k1 >= x->n)
        return choose_ranked(l, x, w, hint, picks, max);
    if (window_scan && w->tier >= 0 && !w->accessible && k0 < k1 &&
        k1 - k0 + w->count <= SCAN_WINDOW_MAX) {
        np = best__choose_window(x, w, hint, picks, max, k0, k1);
        if (np != SIZE_MAX)
            return np;
    }
    for (size_t k = k0; k < k1 && k + w->count <= x->n; k++) {
        if (x->segend[k] < k + w->count) {
            k = x->segend[k] - 1; /* so does every start up to its segment's end */
            continue;
        }
        if (k == w->skip)
            continue; /* the one block to leave out */
        double score;
        size_t next;
        if (!block_ok(l, x, w, hint, k, &score, &next)) {
            k = next - 1;
            continue;
        }
        np = best__pick_insert(picks, np, max, score, k);
    }
    return np;
}

static const double *rank_scores; /* qsort has no context argument */

static int by_score(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    double sx = rank_scores[x], sy = rank_scores[y];
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Every block of 'count' seats of one tier within a segment, best first (ties: the earlier
 * place), as best__choose() would order them: built once per layout and count, so a call walks
 * from the best block on instead of scanning the layout. */
static const uint32_t *ranked(const seatd_layout_t *l, const index_t *cx, size_t count, size_t *n)
{
    index_t *x = (index_t *)cx; /* a memo, not part of the value */
    if (x->ranked[count] == NULL) {
        double *score = seatd_calloc(x->n + 1, sizeof(*score));
        uint32_t *r = seatd_calloc(x->n + 1, sizeof(*r));
        size_t m = 0;
        want_t w = {.count = count, .tier = -1, .skip = SIZE_MAX};
        size_t next;
        for (size_t k = 0; k + count <= x->n; k++)
            if (x->segend[k] >= k + count && block_ok(l, x, &w, NULL, k, &score[k], &next))
                r[m++] = (uint32_t)k;
        rank_scores = score;
        qsort(r, m, sizeof(*r), by_score);
        rank_scores = NULL;
        free(score);
        x->ranked[count] = r;
        x->nranked[count] = m;
    }
    *n = x->nranked[count];
    return x->ranked[count];
}

/* Whether the block at place 'k' of 'count' seats overlaps one of 'picks'. */
static int overlaps(const pick_t *picks, size_t np, size_t k, size_t count)
{
    for (size_t j = 0; j < np; j++)
        if (k < picks[j].k + count && picks[j].k < k + count)
            return 1;
    return 0;
}

/* best__choose() by quality over the whole layout, from the ranked blocks: first the blocks that
 * overlap no better candidate, then the others, each in rank order. Concurrent buyers given
 * the same seat-map read then do not all aim at the same few seats: the first candidates are
 * disjoint, so the script finds a free one as long as fewer buyers than candidates raced. */
static size_t choose_ranked(const seatd_layout_t *l, const index_t *x, const want_t *w,
                            const seatd_best_hint_t *hint, pick_t *picks, size_t max)
{
    size_t n, np = 0, first;
    const uint32_t *r = ranked(l, x, w->count, &n);
    for (int pass = 0; pass < 2 && np < max; pass++) {
        first = np;
        for (size_t j = 0; j < n && np < max; j++) {
            double score;
            size_t next;
            if (!block_ok(l, x, w, hint, r[j], &score, &next))
                continue; /* the cheap test first: on a busy show most blocks fail it */
            int over = overlaps(picks, pass ? first : np, r[j], w->count);
            if (pass == 0 ? over : !over)
                continue; /* pass 1 looks only at what pass 0 left out for overlapping */
            int again = 0;
            for (size_t q = 0; pass && q < first; q++)
                again |= picks[q].k == r[j];
            if (!again)
                picks[np++] = (pick_t){score, r[j]};
        }
    }
    return np;
}

/* best__choose() over the whole layout, the blocks that strand no seat in 'hint' first, then (when
 * fewer than 'max' do) the others (without a hint, all of them in order). With the show's orphan
 * rule on, the script skips every block that best__strands a seat: were the best-ranked 'max'
 * blocks all such blocks (single seats left between holds in the middle of the house), the buyer
 * would hear "no block" while blocks that fit are free further out. With the rule off it is the
 * better sale too. */
size_t best__choose_unstranding_first(const seatd_layout_t *l, const index_t *x, const want_t *w,
                                      const seatd_best_hint_t *hint, pick_t *picks, size_t max)
{
    if (hint == NULL) /* nothing read: which block best__strands a seat is not known */
        return best__choose(l, x, w, hint, picks, max, 0, x->n);
    want_t first = *w;
    first.no_strand = 1;
    size_t np = best__choose(l, x, &first, hint, picks, max, 0, x->n);
    if (np == max)
        return np;
    pick_t more[SEATD_BEST_MAX_BLOCKS];
    size_t nm = best__choose(l, x, w, hint, more,
                             max < SEATD_BEST_MAX_BLOCKS ? max : SEATD_BEST_MAX_BLOCKS, 0, x->n);
    for (size_t j = 0, n0 = np; j < nm && np < max; j++) {
        int again = 0;
        for (size_t q = 0; q < n0 && !again; q++)
            again = picks[q].k == more[j].k;
        if (!again)
            picks[np++] = more[j];
    }
    return np;
}

/* Whether the block at places [k, k + count) best__strands a seat in 'maps': on either side, the
 * nearest seat of its segment is free and the one beyond it is taken or missing (a row end or
 * an aisle). The rule of lua/hold.lua's block_orphans, on the bitmaps. */
int best__strands(const index_t *x, const seatd_best_hint_t *maps, size_t k, size_t count)
{
    size_t s0 = x->seg[k], s1 = x->segend[k], e = k + count;
    if (k > s0 && !taken_hint(maps, x->ord[k - 1]) &&
        (k - 1 == s0 || taken_hint(maps, x->ord[k - 2])))
        return 1;
    if (e < s1 && !taken_hint(maps, x->ord[e]) && (e + 1 >= s1 || taken_hint(maps, x->ord[e + 1])))
        return 1;
    return 0;
}
