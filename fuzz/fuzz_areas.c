/*
 * fuzz_areas.c - libFuzzer harness for the shapes of standing areas and sales channels
 * (domain/areas.h, domain/channels.h; issue 30).
 *
 * The input is JSON. As a hold's "areas" it must be refused or become a places text that
 * fits SEATD_AREAS_TEXT_MAX, sorted, whose counts add up to the places reported and which
 * renders back to the same object; as a show's "areas" and "channels" (against a fixed
 * 4-seat layout and priced tiers) it must be refused or accepted without a crash, and an
 * accepted channels text must parse as JSON. The raw input is also rendered as a free text
 * and a places text (what Redis answers), which must never crash.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "domain/areas.h"
#include "domain/channels.h"
#include "domain/layout.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static seatd_layout_t *layout(void)
{
    static seatd_layout_t *l;
    if (l == NULL) {
        cJSON *seats = cJSON_Parse(
            "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"s\",\"x\":1,\"y\":1},"
            "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"s\",\"x\":2,\"y\":1},"
            "{\"id\":\"A3\",\"row\":\"A\",\"number\":3,\"tier\":\"s\",\"x\":3,\"y\":1},"
            "{\"id\":\"A4\",\"row\":\"A\",\"number\":4,\"tier\":\"s\",\"x\":4,\"y\":1}]");
        CHECK(seatd_layout_from_json(seats, NULL, &l, NULL, 0) == 0);
        cJSON_Delete(seats);
    }
    return l;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    cJSON_Delete(seatd_areas_free_json(s));
    cJSON_Delete(seatd_areas_places_json(s));
    seatd_area_free_t a[4];
    size_t n = 99;
    int prc = seatd_areas_parse_free(s, a, 4, &n);
    CHECK(n <= 4 && (prc == 0 || prc == -1));
    for (size_t i = 0; i < n; i++)
        CHECK(a[i].free <= a[i].capacity && strlen(a[i].id) >= 1 && strlen(a[i].id) <= 16);

    cJSON *j = cJSON_ParseWithLength(s, size);
    char out[SEATD_AREAS_TEXT_MAX], why[256];
    long long places = -1;
    if (j != NULL &&
        seatd_areas_request(j, SEATD_AREA_CAPACITY_MAX, out, &places, why, sizeof(why)) == 0) {
        CHECK(strlen(out) < sizeof(out));
        long long sum = 0;
        char prev[32] = "";
        cJSON *back = seatd_areas_places_json(out);
        const cJSON *it = NULL;
        cJSON_ArrayForEach(it, back)
        {
            CHECK(strcmp(prev, it->string) < 0); /* sorted, each once */
            snprintf(prev, sizeof(prev), "%s", it->string);
            sum += (long long)it->valuedouble;
            const cJSON *orig = cJSON_GetObjectItemCaseSensitive(j, it->string);
            CHECK(cJSON_IsNumber(orig) && orig->valuedouble == it->valuedouble);
        }
        CHECK(sum == places);
        CHECK(cJSON_GetArraySize(back) == cJSON_GetArraySize(j));
        cJSON_Delete(back);
    }
    cJSON *tiers = cJSON_Parse("{\"s\":100,\"standing\":50}");
    (void)seatd_areas_check(j, tiers, why, sizeof(why));
    cJSON *areas = cJSON_Parse("[{\"id\":\"FLOOR\",\"capacity\":10,\"tier\":\"standing\"}]");
    char *channels = NULL;
    if (j != NULL && seatd_channels_check(j, layout(), areas, &channels, why, sizeof(why)) == 0) {
        cJSON *c = cJSON_Parse(channels);
        CHECK(cJSON_IsObject(c));
        cJSON_Delete(c);
    }
    free(channels);
    cJSON_Delete(areas);
    cJSON_Delete(tiers);
    cJSON_Delete(j);
    free(s);
    return 0;
}
