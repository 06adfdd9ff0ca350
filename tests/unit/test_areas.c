/* Unit tests for domain/areas.c and domain/channels.c: the shapes of standing areas and sales
 * channels (issue 30), the texts the scripts keep them in, and their bounds. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "domain/areas.h"
#include "domain/channels.h"
#include "domain/layout.h"

Test(areas, a_request_becomes_a_sorted_places_text)
{
    cJSON *req = cJSON_Parse("{\"FLOOR\":2,\"BALC\":1}");
    char out[SEATD_AREAS_TEXT_MAX], why[128];
    long long places = 0;
    cr_assert_eq(seatd_areas_request(req, 10, out, &places, why, sizeof(why)), 0);
    cr_assert_str_eq(out, "BALC:1,FLOOR:2");
    cr_assert_eq(places, 3);
    cJSON_Delete(req);
}

Test(areas, bad_requests_are_refused_with_a_reason)
{
    static const char *const bad[] = {"{}",
                                      "[]",
                                      "{\"FLOOR\":0}",
                                      "{\"FLOOR\":11}",
                                      "{\"FLOOR\":1.5}",
                                      "{\"FL OOR\":1}",
                                      "{\"FLOOR\":\"1\"}",
                                      "{\"A\":1,\"A\":2}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *req = cJSON_Parse(bad[i]);
        char out[SEATD_AREAS_TEXT_MAX], why[128] = "";
        long long places = 0;
        cr_assert_eq(seatd_areas_request(req, 10, out, &places, why, sizeof(why)), SEATD_EINVAL,
                     "%s", bad[i]);
        cr_assert(why[0], "%s: a reason", bad[i]);
        cJSON_Delete(req);
    }
}

Test(areas, the_longest_request_fits_its_text)
{
    /* 32 areas of 16-character ids at the largest count: the text's bound (areas.h) */
    cJSON *req = cJSON_CreateObject();
    for (int i = 0; i < SEATD_AREAS_MAX; i++) {
        char id[17];
        snprintf(id, sizeof(id), "AREA%012d", i);
        cJSON_AddNumberToObject(req, id, SEATD_AREA_CAPACITY_MAX);
    }
    char out[SEATD_AREAS_TEXT_MAX], why[128];
    long long places = 0;
    cr_assert_eq(seatd_areas_request(req, SEATD_AREA_CAPACITY_MAX, out, &places, why, sizeof(why)),
                 0, "%s", why);
    cr_assert_eq(strlen(out), SEATD_AREAS_MAX * 25 - 1);
    cJSON_Delete(req);
}

Test(areas, texts_render_as_the_api_shows_them)
{
    cJSON *free_ = seatd_areas_free_json("FLOOR:5000:4862,BALC:200:0");
    char *s = cJSON_PrintUnformatted(free_);
    cr_assert_str_eq(s, "{\"FLOOR\":{\"capacity\":5000,\"available\":4862},"
                        "\"BALC\":{\"capacity\":200,\"available\":0}}");
    free(s);
    cJSON_Delete(free_);
    cr_assert_null(seatd_areas_places_json(""));
    cJSON *places = seatd_areas_places_json("BALC:1,FLOOR:2");
    s = cJSON_PrintUnformatted(places);
    cr_assert_str_eq(s, "{\"BALC\":1,\"FLOOR\":2}");
    free(s);
    cJSON_Delete(places);
}

