/* layout.c - show layouts: parse and validate, id lookup, canonical JSON, cache; see layout.h. */
#include "domain/layout.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/keys.h"
#include "base/mem.h"

struct seatd_layout_s {
    size_t n;                   /* seats */
    seatd_layout_seat_t *seats; /* owned, 'n' seats in index order */
    size_t cap;                 /* hash slots, a power of two >= 2n */
    size_t *slots;              /* owned; seat index + 1, 0 = empty (open addressing) */
    char digest[SEATD_LAYOUT_DIGEST_LEN + 1]; /* "" until seatd_layout_digest() computed it */
    void *aux;                                /* owned derived value (seatd_layout_set_aux) */
    void (*aux_free)(void *);                 /* frees 'aux' */
};

/* ---------------------------------------------------------------------- id index */

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Inserts seat 'i'; returns 0, or -1 when its id is already present. */
static int index_insert(seatd_layout_t *l, size_t i)
{
    size_t mask = l->cap - 1;
    for (size_t s = (size_t)hash_id(l->seats[i].id) & mask;; s = (s + 1) & mask) {
        if (l->slots[s] == 0) {
            l->slots[s] = i + 1;
            return 0;
        }
        if (strcmp(l->seats[l->slots[s] - 1].id, l->seats[i].id) == 0)
            return -1;
    }
}

static const seatd_layout_seat_t *place_seats; /* qsort has no context argument */

static int by_place(const void *a, const void *b)
{
    const seatd_layout_seat_t *x = &place_seats[*(const size_t *)a];
    const seatd_layout_seat_t *y = &place_seats[*(const size_t *)b];
    int c = strcmp(x->row, y->row);
    return c ? c : (x->number > y->number) - (x->number < y->number);
}

/* Two seats with one row and number (ids "A1" and "A-1", both row A number 1): the seat
 * picker, best available and the orphan rule find neighbours by row and number, so such a
 * layout would put two seats in one place. Writes why and returns SEATD_EDUPSEAT, or 0. */
static int check_places(const seatd_layout_t *l, char *why, size_t why_len)
{
    size_t *order = seatd_malloc(l->n * sizeof(*order));
    for (size_t i = 0; i < l->n; i++)
        order[i] = i;
    place_seats = l->seats;
    qsort(order, l->n, sizeof(*order), by_place);
    int rc = 0;
    for (size_t k = 1; k < l->n && rc == 0; k++) {
        if (by_place(&order[k - 1], &order[k]) == 0) {
            const seatd_layout_seat_t *a = &l->seats[order[k - 1]], *b = &l->seats[order[k]];
            snprintf(why, why_len, "seats \"%s\" and \"%s\" are both row \"%s\" number %d", a->id,
                     b->id, a->row, a->number);
            rc = SEATD_EDUPSEAT;
        }
    }
    free(order);
    return rc;
}

long seatd_layout_find(const seatd_layout_t *l, const char *id)
{
    if (l == NULL || id == NULL || l->cap == 0)
        return -1;
    size_t mask = l->cap - 1;
    for (size_t s = (size_t)hash_id(id) & mask; l->slots[s] != 0; s = (s + 1) & mask)
        if (strcmp(l->seats[l->slots[s] - 1].id, id) == 0)
            return (long)(l->slots[s] - 1);
    return -1;
}

/* ---------------------------------------------------------------------- parsing */

/* Copies the string item 'it' into 'dst' ('cap' bytes) if it has 1..cap-1 printable bytes. */
static int copy_text(char *dst, size_t cap, const cJSON *it)
{
    if (!cJSON_IsString(it) || it->valuestring == NULL)
        return -1;
    size_t n = strlen(it->valuestring);
    if (n == 0 || n >= cap)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)it->valuestring[i] < 0x20)
            return -1;
    memcpy(dst, it->valuestring, n + 1);
    return 0;
}

