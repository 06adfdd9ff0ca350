/* End-to-end: many users released together on one seat through nginx; exactly one wins. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "racer.h"

typedef struct {
    const char *show;
} race_arg_t;

/* Exit status: 1 = 201, 2 = 409 naming A1 (and only A1), 3 = anything else. */
static int racer(int i, void *arg)
{
    race_arg_t *a = arg;
    char sub[32], path[64], body[128];
    snprintf(sub, sizeof(sub), "racer%d", i);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", a->show);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"A1\"],\"idempotencyKey\":\"race-%d\"}", i);
    seatd_test_racer_ready_and_wait();
    e2e_res_t res;
    if (e2e_call("POST", path, sub, body, NULL, &res) < 0)
        return 3;
    int rc = 3;
    if (res.http.status == 201)
        rc = 1;
    else if (res.http.status == 409) {
        const cJSON *seats = cJSON_GetObjectItemCaseSensitive(res.json, "conflictingSeats");
        const char *ct = seatd_test_http_header(&res.http, "content-type");
        if (cJSON_GetArraySize(seats) == 1 &&
            strcmp(cJSON_GetArrayItem(seats, 0)->valuestring, "A1") == 0 && ct &&
            strstr(ct, "application/problem+json"))
            rc = 2;
    }
    char line[64];
    snprintf(line, sizeof(line), "%d", res.http.status);
    seatd_test_racer_report(line);
    e2e_res_free(&res);
    return rc;
}

static void race(int n)
{
    char show[32];
    cr_assert_eq(e2e_create_show(2, 10, 300, show), 0);
    race_arg_t a = {show};
    int *status = calloc((size_t)n, sizeof(int));
    char **reports = calloc((size_t)n, sizeof(char *));
    cr_assert_eq(seatd_test_race(n, racer, &a, status, reports, 60000), 0);
    int won = 0, lost = 0, other = 0;
    for (int i = 0; i < n; i++) {
        if (status[i] == 1)
            won++;
        else if (status[i] == 2)
            lost++;
        else {
            other++;
            fprintf(stderr, "racer %d: exit %d, status %s\n", i, status[i],
                    reports[i] ? reports[i] : "?");
        }
        free(reports[i]);
    }
    free(status);
    free(reports);
    cr_assert_eq(won, 1, "winners: %d", won);
    cr_assert_eq(lost, n - 1, "conflicts: %d of %d (others %d)", lost, n - 1, other);
    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(keys, 1);
    cr_assert_eq(held, 1);
    cr_assert_eq(booked, 0);
}

TestSuite(api_race, .timeout = 120);

Test(api_race, twenty_users_on_one_seat_make_one_hold)
{
    race(20);
}

Test(api_race, two_hundred_users_on_one_seat_make_one_hold)
{
    race(200);
}
