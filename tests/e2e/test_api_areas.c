/* End-to-end: standing areas beside seats (issue 30) through nginx: the show's areas, holds of
 * seats and places together or places alone, 409 area-sold-out with what is left, bad input,
 * the availability and seat documents, the booking and its ticket, and buyers far more than
 * the capacity released together. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "racer.h"

TestSuite(api_areas, .timeout = 120);

/* A show of seats A1-A4 (standard 1200) with FLOOR (capacity 'floor', standing 800) and BALC
 * (capacity 2, standard). Writes its id into 'id' (32 bytes). */
static void create(int floor, char *id)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"title\":\"areas\",\"startsAt\":\"2030-01-01T20:00:00Z\",\"holdTtlSeconds\":300,"
             "\"priceTiers\":{\"standard\":1200,\"standing\":800},"
             "\"areas\":[{\"id\":\"FLOOR\",\"capacity\":%d,\"tier\":\"standing\"},"
             "{\"id\":\"BALC\",\"capacity\":2,\"tier\":\"standard\"}],\"seats\":["
             "{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},"
             "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":1},"
             "{\"id\":\"A3\",\"row\":\"A\",\"number\":3,\"tier\":\"standard\",\"x\":3,\"y\":1},"
             "{\"id\":\"A4\",\"row\":\"A\",\"number\":4,\"tier\":\"standard\",\"x\":4,\"y\":1}]}",
             floor);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(id, 32, "%s", e2e_str(&res, "id"));
    const cJSON *areas = cJSON_GetObjectItemCaseSensitive(res.json, "areas");
    cr_assert_eq(cJSON_GetArraySize(areas), 2, "the 201 shows the areas");
    e2e_res_free(&res);
}

static void post_hold(const char *show, const char *sub, const char *body, e2e_res_t *res)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, res), 0);
}

/* Member 'area' of object member 'name' of 'o' ('name' NULL: 'o' itself), as a number; -1. */
static double member_of(const cJSON *o, const char *name, const char *area, const char *field)
{
    const cJSON *m = name ? cJSON_GetObjectItemCaseSensitive(o, name) : o;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, area);
    if (field)
        a = cJSON_GetObjectItemCaseSensitive(a, field);
    return cJSON_IsNumber(a) ? a->valuedouble : -1;
}

static double available(const char *show, const char *area)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/availability", show);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, "viewer", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    double v = member_of(res.json, "areas", area, "available");
    e2e_res_free(&res);
    return v;
}

static const char *problem_type(const e2e_res_t *res)
{
    const char *t = e2e_str(res, "type");
    const char *slash = strrchr(t, '/');
    return slash ? slash + 1 : t;
}

Test(api_areas, seats_and_places_are_held_booked_and_ticketed_together)
{
    char show[32];
    create(5, show);
    e2e_res_t res;
    post_hold(show, "alice", "{\"seatIds\":[\"A2\"],\"areas\":{\"FLOOR\":2,\"BALC\":1}}", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", NULL), 2);
    cr_assert_eq(member_of(res.json, "areas", "BALC", NULL), 1);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    long long version = (long long)e2e_num(&res, "version");
    e2e_res_free(&res);

    char path[128];
    snprintf(path, sizeof(path), "/v1/shows/%s/availability?minVersion=%lld", show, version);
    cr_assert_eq(e2e_call("GET", path, "viewer", NULL, NULL, &res), 0);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", "available"), 3);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", "capacity"), 5);
    cr_assert_eq(member_of(res.json, "areas", "BALC", "available"), 1);
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats?minVersion=%lld", show, version);
    cr_assert_eq(e2e_call("GET", path, "viewer", NULL, NULL, &res), 0);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", "available"), 3, "%.*s",
                 (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, "alice", NULL, NULL, &res), 0);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", NULL), 2, "the hold names its places");
    e2e_res_free(&res);

    char body[160];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "alice", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    cr_assert_eq(e2e_num(&res, "amount"), 1200 + 1200 + 2 * 800, "each place at its area's tier");
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", NULL), 2);
    char token[2048];
    snprintf(token, sizeof(token), "%s", e2e_str(&res, "ticketToken"));
    cr_assert(token[0], "a booking with places has a ticket");
    e2e_res_free(&res);

    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "token", token);
    char *vbody = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    cr_assert_eq(e2e_call("POST", "/v1/tickets/verify", NULL, vbody, NULL, &res), 0);
    free(vbody);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res.json, "valid")), "%.*s",
              (int)res.http.body_len, res.http.body);
    cr_assert_eq(member_of(res.json, "areas", "FLOOR", NULL), 2, "the ticket names the area");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "seatIds")), 1);
    e2e_res_free(&res);
    cr_assert_eq(available(show, "FLOOR"), 3, "booked places stay taken");
}