static int parse_seat(const cJSON *o, const cJSON *tiers, seatd_layout_seat_t *seat, char *why,
                      size_t why_len, size_t i)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (!cJSON_IsObject(o)) {
        snprintf(why, why_len, "seats[%zu] is not an object", i);
        return SEATD_EINVAL;
    }
    if (!cJSON_IsString(id) || !seatd_keys_valid_seat_id(id->valuestring)) {
        snprintf(why, why_len, "seats[%zu].id must match [A-Za-z0-9_-]{1,16}", i);
        return SEATD_EBADSEAT;
    }
    memcpy(seat->id, id->valuestring, strlen(id->valuestring) + 1);
    if (copy_text(seat->row, sizeof(seat->row), cJSON_GetObjectItemCaseSensitive(o, "row"))) {
        snprintf(why, why_len, "seats[%zu].row must be 1-16 characters", i);
        return SEATD_EINVAL;
    }
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(o, "number");
    if (!cJSON_IsNumber(num) || !(num->valuedouble >= 0) || num->valuedouble > INT_MAX ||
        num->valuedouble != floor(num->valuedouble)) {
        snprintf(why, why_len, "seats[%zu].number must be an integer >= 0", i);
        return SEATD_EINVAL;
    }
    seat->number = (int)num->valuedouble;
    const cJSON *tier = cJSON_GetObjectItemCaseSensitive(o, "tier");
    if (tier == NULL) {
        memcpy(seat->tier, "standard", sizeof("standard"));
    } else if (copy_text(seat->tier, sizeof(seat->tier), tier)) {
        snprintf(why, why_len, "seats[%zu].tier must be 1-32 characters", i);
        return SEATD_EINVAL;
    }
    /* Case-sensitive, as bookings look the price up ("Premium" is not "premium"). */
    if (tiers != NULL && cJSON_GetObjectItemCaseSensitive(tiers, seat->tier) == NULL) {
        snprintf(why, why_len, "seats[%zu].tier \"%s\" is not a price tier", i, seat->tier);
        return SEATD_EINVAL;
    }
    const char *names[2] = {"x", "y"};
    double *dst[2] = {&seat->x, &seat->y};
    for (int k = 0; k < 2; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, names[k]);
        *dst[k] = 0;
        if (v == NULL)
            continue;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
            snprintf(why, why_len, "seats[%zu].%s must be a finite number", i, names[k]);
            return SEATD_EINVAL;
        }
        *dst[k] = v->valuedouble;
    }
    const cJSON *rank = cJSON_GetObjectItemCaseSensitive(o, "rank");
    if (rank != NULL) {
        if (!cJSON_IsNumber(rank) || !isfinite(rank->valuedouble)) {
            snprintf(why, why_len, "seats[%zu].rank must be a finite number", i);
            return SEATD_EINVAL;
        }
        seat->rank = rank->valuedouble;
        seat->has_rank = 1;
    }
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accessible");
    if (acc != NULL && !cJSON_IsBool(acc)) {
        snprintf(why, why_len, "seats[%zu].accessible must be true or false", i);
        return SEATD_EINVAL;
    }
    seat->accessible = cJSON_IsTrue(acc);
    return 0;
}

/* Second pass: the companions of each wheelchair space, once every id is known. */
static int parse_companions(seatd_layout_t *l, const cJSON *o, size_t i, char *why, size_t why_len)
{
    seatd_layout_seat_t *seat = &l->seats[i];
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(o, "companions");
    /* DESIGN.md's word: "companion", one seat id, is companions with that one seat. */
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(o, "companion");
    if (one != NULL) {
        if (comp != NULL || !cJSON_IsString(one)) {
            snprintf(why, why_len,
                     "seats[%zu].companion must be one seat id (or use companions, not both)", i);
            return SEATD_EINVAL;
        }
        comp = one;
    }
    if (comp == NULL)
        return 0;
    int n = comp == one ? 1 : cJSON_IsArray(comp) ? cJSON_GetArraySize(comp) : -1;
    if (!seat->accessible || n < 0 || n > SEATD_LAYOUT_COMPANIONS) {
        snprintf(why, why_len,
                 "seats[%zu].companions must be up to %d seat ids, on an accessible seat", i,
                 SEATD_LAYOUT_COMPANIONS);
        return SEATD_EINVAL;
    }
    for (const cJSON *c = comp == one ? one : comp->child; c; c = comp == one ? NULL : c->next) {
        long k = cJSON_IsString(c) ? seatd_layout_find(l, c->valuestring) : -1;
        const seatd_layout_seat_t *s = k >= 0 ? &l->seats[k] : NULL;
        int dup = 0;
        for (int j = 0; j < seat->ncompanions; j++)
            dup |= seat->companions[j] == k;
        if (s == NULL || (size_t)k == i || dup || strcmp(s->row, seat->row) != 0 ||
            abs(s->number - seat->number) > SEATD_LAYOUT_COMPANIONS) {
            snprintf(why, why_len,
                     "seats[%zu].companions: each must be another seat of row %s, within %d "
                     "numbers",
                     i, seat->row, SEATD_LAYOUT_COMPANIONS);
            return SEATD_EINVAL;
        }
        seat->companions[seat->ncompanions++] = k;
    }
    return 0;
}

