/* End-to-end: the waiting room of a queued show through nginx (issue 15): join, place,
 * admission, holds that need it (403 queue-required without, or with a forged, another's or
 * an expired one), sold-out told to the waiting within a second, on GET and the WebSocket. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../integration/test_live_client.h"
#include "domain/admission.h"
#include "e2e.h"

TestSuite(api_queue, .timeout = 60);

/* An RFC 3339 UTC time 'delta_s' seconds from now into 'out' (32 bytes). */
static void iso_in(long delta_s, char *out)
{
    time_t t = time(NULL) + delta_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Creates a queued show of one row of 'n' seats (A1..An) whose room opened 'opened_s' ago
 * (negative: opens later); writes its id into 'id'. Returns the status. */
static int create_queued(int n, long opened_s, int max_shoppers, char *id)
{
    char opens[32], body[4096];
    iso_in(-opened_s, opens);
    int off = snprintf(body, sizeof(body),
                       "{\"title\":\"On sale\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                       "\"priceTiers\":{\"standard\":1200},\"queue\":{\"opensAt\":\"%s\","
                       "\"maxShoppers\":%d,\"admissionSeconds\":60,\"seatsPerShopper\":1},"
                       "\"seats\":[",
                       opens, max_shoppers);
    for (int s = 1; s <= n; s++)
        off += snprintf(body + off, sizeof(body) - (size_t)off,
                        "%s{\"id\":\"A%d\",\"row\":\"A\",\"number\":%d,\"tier\":\"standard\","
                        "\"x\":%d,\"y\":0}",
                        s > 1 ? "," : "", s, s, s);
    snprintf(body + off, sizeof(body) - (size_t)off, "]}");
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    int status = res.http.status;
    if (status == 201)
        snprintf(id, 32, "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);
    return status;
}

/* POST /v1/shows/{show}/queue as 'sub'. */
static void join(const char *show, const char *sub, e2e_res_t *res)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/queue", show);
    cr_assert_eq(e2e_call("POST", path, sub, NULL, NULL, res), 0);
}

static void place(const char *ticket, const char *sub, e2e_res_t *res)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/queue/%s", ticket);
    cr_assert_eq(e2e_call("GET", path, sub, NULL, NULL, res), 0);
}

/* A named hold of 'seat' as 'sub', with the admission 'adm' (NULL: none). Returns the status;
 * the hold id into 'hold' (64 bytes) when made. */
static int hold_with(const char *show, const char *sub, const char *seat, const char *adm,
                     char *hold, char *type)
{
    char path[96], body[64], extra[512];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"%s\"]}", seat);
    if (adm)
        snprintf(extra, sizeof(extra), "Seatd-Admission: %s\r\n", adm);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", path, sub, body, adm ? extra : NULL, &res), 0);
    int status = res.http.status;
    if (hold)
        snprintf(hold, 64, "%s", e2e_str(&res, "holdId"));
    if (type)
        snprintf(type, 96, "%s", e2e_str(&res, "type"));
    e2e_res_free(&res);
    return status;
}

static void book(const char *hold_id, const char *sub)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "booking: %d", res.http.status);
    e2e_res_free(&res);
}

/* The Seatd-Admission header matters only on a queued show: a show without a queue holds as
 * it would without it, whatever the header says (another show's admission made it 403). */
Test(api_queue, a_show_without_a_queue_ignores_an_admission_for_another_show)
{
    char queued[32], plain[32], adm[300];
    cr_assert_eq(create_queued(2, 5, 10, queued), 201);
    cr_assert_eq(e2e_create_show(1, 3, 300, plain), 0);
    e2e_res_t res;
    join(queued, "q-olga", &res);
    cr_assert_eq(res.http.status, 201);
    cr_assert_str_eq(e2e_str(&res, "state"), "ADMITTED");
    snprintf(adm, sizeof(adm), "%s", e2e_str(&res, "admission"));
    e2e_res_free(&res);
    cr_assert_eq(hold_with(plain, "q-olga", "A1", adm, NULL, NULL), 201, "another show's");
    cr_assert_eq(hold_with(plain, "q-olga", "A2", "not-an-admission", NULL, NULL), 201);
    /* ... and on the queued show it is still the admission that counts */
    char type[96];
    cr_assert_eq(hold_with(queued, "q-olga", "A1", "not-an-admission", NULL, type), 403);
    cr_assert_str_eq(type, "https://seatd.dev/problems/queue-required");
    cr_assert_eq(hold_with(queued, "q-olga", "A1", adm, NULL, NULL), 201);
}