Test(api_areas, a_sold_out_area_refuses_the_whole_hold_and_says_what_is_left)
{
    char show[32];
    create(3, show);
    e2e_res_t res;
    post_hold(show, "alice", "{\"areas\":{\"FLOOR\":2}}", &res);
    cr_assert_eq(res.http.status, 201, "places alone: %.*s", (int)res.http.body_len, res.http.body);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "seatIds")), 0);
    e2e_res_free(&res);

    post_hold(show, "bob", "{\"seatIds\":[\"A1\"],\"areas\":{\"FLOOR\":2}}", &res);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(problem_type(&res), "area-sold-out");
    cr_assert_str_eq(e2e_str(&res, "area"), "FLOOR");
    cr_assert_eq(e2e_num(&res, "available"), 1);
    cr_assert_eq(member_of(res.json, "areas", "BALC", "available"), 2, "what is left elsewhere");
    e2e_res_free(&res);
    /* nothing of the refused hold was taken: A1 is free */
    post_hold(show, "carol", "{\"seatIds\":[\"A1\"]}", &res);
    cr_assert_eq(res.http.status, 201);
    e2e_res_free(&res);
    cr_assert_eq(available(show, "FLOOR"), 1);
}

Test(api_areas, bad_areas_get_a_clear_error_and_change_nothing)
{
    char show[32];
    create(3, show);
    static const struct {
        const char *body, *type;
    } cases[] = {
        {"{\"areas\":{\"PIT\":1}}", "unknown-area"},
        {"{\"areas\":{\"FLOOR\":0}}", "bad-request"},
        {"{\"areas\":{\"FLOOR\":1.5}}", "bad-request"},
        {"{\"areas\":{\"FLOOR\":\"2\"}}", "bad-request"},
        {"{\"areas\":[\"FLOOR\"]}", "bad-request"},
        {"{\"areas\":{}}", "bad-request"},
        {"{\"areas\":{\"FL{OOR\":1}}", "bad-request"},
        {"{\"areas\":{\"FLOOR\":1000}}", "bad-request"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        e2e_res_t res;
        post_hold(show, "mallory", cases[i].body, &res);
        cr_assert_eq(res.http.status, 400, "%s -> %d %.*s", cases[i].body, res.http.status,
                     (int)res.http.body_len, res.http.body);
        cr_assert_str_eq(problem_type(&res), cases[i].type, "%s", cases[i].body);
        e2e_res_free(&res);
    }
    cr_assert_eq(e2e_show_version(show), 0, "nothing changed");
    e2e_res_t ok;
    post_hold(show, "mallory", "{\"seatIds\":[],\"areas\":{\"FLOOR\":1}}", &ok);
    cr_assert_eq(ok.http.status, 201, "an empty seatIds with places is places alone");
    e2e_res_free(&ok);

    static const char *const bad_shows[] = {
        "[{\"id\":\"FLOOR\",\"capacity\":0,\"tier\":\"standard\"}]",
        "[{\"id\":\"FLOOR\",\"capacity\":10,\"tier\":\"vip\"}]",
        "[{\"id\":\"FLOOR\",\"capacity\":10,\"tier\":\"standard\"},"
        "{\"id\":\"FLOOR\",\"capacity\":5,\"tier\":\"standard\"}]",
        "[]",
        "{\"FLOOR\":10}",
    };
    for (size_t i = 0; i < sizeof(bad_shows) / sizeof(bad_shows[0]); i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"title\":\"x\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                 "\"priceTiers\":{\"standard\":1},\"areas\":%s,\"seats\":[{\"id\":\"A1\","
                 "\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1}]}",
                 bad_shows[i]);
        e2e_res_t res;
        cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
        cr_assert_eq(res.http.status, 400, "%s", bad_shows[i]);
        const cJSON *p =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res.json, "invalidParams"), 0);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "name")->valuestring, "areas");
        e2e_res_free(&res);
    }
}

/* ---------------------------------------------------------------------- the race */

enum { RACERS = 40, CAPACITY = 12 };

/* Exit status: 1 = 201, 2 = 409 area-sold-out, 3 = anything else. */
static int racer(int i, void *arg)
{
    const char *show = arg;
    char sub[32], path[64];
    snprintf(sub, sizeof(sub), "fan%d", i);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    seatd_test_racer_ready_and_wait();
    e2e_res_t res;
    if (e2e_call("POST", path, sub, "{\"areas\":{\"FLOOR\":1}}", NULL, &res) < 0)
        return 3;
    int rc = res.http.status == 201                                                       ? 1
             : res.http.status == 409 && strcmp(problem_type(&res), "area-sold-out") == 0 ? 2
                                                                                          : 3;
    e2e_res_free(&res);
    return rc;
}

Test(api_areas, buyers_far_more_than_the_capacity_hold_exactly_the_capacity)
{
    char show[32];
    create(CAPACITY, show);
    int status[RACERS];
    cr_assert_eq(seatd_test_race(RACERS, racer, show, status, NULL, 60000), 0);
    int won = 0, sold_out = 0;
    for (int i = 0; i < RACERS; i++) {
        won += status[i] == 1;
        sold_out += status[i] == 2;
    }
    cr_assert_eq(won, CAPACITY);
    cr_assert_eq(sold_out, RACERS - CAPACITY);
    cr_assert_eq(available(show, "FLOOR"), 0, "the store agrees");
}
