/*
 * End-to-end: the operator's tool, build/seatctl, run as a process against the stack: the API
 * through nginx with an admin token minted from SEATD_JWT_SECRET, and Redis read-only as the
 * stack's admin user (REDISCLI_AUTH). Every command is also run with --json and its output
 * parsed. test_seatctl_discovery.c (same suite) runs it as a newcomer would, with nothing but
 * SEATD_PORT set: it finds the API, Redis and the runtime folder's secrets as deploy/up placed
 * them.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "seatctl_run.h"

static void setup(void)
{
    char url[64], redis[64], pass[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", e2e_port());
    snprintf(redis, sizeof redis, "127.0.0.1:%s", getenv("SEATD_E2E_REDIS_PORT"));
    cr_assert_eq(e2e_redis_password("redis-admin.pass", pass, sizeof pass), 0);
    setenv("SEATD_URL", url, 1);
    setenv("SEATD_REDIS", redis, 1);
    setenv("REDISCLI_AUTH", pass, 1);
    unsetenv("SEATD_TOKEN");
}

TestSuite(seatctl, .init = setup, .timeout = 90);

Test(seatctl, show_create_from_a_layout_file_and_show_list_find_it)
{
    char layout[] = "/tmp/seatctl-layout.XXXXXX";
    int fd = mkstemp(layout);
    cr_assert(fd >= 0);
    const char *seats = "[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,"
                        "\"y\":1},{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"vip\","
                        "\"x\":2,\"y\":1}]";
    cr_assert_eq(write(fd, seats, strlen(seats)), (ssize_t)strlen(seats));
    close(fd);
    run_t r;
    seatctl(&r, "show", "create", "--layout", layout, "--title", "seatctl show", "--starts-at",
            "2031-02-03T20:00:00Z", "--price", "standard=1000", "--price", "vip=2500", "--hold-ttl",
            "90", "--json", NULL);
    unlink(layout);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    char id[32];
    snprintf(id, sizeof id, "%s", jstr(r.json, "id"));
    cr_assert_eq(jnum(r.json, "seatCount"), 2);
    cr_assert_eq(jnum(r.json, "holdTtlSeconds"), 90);
    run_free(&r);

    seatctl(&r, "show", "list", "--json", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    int found = 0;
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(r.json, "items"))
    {
        found += strcmp(jstr(s, "id"), id) == 0 && strcmp(jstr(s, "title"), "seatctl show") == 0;
    }
    cr_assert_eq(found, 1, "show %s not listed: %s", id, r.out);
    run_free(&r);
    seatctl(&r, "show", "list", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "seatctl show") != NULL, "%s", r.out);
    run_free(&r);
}

Test(seatctl, seat_who_reports_the_holder_the_hold_and_the_time_left)
{
    char show[32], hold_id[48];
    cr_assert_eq(e2e_create_show(3, 10, 120, show), 0);
    hold(show, "who-alice", "[\"C7\"]", hold_id);
    run_t r;
    seatctl(&r, "seat", "who", show, "C7", "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_str_eq(jstr(r.json, "status"), "held");
    cr_assert_str_eq(jstr(r.json, "holder"), "who-alice");
    cr_assert_str_eq(jstr(r.json, "holdId"), hold_id);
    cr_assert_str_eq(jstr(r.json, "holdStatus"), "HELD");
    double left = jnum(r.json, "msLeft");
    cr_assert(left > 0 && left <= 120000, "msLeft %f", left);
    cr_assert_neq(jstr(r.json, "expiresAt")[0], '\0');
    run_free(&r);

    seatctl(&r, "seat", "who", show, "C7", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "HELD by who-alice") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, hold_id) != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "left") != NULL, "%s", r.out);
    run_free(&r);

    seatctl(&r, "seat", "who", show, "C8", "--json", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(jstr(r.json, "status"), "available");
    run_free(&r);

    /* A booked seat names its booking and owner. */
    char booking[48];
    hold(show, "who-bob", "[\"A1\"]", hold_id);
    book("who-bob", hold_id, booking);
    seatctl(&r, "seat", "who", show, "A1", "--json", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert_str_eq(jstr(r.json, "status"), "booked");
    cr_assert_str_eq(jstr(r.json, "owner"), "who-bob");
    cr_assert_str_eq(jstr(r.json, "bookingId"), booking);
    run_free(&r);

    /* Not found: exit 1, and still JSON. */
    seatctl(&r, "seat", "who", show, "Z99", "--json", NULL);
    cr_assert_eq(r.status, 1);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_neq(jstr(r.json, "error")[0], '\0');
    run_free(&r);
    seatctl(&r, "seat", "who", "999999999", "A1", NULL);
    cr_assert_eq(r.status, 1);
    run_free(&r);
}