Test(api_queue, validates_the_waiting_room_of_a_show)
{
    char id[32], body[1024];
    e2e_res_t res;
    const char *bad[] = {
        "\"queue\":{\"opensAt\":\"2031-01-01T00:00:00Z\"}", /* after sales close */
        "\"queue\":{\"opensAt\":\"soon\"}",                 /* not a time */
        "\"queue\":{\"opensAt\":\"2029-01-01T00:00:00Z\",\"maxShoppers\":0}",
        "\"queue\":{\"opensAt\":\"2029-01-01T00:00:00Z\",\"admissionSeconds\":5}",
        "\"queue\":{\"opensAt\":\"2029-01-01T00:00:00Z\",\"seatsPerShopper\":101}",
        "\"queue\":7",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body),
                 "{\"title\":\"x\",\"startsAt\":\"2030-01-01T20:00:00Z\",\"priceTiers\":"
                 "{\"standard\":1},%s,\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
                 "\"tier\":\"standard\",\"x\":1,\"y\":1}]}",
                 bad[i]);
        cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
        cr_assert_eq(res.http.status, 400, "%s: %d", bad[i], res.http.status);
        const cJSON *p =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res.json, "invalidParams"), 0);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        cr_assert(cJSON_IsString(name) && strncmp(name->valuestring, "queue", 5) == 0, "%s",
                  bad[i]);
        e2e_res_free(&res);
    }
    /* A show without one has no waiting room to join. */
    cr_assert_eq(e2e_create_show(1, 2, 300, id), 0);
    join(id, "q-plain", &res);
    cr_assert_eq(res.http.status, 404);
    cr_assert_str_eq(e2e_str(&res, "type"), "https://seatd.dev/problems/no-queue");
    e2e_res_free(&res);
}

