/* End-to-end: accounts (issue 14). Register -> login -> hold -> book -> GET /v1/me, refresh
 * rotation and replay, logout, throttling (429 + Retry-After), no user enumeration (status,
 * body and time), bad input changing nothing, and seatctl's admin accounts.
 *
 * Most requests go through nginx (127.0.0.1, one client address for the whole suite: it stays
 * under the per-address limits). The throttling tests talk to one worker's socket directly
 * with an X-Forwarded-For of their own (the header nginx sets), so their address is fresh on
 * every run and the rest of the suite is not throttled by them. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

TestSuite(api_accounts, .timeout = 120);

#define PASSWORD "correct horse battery staple"

/* A fresh email for this run: "<tag>-<pid>-<n>@example.com". */
static void fresh_email(const char *tag, char *out, size_t n)
{
    static unsigned seq;
    snprintf(out, n, "%s-%d-%u-%ld@example.com", tag, (int)getpid(), ++seq, (long)time(NULL));
}

/* A fresh client address for the direct-to-worker tests: 10.x.y.z from the pid and time. */
static void fresh_addr(char *out, size_t n)
{
    static unsigned seq;
    unsigned v = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL) * 40503u ^ (++seq * 7919u);
    snprintf(out, n, "10.%u.%u.%u", (v >> 16) & 255, (v >> 8) & 255, v & 255);
}

static void worker_host(char *out, size_t n)
{
    snprintf(out, n, "unix:%s/worker-1.sock", getenv("SEATD_E2E_RUN"));
}

/* POST 'path' with 'body' through nginx ('host' NULL) or to 'host' with 'xff' (may be NULL). */
static void post(const char *host, const char *xff, const char *path, const char *body,
                 e2e_res_t *res)
{
    char extra[128] = "";
    if (xff)
        snprintf(extra, sizeof extra, "X-Forwarded-For: %s\r\n", xff);
    cr_assert_eq(e2e_call_at(host ? host : "127.0.0.1", "POST", path, NULL, body,
                             extra[0] ? extra : NULL, res),
                 0, "POST %s: no answer", path);
}

static void creds(char *body, size_t n, const char *email, const char *password)
{
    snprintf(body, n, "{\"email\":\"%s\",\"password\":\"%s\"}", email, password);
}

static void register_at(const char *host, const char *xff, const char *email)
{
    char body[512];
    creds(body, sizeof body, email, PASSWORD);
    e2e_res_t res;
    post(host, xff, "/v1/auth/register", body, &res);
    cr_assert_eq(res.http.status, 201, "register %s: %d %s", email, res.http.status, res.http.body);
    e2e_res_free(&res);
}

typedef struct pair_s {
    char access[1024];
    char refresh[160];
    char user[80];
} pair_t;

static void read_pair(const e2e_res_t *res, pair_t *p)
{
    cr_assert_eq(res->http.status, 200, "%d %s", res->http.status, res->http.body);
    snprintf(p->access, sizeof p->access, "%s", e2e_str(res, "accessToken"));
    snprintf(p->refresh, sizeof p->refresh, "%s", e2e_str(res, "refreshToken"));
    snprintf(p->user, sizeof p->user, "%s", e2e_str(res, "userId"));
    cr_assert(p->access[0] && p->refresh[0] && p->user[0]);
    cr_assert_str_eq(e2e_str(res, "tokenType"), "Bearer");
    cr_assert_eq(e2e_num(res, "expiresIn"), 900);
}

static void login(const char *email, pair_t *p)
{
    char body[512];
    creds(body, sizeof body, email, PASSWORD);
    e2e_res_t res;
    post(NULL, NULL, "/v1/auth/login", body, &res);
    read_pair(&res, p);
    e2e_res_free(&res);
}