Test(seatctl, audit_passes_on_a_consistent_show_and_fails_on_a_corrupted_one)
{
    char show[32], hold_id[48], booking[48];
    cr_assert_eq(e2e_create_show(3, 10, 120, show), 0);
    hold(show, "audit-alice", "[\"B3\",\"B4\"]", hold_id);
    hold(show, "audit-bob", "[\"A1\"]", booking);
    book("audit-bob", booking, booking);
    run_t r;
    seatctl(&r, "audit", show, NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert(strstr(r.out, "consistent") != NULL, "%s", r.out);
    run_free(&r);
    seatctl(&r, "audit", show, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.json, "ok")));
    cr_assert_eq(jnum(r.json, "heldSeats"), 2);
    cr_assert_eq(jnum(r.json, "bookedSeats"), 1);
    cr_assert_eq(jnum(r.json, "liveHolds"), 1);
    cr_assert_eq(jnum(r.json, "confirmedBookings"), 1);
    run_free(&r);

    /* Corrupt it: B3 (bit 12: row B starts at 10) is held; set its booked bit too. */
    seatd_redis_t *c = e2e_redis();
    char key[64];
    snprintf(key, sizeof key, "{s:%s}:booked", show);
    redisReply *rr = seatd_redis_command(c, "SETBIT %s 12 1", key);
    cr_assert(rr && rr->type == REDIS_REPLY_INTEGER);
    freeReplyObject(rr);
    seatctl(&r, "audit", show, "--json", NULL);
    cr_assert_eq(r.status, 1, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r.json, "ok")));
    int held_and_booked = 0;
    const cJSON *v = NULL;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r.json, "violations"))
    {
        held_and_booked += strcmp(jstr(v, "check"), "held_and_booked") == 0 &&
                           strstr(jstr(v, "text"), "B3") != NULL;
    }
    cr_assert_eq(held_and_booked, 1, "%s", r.out);
    run_free(&r);
    seatctl(&r, "audit", show, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.out, "VIOLATION [held_and_booked] seat B3") != NULL, "%s", r.out);
    run_free(&r);

    /* A second corruption: the hold leaves the expiry set. */
    rr = seatd_redis_command(c, "SETBIT %s 12 0", key);
    freeReplyObject(rr);
    rr = seatd_redis_command(c, "ZREM {s:%s}:expiry %s", show, hold_id);
    cr_assert(rr && rr->type == REDIS_REPLY_INTEGER && rr->integer == 1);
    freeReplyObject(rr);
    seatctl(&r, "audit", show, NULL);
    cr_assert_eq(r.status, 1, "%s", r.out);
    cr_assert(strstr(r.out, "[expiry]") != NULL, "%s", r.out);
    run_free(&r);
    seatd_redis_free(c);

    seatctl(&r, "audit", "999999999", NULL);
    cr_assert_eq(r.status, 1);
    run_free(&r);
}

