/* channels.c - the shape of sales channels; see channels.h. */
#include "domain/channels.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "domain/areas.h"
#include "domain/layout.h"

int seatd_channel_name_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 1 && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* The capacity of area 'id' in the show's areas array, or -1 when it has none of that id. */
static double area_capacity(const cJSON *areas, const char *id)
{
    const cJSON *a = NULL;
    cJSON_ArrayForEach(a, areas)
    {
        const cJSON *aid = cJSON_GetObjectItemCaseSensitive(a, "id");
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(a, "capacity");
        if (cJSON_IsString(aid) && strcmp(aid->valuestring, id) == 0 && cJSON_IsNumber(cap))
            return cap->valuedouble;
    }
    return -1;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A seat id that is in 'a' twice, or in both 'a' and 'b' (arrays of strings; 'b' may be
 * NULL), or NULL: sorted, so a section of thousands of seats costs n log n, not n². */
static const char *first_twice(const cJSON *a, const cJSON *b)
{
    size_t n = (size_t)cJSON_GetArraySize(a) + (size_t)(b ? cJSON_GetArraySize(b) : 0), k = 0;
    const char **all = seatd_malloc((n ? n : 1) * sizeof(*all)), *found = NULL;
    const cJSON *it = NULL;
    cJSON_ArrayForEach(it, a) all[k++] = it->valuestring;
    cJSON_ArrayForEach(it, b) all[k++] = it->valuestring;
    qsort(all, n, sizeof(*all), by_text);
    for (size_t i = 1; i < n && found == NULL; i++)
        if (strcmp(all[i - 1], all[i]) == 0)
            found = all[i];
    free(all);
    return found;
}

int seatd_channel_check(const char *name, const cJSON *body, const seatd_layout_t *l,
                        const cJSON *areas, cJSON **out, char *why, size_t whylen)
{
    *out = NULL;
    if (!seatd_channel_name_valid(name)) {
        snprintf(why, whylen, "channel names are 1-32 characters of [a-z0-9_-]");
        return SEATD_EINVAL;
    }
    if (!cJSON_IsObject(body)) {
        snprintf(why, whylen, "channel %s must be {\"seatIds\":[…],\"areas\":{…},\"releaseAt\":…}",
                 name);
        return SEATD_EINVAL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *seats = cJSON_AddArrayToObject(o, "seatIds");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(body, "seatIds"), *id = NULL;
    if (ids != NULL && !cJSON_IsArray(ids)) {
        snprintf(why, whylen, "channel %s: seatIds must be an array of seat ids", name);
        goto fail;
    }
    cJSON_ArrayForEach(id, ids)
    {
        if (!cJSON_IsString(id) || seatd_layout_find(l, id->valuestring) < 0) {
            snprintf(why, whylen, "channel %s: %s is not a seat of this show", name,
                     cJSON_IsString(id) && strlen(id->valuestring) <= 16 ? id->valuestring
                                                                         : "a seat id");
            goto fail;
        }
        cJSON_AddItemToArray(seats, cJSON_CreateString(id->valuestring));
    }
    const char *twice = first_twice(seats, NULL);
    if (twice) {
        snprintf(why, whylen, "channel %s: seat %s is named twice", name, twice);
        goto fail;
    }
    const cJSON *places = cJSON_GetObjectItemCaseSensitive(body, "areas");
    if (places != NULL) {
        char text[SEATD_AREAS_TEXT_MAX], reason[128];
        long long n = 0;
        if (seatd_areas_request(places, SEATD_AREA_CAPACITY_MAX, text, &n, reason, sizeof(reason)) <
            0) {
            snprintf(why, whylen, "channel %s: areas %s", name, reason);
            goto fail;
        }
        const cJSON *p = NULL;
        cJSON_ArrayForEach(p, places) if (areas && area_capacity(areas, p->string) < p->valuedouble)
        {
            snprintf(why, whylen, "channel %s: %s is not an area of this show with %.0f places",
                     name, p->string, p->valuedouble);
            goto fail;
        }
        cJSON_AddItemToObject(o, "areas", cJSON_Duplicate(places, 1));
    }
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(body, "releaseAt");
    int64_t at_ms = 0;
    if (at != NULL && !cJSON_IsNull(at) &&
        (!cJSON_IsString(at) || seatd_time_parse(at->valuestring, &at_ms) < 0 || at_ms <= 0)) {
        snprintf(why, whylen, "channel %s: releaseAt must be an RFC 3339 UTC time", name);
        goto fail;
    }
    cJSON_AddNumberToObject(o, "releaseAt", (double)at_ms);
    *out = o;
    return 0;
fail:
    cJSON_Delete(o);
    return SEATD_EINVAL;
}

int seatd_channels_check(const cJSON *channels, const seatd_layout_t *l, const cJSON *areas,
                         char **out_json, char *why, size_t whylen)
{
    *out_json = NULL;
    int n = cJSON_IsObject(channels) ? cJSON_GetArraySize(channels) : -1;
    if (n < 1 || n > SEATD_CHANNELS_MAX) {
        snprintf(why, whylen, "must be an object of 1 to %d channels", SEATD_CHANNELS_MAX);
        return SEATD_EINVAL;
    }
    cJSON *all = cJSON_CreateObject(), *c = NULL;
    cJSON_ArrayForEach(c, channels)
    {
        cJSON *one = NULL;
        if (seatd_channel_check(c->string, c, l, areas, &one, why, whylen) < 0)
            goto fail;
        /* a seat kept by two channels, or an area kept past its capacity in all */
        const cJSON *other = NULL;
        cJSON_ArrayForEach(other, all)
        {
            const char *twice = first_twice(cJSON_GetObjectItemCaseSensitive(one, "seatIds"),
                                            cJSON_GetObjectItemCaseSensitive(other, "seatIds"));
            if (twice) {
                snprintf(why, whylen, "seat %s is kept by two channels", twice);
                cJSON_Delete(one);
                goto fail;
            }
        }
        const cJSON *p = NULL;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(one, "areas"))
        {
            double sum = p->valuedouble;
            cJSON_ArrayForEach(other, all)
            {
                const cJSON *q = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(other, "areas"), p->string);
                sum += cJSON_IsNumber(q) ? q->valuedouble : 0;
            }
            if (areas && sum > area_capacity(areas, p->string)) {
                snprintf(why, whylen, "the channels keep more places of %s than it has", p->string);
                cJSON_Delete(one);
                goto fail;
            }
        }
        cJSON_AddItemToObject(all, c->string, one);
    }
    *out_json = cJSON_PrintUnformatted(all);
    cJSON_Delete(all);
    return 0;
fail:
    cJSON_Delete(all);
    return SEATD_EINVAL;
}