int seatd_layout_from_json(const void *seats_json, const void *tiers, seatd_layout_t **out,
                           char *why, size_t why_len)
{
    const cJSON *arr = seats_json;
    const cJSON *tiers_obj = tiers;
    seatd_layout_t *l = NULL;
    int rc;
    char scratch[8];

    if (why == NULL || why_len == 0) {
        why = scratch;
        why_len = sizeof(scratch);
    }
    why[0] = '\0';
    *out = NULL;
    if (!cJSON_IsArray(arr)) {
        snprintf(why, why_len, "seats must be an array");
        return SEATD_EINVAL;
    }
    if (tiers_obj != NULL && !cJSON_IsObject(tiers_obj)) {
        snprintf(why, why_len, "priceTiers must be an object");
        return SEATD_EINVAL;
    }
    int n = cJSON_GetArraySize(arr);
    if (n == 0) {
        snprintf(why, why_len, "seats is empty");
        return SEATD_EEMPTY;
    }
    if (n > SEATD_LAYOUT_MAX_SEATS) {
        snprintf(why, why_len, "at most %d seats", SEATD_LAYOUT_MAX_SEATS);
        return SEATD_ETOOMANY;
    }
    l = seatd_calloc(1, sizeof(*l));
    l->n = (size_t)n;
    l->seats = seatd_calloc((size_t)n, sizeof(*l->seats));
    for (l->cap = 16; l->cap < 2 * l->n; l->cap *= 2)
        ;
    l->slots = seatd_calloc(l->cap, sizeof(*l->slots));

    size_t i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        rc = parse_seat(o, tiers_obj, &l->seats[i], why, why_len, i);
        if (rc < 0)
            goto fail;
        if (index_insert(l, i) < 0) {
            snprintf(why, why_len, "seat id \"%s\" appears twice", l->seats[i].id);
            rc = SEATD_EDUPSEAT;
            goto fail;
        }
        i++;
    }
    rc = check_places(l, why, why_len);
    if (rc < 0)
        goto fail;
    i = 0;
    cJSON_ArrayForEach(o, arr)
    {
        rc = parse_companions(l, o, i++, why, why_len);
        if (rc < 0)
            goto fail;
    }
    *out = l;
    return 0;
fail:
    seatd_layout_free(l);
    return rc;
}

void seatd_layout_free(seatd_layout_t *l)
{
    if (l == NULL)
        return;
    if (l->aux_free)
        l->aux_free(l->aux);
    free(l->seats);
    free(l->slots);
    free(l);
}

size_t seatd_layout_count(const seatd_layout_t *l)
{
    return l ? l->n : 0;
}

const seatd_layout_seat_t *seatd_layout_seat(const seatd_layout_t *l, size_t i)
{
    return (l && i < l->n) ? &l->seats[i] : NULL;
}

/* The canonical seats array as a cJSON tree (owned by the caller). */
static cJSON *seats_tree(const seatd_layout_t *l)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < l->n; i++) {
        const seatd_layout_seat_t *s = &l->seats[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "id", s->id);
        cJSON_AddStringToObject(o, "row", s->row);
        cJSON_AddNumberToObject(o, "number", s->number);
        cJSON_AddStringToObject(o, "tier", s->tier);
        cJSON_AddNumberToObject(o, "x", s->x);
        cJSON_AddNumberToObject(o, "y", s->y);
        /* Optional marks only when present: a layout without them keeps its digest. */
        if (s->has_rank)
            cJSON_AddNumberToObject(o, "rank", s->rank);
        if (s->accessible)
            cJSON_AddTrueToObject(o, "accessible");
        if (s->ncompanions > 0) {
            cJSON *c = cJSON_AddArrayToObject(o, "companions");
            for (int k = 0; k < s->ncompanions; k++)
                cJSON_AddItemToArray(c, cJSON_CreateString(l->seats[s->companions[k]].id));
        }
    }
    return arr;
}