Test(seatctl, hold_show_and_release_any_users_hold)
{
    char show[32], hold_id[48];
    cr_assert_eq(e2e_create_show(2, 5, 120, show), 0);
    hold(show, "hold-carol", "[\"A2\",\"A3\"]", hold_id);
    run_t r;
    seatctl(&r, "hold", "show", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_str_eq(jstr(r.json, "owner"), "hold-carol");
    cr_assert_str_eq(jstr(r.json, "status"), "HELD");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.json, "seatIds")), 2);
    run_free(&r);
    seatctl(&r, "hold", "show", hold_id, NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "timeLeft") != NULL, "%s", r.out);
    run_free(&r);

    seatctl(&r, "hold", "release", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_str_eq(jstr(r.json, "status"), "RELEASED");
    run_free(&r);
    seatctl(&r, "seat", "who", show, "A2", "--json", NULL);
    cr_assert_str_eq(jstr(r.json, "status"), "available");
    run_free(&r);
    /* The owner sees it released. */
    char path[96];
    snprintf(path, sizeof path, "/v1/holds/%s", hold_id);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, "hold-carol", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "status"), "RELEASED");
    e2e_res_free(&res);

    /* An unknown hold: 404, exit 1, the problem as JSON. */
    char unknown[80];
    snprintf(unknown, sizeof unknown, "%s-h00000000000000000000", show);
    seatctl(&r, "hold", "show", unknown, "--json", NULL);
    cr_assert_eq(r.status, 1);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_eq(jnum(r.json, "status"), 404);
    run_free(&r);

    /* A buyer's token is refused (403): exit 1. */
    seatctl(&r, "hold", "show", hold_id, "--token", e2e_token("hold-carol", 0), NULL);
    cr_assert_eq(r.status, 1);
    run_free(&r);
}

