/* End-to-end: event groups (issue 30) through nginx: shows created "groupWith" one another
 * share a hash slot, a group of them, the same seats held in every show or in none (409 with
 * the show that refused, nothing held anywhere), a subset, places, and the group hold
 * released whole. On the cluster pass the same calls run on a 3+3 Redis Cluster. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/keys.h"
#include "e2e.h"

TestSuite(api_groups, .timeout = 120);

/* A show of seats A1-A3 (and FLOOR, capacity 2), "groupWith" 'with' unless NULL. */
static void create(const char *with, char *id)
{
    cr_assert_eq(e2e_create_groupable_show(with, id), 0);
}

/* A group of 'n' fresh shows (the ids into 'shows'); its id into 'gid' (64 bytes). */
static void create_group(int n, char shows[][32], char *gid)
{
    create(NULL, shows[0]);
    for (int i = 1; i < n; i++) {
        create(shows[0], shows[i]);
        cr_assert_eq(seatd_keys_show_slot(shows[i]), seatd_keys_show_slot(shows[0]),
                     "groupWith gives the show's slot");
    }
    char body[512];
    int off = snprintf(body, sizeof(body), "{\"title\":\"Season 2030\",\"showIds\":[");
    for (int i = 0; i < n; i++)
        off += snprintf(body + off, sizeof(body) - (size_t)off, "%s\"%s\"", i ? "," : "", shows[i]);
    snprintf(body + off, sizeof(body) - (size_t)off, "]}");
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/groups", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(gid, 64, "%s", e2e_str(&res, "id"));
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "showIds")), n);
    e2e_res_free(&res);
}

static void group_hold(const char *gid, const char *sub, const char *body, e2e_res_t *res)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/groups/%s/holds", gid);
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, res), 0);
}

Test(api_groups, the_same_seats_are_held_in_every_show_or_in_none)
{
    char shows[3][32], gid[64];
    create_group(3, shows, gid);
    char path[96];
    snprintf(path, sizeof(path), "/v1/groups/%s", gid);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "title"), "Season 2030");
    e2e_res_free(&res);

    group_hold(gid, "alice", "{\"seatIds\":[\"A1\"],\"areas\":{\"FLOOR\":1}}", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    const cJSON *holds = cJSON_GetObjectItemCaseSensitive(res.json, "holds");
    cr_assert_eq(cJSON_GetArraySize(holds), 3, "one hold per show");
    char mid[64];
    snprintf(mid, sizeof(mid), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    for (int i = 0; i < 3; i++) {
        long keys, held, booked;
        e2e_show_counts(shows[i], &keys, &held, &booked);
        cr_assert_eq(held, 1, "show %s", shows[i]);
    }

    /* A2 taken in the third show: a group hold of A2 holds nothing anywhere */
    e2e_hold(shows[2], "bob", "[\"A2\"]", path, 64);
    long long v0 = e2e_show_version(shows[0]);
    group_hold(gid, "carol", "{\"seatIds\":[\"A2\",\"A3\"]}", &res);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    const cJSON *conf = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res.json, "conflicts"), shows[2]);
    cr_assert_eq(cJSON_GetArraySize(conf), 1);
    cr_assert_str_eq(cJSON_GetArrayItem(conf, 0)->valuestring, "A2");
    e2e_res_free(&res);
    cr_assert_eq(e2e_show_version(shows[0]), v0, "nothing held in the first show");

    /* a subset of the group: the first two shows only */
    char body[160];
    snprintf(body, sizeof(body), "{\"seatIds\":[\"A3\"],\"showIds\":[\"%s\",\"%s\"]}", shows[0],
             shows[1]);
    group_hold(gid, "dave", body, &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "holds")), 2);
    e2e_res_free(&res);

    /* the places: FLOOR has 1 left in each show, 2 asked: area-sold-out naming the show */
    group_hold(gid, "erin", "{\"areas\":{\"FLOOR\":2}}", &res);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert(strstr(e2e_str(&res, "type"), "area-sold-out"));
    e2e_res_free(&res);

    /* a subset without the group's first show: held and paid in the group's slot */
    snprintf(body, sizeof(body), "{\"areas\":{\"FLOOR\":1},\"showIds\":[\"%s\",\"%s\"]}", shows[1],
             shows[2]);
    group_hold(gid, "fay", body, &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    char fay_mid[64], prefix[40];
    snprintf(fay_mid, sizeof(fay_mid), "%s", e2e_str(&res, "holdId"));
    snprintf(prefix, sizeof(prefix), "%s-m", shows[0]);
    cr_assert(strncmp(fay_mid, prefix, strlen(prefix)) == 0, "%s", fay_mid);
    e2e_res_free(&res);
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", fay_mid);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", "fay", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_eq(e2e_num(&res, "amount"), 2400);
    const cJSON *paid = cJSON_GetObjectItemCaseSensitive(res.json, "bookings");
    cr_assert_eq(cJSON_GetArraySize(paid), 2);
    for (int i = 0; i < 2; i++)
        cr_assert_str_eq(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(paid, i), "showId")->valuestring,
            shows[i + 1]);
    e2e_res_free(&res);

    /* released whole */
    snprintf(path, sizeof(path), "/v1/holds/%s", mid);
    cr_assert_eq(e2e_call("DELETE", path, "mallory", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 404, "another user's");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, "alice", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_eq(e2e_num(&res, "released"), 3);
    e2e_res_free(&res);
    long keys, held, booked;
    e2e_show_counts(shows[1], &keys, &held, &booked);
    cr_assert_eq(held, 1, "dave's A3 only");
}

