/*
 * best_index.c - the seat index of a layout, built once and kept with it
 * (seatd_layout_set_aux): the seats in (row, number) order, the segments of each row (cut at
 * a number gap or an aisle), each seat's quality (its rank, or its distance from the sweet
 * spot), the tiers numbered, the wheelchair spaces, and the place-order arrays and bitmaps the
 * scans read. See best.h for the rules, best_internal.h for the index.
 */
#include "domain/best_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

static void index_free(void *p)
{
    index_t *x = p;
    if (x == NULL)
        return;
    free(x->ord);
    free(x->pos);
    free(x->seg);
    free(x->segend);
    free(x->qual);
    free(x->px);
    free(x->py);
    free(x->tier);
    free(x->space);
    for (size_t c = 0; c <= SEATD_BEST_RANKED_MAX; c++)
        free(x->ranked[c]);
    free(x->spacebits);
    for (int t = 0; t < INDEX_TIERS; t++)
        free(x->tierbits[t]);
    free(x->runend);
    free(x->box);
    free(x);
}

static const seatd_layout_t *sort_layout; /* qsort has no context argument */

static int by_row_number(const void *a, const void *b)
{
    const seatd_layout_seat_t *s = seatd_layout_seat(sort_layout, *(const size_t *)a);
    const seatd_layout_seat_t *t = seatd_layout_seat(sort_layout, *(const size_t *)b);
    int c = strcmp(s->row, t->row);
    if (c != 0)
        return c;
    if (s->number != t->number)
        return s->number < t->number ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Segments of the row at places [r0, r1) of 'ord': cut at a number gap or an aisle. */
static void index_row(index_t *x, const seatd_layout_t *l, size_t r0, size_t r1, double *gaps)
{
    size_t ng = 0;
    for (size_t k = r0 + 1; k < r1; k++)
        gaps[ng++] =
            fabs(seatd_layout_seat(l, x->ord[k])->x - seatd_layout_seat(l, x->ord[k - 1])->x);
    double pitch = 0;
    if (ng > 0) {
        qsort(gaps, ng, sizeof(*gaps), cmp_double);
        pitch = gaps[ng / 2]; /* the row's usual pitch: the median gap */
    }
    size_t start = r0;
    for (size_t k = r0; k < r1; k++) {
        if (k > r0) {
            const seatd_layout_seat_t *a = seatd_layout_seat(l, x->ord[k - 1]);
            const seatd_layout_seat_t *b = seatd_layout_seat(l, x->ord[k]);
            if (b->number != a->number + 1 || fabs(b->x - a->x) > SEATD_BEST_AISLE_GAP * pitch)
                start = k;
        }
        x->seg[k] = start;
    }
    for (size_t k = r1; k-- > r0;)
        x->segend[k] = (k + 1 < r1 && x->seg[k + 1] == x->seg[k]) ? x->segend[k + 1] : k + 1;
}

static void index_quality(index_t *x, const seatd_layout_t *l)
{
    size_t n = x->n;
    int ranked = 0;
    double minx = INFINITY, maxx = -INFINITY, maxy = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const seatd_layout_seat_t *s = seatd_layout_seat(l, i);
        ranked |= s->has_rank;
        if (s->has_rank && s->rank > worst)
            worst = s->rank;
        minx = fmin(minx, s->x);
        maxx = fmax(maxx, s->x);
        maxy = fmax(maxy, s->y);
    }
    double sx = (minx + maxx) / 2, sy = maxy * 2 / 3;
    for (size_t k = 0; k < n;) {
        /* one row: its centre */
        const char *row = seatd_layout_seat(l, x->ord[k])->row;
        size_t e = k;
        double rmin = INFINITY, rmax = -INFINITY;
        while (e < n && strcmp(seatd_layout_seat(l, x->ord[e])->row, row) == 0) {
            rmin = fmin(rmin, seatd_layout_seat(l, x->ord[e])->x);
            rmax = fmax(rmax, seatd_layout_seat(l, x->ord[e])->x);
            e++;
        }
        for (; k < e; k++) {
            size_t i = x->ord[k];
            const seatd_layout_seat_t *s = seatd_layout_seat(l, i);
            if (ranked)
                x->qual[i] = s->has_rank ? s->rank : worst + 1;
            else
                x->qual[i] = hypot(s->x - sx, s->y - sy) + fabs(s->x - (rmin + rmax) / 2) / 4;
        }
    }
}