Test(areas, a_shows_areas_need_unique_ids_a_capacity_and_a_priced_tier)
{
    cJSON *tiers = cJSON_Parse("{\"standing\":800}");
    static const struct {
        const char *areas;
        int ok;
    } cases[] = {
        {"[{\"id\":\"FLOOR\",\"capacity\":5000,\"tier\":\"standing\"}]", 1},
        {"[{\"id\":\"FLOOR\",\"capacity\":0,\"tier\":\"standing\"}]", 0},
        {"[{\"id\":\"FLOOR\",\"capacity\":5,\"tier\":\"vip\"}]", 0},
        {"[{\"id\":\"F\",\"capacity\":5,\"tier\":\"standing\"},"
         "{\"id\":\"F\",\"capacity\":5,\"tier\":\"standing\"}]",
         0},
        {"[]", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *a = cJSON_Parse(cases[i].areas);
        char why[160];
        cr_assert_eq(seatd_areas_check(a, tiers, why, sizeof(why)) == 0, cases[i].ok, "%s",
                     cases[i].areas);
        cJSON_Delete(a);
    }
    cJSON_Delete(tiers);
}

Test(channels, names_seats_and_places_are_checked_and_never_kept_twice)
{
    cJSON *seats = cJSON_Parse("[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"s\",\"x\":1,"
                               "\"y\":1},{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"s\","
                               "\"x\":2,\"y\":1}]");
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), 0);
    cJSON *areas = cJSON_Parse("[{\"id\":\"FLOOR\",\"capacity\":4,\"tier\":\"s\"}]");
    static const struct {
        const char *channels;
        int ok;
    } cases[] = {
        {"{\"boxoffice\":{\"seatIds\":[\"A1\"],\"areas\":{\"FLOOR\":4},"
         "\"releaseAt\":\"2030-01-01T18:00:00Z\"}}",
         1},
        {"{\"boxoffice\":{\"seatIds\":[\"A1\",\"A1\"]}}", 0},
        {"{\"boxoffice\":{\"seatIds\":[\"A1\"]},\"house\":{\"seatIds\":[\"A1\"]}}", 0},
        {"{\"boxoffice\":{\"areas\":{\"FLOOR\":3}},\"house\":{\"areas\":{\"FLOOR\":2}}}", 0},
        {"{\"boxoffice\":{\"seatIds\":[\"Z9\"]}}", 0},
        {"{\"Box\":{}}", 0},
        {"{\"boxoffice\":{\"releaseAt\":\"soon\"}}", 0},
        {"{}", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *c = cJSON_Parse(cases[i].channels);
        char *out = NULL, why[200];
        cr_assert_eq(seatd_channels_check(c, l, areas, &out, why, sizeof(why)) == 0, cases[i].ok,
                     "%s", cases[i].channels);
        if (cases[i].ok)
            cr_assert(strstr(out, "\"releaseAt\":1893520800000"), "%s", out);
        free(out);
        cJSON_Delete(c);
    }
    seatd_layout_free(l);
    cJSON_Delete(areas);
    cJSON_Delete(seats);
}

Test(areas, a_free_text_parses_strictly_and_keeps_what_came_before_a_bad_entry)
{
    seatd_area_free_t a[3];
    size_t n;
    cr_assert_eq(seatd_areas_parse_free("FLOOR:5000:4862,BALC:200:300,FLOOR:1:1", a, 3, &n), 0);
    cr_assert_eq(n, 2, "an id named again is skipped");
    cr_assert_str_eq(a[0].id, "FLOOR");
    cr_assert_eq(a[0].capacity, 5000);
    cr_assert_eq(a[0].free, 4862);
    cr_assert_eq(a[1].free, 200, "never above the capacity");
    cr_assert_eq(seatd_areas_parse_free("", a, 3, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(seatd_areas_parse_free(NULL, a, 3, &n), 0);
    cr_assert_eq(seatd_areas_parse_free("FLOOR:5:4,BA LC:2:1", a, 3, &n), -1);
    cr_assert_eq(n, 1, "the area before the bad one stays");
    cr_assert_eq(seatd_areas_parse_free("FLOOR:5", a, 3, &n), -1);
    cr_assert_eq(seatd_areas_parse_free("A:1:1,B:1:1,C:1:1,D:1:1", a, 3, &n), -1);
    cr_assert_eq(n, 3, "no more than max");
    cr_assert_eq(seatd_areas_parse_free("ABCDEFGHIJKLMNOPQ:1:1", a, 3, &n), -1, "17 characters");
}