char *seatd_layout_to_json(const seatd_layout_t *l, const char *show_id)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "showId", show_id ? show_id : "");
    cJSON_AddItemToObject(root, "seats", seats_tree(l));
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

char *seatd_layout_seats_json(const seatd_layout_t *l)
{
    cJSON *arr = seats_tree(l);
    char *text = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return text;
}

char *seatd_layout_tier_codes(const seatd_layout_t *l, char **names_out)
{
    const char *names[SEATD_LAYOUT_TIER_CODES_MAX];
    size_t nnames = 0, names_len = 0;
    char *codes = seatd_malloc(l->n + 1);
    *names_out = NULL;
    for (size_t i = 0; i < l->n; i++) {
        const char *tier = l->seats[i].tier;
        size_t k = 0;
        while (k < nnames && strcmp(names[k], tier) != 0)
            k++;
        if (k == nnames) {
            if (nnames == SEATD_LAYOUT_TIER_CODES_MAX) {
                free(codes);
                return NULL;
            }
            names[nnames++] = tier;
            names_len += strlen(tier) + 1;
        }
        codes[i] = (char)('a' + k);
    }
    codes[l->n] = '\0';
    char *joined = seatd_malloc(names_len + 1);
    joined[0] = '\0';
    for (size_t k = 0; k < nnames; k++) {
        if (k)
            strcat(joined, ",");
        strcat(joined, names[k]);
    }
    *names_out = joined;
    return codes;
}

const char *seatd_layout_digest(const seatd_layout_t *l)
{
    if (l == NULL)
        return "";
    if (l->digest[0] == '\0') {
        seatd_layout_t *m = (seatd_layout_t *)l; /* the memo is not part of the value */
        char *text = seatd_layout_seats_json(l);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (text == NULL || !EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) ||
            mdlen * 2 != SEATD_LAYOUT_DIGEST_LEN)
            abort(); /* out of memory or a broken libcrypto: nothing sensible to go on with */
        free(text);
        for (unsigned int i = 0; i < mdlen; i++)
            snprintf(m->digest + 2 * i, 3, "%02x", md[i]);
    }
    return l->digest;
}

void seatd_layout_set_aux(const seatd_layout_t *l, void *aux, void (*aux_free)(void *))
{
    seatd_layout_t *m = (seatd_layout_t *)l; /* a memo, not part of the value */
    if (m->aux_free)
        m->aux_free(m->aux);
    m->aux = aux;
    m->aux_free = aux_free;
}

void *seatd_layout_aux(const seatd_layout_t *l)
{
    return l ? l->aux : NULL;
}

/* ---------------------------------------------------------------------- cache */

#define CACHE_MAX 64

static struct {
    char show[SEATD_ID_MAX]; /* show id, "" = free slot */
    seatd_layout_t *l;       /* owned */
    unsigned long used;      /* last use tick, for eviction */
} cache[CACHE_MAX];
static unsigned long cache_tick;

void seatd_layout_cache_put(const char *show_id, seatd_layout_t *l)
{
    size_t victim = 0;
    if (show_id == NULL || strlen(show_id) >= SEATD_ID_MAX) {
        seatd_layout_free(l);
        return;
    }
    for (size_t i = 0; i < CACHE_MAX; i++) {
        if (strcmp(cache[i].show, show_id) == 0) {
            victim = i;
            break;
        }
        if (cache[i].show[0] == '\0' ||
            (cache[victim].show[0] != '\0' && cache[i].used < cache[victim].used))
            victim = i;
    }
    if (cache[victim].l != l)
        seatd_layout_free(cache[victim].l);
    snprintf(cache[victim].show, sizeof(cache[victim].show), "%s", show_id);
    cache[victim].l = l;
    cache[victim].used = ++cache_tick;
}

const seatd_layout_t *seatd_layout_cache_get(const char *show_id)
{
    if (show_id == NULL)
        return NULL;
    for (size_t i = 0; i < CACHE_MAX; i++) {
        if (cache[i].show[0] != '\0' && strcmp(cache[i].show, show_id) == 0) {
            cache[i].used = ++cache_tick;
            return cache[i].l;
        }
    }
    return NULL;
}

void seatd_layout_cache_clear(void)
{
    for (size_t i = 0; i < CACHE_MAX; i++) {
        seatd_layout_free(cache[i].l);
        cache[i].l = NULL;
        cache[i].show[0] = '\0';
    }
}
