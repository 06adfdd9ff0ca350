/* Unit tests for layout.c: parsing and validating layouts, lookup, canonical JSON, cache. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/layout.h"

typedef struct {
    const char *name;  /* behaviour */
    const char *seats; /* the "seats" JSON */
    int want;          /* expected return */
} layout_case_t;

static const layout_case_t cases[] = {
    {"accepts_a_full_seat",
     "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"tier\":\"standard\","
     "\"x\":1.5,\"y\":2}]",
     0},
    {"defaults_tier_and_position", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7}]", 0},
    {"rejects_non_array", "{\"id\":\"C7\"}", SEATD_EINVAL},
    {"rejects_empty", "[]", SEATD_EEMPTY},
    {"rejects_non_object_seat", "[1]", SEATD_EINVAL},
    {"rejects_bad_id", "[{\"id\":\"C 7\",\"row\":\"C\",\"number\":7}]", SEATD_EBADSEAT},
    {"rejects_missing_id", "[{\"row\":\"C\",\"number\":7}]", SEATD_EBADSEAT},
    {"rejects_duplicate_ids",
     "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7},"
     "{\"id\":\"C7\",\"row\":\"C\",\"number\":8}]",
     SEATD_EDUPSEAT},
    {"rejects_two_seats_in_one_place",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1},{\"id\":\"A2\",\"row\":\"A\",\"number\":2},"
     "{\"id\":\"A-1\",\"row\":\"A\",\"number\":1}]",
     SEATD_EDUPSEAT},
    {"accepts_one_number_in_two_rows",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1},{\"id\":\"B1\",\"row\":\"B\",\"number\":1}]", 0},
    {"rejects_empty_row", "[{\"id\":\"C7\",\"row\":\"\",\"number\":7}]", SEATD_EINVAL},
    {"rejects_long_row", "[{\"id\":\"C7\",\"row\":\"ABCDEFGHIJKLMNOPQ\",\"number\":7}]",
     SEATD_EINVAL},
    {"rejects_negative_number", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":-1}]", SEATD_EINVAL},
    {"rejects_fractional_number", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7.5}]", SEATD_EINVAL},
    {"rejects_string_number", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":\"7\"}]", SEATD_EINVAL},
    {"rejects_unknown_tier", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"tier\":\"gold\"}]",
     SEATD_EINVAL},
    {"accepts_rank_and_a_wheelchair_space_with_companions",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"rank\":2,\"accessible\":true,"
     "\"companions\":[\"A2\"]},{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]",
     0},
    {"rejects_companions_of_another_row",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companions\":[\"B1\"]},{\"id\":\"B1\",\"row\":\"B\",\"number\":1}]",
     SEATD_EINVAL},
    {"rejects_companions_of_a_seat_that_is_not_accessible",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
     "\"companions\":[\"A2\"]},{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]",
     SEATD_EINVAL},
    {"rejects_unknown_companions",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companions\":[\"A9\"]}]",
     SEATD_EINVAL},
    {"rejects_far_companions",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companions\":[\"A9\"]},{\"id\":\"A9\",\"row\":\"A\",\"number\":9}]",
     SEATD_EINVAL},
    {"accepts_design_md_s_one_companion",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companion\":\"A2\"},{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]",
     0},
    {"rejects_companion_and_companions_together",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companion\":\"A2\",\"companions\":[\"A2\"]},{\"id\":\"A2\",\"row\":\"A\","
     "\"number\":2}]",
     SEATD_EINVAL},
    {"rejects_a_companion_that_is_not_one_id",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companion\":[\"A2\"]},{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]",
     SEATD_EINVAL},
    {"rejects_an_unknown_companion",
     "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"accessible\":true,"
     "\"companion\":\"A7\"},{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]",
     SEATD_EINVAL},
    {"rejects_a_string_rank", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"rank\":\"1\"}]",
     SEATD_EINVAL},
    {"rejects_non_numeric_x", "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"x\":\"1\"}]",
     SEATD_EINVAL},
};

Test(layout, validates_a_table_of_layouts)
{
    cJSON *tiers = cJSON_Parse("{\"standard\":1200,\"premium\":1800}");
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        cJSON *seats = cJSON_Parse(cases[c].seats);
        cr_assert_not_null(seats, "%s: fixture parses", cases[c].name);
        seatd_layout_t *l = NULL;
        char why[128];
        int rc = seatd_layout_from_json(seats, tiers, &l, why, sizeof(why));
        cr_expect_eq(rc, cases[c].want, "%s: rc %d (%s)", cases[c].name, rc, why);
        cr_expect_eq(rc == 0, l != NULL, "%s: layout iff success", cases[c].name);
        if (rc < 0)
            cr_expect(strlen(why) > 0, "%s: says why", cases[c].name);
        seatd_layout_free(l);
        cJSON_Delete(seats);
    }
    cJSON_Delete(tiers);
}

Test(layout, rejects_non_finite_positions)
{
    cJSON *seats = cJSON_Parse("[{\"id\":\"C7\",\"row\":\"C\",\"number\":7}]");
    cJSON_AddNumberToObject(cJSON_GetArrayItem(seats, 0), "x", 1.0 / 0.0);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), SEATD_EINVAL);
    cr_assert_null(l);
    cJSON_Delete(seats);
}