Test(api_queue, admits_by_inventory_refuses_holds_without_admission_and_tells_sold_out)
{
    char show[32], path[96], ticket[3][64], adm[2][300], hold[2][64], type[96];
    cr_assert_eq(create_queued(2, 5, 10, show), 201);
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s", show);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(res.json, "queue");
    cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(q, "opensAt")));
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "maxShoppers")), 10);
    e2e_res_free(&res);

    /* Nobody holds on a queued show without an admission. */
    cr_assert_eq(hold_with(show, "q-alice", "A1", NULL, NULL, type), 403);
    cr_assert_str_eq(type, "https://seatd.dev/problems/queue-required");

    /* Two seats, one expected per shopper: the first two are admitted, the third waits. */
    const char *who[3] = {"q-alice", "q-bob", "q-carol"};
    for (int i = 0; i < 3; i++) {
        join(show, who[i], &res);
        cr_assert_eq(res.http.status, 201, "%s: %d", who[i], res.http.status);
        snprintf(ticket[i], sizeof(ticket[i]), "%s", e2e_str(&res, "ticket"));
        cr_assert_str_eq(e2e_str(&res, "state"), i < 2 ? "ADMITTED" : "WAITING", "%s", who[i]);
        if (i < 2)
            snprintf(adm[i], sizeof(adm[i]), "%s", e2e_str(&res, "admission"));
        else
            cr_assert_eq(e2e_num(&res, "position"), 1);
        e2e_res_free(&res);
    }
    /* One place per user: a second join answers the same ticket. */
    join(show, "q-carol", &res);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "ticket"), ticket[2]);
    e2e_res_free(&res);
    /* Another user's ticket is not found. */
    place(ticket[2], "q-alice", &res);
    cr_assert_eq(res.http.status, 404);
    e2e_res_free(&res);

    /* Admissions are bound to their user and show; forged or expired ones are refused. */
    cr_assert_eq(hold_with(show, "q-carol", "A1", adm[0], NULL, type), 403, "alice's admission");
    cr_assert_str_eq(type, "https://seatd.dev/problems/queue-required");
    char forged[300];
    snprintf(forged, sizeof(forged), "%s", adm[0]);
    forged[strlen(forged) - 2] ^= 1; /* one bit of the MAC */
    cr_assert_eq(hold_with(show, "q-alice", "A1", forged, NULL, NULL), 403, "altered MAC");
    unsigned char key[SEATD_ADMISSION_KEY_LEN], wrong[SEATD_ADMISSION_KEY_LEN];
    const char *secret = getenv("SEATD_JWT_SECRET");
    cr_assert_not_null(secret);
    seatd_admission_key(secret, strlen(secret), key);
    seatd_admission_key("not the stack's secret, 32 bytes or more", 40, wrong);
    long long now_ms = (long long)time(NULL) * 1000;
    char *mine = seatd_admission_sign(wrong, show, "q-carol", now_ms + 60000);
    cr_assert_eq(hold_with(show, "q-carol", "A1", mine, NULL, NULL), 403, "another key");
    free(mine);
    mine = seatd_admission_sign(key, show, "q-carol", now_ms - 1000);
    cr_assert_eq(hold_with(show, "q-carol", "A1", mine, NULL, NULL), 403, "expired");
    free(mine);
    /* Signed right (as a worker would) but carol was never admitted: Redis refuses. */
    mine = seatd_admission_sign(key, show, "q-carol", now_ms + 60000);
    cr_assert_eq(hold_with(show, "q-carol", "A1", mine, NULL, NULL), 403, "not admitted");
    free(mine);

    /* A watcher of the show's feed (a waiting page) hears the sell-out. */
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, e2e_port(), path), 101);

    /* The admitted buy both seats; carol is never admitted and is told SOLD_OUT. */
    for (int i = 0; i < 2; i++) {
        char seat[4];
        snprintf(seat, sizeof(seat), "A%d", i + 1);
        cr_assert_eq(hold_with(show, who[i], seat, adm[i], hold[i], type), 201, "%s %s", who[i],
                     type);
    }
    place(ticket[2], "q-carol", &res);
    cr_assert_str_eq(e2e_str(&res, "state"), "WAITING", "everything held: not sold out yet");
    e2e_res_free(&res);
    book(hold[0], who[0]);
    book(hold[1], who[1]);
    long long sold_ms = wsc_now_ms();
    long long frame_ms = -1;
    while (wsc_now_ms() < sold_ms + 3000) {
        cJSON *j = wsc_next(&c, 3000);
        if (j == NULL)
            break;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");
        int hit = strcmp(wsc_type(j), "queue") == 0 && cJSON_IsString(st) &&
                  strcmp(st->valuestring, "SOLD_OUT") == 0;
        cJSON_Delete(j);
        if (hit) {
            frame_ms = wsc_now_ms();
            break;
        }
    }
    wsc_close(&c);
    cr_assert(frame_ms >= 0, "no SOLD_OUT frame on the show's WebSocket");
    cr_assert_lt(frame_ms - sold_ms, 1000, "sold-out reached the watcher after %lld ms",
                 frame_ms - sold_ms);
    fprintf(stderr, "api_queue: SOLD_OUT frame %lld ms after the last booking\n",
            frame_ms - sold_ms);
    place(ticket[2], "q-carol", &res);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "state"), "SOLD_OUT");
    cr_assert_str_eq(e2e_str(&res, "queueState"), "SOLD_OUT");
    cr_assert_eq(e2e_num(&res, "admittedThrough"), 2);
    e2e_res_free(&res);
    /* An admission cannot be reused for another hold once the seats are gone either. */
    cr_assert_eq(hold_with(show, "q-carol", "A1", NULL, NULL, NULL), 403);
}

Test(api_queue, early_joiners_wait_for_the_opening)
{
    char show[32];
    cr_assert_eq(create_queued(4, -3600, 10, show), 201); /* opens in an hour */
    e2e_res_t res;
    join(show, "q-early", &res);
    cr_assert_eq(res.http.status, 201);
    cr_assert_str_eq(e2e_str(&res, "state"), "WAITING");
    cr_assert_str_eq(e2e_str(&res, "queueState"), "PENDING");
    cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res.json, "opensAt")));
    e2e_res_free(&res);
    cr_assert_eq(hold_with(show, "q-early", "A1", NULL, NULL, NULL), 403);
}
