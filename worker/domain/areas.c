/* areas.c - standing areas: shapes and texts; see areas.h. */
#include "domain/areas.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "domain/keys.h"

static int fail(char *why, size_t whylen, const char *msg)
{
    snprintf(why, whylen, "%s", msg);
    return SEATD_EINVAL;
}

/* Whether 'n' is an integer number in [lo, hi]. */
static int int_in(const cJSON *n, double lo, double hi)
{
    return cJSON_IsNumber(n) && n->valuedouble >= lo && n->valuedouble <= hi &&
           n->valuedouble == (double)(long long)n->valuedouble;
}

int seatd_areas_check(const cJSON *areas, const cJSON *tiers, char *why, size_t whylen)
{
    int n = cJSON_IsArray(areas) ? cJSON_GetArraySize(areas) : -1;
    if (n < 1 || n > SEATD_AREAS_MAX)
        return fail(why, whylen, "must be an array of 1 to 32 areas");
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(areas, i);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        const cJSON *tier = cJSON_GetObjectItemCaseSensitive(a, "tier");
        if (!cJSON_IsString(id) || !seatd_keys_valid_seat_id(id->valuestring))
            return fail(why, whylen,
                        "each area needs an \"id\" of 1-16 characters of "
                        "[A-Za-z0-9_-]");
        for (int j = 0; j < i; j++) {
            const cJSON *other =
                cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(areas, j), "id");
            if (strcmp(other->valuestring, id->valuestring) == 0) {
                snprintf(why, whylen, "area %s is named twice", id->valuestring);
                return SEATD_EINVAL;
            }
        }
        if (!int_in(cJSON_GetObjectItemCaseSensitive(a, "capacity"), 1, SEATD_AREA_CAPACITY_MAX)) {
            snprintf(why, whylen, "area %s needs a \"capacity\", an integer 1-1000000",
                     id->valuestring);
            return SEATD_EINVAL;
        }
        if (!cJSON_IsString(tier) || (tiers && !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
                                                   tiers, tier->valuestring)))) {
            snprintf(why, whylen, "area %s needs a \"tier\" that names one of priceTiers",
                     id->valuestring);
            return SEATD_EINVAL;
        }
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

int seatd_areas_request(const cJSON *req, long long max_places, char *out, long long *places,
                        char *why, size_t whylen)
{
    const cJSON *item = NULL;
    const cJSON *sorted[SEATD_AREAS_MAX];
    size_t n = 0;
    *places = 0;
    out[0] = '\0';
    if (!cJSON_IsObject(req))
        return fail(why, whylen,
                    "must be an object of area ids and place counts, like "
                    "{\"FLOOR\":2}");
    cJSON_ArrayForEach(item, req)
    {
        if (n == SEATD_AREAS_MAX)
            return fail(why, whylen, "names more areas than a show has");
        if (!seatd_keys_valid_seat_id(item->string)) {
            snprintf(why, whylen, "area ids are 1-16 characters of [A-Za-z0-9_-]");
            return SEATD_EINVAL;
        }
        if (!int_in(item, 1, (double)max_places)) {
            snprintf(why, whylen, "the places in area %s must be an integer 1-%lld", item->string,
                     max_places);
            return SEATD_EINVAL;
        }
        sorted[n++] = item;
        *places += (long long)item->valuedouble;
    }
    if (n == 0)
        return fail(why, whylen, "must name at least one area");
    qsort(sorted, n, sizeof(sorted[0]), by_name);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(sorted[i - 1]->string, sorted[i]->string) == 0) {
            snprintf(why, whylen, "area %s is named twice", sorted[i]->string);
            return SEATD_EINVAL;
        }
        /* fits: at most SEATD_AREAS_MAX entries of at most 26 bytes (areas.h) */
        int w = snprintf(out + at, SEATD_AREAS_TEXT_MAX - at, "%s%s:%lld", i ? "," : "",
                         sorted[i]->string, (long long)sorted[i]->valuedouble);
        if (w < 0 || (size_t)w >= SEATD_AREAS_TEXT_MAX - at)
            return fail(why, whylen, "names too many areas");
        at += (size_t)w;
    }
    return 0;
}

/* Adds every "id:count" entry of places text 'text' to object 'o' (an entry too long or
 * without ':' is skipped). */
static void add_places(cJSON *o, const char *text)
{
    while (text && *text) {
        const char *end = strchr(text, ',');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        char buf[64];
        if (len < sizeof(buf)) {
            memcpy(buf, text, len);
            buf[len] = '\0';
            char *colon = strchr(buf, ':');
            if (colon) {
                *colon = '\0';
                cJSON_AddNumberToObject(o, buf, (double)strtoll(colon + 1, NULL, 10));
            }
        }
        text = end ? end + 1 : text + len;
    }
}

cJSON *seatd_areas_places_json(const char *text)
{
    if (!text || !*text)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    add_places(o, text);
    return o;
}

#define AREA_ID_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

/* A count of 1-9 digits at 'p' into '*out'; returns the position after it, or NULL. */
static const char *parse_count(const char *p, uint32_t *out)
{
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 9)
        return NULL;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint32_t)(p[i] - '0');
    *out = v;
    return p + n;
}

/* One "id:capacity:free" at 'p' into 'a'; returns the position after it (at ',' or the end),
 * or NULL when it is not one. */
static const char *parse_free_entry(const char *p, seatd_area_free_t *a)
{
    size_t n = strspn(p, AREA_ID_CHARS);
    if (n == 0 || n >= sizeof(a->id) || p[n] != ':')
        return NULL;
    memcpy(a->id, p, n);
    a->id[n] = '\0';
    p = parse_count(p + n + 1, &a->capacity);
    if (p == NULL || *p != ':')
        return NULL;
    p = parse_count(p + 1, &a->free);
    if (p == NULL || (*p != ',' && *p != '\0'))
        return NULL;
    if (a->free > a->capacity)
        a->free = a->capacity;
    return p;
}

int seatd_areas_parse_free(const char *text, seatd_area_free_t *out, size_t max, size_t *n)
{
    *n = 0;
    for (const char *p = text ? text : ""; *p;) {
        seatd_area_free_t a;
        const char *end = parse_free_entry(p, &a);
        if (end == NULL || *n == max)
            return -1;
        int dup = 0;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = strcmp(out[i].id, a.id) == 0;
        if (!dup)
            out[(*n)++] = a;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

cJSON *seatd_areas_free_json(const char *text)
{
    if (!text || !*text)
        return NULL;
    seatd_area_free_t a[SEATD_AREAS_MAX];
    size_t n;
    (void)seatd_areas_parse_free(text, a, SEATD_AREAS_MAX, &n); /* a bad tail is left out */
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; i < n; i++) {
        cJSON *it = cJSON_AddObjectToObject(o, a[i].id);
        cJSON_AddNumberToObject(it, "capacity", (double)a[i].capacity);
        cJSON_AddNumberToObject(it, "available", (double)a[i].free);
    }
    return o;
}