static cJSON *make_seats(int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        char id[17];
        snprintf(id, sizeof(id), "S%d", i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "row", "R");
        cJSON_AddNumberToObject(o, "number", i);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

Test(layout, finds_every_seat_by_id_in_a_large_layout)
{
    cJSON *seats = make_seats(SEATD_LAYOUT_MAX_SEATS);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), 0);
    cr_assert_eq(seatd_layout_count(l), SEATD_LAYOUT_MAX_SEATS);
    for (long i = 0; i < SEATD_LAYOUT_MAX_SEATS; i += 997) {
        char id[17];
        snprintf(id, sizeof(id), "S%ld", i);
        cr_assert_eq(seatd_layout_find(l, id), i);
        cr_assert_str_eq(seatd_layout_seat(l, (size_t)i)->id, id);
    }
    cr_assert_eq(seatd_layout_find(l, "nope"), -1);
    cr_assert_null(seatd_layout_seat(l, SEATD_LAYOUT_MAX_SEATS));
    seatd_layout_free(l);
    cJSON_Delete(seats);
}

Test(layout, rejects_more_than_the_maximum_seats)
{
    cJSON *seats = make_seats(SEATD_LAYOUT_MAX_SEATS + 1);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), SEATD_ETOOMANY);
    cJSON_Delete(seats);
}

Test(layout, writes_the_canonical_document_in_index_order)
{
    cJSON *seats = cJSON_Parse("[{\"id\":\"C8\",\"row\":\"C\",\"number\":8,\"tier\":\"premium\","
                               "\"x\":1.5,\"y\":2},{\"id\":\"C7\",\"row\":\"C\",\"number\":7}]");
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), 0);
    char *text = seatd_layout_to_json(l, "42");
    cr_assert_str_eq(text, "{\"showId\":\"42\",\"seats\":["
                           "{\"id\":\"C8\",\"row\":\"C\",\"number\":8,\"tier\":\"premium\","
                           "\"x\":1.5,\"y\":2},"
                           "{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"tier\":\"standard\","
                           "\"x\":0,\"y\":0}]}");
    free(text);
    seatd_layout_free(l);
    cJSON_Delete(seats);
}

static seatd_layout_t *parse_or_die(const char *json)
{
    cJSON *seats = cJSON_Parse(json);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), 0, "%s", json);
    cJSON_Delete(seats);
    return l;
}

Test(layout, addresses_a_layout_by_the_sha256_of_its_canonical_seats)
{
    seatd_layout_t *a = parse_or_die("[{\"id\":\"C7\",\"row\":\"C\",\"number\":7}]");
    seatd_layout_t *b = parse_or_die(" [ { \"y\":0, \"number\":7, \"row\":\"C\", \"id\":\"C7\","
                                     " \"tier\":\"standard\" } ] ");
    char *text = seatd_layout_seats_json(a);
    cr_assert_str_eq(text, "[{\"id\":\"C7\",\"row\":\"C\",\"number\":7,\"tier\":\"standard\","
                           "\"x\":0,\"y\":0}]");
    free(text);
    cr_assert_str_eq(seatd_layout_digest(a),
                     "f768f64eae377ce7fda30c0f1533e6397428022a77ae9f941c4da12cfe22520a");
    cr_assert_str_eq(seatd_layout_digest(b), seatd_layout_digest(a),
                     "the same seats in another spelling are the same layout");
    seatd_layout_t *c = parse_or_die("[{\"id\":\"C7\",\"row\":\"C\",\"number\":7},"
                                     "{\"id\":\"C8\",\"row\":\"C\",\"number\":8}]");
    seatd_layout_t *d = parse_or_die("[{\"id\":\"C8\",\"row\":\"C\",\"number\":8},"
                                     "{\"id\":\"C7\",\"row\":\"C\",\"number\":7}]");
    cr_assert_str_neq(seatd_layout_digest(c), seatd_layout_digest(d),
                      "another seat order means other bits: another layout");
    cr_assert_eq(strlen(seatd_layout_digest(d)), SEATD_LAYOUT_DIGEST_LEN);
    seatd_layout_free(a);
    seatd_layout_free(b);
    seatd_layout_free(c);
    seatd_layout_free(d);
}

Test(layout, caches_layouts_by_show_and_evicts_when_full)
{
    cJSON *seats = make_seats(2);
    for (int i = 1; i <= 100; i++) {
        char show[8];
        seatd_layout_t *l = NULL;
        cr_assert_eq(seatd_layout_from_json(seats, NULL, &l, NULL, 0), 0);
        snprintf(show, sizeof(show), "%d", i);
        seatd_layout_cache_put(show, l);
        cr_assert_eq(seatd_layout_cache_get(show), l);
        if (i == 1 || i % 10 == 0)
            cr_assert_not_null(seatd_layout_cache_get("1")); /* kept warm */
    }
    cr_assert_not_null(seatd_layout_cache_get("1"));
    cr_assert_not_null(seatd_layout_cache_get("100"));
    cr_assert_null(seatd_layout_cache_get("2"), "the coldest entries were evicted");
    seatd_layout_t *again = NULL;
    cr_assert_eq(seatd_layout_from_json(seats, NULL, &again, NULL, 0), 0);
    seatd_layout_cache_put("100", again); /* replaces, frees the old one */
    cr_assert_eq(seatd_layout_cache_get("100"), again);
    seatd_layout_cache_clear();
    cr_assert_null(seatd_layout_cache_get("1"));
    cJSON_Delete(seats);
}

/* DESIGN.md names a wheelchair space's "companion" (one seat): the same layout as
 * "companions" with that one seat (it used to be dropped without a word: the space had none,
 * and best available with "accessible" found no block). */
Test(layout, one_companion_is_companions_of_one)
{
    seatd_layout_t *a = parse_or_die("[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
                                     "\"accessible\":true,\"companion\":\"A2\"},"
                                     "{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]");
    const seatd_layout_seat_t *s = seatd_layout_seat(a, seatd_layout_find(a, "A1"));
    cr_assert_eq(s->ncompanions, 1);
    cr_assert_eq(s->companions[0], seatd_layout_find(a, "A2"));
    seatd_layout_free(a);
}