Test(api_groups, bad_groups_and_group_holds_get_a_clear_error)
{
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/groups", "admin", "{\"title\":\"x\",\"showIds\":[\"1\"]}",
                          NULL, &res),
                 0);
    cr_assert_eq(res.http.status, 400, "one show is no group");
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("POST", "/v1/groups", "alice",
                          "{\"title\":\"x\",\"showIds\":[\"1\",\"2\"]}", NULL, &res),
                 0);
    cr_assert_eq(res.http.status, 403, "admins only");
    e2e_res_free(&res);
    char shows[2][32], gid[64];
    create_group(2, shows, gid);
    group_hold(gid, "alice", "{\"seatIds\":[\"Z9\"]}", &res);
    cr_assert_eq(res.http.status, 400, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    group_hold(gid, "alice", "{\"seatIds\":[\"A1\"],\"showIds\":[\"999999999\"]}", &res);
    cr_assert_eq(res.http.status, 404, "no such show: %d", res.http.status);
    e2e_res_free(&res);
    char other[32], body[128];
    create(shows[0], other);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"A1\"],\"showIds\":[\"%s\"]}", other);
    group_hold(gid, "alice", body, &res);
    cr_assert_eq(res.http.status, 400, "a show not in the group: %d", res.http.status);
    e2e_res_free(&res);
    cr_assert_eq(e2e_show_version(other), 0, "nothing held");
    group_hold("1-g00000000000000000000", "alice", "{\"seatIds\":[\"A1\"]}", &res);
    cr_assert_eq(res.http.status, 404);
    e2e_res_free(&res);
    group_hold(gid, "alice", "{}", &res);
    cr_assert_eq(res.http.status, 400);
    e2e_res_free(&res);
}

/* POST /v1/bookings for a group hold; 'method' the card. */
static void book_group(const char *mid, const char *sub, const char *method, e2e_res_t *res)
{
    char body[160];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"%s\"}", mid, method);
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, NULL, res), 0);
}

