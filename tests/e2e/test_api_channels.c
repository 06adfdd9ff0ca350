/* End-to-end: sales channels (issue 30) through nginx: seats and places kept at creation, held
 * only with a token carrying the channel (409 seat-not-for-sale otherwise), shown as
 * "unavailable" and in the "blocked" bitmap, changed and released by an admin during the sale
 * (one version, everyone's after), and bad channel input. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

TestSuite(api_channels, .timeout = 120);

static void create(char *id)
{
    static const char body[] =
        "{\"title\":\"channels\",\"startsAt\":\"2030-01-01T20:00:00Z\","
        "\"priceTiers\":{\"standard\":1200},"
        "\"areas\":[{\"id\":\"FLOOR\",\"capacity\":4,\"tier\":\"standard\"}],"
        "\"channels\":{\"boxoffice\":{\"seatIds\":[\"A1\",\"A2\"],\"areas\":{\"FLOOR\":1}}},"
        "\"seats\":["
        "{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},"
        "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":1},"
        "{\"id\":\"A3\",\"row\":\"A\",\"number\":3,\"tier\":\"standard\",\"x\":3,\"y\":1}]}";
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(id, 32, "%s", e2e_str(&res, "id"));
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(res.json, "channels"),
                   "what a channel keeps is not shown to everyone");
    e2e_res_free(&res);
}

/* POST a hold of 'body' with a token for 'sub' carrying 'channels' (NULL: none). */
static void hold_as(const char *show, const char *sub, const char *channels, const char *body,
                    e2e_res_t *res)
{
    char path[64], auth[1200];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
             e2e_token_channels(sub, 0, channels));
    cr_assert_eq(e2e_call("POST", path, NULL, body, auth, res), 0);
}

static const char *problem_type(const e2e_res_t *res)
{
    const char *t = e2e_str(res, "type");
    const char *slash = strrchr(t, '/');
    return slash ? slash + 1 : t;
}

static const char *seat_status(const char *show, const char *seat, char *out, size_t cap)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/seats?minVersion=%lld", show,
             e2e_show_version(show));
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, "viewer", NULL, NULL, &res), 0);
    const cJSON *st =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res.json, "seats"), seat);
    snprintf(out, cap, "%s", cJSON_IsString(st) ? st->valuestring : "?");
    e2e_res_free(&res);
    return out;
}

Test(api_channels, kept_seats_are_sold_only_with_the_channel_until_released)
{
    char show[32], st[32];
    create(show);
    cr_assert_str_eq(seat_status(show, "A1", st, sizeof(st)), "unavailable");
    cr_assert_str_eq(seat_status(show, "A3", st, sizeof(st)), "available");
    char path[128];
    snprintf(path, sizeof(path), "/v1/shows/%s/availability", show);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, "viewer", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "blocked"), "wA==", "A1 and A2 are bits 0 and 1");
    const cJSON *floor = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res.json, "areas"), "FLOOR");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(floor, "available")->valuedouble, 3,
                 "one of 4 places is kept");
    e2e_res_free(&res);

    hold_as(show, "alice", NULL, "{\"seatIds\":[\"A1\",\"A3\"]}", &res);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(problem_type(&res), "seat-not-for-sale");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(res.json, "unavailableSeats");
    cr_assert_eq(cJSON_GetArraySize(u), 1);
    cr_assert_str_eq(cJSON_GetArrayItem(u, 0)->valuestring, "A1");
    e2e_res_free(&res);
    hold_as(show, "alice", "partner", "{\"seatIds\":[\"A1\"]}", &res);
    cr_assert_eq(res.http.status, 409, "another channel's token");
    e2e_res_free(&res);
    hold_as(show, "bo", "boxoffice", "{\"seatIds\":[\"A1\"],\"areas\":{\"FLOOR\":4}}", &res);
    cr_assert_eq(res.http.status, 201, "the channel's token: %.*s", (int)res.http.body_len,
                 res.http.body);
    e2e_res_free(&res);

    /* an admin keeps A3 for the channel too, then releases the channel: A2 and A3 are
     * everyone's */
    snprintf(path, sizeof(path), "/v1/admin/shows/%s/channels/boxoffice", show);
    cr_assert_eq(e2e_call("PUT", path, "admin", "{\"seatIds\":[\"A1\",\"A2\",\"A3\"]}", NULL, &res),
                 0);
    cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res.json, "released")));
    e2e_res_free(&res);
    cr_assert_str_eq(seat_status(show, "A3", st, sizeof(st)), "unavailable");
    hold_as(show, "alice", NULL, "{\"seatIds\":[\"A3\"]}", &res);
    cr_assert_eq(res.http.status, 409);
    e2e_res_free(&res);
    long long before = e2e_show_version(show);
    cr_assert_eq(e2e_call("DELETE", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res.json, "released")));
    cr_assert_eq(e2e_num(&res, "version"), before + 1, "one version");
    e2e_res_free(&res);
    cr_assert_str_eq(seat_status(show, "A2", st, sizeof(st)), "available");
    hold_as(show, "alice", NULL, "{\"seatIds\":[\"A2\",\"A3\"]}", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, "admin", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 404, "released once");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, "alice", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 403, "admins only");
    e2e_res_free(&res);
}

Test(api_channels, bad_channels_get_a_clear_error)
{
    static const char *const bad[] = {
        "{\"Box Office\":{}}",
        "{\"boxoffice\":{\"seatIds\":[\"Z9\"]}}",
        "{\"boxoffice\":{\"seatIds\":[\"A1\"]},\"house\":{\"seatIds\":[\"A1\"]}}",
        "{\"boxoffice\":{\"areas\":{\"FLOOR\":5}}}",
        "{\"boxoffice\":{\"areas\":{\"PIT\":1}}}",
        "{\"boxoffice\":{\"releaseAt\":\"tomorrow\"}}",
        "[\"boxoffice\"]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char body[768];
        snprintf(body, sizeof(body),
                 "{\"title\":\"x\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                 "\"priceTiers\":{\"standard\":1},"
                 "\"areas\":[{\"id\":\"FLOOR\",\"capacity\":4,\"tier\":\"standard\"}],"
                 "\"channels\":%s,\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
                 "\"tier\":\"standard\",\"x\":1,\"y\":1}]}",
                 bad[i]);
        e2e_res_t res;
        cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
        cr_assert_eq(res.http.status, 400, "%s: %d %.*s", bad[i], res.http.status,
                     (int)res.http.body_len, res.http.body);
        const cJSON *p =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res.json, "invalidParams"), 0);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "name")->valuestring, "channels");
        e2e_res_free(&res);
    }
}
