/* best.c - candidate blocks for best available, named runs and alternatives; see best.h. */
#include "domain/best.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/layout.h"
#include "base/mem.h"

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
    /* Place-order bitmaps for choose_window(), in 64-bit words (place p: bit 63 - p % 64 of
     * word p / 64), one word of padding past the last place. */
    size_t nwords;
    uint64_t *spacebits;             /* 1: the seat at that place is a wheelchair space */
    uint64_t *tierbits[INDEX_TIERS]; /* tier -> 1: the seat is of another tier (on first use) */
    size_t *runend; /* place -> one past the last place of its run, the places whose seat
                     * indexes follow each other (a row listed in order is one run) */
    double *box;    /* place of a segment's first seat -> 4 values: the segment's seats' least
                     * and greatest x, least and greatest y (a block's centre is inside) */
} index_t;

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
static int tier_find(const index_t *x, const seatd_layout_t *l, const char *name)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(seatd_layout_seat(l, i)->tier, name) == 0)
            return x->tier[i];
    return -1;
}

static const index_t *index_of(const seatd_layout_t *l)
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

/* ---------------------------------------------------------------------- output */

void seatd_best_list_free(seatd_best_list_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->items[i]);
    free(b->items);
    memset(b, 0, sizeof(*b));
}

static inline int taken_hint(const seatd_best_hint_t *h, size_t i)
{
    if (h == NULL)
        return 0;
    unsigned char m = (unsigned char)(0x80u >> (i % 8));
    return (h->held && i / 8 < h->held_len && (h->held[i / 8] & m)) ||
           (h->booked && i / 8 < h->booked_len && (h->booked[i / 8] & m));
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

/* ---------------------------------------------------------------------- choosing blocks */

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
    int no_strand; /* leave out blocks that strand a seat in the hint (see strands()) */
} want_t;

static int strands(const index_t *x, const seatd_best_hint_t *maps, size_t k, size_t count);

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
    if (w->no_strand && strands(x, hint, k, w->count))
        return 0; /* '*next': the block at k + 1 may strand none */
    /* near: the squared distance (it orders blocks as the distance does, without a sqrt per
     * block on every named hold's scan) */
    double dx = cx / (double)w->count - w->nx, dy = cy / (double)w->count - w->ny;
    *score = w->near ? dx * dx + dy * dy : q;
    return 1;
}

static size_t choose_ranked(const seatd_layout_t *l, const index_t *x, const want_t *w,
                            const seatd_best_hint_t *hint, pick_t *picks, size_t max);

/* Whether a block at place 'k' with 'score' comes before pick 'p': it scores better, or as
 * well from an earlier place. */
static inline int pick_before(double score, size_t k, const pick_t *p)
{
    return score < p->score || (score == p->score && k < p->k);
}

/* Keeps 'picks' (np of at most 'max', best first) the best blocks seen, in the order of
 * pick_before() whatever the order they are seen in. Returns the new count. */
static size_t pick_insert(pick_t *picks, size_t np, size_t max, double score, size_t k)
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

#define SCAN_WINDOW_MAX 4096 /* places: a scan this long or shorter may use choose_window() */
static int window_scan = 1;  /* seatd_best_set_window_scan() */

void seatd_best_set_window_scan(int on)
{
    window_scan = on;
}

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
 * choose() for one tier, no wheelchair space, over at most SCAN_WINDOW_MAX places (the
 * alternatives to a refused hold: most of the places around a hot seat are taken). The same
 * blocks, in the same order, with the same scores as block_ok() gives them, at a fraction of
 * the cost: blocks never cross a segment, so the segments are visited one by one, and only
 * the starts inside the free runs of a segment's bitmap of unfit places (segment_unfit(),
 * built 64 places at a time) are judged. Scoring by distance, the segments are visited
 * nearest first, from a heap, and the scan stops at the first whose nearest point is farther
 * than the worst of 'max' blocks found: the bitmaps of the segments never visited are never
 * built.
 */
static size_t choose_window(const index_t *x, const want_t *w, const seatd_best_hint_t *hint,
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
                if (k == w->skip || (w->no_strand && strands(x, hint, k, w->count)))
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
                np = pick_insert(picks, np, max, score, k);
            }
            a = b;
        }
    }
    return np;
}

/* The best 'max' blocks for 'w' starting at places [k0, k1) into 'picks' (sorted, best
 * first); returns how many. */