static int refresh(const char *token, pair_t *p, e2e_res_t *keep)
{
    char body[256];
    snprintf(body, sizeof body, "{\"refreshToken\":\"%s\"}", token);
    e2e_res_t res;
    post(NULL, NULL, "/v1/auth/refresh", body, &res);
    int status = res.http.status;
    if (status == 200 && p)
        read_pair(&res, p);
    if (keep)
        *keep = res;
    else
        e2e_res_free(&res);
    return status;
}

/* A call with an access token from /v1/auth (not a minted one). */
static void call_as(const pair_t *p, const char *method, const char *path, const char *body,
                    e2e_res_t *res)
{
    char extra[1200];
    snprintf(extra, sizeof extra, "Authorization: Bearer %s\r\n", p->access);
    cr_assert_eq(e2e_call(method, path, NULL, body, extra, res), 0);
}

static const char *type_of(const e2e_res_t *res)
{
    const char *t = e2e_str(res, "type");
    const char *slash = strrchr(t, '/');
    return slash ? slash + 1 : t;
}

/* ------------------------------------------------------------------------ the flow */

static void hold_and_book(const pair_t *p, const char *show, const char *seat, char *booking,
                          size_t n)
{
    char path[64], body[256];
    e2e_res_t res;
    snprintf(path, sizeof path, "/v1/shows/%s/holds", show);
    snprintf(body, sizeof body, "{\"seatIds\":[\"%s\"]}", seat);
    call_as(p, "POST", path, body, &res);
    cr_assert_eq(res.http.status, 201, "%s", res.http.body);
    char hold[64];
    snprintf(hold, sizeof hold, "%s", e2e_str(&res, "holdId"));
    e2e_res_free(&res);

    /* The live hold is the buyer's to find again. */
    call_as(p, "GET", "/v1/me/holds", NULL, &res);
    cr_assert_eq(res.http.status, 200);
    const cJSON *holds = cJSON_GetObjectItemCaseSensitive(res.json, "holds");
    int found = 0;
    const cJSON *h = NULL;
    cJSON_ArrayForEach(h, holds)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "holdId"));
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "status"));
        if (id && strcmp(id, hold) == 0) {
            found = 1;
            cr_assert_str_eq(st, "HELD");
        }
    }
    cr_assert(found, "hold %s not in /v1/me/holds: %s", hold, res.http.body);
    e2e_res_free(&res);

    snprintf(body, sizeof body, "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold);
    call_as(p, "POST", "/v1/bookings", body, &res);
    cr_assert_eq(res.http.status, 201, "%s", res.http.body);
    snprintf(booking, n, "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
}

Test(api_accounts, register_login_hold_book_and_find_the_tickets)
{
    char email[128], show[32];
    fresh_email("flow", email, sizeof email);
    register_at(NULL, NULL, email);
    pair_t p;
    /* The email is normalised: the upper-case spelling signs in too. */
    char upper[160];
    snprintf(upper, sizeof upper, "  %s ", email);
    upper[2] = 'F';
    char body[512];
    creds(body, sizeof body, upper, PASSWORD);
    e2e_res_t res;
    post(NULL, NULL, "/v1/auth/login", body, &res);
    read_pair(&res, &p);
    e2e_res_free(&res);

    cr_assert_eq(e2e_create_show(2, 6, 300, show), 0);
    char b1[64], b2[64];
    hold_and_book(&p, show, "A1", b1, sizeof b1);
    hold_and_book(&p, show, "A2", b2, sizeof b2);

    /* Newest first, one per page, each with its status. */
    call_as(&p, "GET", "/v1/me/bookings?limit=1", NULL, &res);
    cr_assert_eq(res.http.status, 200, "%s", res.http.body);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(res.json, "bookings");
    cr_assert_eq(cJSON_GetArraySize(list), 1);
    const cJSON *first = cJSON_GetArrayItem(list, 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "bookingId")),
                     b2);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "status")),
                     "CONFIRMED");
    const char *cursor =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res.json, "nextCursor"));
    cr_assert_not_null(cursor);
    char path[128];
    snprintf(path, sizeof path, "/v1/me/bookings?limit=1&cursor=%s", cursor);
    e2e_res_free(&res);
    call_as(&p, "GET", path, NULL, &res);
    cr_assert_eq(res.http.status, 200);
    list = cJSON_GetObjectItemCaseSensitive(res.json, "bookings");
    cr_assert_eq(cJSON_GetArraySize(list), 1);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetArrayItem(list, 0), "bookingId")),
                     b1);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res.json, "nextCursor")));
    e2e_res_free(&res);

    /* Booked holds are no longer live holds. */
    call_as(&p, "GET", "/v1/me/holds", NULL, &res);
    cr_assert_eq(res.http.status, 200);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "holds")), 0, "%s",
                 res.http.body);
    e2e_res_free(&res);

    /* The ticket itself is the owner's, through the existing route. */
    snprintf(path, sizeof path, "/v1/bookings/%s", b1);
    call_as(&p, "GET", path, NULL, &res);
    cr_assert_eq(res.http.status, 200);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    e2e_res_free(&res);

    /* Someone else's list does not show them; a minted token still works as before. */
    cr_assert_eq(e2e_call("GET", "/v1/me/bookings", "someone-else", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "bookings")), 0);
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", "/v1/me/holds", NULL, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 401);
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", "/v1/me/bookings?limit=0", "x", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 400);
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("GET", "/v1/me/bookings?cursor=abc", "x", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 400);
    e2e_res_free(&res);
}