Test(seatctl, booking_show_and_cancel_put_the_seats_back_on_sale)
{
    char show[32], hold_id[48], booking[48];
    cr_assert_eq(e2e_create_show(2, 5, 120, show), 0);
    hold(show, "bk-dave", "[\"B1\",\"B2\"]", hold_id);
    book("bk-dave", hold_id, booking);
    run_t r;
    seatctl(&r, "booking", "show", booking, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_str_eq(jstr(r.json, "status"), "CONFIRMED");
    cr_assert_str_eq(jstr(r.json, "owner"), "bk-dave");
    double amount = jnum(r.json, "amount");
    cr_assert(amount > 0, "%s", r.out);
    run_free(&r);

    seatctl(&r, "booking", "cancel", booking, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    cr_assert_str_eq(jstr(r.json, "status"), "CANCELLED");
    cr_assert_eq(jnum(r.json, "refund"), amount); /* the show is years away: 100 % */
    run_free(&r);
    seatctl(&r, "seat", "who", show, "B1", "--json", NULL);
    cr_assert_str_eq(jstr(r.json, "status"), "available");
    run_free(&r);
    /* Cancelling again answers the same. */
    seatctl(&r, "booking", "cancel", booking, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_str_eq(jstr(r.json, "status"), "CANCELLED");
    run_free(&r);
    /* The owner sees it cancelled; the show is consistent. */
    char path[96];
    snprintf(path, sizeof path, "/v1/bookings/%s", booking);
    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", path, "bk-dave", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "status"), "CANCELLED");
    e2e_res_free(&res);
    seatctl(&r, "audit", show, NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    run_free(&r);
}

Test(seatctl, reap_ends_expired_holds_through_the_api)
{
    char show[32], hold_id[48];
    cr_assert_eq(e2e_create_show(1, 5, 1, show), 0);
    hold(show, "reap-erin", "[\"A1\"]", hold_id);
    /* Wait (deadline 10 s) until the hold's deadline has passed on Redis's clock. */
    run_t r;
    seatctl(&r, "hold", "show", hold_id, "--json", NULL);
    cr_assert_eq(r.status, 0);
    char expires[40];
    snprintf(expires, sizeof expires, "%s", jstr(r.json, "expiresAt"));
    run_free(&r);
    seatd_redis_t *c = e2e_redis();
    for (int i = 0;; i++) {
        cr_assert(i < 1000, "the hold never expired");
        redisReply *t = seatd_redis_command(c, "TIME");
        long long now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
        freeReplyObject(t);
        struct tm tm = {0};
        int ms = 0;
        sscanf(expires, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &ms);
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        if (now >= (long long)timegm(&tm) * 1000 + ms)
            break;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    seatd_redis_free(c);
    seatctl(&r, "reap", show, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    /* The sweeper may have reaped it first: either way nothing is due afterwards. */
    cr_assert(jnum(r.json, "reaped") == 0 || jnum(r.json, "reaped") == 1, "%s", r.out);
    cr_assert_eq(jnum(r.json, "due"), 0, "%s", r.out);
    run_free(&r);
    seatctl(&r, "hold", "show", hold_id, "--json", NULL);
    cr_assert_str_eq(jstr(r.json, "status"), "EXPIRED");
    run_free(&r);
    seatctl(&r, "seat", "who", show, "A1", "--json", NULL);
    cr_assert_str_eq(jstr(r.json, "status"), "available");
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(r.json, "heldBit"), "%s", r.out);
    run_free(&r);
    seatctl(&r, "reap", "999999999", NULL);
    cr_assert_eq(r.status, 1);
    run_free(&r);
}

Test(seatctl, channel_set_keeps_seats_for_a_token_with_the_channel_and_release_opens_them)
{
    char show[32], path[64], file[] = "/tmp/seatctl-channel-XXXXXX";
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    int fd = mkstemp(file);
    cr_assert(fd >= 0);
    static const char body[] = "{\"seatIds\":[\"A1\"]}";
    cr_assert_eq(write(fd, body, sizeof(body) - 1), (ssize_t)(sizeof(body) - 1));
    close(fd);
    run_t r;
    seatctl(&r, "channel", "set", show, "house", "--body", file, "--json", NULL);
    unlink(file);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.json, "released")));
    run_free(&r);
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", path, "fan", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 409, "kept for the house");
    e2e_res_free(&res);
    /* a token minted by seatctl with the channel holds it */
    seatctl(&r, "token", "--sub", "usher", "--channels", "house", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char auth[1200];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %.*s\r\n", (int)strcspn(r.out, "\n"),
             r.out);
    run_free(&r);
    cr_assert_eq(e2e_call("POST", path, NULL, "{\"seatIds\":[\"A1\"]}", auth, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    seatctl(&r, "channel", "release", show, "house", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "channel house released"), "%s", r.out);
    run_free(&r);
    seatctl(&r, "channel", "release", show, "house", NULL);
    cr_assert_eq(r.status, 1, "released once: not found");
    run_free(&r);
}

Test(seatctl, group_create_groups_two_shows_and_group_show_prints_them)
{
    char a[32], b[32], list[80], gid[64];
    cr_assert_eq(e2e_create_groupable_show(NULL, a), 0);
    cr_assert_eq(e2e_create_groupable_show(a, b), 0);
    snprintf(list, sizeof(list), "%s,%s", a, b);
    run_t r;
    seatctl(&r, "group", "create", "Season", "--shows", list, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strncmp(r.out, "created group ", 14) == 0, "%s", r.out);
    snprintf(gid, sizeof(gid), "%.*s", (int)strcspn(r.out + 14, ":"), r.out + 14);
    cr_assert(strstr(gid, "-g") != NULL, "a group id: '%s' in %s", gid, r.out);
    char shows[96];
    snprintf(shows, sizeof(shows), "shows %s\n", list);
    cr_assert(strstr(r.out, shows), "%s", r.out);
    run_free(&r);
    /* the group as the API has it */
    seatctl(&r, "group", "show", gid, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "Season"), "%s", r.out);
    cr_assert(strstr(r.out, list), "both shows: %s", r.out);
    run_free(&r);
    seatctl(&r, "group", "show", gid, "--json", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(jstr(r.json, "id"), gid);
    cr_assert_str_eq(jstr(r.json, "title"), "Season");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(r.json, "showIds");
    cr_assert_eq(cJSON_GetArraySize(ids), 2, "%s", r.out);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(ids, 0)), a);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(ids, 1)), b);
    run_free(&r);
    /* --json answers the API's group */
    seatctl(&r, "--json", "group", "create", "Again", "--shows", list, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(jstr(r.json, "id"), "-g") != NULL, "%s", r.out);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r.json, "showIds")), 2);
    run_free(&r);
    /* one show only: refused before any call */
    seatctl(&r, "group", "create", "Season", "--shows", a, NULL);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    cr_assert(strstr(r.err, "at least two shows"), "%s", r.err);
    run_free(&r);
    seatctl(&r, "group", "create", "Season", NULL);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    cr_assert(strstr(r.err, "needs --shows"), "%s", r.err);
    run_free(&r);
    /* a show that does not exist: the API refuses, the answer says why */
    char unknown[80];
    snprintf(unknown, sizeof(unknown), "%s,999999999", a);
    seatctl(&r, "group", "create", "Season", "--shows", unknown, NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "POST /v1/groups: 4"), "the status and the problem: %s", r.err);
    run_free(&r);
    seatctl(&r, "--json", "group", "create", "Season", "--shows", unknown, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert_not_null(r.json, "the problem on stdout: %s", r.out);
    cr_assert(jstr(r.json, "title")[0], "%s", r.out);
    run_free(&r);
    /* a group that does not exist, and an id that is no group's */
    char missing[64];
    snprintf(missing, sizeof(missing), "%s-g00000000000000000000", a);
    seatctl(&r, "group", "show", missing, NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.err, "404"), "%s", r.err);
    run_free(&r);
    seatctl(&r, "group", "show", a, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "is not a group id"), "%s", r.err);
    run_free(&r);
}