static size_t choose(const seatd_layout_t *l, const index_t *x, const want_t *w,
                     const seatd_best_hint_t *hint, pick_t *picks, size_t max, size_t k0, size_t k1)
{
    size_t np = 0;
    if (w->count == 0)
        return 0;
    if (!w->near && !w->accessible && w->count <= SEATD_BEST_RANKED_MAX && k0 == 0 && k1 >= x->n)
        return choose_ranked(l, x, w, hint, picks, max);
    if (window_scan && w->tier >= 0 && !w->accessible && k0 < k1 &&
        k1 - k0 + w->count <= SCAN_WINDOW_MAX) {
        np = choose_window(x, w, hint, picks, max, k0, k1);
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
        np = pick_insert(picks, np, max, score, k);
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
 * place), as choose() would order them: built once per layout and count, so a call walks
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

/* choose() by quality over the whole layout, from the ranked blocks: first the blocks that
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

static void emit_picks(seatd_best_list_t *out, const seatd_layout_t *l, const index_t *x, char kind,
                       const pick_t *picks, size_t np, size_t count)
{
    for (size_t j = 0; j < np; j++)
        if (emit(out, l, x, kind, picks[j].k, count) < 0)
            return;
}

/* choose() over the whole layout, the blocks that strand no seat in 'hint' first, then (when
 * fewer than 'max' do) the others (without a hint, all of them in order). With the show's orphan
 * rule on, the script skips every block that strands a seat: were the best-ranked 'max' blocks all
 * such blocks (single seats left between holds in the middle of the house), the buyer would hear
 * "no block" while blocks that fit are free further out. With the rule off it is the better sale
 * too. */
static size_t choose_unstranding_first(const seatd_layout_t *l, const index_t *x, const want_t *w,
                                       const seatd_best_hint_t *hint, pick_t *picks, size_t max)
{
    if (hint == NULL) /* nothing read: which block strands a seat is not known */
        return choose(l, x, w, hint, picks, max, 0, x->n);
    want_t first = *w;
    first.no_strand = 1;
    size_t np = choose(l, x, &first, hint, picks, max, 0, x->n);
    if (np == max)
        return np;
    pick_t more[SEATD_BEST_MAX_BLOCKS];
    size_t nm = choose(l, x, w, hint, more,
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

int seatd_best_candidates(const seatd_layout_t *l, size_t count, const char *tier, int accessible,
                          const seatd_best_hint_t *hint, seatd_best_list_t *out)
{
    const index_t *x = index_of(l);
    int t = tier ? tier_find(x, l, tier) : -1;
    if (tier != NULL && t < 0)
        return SEATD_EINVAL;
    pick_t picks[SEATD_BEST_MAX_BLOCKS];
    want_t w = {.count = count, .tier = t, .accessible = accessible, .skip = SIZE_MAX};
    size_t np = choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_BLOCKS);
    emit_picks(out, l, x, 'b', picks, np, count);
    if (count < 2 || accessible)
        return 0; /* a wheelchair space is sold with its companions, never split */
    if (hint != NULL && np >= SEATD_BEST_SPLIT_BELOW)
        return 0; /* enough whole blocks look free: a split is not worth proposing */
    size_t a = (count + 1) / 2, b = count - a;
    w.count = a;
    np = choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_PIECES);
    emit_picks(out, l, x, 'p', picks, np, a);
    if (b != a) {
        w.count = b;
        np = choose_unstranding_first(l, x, &w, hint, picks, SEATD_BEST_MAX_PIECES);
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
    const index_t *x = index_of(l);
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

/* Whether the block at places [k, k + count) strands a seat in 'maps': on either side, the
 * nearest seat of its segment is free and the one beyond it is taken or missing (a row end or
 * an aisle). The rule of lua/hold.lua's block_orphans, on the bitmaps. */
static int strands(const index_t *x, const seatd_best_hint_t *maps, size_t k, size_t count)
{
    size_t s0 = x->seg[k], s1 = x->segend[k], e = k + count;
    if (k > s0 && !taken_hint(maps, x->ord[k - 1]) &&
        (k - 1 == s0 || taken_hint(maps, x->ord[k - 2])))
        return 1;
    if (e < s1 && !taken_hint(maps, x->ord[e]) && (e + 1 >= s1 || taken_hint(maps, x->ord[e + 1])))
        return 1;
    return 0;
}

void seatd_best_alternatives(const seatd_layout_t *l, const char *const *ids, size_t n,
                             const seatd_best_hint_t *maps, int orphan_rule, seatd_best_list_t *out)
{
    const index_t *x = index_of(l);
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
    size_t np = choose(l, x, &w, maps, picks, SEATD_BEST_MAX_ALTS, k0, k1);
    for (size_t j = 0, found = 0; j < np && found < SEATD_BEST_ALTERNATIVES; j++) {
        if (orphan_rule && strands(x, maps, picks[j].k, n))
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