/* GET /v1/holds/{id}'s status. */
static void hold_status(const char *hold_id, const char *sub, char *out, size_t n)
{
    char path[192];
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
    cr_assert_eq(e2e_call("GET", path, sub, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(out, n, "%s", e2e_str(&res, "status"));
    e2e_res_free(&res);
}

Test(api_groups, one_payment_books_every_show_of_a_group_hold_or_none)
{
    char shows[2][32], gid[64], mid[64], held[2][64], st[32];
    create_group(2, shows, gid);
    e2e_res_t res;
    group_hold(gid, "gina", "{\"seatIds\":[\"A1\"],\"areas\":{\"FLOOR\":1}}", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(mid, sizeof(mid), "%s", e2e_str(&res, "holdId"));
    const cJSON *holds = cJSON_GetObjectItemCaseSensitive(res.json, "holds");
    for (int i = 0; i < 2; i++)
        snprintf(
            held[i], sizeof(held[i]), "%s",
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(holds, i), "holdId")->valuestring);
    e2e_res_free(&res);

    /* a declined card: nothing booked anywhere, every show's hold HELD again */
    book_group(mid, "gina", "tok_declined", &res);
    cr_assert_eq(res.http.status, 402, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    for (int i = 0; i < 2; i++) {
        hold_status(held[i], "gina", st, sizeof(st));
        cr_assert_str_eq(st, "HELD", "show %s", shows[i]);
    }
    book_group(mid, "mallory", "tok_ok", &res);
    cr_assert_eq(res.http.status, 404, "another buyer's group hold");
    e2e_res_free(&res);

    /* one payment: the sum of both shows (a seat and a place at 1200 each, twice) */
    book_group(mid, "gina", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    char pay[64];
    snprintf(pay, sizeof(pay), "%s", e2e_str(&res, "bookingId"));
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    cr_assert_str_eq(e2e_str(&res, "holdId"), mid);
    cr_assert_eq(e2e_num(&res, "amount"), 4800);
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(res.json, "ticketToken"),
                   "the tickets are the shows' bookings'");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(res.json, "bookings");
    cr_assert_eq(cJSON_GetArraySize(list), 2, "%.*s", (int)res.http.body_len, res.http.body);
    char member[2][64];
    for (int i = 0; i < 2; i++) {
        const cJSON *m = cJSON_GetArrayItem(list, i);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m, "showId")->valuestring, shows[i]);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m, "status")->valuestring, "CONFIRMED");
        cr_assert_eq(cJSON_GetObjectItemCaseSensitive(m, "amount")->valuedouble, 2400);
        snprintf(member[i], sizeof(member[i]), "%s",
                 cJSON_GetObjectItemCaseSensitive(m, "bookingId")->valuestring);
    }
    e2e_res_free(&res);
    book_group(mid, "gina", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "a retry answers the same payment");
    cr_assert_str_eq(e2e_str(&res, "bookingId"), pay);
    e2e_res_free(&res);

    /* each show's booking is its own ticket, paid with the one payment */
    char path[192];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/v1/bookings/%s", member[i]);
        cr_assert_eq(e2e_call("GET", path, "gina", NULL, NULL, &res), 0);
        cr_assert_eq(res.http.status, 200);
        cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
        cr_assert_str_eq(e2e_str(&res, "paidWith"), pay);
        cr_assert(e2e_str(&res, "ticketToken")[0], "a ticket");
        e2e_res_free(&res);
        long keys, hb, booked;
        e2e_show_counts(shows[i], &keys, &hb, &booked);
        cr_assert_eq(booked, 1, "A1 booked in show %s", shows[i]);
        cr_assert_eq(hb, 0);
    }
    snprintf(path, sizeof(path), "/v1/bookings/%s", pay);
    cr_assert_eq(e2e_call("GET", path, "gina", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "bookings")), 2);
    e2e_res_free(&res);

    /* cancellation follows each show's policy: one show's booking, refunded from the charge */
    cr_assert_eq(e2e_call("DELETE", path, "gina", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 409, "the payment is not cancelled whole: %.*s",
                 (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/bookings/%s", member[1]);
    cr_assert_eq(e2e_call("DELETE", path, "gina", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CANCELLED");
    cr_assert_eq(e2e_num(&res, "refund"), 2400, "the show is years away: 100 %%");
    cr_assert_str_eq(e2e_str(&res, "refundStatus"), "succeeded");
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/bookings/%s", member[0]);
    cr_assert_eq(e2e_call("GET", path, "gina", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED", "the other show's stays");
    e2e_res_free(&res);
}

Test(api_groups, a_retried_group_hold_with_its_key_answers_the_first_one)
{
    char shows[2][32], gid[64], path[96], first[64];
    create_group(2, shows, gid);
    snprintf(path, sizeof(path), "/v1/groups/%s/holds", gid);
    e2e_res_t res;
    const char *key = "Idempotency-Key: gh-retry-1\r\n";
    cr_assert_eq(e2e_call("POST", path, "hana", "{\"seatIds\":[\"A2\"]}", key, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(first, sizeof(first), "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);
    long long v = e2e_show_version(shows[1]);
    cr_assert_eq(e2e_call("POST", path, "hana", "{\"seatIds\":[\"A2\"]}", key, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "holdId"), first, "the same group hold");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "holds")), 2);
    e2e_res_free(&res);
    cr_assert_eq(e2e_show_version(shows[1]), v, "nothing held again");
    /* the key in the body works the same */
    cr_assert_eq(e2e_call("POST", path, "hana",
                          "{\"seatIds\":[\"A2\"],\"idempotencyKey\":\"gh-retry-1\"}", NULL, &res),
                 0);
    cr_assert_eq(res.http.status, 201);
    cr_assert_str_eq(e2e_str(&res, "holdId"), first);
    e2e_res_free(&res);
    /* the same key, another request: 422, nothing held */
    cr_assert_eq(e2e_call("POST", path, "hana", "{\"seatIds\":[\"A3\"]}", key, &res), 0);
    cr_assert_eq(res.http.status, 422, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    cr_assert_eq(e2e_show_version(shows[1]), v, "nothing held");
    /* another buyer's same key is theirs */
    cr_assert_eq(e2e_call("POST", path, "ivan", "{\"seatIds\":[\"A3\"]}", key, &res), 0);
    cr_assert_eq(res.http.status, 201);
    cr_assert_str_neq(e2e_str(&res, "holdId"), first);
    e2e_res_free(&res);
}

Test(api_groups, a_group_payment_refused_in_one_show_names_the_show_and_charges_nothing)
{
    char shows[2][32], gid[64], mid[64], alone[64];
    create_group(2, shows, gid);
    e2e_res_t res;
    group_hold(gid, "hana", "{\"seatIds\":[\"A2\"]}", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(mid, sizeof(mid), "%s", e2e_str(&res, "holdId"));
    snprintf(
        alone, sizeof(alone), "%s",
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res.json, "holds"), 1), "holdId")
            ->valuestring);
    e2e_res_free(&res);

    /* the second show's hold booked on its own first: the group payment names that show */
    book_group(alone, "hana", "tok_ok", &res);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    book_group(mid, "hana", "tok_ok", &res);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "showId"), shows[1], "%.*s", (int)res.http.body_len,
                     res.http.body);
    cr_assert(strstr(e2e_str(&res, "detail"), "BOOKED"), "%.*s", (int)res.http.body_len,
              res.http.body);
    e2e_res_free(&res);
    long keys, held, booked;
    e2e_show_counts(shows[0], &keys, &held, &booked);
    cr_assert_eq(booked, 0, "nothing booked in the first show");
    cr_assert_eq(held, 1, "its seat still held");

    /* a group hold id that names no hold of this buyer: 404 naming it as a group hold */
    char none[64];
    snprintf(none, sizeof(none), "%s-m%020d", shows[0], 7);
    book_group(none, "hana", "tok_ok", &res);
    cr_assert_eq(res.http.status, 404, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "holdId"), none);
    cr_assert(strstr(e2e_str(&res, "detail"), "group hold"), "%.*s", (int)res.http.body_len,
              res.http.body);
    e2e_res_free(&res);
}
