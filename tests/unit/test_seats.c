/* Unit tests for seats.c: seat-set normalisation. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "domain/layout.h"
#include "domain/seats.h"

typedef struct {
    const char *name;   /* behaviour */
    const char *ids[6]; /* NULL-terminated input */
    size_t max;         /* max seats */
    int want;           /* expected return */
    const char *bad;    /* expected offending id, or NULL */
    const char *sorted; /* expected output joined by ',' on success */
} seats_case_t;

static const seats_case_t cases[] = {
    {"sorts_byte_order", {"C8", "A1", "C7", "B10", "B2", NULL}, 10, 0, NULL, "A1,B10,B2,C7,C8"},
    {"accepts_one", {"Z9", NULL}, 1, 0, NULL, "Z9"},
    {"rejects_empty", {NULL}, 10, SEATD_EEMPTY, NULL, NULL},
    {"rejects_too_many", {"A1", "A2", "A3", NULL}, 2, SEATD_ETOOMANY, NULL, NULL},
    {"rejects_duplicates", {"A2", "A1", "A2", NULL}, 10, SEATD_EDUPSEAT, "A2", NULL},
    {"rejects_bad_charset", {"A1", "A 2", NULL}, 10, SEATD_EBADSEAT, "A 2", NULL},
    {"rejects_braces", {"{s:1}", NULL}, 10, SEATD_EBADSEAT, "{s:1}", NULL},
    {"rejects_long_id", {"ABCDEFGHIJKLMNOPQ", NULL}, 10, SEATD_EBADSEAT, "ABCDEFGHIJKLMNOPQ", NULL},
    {"rejects_empty_id", {"", NULL}, 10, SEATD_EBADSEAT, "", NULL},
};

Test(seats, normalises_a_table_of_requests)
{
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const seats_case_t *k = &cases[c];
        size_t n = 0;
        while (k->ids[n])
            n++;
        const char *out[6] = {0}, *bad = NULL;
        int rc = seatd_seats_normalise(k->ids, n, k->max, NULL, out, &bad);
        cr_expect_eq(rc, k->want, "%s: rc %d", k->name, rc);
        if (k->bad)
            cr_expect(bad && strcmp(bad, k->bad) == 0, "%s: bad", k->name);
        if (k->sorted && rc == 0) {
            char joined[64] = "";
            for (size_t i = 0; i < n; i++) {
                if (i)
                    strcat(joined, ",");
                strcat(joined, out[i]);
            }
            cr_expect_str_eq(joined, k->sorted, "%s", k->name);
        }
    }
}

Test(seats, rejects_seats_missing_from_the_layout)
{
    cJSON *arr = cJSON_Parse("[{\"id\":\"A1\",\"row\":\"A\",\"number\":1},"
                             "{\"id\":\"A2\",\"row\":\"A\",\"number\":2}]");
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, NULL, &l, NULL, 0), 0);
    const char *ok[] = {"A2", "A1"}, *unknown[] = {"A1", "B1"};
    const char *out[2], *bad = NULL;
    cr_assert_eq(seatd_seats_normalise(ok, 2, 4, l, out, &bad), 0);
    cr_assert_str_eq(out[0], "A1");
    cr_assert_eq(seatd_seats_normalise(unknown, 2, 4, l, out, &bad), SEATD_EUNKNOWNSEAT);
    cr_assert_str_eq(bad, "B1");
    seatd_layout_free(l);
    cJSON_Delete(arr);
}