/* POST /v1/bookings as 'sub' for 'hold' with tok_ok; returns the status. */
static int book_as(const char *sub, const char *hold)
{
    char body[160];
    snprintf(body, sizeof body, "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, NULL, &res), 0);
    int status = res.http.status;
    e2e_res_free(&res);
    return status;
}

/* Retrying a booking (docs/api.md's advice) and booking a released hold file nothing in the
 * buyer's list: before, each such request filed its own fresh booking id, whose booking never
 * began, and a page of those came back empty while the real ticket sat on a later page. */
Test(api_accounts, replayed_and_refused_bookings_file_nothing_in_the_buyers_list)
{
    char show[32], hold[64], released[64], sub[48];
    snprintf(sub, sizeof sub, "retrier%ld", (long)time(NULL) % 100000);
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    e2e_hold(show, sub, "[\"A1\"]", hold, sizeof hold);
    for (int i = 0; i < 4; i++) /* the first books, the others are answered the same booking */
        cr_assert_eq(book_as(sub, hold), 201, "attempt %d", i + 1);
    e2e_hold(show, sub, "[\"A2\"]", released, sizeof released);
    e2e_release(sub, released);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(book_as(sub, released), 409, "a released hold cannot be booked");

    e2e_res_t res;
    seatd_redis_t *c = e2e_redis();
    redisReply *r = seatd_redis_command(c, "ZCARD {u:%s}:bookings", sub);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    cr_assert_eq(r->integer, 1, "one booking began, one entry (%lld)", r->integer);
    freeReplyObject(r);
    seatd_redis_free(c);
    cr_assert_eq(e2e_call("GET", "/v1/me/bookings?limit=1", sub, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(res.json, "bookings");
    cr_assert_eq(cJSON_GetArraySize(list), 1, "%s", res.http.body);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res.json, "nextCursor")));
    e2e_res_free(&res);
}

/* The holds index keeps an entry per hold made, and /v1/me/holds reads the newest 50 a round:
 * a live hold behind 120 newer entries of holds no longer there was missing from the list.
 * Now a round that finds dead entries removes them and reads on; a release removes its own. */