/* The number of tier 'name' among seats [0, upto): an earlier seat's, or a new one. Tiers
 * are few (shows.c: at most 16 price tiers), so a scan of the distinct ones seen is enough. */
static int tier_number(index_t *x, const seatd_layout_t *l, const char *name, size_t upto)
{
    static size_t first[INDEX_TIERS]; /* first seat of each tier number; only while indexing */
    for (int t = 0; t < x->ntiers && t < INDEX_TIERS; t++)
        if (first[t] < upto && strcmp(seatd_layout_seat(l, first[t])->tier, name) == 0)
            return t;
    if (x->ntiers < INDEX_TIERS)
        first[x->ntiers] = upto;
    return x->ntiers++;
}

/* The number of tier 'name', or -1 when no seat has it. */
int best__tier_find(const index_t *x, const seatd_layout_t *l, const char *name)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(seatd_layout_seat(l, i)->tier, name) == 0)
            return x->tier[i];
    return -1;
}

const index_t *best__index_of(const seatd_layout_t *l)
{
    index_t *x = seatd_layout_aux(l);
    if (x != NULL)
        return x;
    size_t n = seatd_layout_count(l);
    x = seatd_calloc(1, sizeof(*x));
    x->n = n;
    x->ord = seatd_calloc(n + 1, sizeof(*x->ord));
    x->pos = seatd_calloc(n + 1, sizeof(*x->pos));
    x->seg = seatd_calloc(n + 1, sizeof(*x->seg));
    x->segend = seatd_calloc(n + 1, sizeof(*x->segend));
    x->qual = seatd_calloc(n + 1, sizeof(*x->qual));
    x->tier = seatd_calloc(n + 1, sizeof(*x->tier));
    x->space = seatd_calloc(n + 1, sizeof(*x->space));
    for (size_t i = 0; i < n; i++) {
        x->ord[i] = i;
        x->tier[i] = tier_number(x, l, seatd_layout_seat(l, i)->tier, i);
        x->space[i] = seatd_layout_seat(l, i)->accessible != 0;
    }
    sort_layout = l;
    qsort(x->ord, n, sizeof(*x->ord), by_row_number);
    sort_layout = NULL;
    x->px = seatd_calloc(n + 1, sizeof(*x->px));
    x->py = seatd_calloc(n + 1, sizeof(*x->py));
    x->nwords = n / 64 + 2;
    x->spacebits = seatd_calloc(x->nwords, sizeof(*x->spacebits));
    for (size_t k = 0; k < n; k++) {
        x->pos[x->ord[k]] = k;
        x->px[k] = seatd_layout_seat(l, x->ord[k])->x;
        x->py[k] = seatd_layout_seat(l, x->ord[k])->y;
        if (x->space[x->ord[k]])
            x->spacebits[k / 64] |= 1ULL << (63 - k % 64);
    }
    x->runend = seatd_calloc(n + 1, sizeof(*x->runend));
    for (size_t k = n; k-- > 0;)
        x->runend[k] = k + 1 < n && x->ord[k + 1] == x->ord[k] + 1 ? x->runend[k + 1] : k + 1;
    double *gaps = seatd_calloc(n + 1, sizeof(*gaps));
    for (size_t k = 0; k < n;) {
        size_t e = k + 1;
        const char *row = seatd_layout_seat(l, x->ord[k])->row;
        while (e < n && strcmp(seatd_layout_seat(l, x->ord[e])->row, row) == 0)
            e++;
        index_row(x, l, k, e, gaps);
        k = e;
    }
    free(gaps);
    x->box = seatd_calloc(4 * (n + 1), sizeof(*x->box));
    for (size_t k = 0; k < n; k++) {
        double *b = x->box + 4 * x->seg[k];
        if (k == x->seg[k]) {
            b[0] = b[1] = x->px[k];
            b[2] = b[3] = x->py[k];
        }
        b[0] = fmin(b[0], x->px[k]);
        b[1] = fmax(b[1], x->px[k]);
        b[2] = fmin(b[2], x->py[k]);
        b[3] = fmax(b[3], x->py[k]);
    }
    index_quality(x, l);
    seatd_layout_set_aux(l, x, index_free);
    return x;
}