Test(seatctl, usage_errors_exit_2_and_help_exits_0)
{
    run_t r;
    const char *bad[][6] = {
        {NULL},
        {"bogus", NULL},
        {"seat", "who", "1", NULL},
        {"seat", NULL},
        {"hold", "show", "not-a-hold", NULL},
        {"audit", "x1", NULL},
        {"audit", "1", "--title", "t", NULL},
        {"audit", "1", "--nope", NULL},
        {"show", "create", "--title", "no layout", NULL},
        {"show", "list", "--size", "0", NULL},
        {"token", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        seatctl(&r, bad[i][0], bad[i][0] ? bad[i][1] : NULL,
                bad[i][0] && bad[i][1] ? bad[i][2] : NULL,
                bad[i][0] && bad[i][1] && bad[i][2] ? bad[i][3] : NULL,
                bad[i][0] && bad[i][1] && bad[i][2] && bad[i][3] ? bad[i][4] : NULL, NULL);
        cr_assert_eq(r.status, 2, "case %zu (%s): exit %d", i, bad[i][0] ? bad[i][0] : "-",
                     r.status);
        run_free(&r);
    }
    /* --json promises one JSON document on stdout, on a usage error too (it printed none) */
    const char *json_bad[][6] = {
        {"--json", NULL},
        {"--json", "bogus", NULL},
        {"--json", "seat", "who", "abc", "A1", NULL},
        {"--json", "show", "list", "--page", "0", NULL},
        {"--json", "seat", "who", "1", NULL},
    };
    for (size_t i = 0; i < sizeof json_bad / sizeof json_bad[0]; i++) {
        const char *const *a = json_bad[i];
        seatctl(&r, a[0], a[1], a[1] ? a[2] : NULL, a[1] && a[2] ? a[3] : NULL,
                a[1] && a[2] && a[3] ? a[4] : NULL, NULL);
        cr_assert_eq(r.status, 2, "json case %zu: exit %d", i, r.status);
        cr_assert_not_null(r.json, "json case %zu: not JSON: '%s'", i, r.out);
        cr_assert(jstr(r.json, "error")[0], "json case %zu: %s", i, r.out);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.json, "usage")), "%s", r.out);
        run_free(&r);
    }
    /* a file that never ends (or is far too large) is refused, not read into memory */
    seatctl(&r, "show", "create", "--body", "/dev/zero", "--json", NULL);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    cr_assert(strstr(jstr(r.json, "error"), "larger than"), "%s", r.out);
    run_free(&r);
    seatctl(&r, "--help", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "seat who SHOW SEAT") != NULL);
    run_free(&r);
    seatctl(&r, "audit", "--help", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "Usage: seatctl audit SHOW") != NULL, "%s", r.out);
    run_free(&r);
    seatctl(&r, "token", "--sub", "x", "--json", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(r.json, "not JSON: %s", r.out);
    run_free(&r);
}