Test(api_accounts, a_live_hold_behind_many_dead_entries_is_still_listed)
{
    char show[32], live[64], gone[64], sub[48];
    snprintf(sub, sizeof sub, "churner%ld", (long)time(NULL) % 100000);
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    e2e_hold(show, sub, "[\"A1\"]", live, sizeof live);
    e2e_hold(show, sub, "[\"A2\"]", gone, sizeof gone);
    e2e_release(sub, gone);

    seatd_redis_t *c = e2e_redis();
    /* The release takes its hold out of the index right after it answers (not waited for:
     * holds.c), so the entry goes within moments, not necessarily before the 200. */
    redisReply *r = NULL;
    for (int tries = 0; tries < 200; tries++) {
        r = seatd_redis_command(c, "ZSCORE {u:%s}:holds %s", sub, gone);
        if (!r || r->type == REDIS_REPLY_NIL)
            break;
        freeReplyObject(r);
        r = NULL;
        usleep(10 * 1000);
    }
    cr_assert(r && r->type == REDIS_REPLY_NIL, "a release takes its hold out of the index");
    freeReplyObject(r);
    r = seatd_redis_command(c, "ZSCORE {u:%s}:holds %s", sub, live);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    long long score = atoll(r->str);
    freeReplyObject(r);
    for (int i = 1; i <= 120; i++) { /* holds that expired and were reaped: newer entries */
        r = seatd_redis_command(c, "ZADD {u:%s}:holds %lld %s-h%020x", sub, score + i, show, i);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }

    e2e_res_t res;
    cr_assert_eq(e2e_call("GET", "/v1/me/holds", sub, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    const cJSON *holds = cJSON_GetObjectItemCaseSensitive(res.json, "holds");
    cr_assert_eq(cJSON_GetArraySize(holds), 1, "%s", res.http.body);
    cr_assert_str_eq(cJSON_GetStringValue(
                         cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(holds, 0), "holdId")),
                     live);
    e2e_res_free(&res);
    for (int waited = 0; waited < 2000; waited += 20) { /* the removal is not waited for */
        r = seatd_redis_command(c, "ZCARD {u:%s}:holds", sub);
        long long n = r ? r->integer : -1;
        freeReplyObject(r);
        if (n == 1)
            break;
        usleep(20000);
    }
    r = seatd_redis_command(c, "ZCARD {u:%s}:holds", sub);
    cr_assert_eq(r->integer, 1, "the dead entries were removed, the live one kept");
    freeReplyObject(r);
    seatd_redis_free(c);
}

/* ------------------------------------------------------------------ refresh, logout */

Test(api_accounts, refresh_rotates_and_a_replay_revokes_the_whole_family)
{
    char email[128];
    fresh_email("replay", email, sizeof email);
    register_at(NULL, NULL, email);
    pair_t p1, p2, p3;
    login(email, &p1);
    cr_assert_eq(refresh(p1.refresh, &p2, NULL), 200);
    cr_assert_str_neq(p2.refresh, p1.refresh);
    cr_assert_str_eq(p2.user, p1.user);
    cr_assert_eq(refresh(p2.refresh, &p3, NULL), 200);
    /* p1's token again: a replay. 401, and the live token of the family dies with it. */
    e2e_res_t res;
    cr_assert_eq(refresh(p1.refresh, NULL, &res), 401);
    cr_assert_str_eq(type_of(&res), "invalid-refresh-token");
    e2e_res_free(&res);
    cr_assert_eq(refresh(p3.refresh, NULL, NULL), 401);
    /* A new login is a new family. */
    pair_t q1, q2;
    login(email, &q1);
    cr_assert_eq(refresh(q1.refresh, &q2, NULL), 200);
    /* Malformed tokens are 400, unknown well-formed ones 401. */
    char bad[200];
    snprintf(bad, sizeof bad, "%s", q2.refresh);
    bad[strlen(bad) - 3] = bad[strlen(bad) - 3] == 'A' ? 'B' : 'A';
    cr_assert_eq(refresh(bad, NULL, NULL), 401);
    cr_assert_eq(refresh("not-a-token", NULL, NULL), 400);
}

Test(api_accounts, logout_revokes_the_family)
{
    char email[128], body[256];
    fresh_email("logout", email, sizeof email);
    register_at(NULL, NULL, email);
    pair_t p, p2;
    login(email, &p);
    cr_assert_eq(refresh(p.refresh, &p2, NULL), 200);
    snprintf(body, sizeof body, "{\"refreshToken\":\"%s\"}", p2.refresh);
    e2e_res_t res;
    post(NULL, NULL, "/v1/auth/logout", body, &res);
    cr_assert_eq(res.http.status, 204);
    e2e_res_free(&res);
    cr_assert_eq(refresh(p2.refresh, NULL, NULL), 401);
    post(NULL, NULL, "/v1/auth/logout", body, &res); /* twice: still 204 */
    cr_assert_eq(res.http.status, 204);
    e2e_res_free(&res);
}

/* ---------------------------------------------------------------------- throttling */

Test(api_accounts, failed_logins_of_one_account_are_throttled_with_retry_after)
{
    char host[512], addr[32], email[128], body[512];
    worker_host(host, sizeof host);
    fresh_addr(addr, sizeof addr);
    fresh_email("throttle", email, sizeof email);
    register_at(host, addr, email);
    e2e_res_t res;
    creds(body, sizeof body, email, "wrong password!");
    for (int i = 0; i < 5; i++) {
        post(host, addr, "/v1/auth/login", body, &res);
        cr_assert_eq(res.http.status, 401, "attempt %d: %d", i + 1, res.http.status);
        e2e_res_free(&res);
    }
    post(host, addr, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 429);
    const char *ra = seatd_test_http_header(&res.http, "Retry-After");
    cr_assert_not_null(ra);
    cr_assert(atoi(ra) >= 1 && atoi(ra) <= 900, "Retry-After %s", ra);
    e2e_res_free(&res);
    /* Even the right password waits now (the limit is on the account, not the guess)... */
    creds(body, sizeof body, email, PASSWORD);
    post(host, addr, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 429);
    e2e_res_free(&res);
    /* ... from this address: the owner elsewhere signs in (five wrong passwords from anyone
     * used to lock the owner out for 15 minutes). */
    char other[32];
    fresh_addr(other, sizeof other);
    post(host, other, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 200, "%d %s", res.http.status, res.http.body);
    e2e_res_free(&res);
}

/* Wrong passwords spread over many addresses stop at the email's total
 * (--login-fails-per-account-total; tests/e2e/run sets it low): then every address waits. */
Test(api_accounts, failed_logins_spread_over_addresses_stop_at_the_accounts_total)
{
    const char *cap_env = getenv("SEATD_LOGIN_FAILS_PER_ACCOUNT_TOTAL");
    int cap = cap_env ? atoi(cap_env) : 100;
    cr_assert(cap >= 1 && cap <= 200);
    char host[512], addr[32], email[128], body[512];
    worker_host(host, sizeof host);
    fresh_addr(addr, sizeof addr);
    fresh_email("spread", email, sizeof email);
    register_at(host, addr, email);
    creds(body, sizeof body, email, "wrong password!");
    e2e_res_t res;
    for (int i = 0; i < cap; i++) {
        if (i % 4 == 0) /* four from each address: under the per-address five */
            fresh_addr(addr, sizeof addr);
        post(host, addr, "/v1/auth/login", body, &res);
        cr_assert_eq(res.http.status, 401, "attempt %d: %d", i + 1, res.http.status);
        e2e_res_free(&res);
    }
    fresh_addr(addr, sizeof addr);
    creds(body, sizeof body, email, PASSWORD);
    post(host, addr, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 429, "the total reached: a fresh address waits too");
    cr_assert_not_null(seatd_test_http_header(&res.http, "Retry-After"));
    e2e_res_free(&res);
}

Test(api_accounts, login_attempts_from_one_address_are_throttled_with_retry_after)
{
    char host[512], addr[32], email[128], body[512];
    worker_host(host, sizeof host);
    fresh_addr(addr, sizeof addr);
    e2e_res_t res;
    int refused = 0, i;
    for (i = 0; i < 40 && !refused; i++) {
        fresh_email("nobody", email, sizeof email);
        creds(body, sizeof body, email, PASSWORD);
        post(host, addr, "/v1/auth/login", body, &res);
        if (res.http.status == 429) {
            refused = 1;
            const char *ra = seatd_test_http_header(&res.http, "Retry-After");
            cr_assert(ra && atoi(ra) >= 1 && atoi(ra) <= 60, "Retry-After %s", ra ? ra : "-");
        } else {
            cr_assert_eq(res.http.status, 401, "attempt %d: %d", i + 1, res.http.status);
        }
        e2e_res_free(&res);
    }
    cr_assert(refused, "no 429 after %d attempts", i);
    cr_assert_eq(i, 31, "the 31st attempt of a minute is the first refused, not the %dth", i);
    /* Another address is not affected. */
    char other[32];
    fresh_addr(other, sizeof other);
    post(host, other, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 401);
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ no enumeration */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Logs in with 'body' through nginx: the time taken; the status and body into 'status' and
 * 'text' (copied with the "instance" member, the same path for both). */
static double timed_login(const char *body, int *status, char *text, size_t n)
{
    e2e_res_t res;
    double t0 = now_s();
    post(NULL, NULL, "/v1/auth/login", body, &res);
    double dt = now_s() - t0;
    *status = res.http.status;
    snprintf(text, n, "%s", res.http.body ? res.http.body : "");
    e2e_res_free(&res);
    return dt;
}

Test(api_accounts, unknown_email_and_wrong_password_look_the_same)
{
    enum { N = 5 };
    char known[128], body[512], unknown[128];
    fresh_email("enum", known, sizeof known);
    register_at(NULL, NULL, known);
    double t_unknown[N], t_wrong[N];
    char text_unknown[1024] = "", text_wrong[1024] = "", text[1024];
    int status;
    for (int i = 0; i < N; i++) {
        fresh_email("ghost", unknown, sizeof unknown);
        creds(body, sizeof body, unknown, PASSWORD);
        t_unknown[i] = timed_login(body, &status, text, sizeof text);
        cr_assert_eq(status, 401);
        if (i == 0)
            snprintf(text_unknown, sizeof text_unknown, "%s", text);
        creds(body, sizeof body, known, "not the password");
        t_wrong[i] = timed_login(body, &status, text, sizeof text);
        cr_assert_eq(status, 401);
        if (i == 0)
            snprintf(text_wrong, sizeof text_wrong, "%s", text);
    }
    cr_assert_str_eq(text_unknown, text_wrong, "the answers differ");
    cr_assert(strstr(text_wrong, "invalid-credentials"));
    qsort(t_unknown, N, sizeof(double), cmp_double);
    qsort(t_wrong, N, sizeof(double), cmp_double);
    double mu = t_unknown[N / 2], mw = t_wrong[N / 2];
    cr_log_info("login medians: unknown email %.1f ms, wrong password %.1f ms", mu * 1e3, mw * 1e3);
    cr_assert(mu < 3 * mw && mw < 3 * mu, "medians %.1f ms vs %.1f ms", mu * 1e3, mw * 1e3);
    /* Both paths do the hashing work: neither is a fast path. */
    cr_assert(mu > 0.002 && mw > 0.002, "medians %.2f ms vs %.2f ms", mu * 1e3, mw * 1e3);
}

/* ----------------------------------------------------------------------- bad input */

/* Keys of accounts anywhere in the stack: the email index, users, login/register counters. */
static long account_keys(void)
{
    int ports[16];
    int n = e2e_redis_ports(ports, 16);
    long total = 0;
    for (int i = 0; i < n; i++) {
        redisContext *c = e2e_redis_node(ports[i]);
        if (c == NULL)
            continue;
        if (e2e_redis_node_is_primary(c)) {
            const char *patterns[] = {"seatd:email:*", "{u:*", "seatd:register:*"};
            for (int k = 0; k < 3; k++) {
                redisReply *r = redisCommand(c, "KEYS %s", patterns[k]);
                if (r && r->type == REDIS_REPLY_ARRAY)
                    total += (long)r->elements;
                freeReplyObject(r);
            }
        }
        redisFree(c);
    }
    return total;
}

Test(api_accounts, bad_input_is_400_and_changes_nothing)
{
    char email[128], body[2048], longpw[700];
    fresh_email("bad", email, sizeof email);
    memset(longpw, 'x', 600);
    longpw[600] = '\0';
    char pw129[140];
    memset(pw129, 'y', 129);
    pw129[129] = '\0';
    char longemail[400];
    memset(longemail, 'a', 330);
    strcpy(longemail + 330, "@example.com");
    long before = account_keys();
    struct {
        const char *path, *body, *type;
    } cases[] = {
        {"/v1/auth/register", "[1,2]", "malformed-json"},
        {"/v1/auth/register", "{\"email\":", "malformed-json"},
        {"/v1/auth/register", "{\"email\":42,\"password\":\"" PASSWORD "\"}", "bad-request"},
        {"/v1/auth/register", "{\"email\":\"not-an-email\",\"password\":\"" PASSWORD "\"}",
         "bad-request"},
        {"/v1/auth/register", "{\"email\":\"a@b@c.com\",\"password\":\"" PASSWORD "\"}",
         "bad-request"},
        {"/v1/auth/register", NULL, "bad-request"}, /* short password, built below */
        {"/v1/auth/register", NULL, "bad-request"}, /* 129 characters */
        {"/v1/auth/register", NULL, "bad-request"}, /* over 512 bytes */
        {"/v1/auth/register", NULL, "bad-request"}, /* overlong email */
        {"/v1/auth/register", NULL, "weak-password"},
        {"/v1/auth/register", "{\"password\":\"" PASSWORD "\"}", "bad-request"},
        {"/v1/auth/login", "{\"email\":\"x\",\"password\":\"" PASSWORD "\"}", "bad-request"},
        {"/v1/auth/login", "{\"email\":[],\"password\":1}", "bad-request"},
        {"/v1/auth/refresh", "{}", "bad-request"},
        {"/v1/auth/refresh", "{\"refreshToken\":\"{u:x}.abc\"}", "bad-request"},
        {"/v1/auth/logout", "{\"refreshToken\":7}", "bad-request"},
    };
    char bodies[5][1024];
    snprintf(bodies[0], sizeof bodies[0], "{\"email\":\"%s\",\"password\":\"short\"}", email);
    snprintf(bodies[1], sizeof bodies[1], "{\"email\":\"%s\",\"password\":\"%s\"}", email, pw129);
    snprintf(bodies[2], sizeof bodies[2], "{\"email\":\"%s\",\"password\":\"%s\"}", email, longpw);
    snprintf(bodies[3], sizeof bodies[3], "{\"email\":\"%s\",\"password\":\"%s\"}", longemail,
             PASSWORD);
    snprintf(bodies[4], sizeof bodies[4], "{\"email\":\"%s\",\"password\":\"Password1\"}", email);
    for (int i = 5, k = 0; i <= 9; i++, k++)
        cases[i].body = bodies[k];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        e2e_res_t res;
        snprintf(body, sizeof body, "%s", cases[i].body);
        post(NULL, NULL, cases[i].path, body, &res);
        cr_assert_eq(res.http.status, 400, "case %zu (%s %s): %d %s", i, cases[i].path, body,
                     res.http.status, res.http.body);
        cr_assert_str_eq(type_of(&res), cases[i].type, "case %zu: %s", i, res.http.body);
        e2e_res_free(&res);
    }
    e2e_res_t res;
    cr_assert_eq(account_keys(), before, "bad input wrote account keys");

    /* The email is unique whatever its case: 409 email-taken. */
    register_at(NULL, NULL, email);
    char upper[128];
    snprintf(upper, sizeof upper, "%s", email);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 32);
    creds(body, sizeof body, upper, PASSWORD);
    post(NULL, NULL, "/v1/auth/register", body, &res);
    cr_assert_eq(res.http.status, 409);
    cr_assert_str_eq(type_of(&res), "email-taken");
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ operators' accounts */

Test(api_accounts, seatctl_creates_an_admin_who_can_create_shows)
{
    char email[128], cmd[1024];
    fresh_email("admin", email, sizeof email);
    snprintf(cmd, sizeof cmd,
             "printf '%%s\\n' '" PASSWORD "' | SEATD_URL=http://127.0.0.1:%d %s/seatctl user "
             "create --email %s --password-stdin --admin",
             e2e_port(), getenv("SEATD_BUILD_DIR"), email);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char out[256] = "";
    cr_assert_not_null(fgets(out, sizeof out, f));
    cr_assert_eq(pclose(f), 0);
    cr_assert(out[0] == 'u' && strlen(out) == 22, "seatctl printed '%s'", out);
    pair_t p;
    login(email, &p);
    const char *layout = "{\"title\":\"admin show\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                         "\"priceTiers\":{\"standard\":1000},\"seats\":[{\"id\":\"A1\",\"row\":"
                         "\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1}]}";
    e2e_res_t res;
    call_as(&p, "POST", "/v1/shows", layout, &res);
    cr_assert_eq(res.http.status, 201, "%s", res.http.body);
    e2e_res_free(&res);
    /* A buyer's account is not an admin. */
    char buyer[128];
    fresh_email("buyer", buyer, sizeof buyer);
    register_at(NULL, NULL, buyer);
    pair_t b;
    login(buyer, &b);
    call_as(&b, "POST", "/v1/shows", layout, &res);
    cr_assert_eq(res.http.status, 403);
    e2e_res_free(&res);
}

/* ----------------------------------------------------------- clients that leave early */

Test(api_accounts, clients_leaving_while_their_password_hashes_leave_the_worker_serving)
{
    char host[512], addr[32], email[128], body[512], req[1024];
    worker_host(host, sizeof host);
    fresh_addr(addr, sizeof addr);
    fresh_email("gone", email, sizeof email);
    register_at(host, addr, email);
    /* Each request is sent and its connection closed at once, while the worker hashes or
     * verifies on its thread pool: the work completes for nobody, and nothing breaks. */
    for (int i = 0; i < 12; i++) {
        char other[128];
        fresh_email("gone-reg", other, sizeof other);
        creds(body, sizeof body, i % 2 ? email : other, i % 3 ? PASSWORD : "wrong password!");
        snprintf(req, sizeof req,
                 "POST %s HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: %s\r\nContent-Type: "
                 "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                 i % 2 ? "/v1/auth/login" : "/v1/auth/register", addr, strlen(body), body);
        size_t len = 0;
        free(seatd_test_http_raw(host, 0, req, strlen(req), 1, &len));
    }
    usleep(500 * 1000); /* the pool finishes what it was given */
    char fresh[32];
    fresh_addr(fresh, sizeof fresh);
    creds(body, sizeof body, email, PASSWORD);
    e2e_res_t res;
    post(host, fresh, "/v1/auth/login", body, &res);
    cr_assert_eq(res.http.status, 200, "%d %s", res.http.status, res.http.body);
    e2e_res_free(&res);
    cr_assert_eq(e2e_wait_workers_ready(5000), 0);
}
