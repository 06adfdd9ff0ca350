/* End-to-end: browse -> seat map -> hold -> book -> ticket, declines, and seat-map ETags. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

TestSuite(api_flow, .timeout = 60);

static const char *seat_status(const e2e_res_t *map, const char *seat)
{
    const cJSON *seats = cJSON_GetObjectItemCaseSensitive(map->json, "seats");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(seats, seat);
    return cJSON_IsString(s) ? s->valuestring : "";
}

static void hold(const char *show, const char *sub, const char *seats_json, e2e_res_t *res)
{
    char path[64], body[256];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(body, sizeof(body), "{\"seatIds\":%s}", seats_json);
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, res), 0);
}

static void book(const char *hold_id, const char *sub, const char *token, e2e_res_t *res)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"%s\"}", hold_id, token);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, NULL, res), 0);
}

Test(api_flow, browse_hold_book_and_read_the_ticket)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(3, 8, 300, show), 0);

    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", "/v1/shows?page=1&size=100", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(res.json, "items")));
    cr_assert(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "total")) >= 1);
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/shows/%s", show);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "id"), show);
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "seatCount")), 24);
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/shows/%s/layout", show);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "seats")), 24);
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/shows/%s/seats", show);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(seat_status(&res, "B3"), "available");
    e2e_res_free(&res);

    hold(show, "alice", "[\"B4\",\"B3\"]", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    cr_assert(strlen(e2e_str(&res, "expiresAt")) > 0);
    cr_assert_not_null(seatd_test_http_header(&res.http, "location"));
    long long hold_version = (long long)e2e_num(&res, "version");
    e2e_res_free(&res);

    /* The buyer's own change is visible at once: the hold's version as ?minVersion=. */
    cr_assert_eq(e2e_seat_map(show, hold_version, &res), 0);
    cr_assert(e2e_num(&res, "version") >= hold_version);
    cr_assert_str_eq(seat_status(&res, "B3"), "held");
    cr_assert_str_eq(seat_status(&res, "B4"), "held");
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, "alice", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "HELD");
    e2e_res_free(&res);

    book(hold_id, "alice", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    /* B row is premium (rows 0..0 standard for 3 rows): 2 x 1800. */
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "amount")), 3600);
    char booking_id[64];
    snprintf(booking_id, sizeof(booking_id), "%s", e2e_str(&res, "bookingId"));
    long long book_version = (long long)e2e_num(&res, "version");
    cr_assert(book_version > hold_version, "a confirmed booking names its version");
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/bookings/%s", booking_id);
    cr_assert_eq(e2e_call("GET", path, "alice", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    e2e_res_free(&res);

    cr_assert_eq(e2e_seat_map(show, book_version, &res), 0);
    cr_assert_str_eq(seat_status(&res, "B3"), "booked");
    e2e_res_free(&res);

    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(keys, 0);
    cr_assert_eq(held, 0);
    cr_assert_eq(booked, 2);
}

Test(api_flow, a_declined_card_keeps_the_hold_and_another_card_books_it)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(2, 5, 300, show), 0);
    e2e_res_t res;
    hold(show, "bob", "[\"A2\"]", &res);
    cr_assert_eq(res.http.status, 201);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);

    book(hold_id, "bob", "tok_declined", &res);
    cr_assert_eq(res.http.status, 402, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, "bob", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "status"), "HELD");
    e2e_res_free(&res);
    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(keys, 1);
    cr_assert_eq(held, 1);

    book(hold_id, "bob", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    e2e_res_free(&res);
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(keys, 0);
    cr_assert_eq(held, 0);
    cr_assert_eq(booked, 1);
}

Test(api_flow, an_unchanged_seat_map_answers_304_and_a_hold_changes_the_etag)
{
    char show[32], path[96], inm[128];
    cr_assert_eq(e2e_create_show(2, 5, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats", show);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    const char *etag = seatd_test_http_header(&res.http, "etag");
    cr_assert_not_null(etag);
    snprintf(inm, sizeof(inm), "If-None-Match: %s\r\n", etag);
    char first[64];
    snprintf(first, sizeof(first), "%s", etag);
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("GET", path, NULL, NULL, inm, &res), 0);
    cr_assert_eq(res.http.status, 304);
    cr_assert_eq(res.http.body_len, 0);
    e2e_res_free(&res);

    hold(show, "carol", "[\"A1\"]", &res);
    cr_assert_eq(res.http.status, 201);
    char fresh[128];
    snprintf(fresh, sizeof(fresh), "%s?minVersion=%lld", path, (long long)e2e_num(&res, "version"));
    e2e_res_free(&res);

    cr_assert_eq(e2e_call("GET", fresh, NULL, NULL, inm, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_neq(seatd_test_http_header(&res.http, "etag"), first);
    e2e_res_free(&res);
}

/* The gzip and the identity body of one seat-map version are two byte sequences: the gzip
 * one carries the weak tag (a strong tag names one sequence, RFC 9110 8.8.1), and either tag
 * revalidates either representation (If-None-Match compares weakly). */
Test(api_flow, the_gzip_seat_map_has_a_weak_etag_and_either_tag_revalidates)
{
    char show[32], path[96], strong[64], weak[64], inm[128];
    cr_assert_eq(e2e_create_show(2, 5, 300, show), 0);
    snprintf(path, sizeof(path), "/v1/shows/%s/seats", show);
    static const char gzip[] = "Accept-Encoding: gzip\r\n";
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_null(seatd_test_http_header(&res.http, "content-encoding"));
    snprintf(strong, sizeof(strong), "%s", seatd_test_http_header(&res.http, "etag"));
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, gzip, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(seatd_test_http_header(&res.http, "content-encoding"), "gzip");
    snprintf(weak, sizeof(weak), "%s", seatd_test_http_header(&res.http, "etag"));
    e2e_res_free(&res);
    cr_assert_eq(strong[0], '"', "identity: a strong tag, %s", strong);
    cr_assert_eq(strncmp(weak, "W/", 2), 0, "gzip: the weak tag, %s", weak);
    cr_assert_str_eq(weak + 2, strong, "one version");
    const char *tags[] = {strong, weak};
    for (int i = 0; i < 2; i++) {
        for (int z = 0; z < 2; z++) {
            snprintf(inm, sizeof(inm), "%sIf-None-Match: %s\r\n", z ? gzip : "", tags[i]);
            cr_assert_eq(e2e_call("GET", path, NULL, NULL, inm, &res), 0);
            cr_assert_eq(res.http.status, 304, "tag %s, gzip %d", tags[i], z);
            e2e_res_free(&res);
        }
    }
}

Test(api_flow, releasing_a_hold_frees_its_seats)
{
    char show[32], path[96];
    cr_assert_eq(e2e_create_show(2, 5, 300, show), 0);
    e2e_res_t res;
    hold(show, "dave", "[\"A3\",\"A4\"]", &res);
    cr_assert_eq(res.http.status, 201);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("DELETE", path, "dave", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    e2e_res_free(&res);
    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(keys, 0);
    cr_assert_eq(held, 0);
    hold(show, "erin", "[\"A3\"]", &res);
    cr_assert_eq(res.http.status, 201);
    e2e_res_free(&res);
}

Test(api_flow, a_free_seat_is_booked_without_charging_the_gateway)
{
    e2e_res_t res;
    cr_assert_eq(
        e2e_call("POST", "/v1/shows", "admin",
                 "{\"title\":\"free preview\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                 "\"holdTtlSeconds\":300,\"priceTiers\":{\"free\":0},\"seats\":["
                 "{\"id\":\"F1\",\"row\":\"F\",\"number\":1,\"tier\":\"free\",\"x\":1,\"y\":1}]}",
                 NULL, &res),
        0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    char show[32], path[96];
    snprintf(show, sizeof(show), "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);
    hold(show, "frida", "[\"F1\"]", &res);
    cr_assert_eq(res.http.status, 201);
    char hold_id[64];
    snprintf(hold_id, sizeof(hold_id), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    book(hold_id, "frida", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "amount")), 0);
    char booking_id[64];
    snprintf(booking_id, sizeof(booking_id), "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    /* The gateway never saw it: no charge under the booking's idempotency key. */
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", booking_id);
    seatd_test_http_response_t g;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", atoi(getenv("SEATD_E2E_GATEWAY_PORT")), "GET",
                                         path, NULL, NULL, 0, &g),
                 0);
    cr_assert_eq(g.status, 404);
    seatd_test_http_response_free(&g);
    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(booked, 1);
}
