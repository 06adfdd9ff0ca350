/*
 * End-to-end: bookings that survive payment failures (issue 5), against the real gateway.
 * tests/e2e/run starts the workers with a 1.5 s payment timeout (reconciliation after 3 s)
 * and the gateway with tok_slow taking 0.8 s.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "child_exit.h"
#include "e2e.h"
#include "domain/ticket.h"

TestSuite(api_bookings, .timeout = 90);

/* ------------------------------------------------------------------ helpers */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void hold_seats(const char *show, const char *sub, const char *seats_json, char *hold_id)
{
    e2e_hold(show, sub, seats_json, hold_id, 64);
}

/* POST /v1/bookings; returns -1 when no answer came. */
static int book(const char *hold_id, const char *sub, const char *token, const char *extra,
                e2e_res_t *res)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"%s\"}", hold_id, token);
    return e2e_call("POST", "/v1/bookings", sub, body, extra, res);
}

static void get_booking(const char *bid, const char *sub, e2e_res_t *res)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/bookings/%s", bid);
    cr_assert_eq(e2e_call("GET", path, sub, NULL, NULL, res), 0);
    cr_assert_eq(res->http.status, 200, "%.*s", (int)res->http.body_len, res->http.body);
}

static double num(const e2e_res_t *res, const char *name)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res->json, name));
}

/* Polls GET /v1/bookings/{id} until its status is not 'from' (or 'ms' pass); the booking's
 * final status is copied into 'out' (32 bytes). */
static void wait_leaves(const char *bid, const char *sub, const char *from, long ms, char *out)
{
    for (long waited = 0;; waited += 200) {
        e2e_res_t res;
        get_booking(bid, sub, &res);
        snprintf(out, 32, "%s", e2e_str(&res, "status"));
        e2e_res_free(&res);
        if (strcmp(out, from) != 0 || waited >= ms)
            return;
        sleep_ms(200);
    }
}

/* The gateway's counts for idempotency key 'key' (the booking id). */
static void gateway_counts(const char *key, long *charges, long *refunds, long *refunded)
{
    seatd_test_http_response_t http;
    const char *port = getenv("SEATD_E2E_GATEWAY_PORT");
    cr_assert_not_null(port);
    cr_assert_eq(
        seatd_test_http_request("127.0.0.1", atoi(port), "GET", "/v1/stats", NULL, NULL, 0, &http),
        0);
    cJSON *j = cJSON_ParseWithLength(http.body, http.body_len);
    const cJSON *k =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "byKey"), key);
    *charges = k ? (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(k, "charges")) : 0;
    *refunds = k ? (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(k, "refunds")) : 0;
    *refunded =
        k ? (long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(k, "refundedAmount")) : 0;
    cJSON_Delete(j);
    seatd_test_http_response_free(&http);
}

/* The seat map at least at the show's current version (whoever made the last change: this
 * test, a worker's payment step or the reconciler), so no cache can hide it. */
static void seat_map(const char *show, e2e_res_t *res)
{
    cr_assert_eq(e2e_seat_map(show, e2e_show_version(show), res), 0);
    cr_assert_eq(res->http.status, 200);
}

static const char *seat_status(const e2e_res_t *map, const char *seat)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(map->json, "seats"), seat);
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* The booking id the hold names, read from Redis (works while no worker runs). */
static void booking_of_hold(const char *show, const char *hold_id, char *bid)
{
    seatd_redis_t *c = e2e_redis();
    redisReply *r = seatd_redis_command(c, "HGET {s:%s}:hold:%s bookingId", show, hold_id);
    snprintf(bid, 64, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    seatd_redis_free(c);
    cr_assert(bid[0], "the hold names its booking");
    c = e2e_redis();
    r = seatd_redis_command(c, "HGET {s:%s}:booking:%s status", show, bid);
    cr_assert(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "PENDING_PAYMENT") == 0,
              "the worker died before it could settle the booking");
    freeReplyObject(r);
    seatd_redis_free(c);
}

/* The gateway's answer status to a lookup of 'key' (200 charged, 404 none, 409 processing). */
static int gateway_lookup_status(const char *key)
{
    char path[160];
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", key);
    seatd_test_http_response_t http;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", atoi(getenv("SEATD_E2E_GATEWAY_PORT")), "GET",
                                         path, NULL, NULL, 0, &http),
                 0);
    int status = http.status;
    seatd_test_http_response_free(&http);
    return status;
}

/* Waits (deadline 20 s) until the hold names a booking and the gateway answers a lookup of
 * it with one of 'want_a' or 'want_b': the payment reached the gateway. The booking id is
 * copied into 'bid' (64 bytes). */
static void wait_charge_at_gateway(const char *show, const char *hold_id, int want_a, int want_b,
                                   char *bid)
{
    seatd_redis_t *c = e2e_redis();
    int status = 0;
    bid[0] = '\0';
    for (int waited = 0; waited < 20000; waited += 5) {
        if (!bid[0]) {
            redisReply *r = seatd_redis_command(c, "HGET {s:%s}:hold:%s bookingId", show, hold_id);
            if (r && r->type == REDIS_REPLY_STRING && r->len > 0)
                snprintf(bid, 64, "%s", r->str);
            freeReplyObject(r);
        }
        if (bid[0] && ((status = gateway_lookup_status(bid)) == want_a || status == want_b))
            break;
        sleep_ms(5);
    }
    seatd_redis_free(c);
    cr_assert(bid[0], "the hold names its booking");
    cr_assert(status == want_a || status == want_b, "the gateway got the charge (lookup %d)",
              status);
}

/* Forks a child that books 'hold_id' with 'token' and exits (its answer is not awaited). */
static pid_t book_in_child(const char *hold_id, const char *sub, const char *token)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        e2e_res_t res;
        book(hold_id, sub, token, NULL, &res);
        e2e_res_free(&res);
        seatd_test_child_exit(0);
    }
    return pid;
}

/* 1 while 'pid' runs (a zombie nobody reaped yet counts as gone). */
static int running(long pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* SIGKILLs every worker of the stack at once (from their pid files); returns how many. */
static int kill_workers(void)
{
    const char *run = getenv("SEATD_E2E_RUN");
    cr_assert_not_null(run);
    long pids[64];
    int n = 0;
    for (int i = 1; i <= 64; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/worker-%d.pid", run, i);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        long pid = 0;
        if (fscanf(f, "%ld", &pid) == 1 && pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
            pids[n++] = pid;
        fclose(f);
    }
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 250 && running(pids[i]); w++)
            sleep_ms(20);
    return n;
}

/* Starts the killed workers again with their recorded command lines (deploy/restart-worker). */
static void restart_workers(int n)
{
    for (int i = 1; i <= n; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "%s/deploy/restart-worker %d >/dev/null 2>&1", SEATD_SOURCE_DIR,
                 i);
        cr_assert_eq(system(cmd), 0, "restart worker %d", i);
    }
}

/* A worker restarted from a shell that has none of the stack's settings (no JWT secret, no
 * SEATD_HOLD_RATE_PER_USER=0 that tests/e2e/run gave deploy/up): deploy/restart-worker starts
 * it as deploy/up did, with the stack's secret and settings. Before, it did not start at all
 * without the secret, and with it ran on the defaults (30 holds a minute per user). */
Test(api_bookings, a_worker_restarted_from_a_bare_shell_runs_with_the_stacks_settings)
{
    char show[32];
    cr_assert_eq(e2e_create_show(1, 4, 300, show), 0);
    int n = kill_workers();
    cr_assert(n >= 1);
    const char *run = getenv("SEATD_E2E_RUN");
    for (int i = 1; i <= n; i++) {
        char cmd[1024];
        snprintf(
            cmd, sizeof(cmd),
            "env -i PATH=\"$PATH\" SEATD_RUN_DIR='%s' %s/deploy/restart-worker %d >/dev/null 2>&1",
            run, SEATD_SOURCE_DIR, i);
        cr_assert_eq(system(cmd), 0, "restart worker %d from a bare shell", i);
    }
    cr_assert_eq(e2e_wait_workers_ready(15000), 0);
    char path[64], body[] = "{\"seatIds\":[\"A1\"]}";
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    for (int i = 0; i < 40; i++) { /* past the default's 30: the stack's limit is none */
        e2e_res_t res;
        cr_assert_eq(e2e_call("POST", path, "rhea", body, NULL, &res), 0);
        cr_assert_eq(res.http.status, 201, "hold %d: %d %.*s", i + 1, res.http.status,
                     (int)res.http.body_len, res.http.body);
        char release[96];
        snprintf(release, sizeof(release), "/v1/holds/%s", e2e_str(&res, "holdId"));
        e2e_res_free(&res);
        cr_assert_eq(e2e_call("DELETE", release, "rhea", NULL, NULL, &res), 0);
        cr_assert_eq(res.http.status, 200, "release %d", i + 1);
        e2e_res_free(&res);
    }
}

/* The IETF draft's Idempotency-Key on bookings: the same key and body answer the same
 * booking; the same key with another hold is 422 and buys nothing (it was ignored: a second
 * purchase, charged). */
Test(api_bookings, one_idempotency_key_buys_once_and_refuses_another_hold)
{
    char show[32], h1[64], h2[64], b1[64], path[96];
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    hold_seats(show, "ida", "[\"A1\"]", h1);
    hold_seats(show, "ida", "[\"A2\"]", h2);
    char key[64], hdr[96];
    snprintf(key, sizeof(key), "buy-%s-once", show);
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s\r\n", key);
    e2e_res_t res;
    cr_assert_eq(book(h1, "ida", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(b1, sizeof(b1), "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    cr_assert_eq(book(h1, "ida", "tok_ok", hdr, &res), 0); /* a retry: the same booking */
    cr_assert_eq(res.http.status, 201);
    cr_assert_str_eq(e2e_str(&res, "bookingId"), b1);
    e2e_res_free(&res);
    cr_assert_eq(book(h2, "ida", "tok_ok", hdr, &res), 0); /* the key, another purchase */
    cr_assert_eq(res.http.status, 422, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "type"), "https://seatd.dev/problems/idempotency-key-reuse");
    e2e_res_free(&res);
    cr_assert_eq(book(h1, "ida", "tok_declined", hdr, &res), 0); /* ... or another card */
    cr_assert_eq(res.http.status, 422);
    e2e_res_free(&res);
    snprintf(path, sizeof(path), "/v1/holds/%s", h2);
    cr_assert_eq(e2e_call("GET", path, "ida", NULL, NULL, &res), 0);
    cr_assert_str_eq(e2e_str(&res, "status"), "HELD", "nothing was done to the second hold");
    e2e_res_free(&res);
    /* the key is the buyer's own: another buyer may use the same one */
    char h3[64];
    hold_seats(show, "ivo", "[\"A3\"]", h3);
    cr_assert_eq(book(h3, "ivo", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 201);
    e2e_res_free(&res);
}

/* A replay of a booking whose card was declined answers that decline (the same booking,
 * 402) instead of trying the card again as a new booking; another key may try again. */
Test(api_bookings, a_declined_booking_replayed_with_its_key_answers_the_same_decline)
{
    char show[32], h[64], first[64], hdr[96];
    cr_assert_eq(e2e_create_show(1, 4, 300, show), 0);
    hold_seats(show, "dora", "[\"A1\"]", h);
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: decline-%s\r\n", show);
    e2e_res_t res;
    cr_assert_eq(book(h, "dora", "tok_declined", hdr, &res), 0);
    cr_assert_eq(res.http.status, 402, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(first, sizeof(first), "%s", e2e_str(&res, "bookingId"));
    cr_assert(first[0]);
    e2e_res_free(&res);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(book(h, "dora", "tok_declined", hdr, &res), 0);
        cr_assert_eq(res.http.status, 402, "%.*s", (int)res.http.body_len, res.http.body);
        cr_assert_str_eq(e2e_str(&res, "bookingId"), first, "the first decline, not a new try");
        cr_assert_str_eq(e2e_str(&res, "declineCode"), "card_declined");
        cr_assert_str_eq(e2e_str(&res, "holdId"), h);
        e2e_res_free(&res);
    }
    /* without the key (or with another) the buyer tries again: a new booking */
    cr_assert_eq(book(h, "dora", "tok_declined", NULL, &res), 0);
    cr_assert_eq(res.http.status, 402);
    cr_assert_str_neq(e2e_str(&res, "bookingId"), first);
    e2e_res_free(&res);
    cr_assert_eq(book(h, "dora", "tok_ok", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
}

/* A refused request records nothing (docs/api.md): a booking refused before anything began (a
 * hold released, or one that does not exist) leaves its Idempotency-Key free for the
 * corrected request, which was a 422 idempotency-key-reuse for a day. A key that bought
 * something stays taken. */
Test(api_bookings, a_booking_refused_before_anything_began_leaves_its_key_free)
{
    char show[32], gone[64], live[64], hdr[96], path[96];
    cr_assert_eq(e2e_create_show(1, 4, 300, show), 0);
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: refused-%s\r\n", show);
    e2e_res_t res;
    hold_seats(show, "ezra", "[\"A1\"]", gone);
    snprintf(path, sizeof(path), "/v1/holds/%s", gone);
    cr_assert_eq(e2e_call("DELETE", path, "ezra", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    e2e_res_free(&res);
    cr_assert_eq(book(gone, "ezra", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 409, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    char missing[64];
    snprintf(missing, sizeof(missing), "%s-h00000000000000000000", show);
    cr_assert_eq(book(missing, "ezra", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 404, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);

    hold_seats(show, "ezra", "[\"A2\"]", live);
    cr_assert_eq(book(live, "ezra", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 201, "the corrected request: %.*s", (int)res.http.body_len,
                 res.http.body);
    char bid[64];
    snprintf(bid, sizeof(bid), "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    cr_assert_eq(book(live, "ezra", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 201, "a replay");
    cr_assert_str_eq(e2e_str(&res, "bookingId"), bid);
    e2e_res_free(&res);
    cr_assert_eq(book(gone, "ezra", "tok_ok", hdr, &res), 0);
    cr_assert_eq(res.http.status, 422, "the key bought something: another body is refused");
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ the tokens */

typedef struct {
    const char *token;
    int status;         /* the first answer */
    const char *final;  /* the booking's status in the end */
    const char *seat;   /* the seat's status in the map in the end */
    const char *reason; /* FAILED: the reason */
} token_case_t;

Test(api_bookings, every_test_token_ends_in_its_state_with_at_most_one_charge)
{
    static const token_case_t cases[] = {
        {"tok_ok", 201, "CONFIRMED", "booked", NULL},
        {"tok_declined", 402, "FAILED", "held", "card_declined"},
        {"tok_insufficient_funds", 402, "FAILED", "held", "insufficient_funds"},
        {"tok_unknown_card", 402, "FAILED", "held", "invalid_source"},
        {"tok_slow", 201, "CONFIRMED", "booked", NULL},
        {"tok_hang", 202, "CONFIRMED", "booked", NULL},               /* by reconciliation */
        {"tok_error_after_charge", 202, "CONFIRMED", "booked", NULL}, /* by reconciliation */
    };
    char show[32];
    cr_assert_eq(e2e_create_show(1, 10, 300, show), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const token_case_t *c = &cases[i];
        char seat[8], seats[16], hold_id[64], bid[64], status[32];
        snprintf(seat, sizeof(seat), "A%zu", i + 1);
        snprintf(seats, sizeof(seats), "[\"%s\"]", seat);
        hold_seats(show, "tina", seats, hold_id);
        e2e_res_t res;
        cr_assert_eq(book(hold_id, "tina", c->token, NULL, &res), 0);
        cr_assert_eq(res.http.status, c->status, "%s: %.*s", c->token, (int)res.http.body_len,
                     res.http.body);
        snprintf(bid, sizeof(bid), "%s", e2e_str(&res, "bookingId"));
        cr_assert(bid[0], "%s: the answer names the booking", c->token);
        if (c->status == 202) {
            const char *loc = seatd_test_http_header(&res.http, "location");
            cr_assert_not_null(loc, "%s: 202 has a Location to poll", c->token);
            cr_assert(strstr(loc, bid) != NULL);
            cr_assert_str_eq(e2e_str(&res, "status"), "PENDING_PAYMENT");
        }
        e2e_res_free(&res);
        wait_leaves(bid, "tina", "PENDING_PAYMENT", 15000, status);
        cr_assert_str_eq(status, c->final, "%s", c->token);
        get_booking(bid, "tina", &res);
        if (c->reason)
            cr_assert_str_eq(e2e_str(&res, "reason"), c->reason, "%s", c->token);
        e2e_res_free(&res);
        seat_map(show, &res);
        cr_assert_str_eq(seat_status(&res, seat), c->seat, "%s", c->token);
        e2e_res_free(&res);
        long charges, refunds, refunded;
        gateway_counts(bid, &charges, &refunds, &refunded);
        cr_assert_eq(charges, 1, "%s: one charge per booking", c->token);
        cr_assert_eq(refunds, 0, "%s", c->token);
    }
}

/* ------------------------------------------------------------------ worker killed */

Test(api_bookings, a_worker_killed_after_the_charge_is_reconciled_to_a_confirmed_booking)
{
    char show[32], hold_id[64], bid[64], status[32];
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    hold_seats(show, "kim", "[\"A1\",\"A2\"]", hold_id);
    pid_t child = book_in_child(hold_id, "kim", "tok_hang");
    /* The charge is in flight: the gateway recorded it, the answer hangs. */
    wait_charge_at_gateway(show, hold_id, 200, 200, bid);
    int n = kill_workers();
    cr_assert(n >= 1);
    waitpid(child, NULL, 0);
    booking_of_hold(show, hold_id, bid);

    /* Nothing runs now: the booking is PENDING, charged, with no worker waiting for it. */
    long charges, refunds, refunded;
    gateway_counts(bid, &charges, &refunds, &refunded);
    cr_assert_eq(charges, 1);

    restart_workers(n);
    wait_leaves(bid, "kim", "PENDING_PAYMENT", 20000, status);
    cr_assert_str_eq(status, "CONFIRMED", "reconciliation confirms a charged booking");
    gateway_counts(bid, &charges, &refunds, &refunded);
    cr_assert_eq(charges, 1);
    cr_assert_eq(refunds, 0);
    e2e_res_t res;
    seat_map(show, &res);
    cr_assert_str_eq(seat_status(&res, "A1"), "booked");
    cr_assert_str_eq(seat_status(&res, "A2"), "booked");
    e2e_res_free(&res);
    seatd_redis_t *c = e2e_redis();
    redisReply *r = seatd_redis_command(c, "ZCARD {s:%s}:pending", show);
    cr_assert_eq(r->integer, 0, "the pending index is empty");
    freeReplyObject(r);
    seatd_redis_free(c);
}

Test(api_bookings, a_charge_whose_seats_were_lost_is_refunded_and_the_booking_says_why)
{
    char show[32], hold_id[64], bid[64], status[32], other[64];
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    hold_seats(show, "lou", "[\"A3\"]", hold_id);
    pid_t child = book_in_child(hold_id, "lou", "tok_hang");
    wait_charge_at_gateway(show, hold_id, 200, 200, bid);
    int n = kill_workers();
    cr_assert(n >= 1);
    waitpid(child, NULL, 0);
    booking_of_hold(show, hold_id, bid);

    /* The payment window passes while no worker runs: the seat key expires and the hold is
     * due (as Redis would have it minutes later); then someone else takes the seat. */
    seatd_redis_t *c = e2e_redis();
    freeReplyObject(seatd_redis_command(c, "PEXPIRE {s:%s}:seat:A3 1", show));
    freeReplyObject(seatd_redis_command(c, "HSET {s:%s}:hold:%s expiresAt 1", show, hold_id));
    freeReplyObject(seatd_redis_command(c, "ZADD {s:%s}:expiry 1 %s", show, hold_id));
    for (int waited = 0; waited < 20000; waited += 5) { /* until the seat key is gone */
        redisReply *e = seatd_redis_command(c, "EXISTS {s:%s}:seat:A3", show);
        int gone = e && e->type == REDIS_REPLY_INTEGER && e->integer == 0;
        freeReplyObject(e);
        if (gone)
            break;
        sleep_ms(5);
    }
    redisReply *e = seatd_redis_command(c, "EXISTS {s:%s}:seat:A3", show);
    cr_assert(e && e->integer == 0, "the seat key expired");
    freeReplyObject(e);
    seatd_redis_free(c);
    restart_workers(n);
    hold_seats(show, "mia", "[\"A3\"]", other);

    wait_leaves(bid, "lou", "PENDING_PAYMENT", 20000, status);
    cr_assert_str_eq(status, "FAILED");
    e2e_res_t res;
    get_booking(bid, "lou", &res);
    cr_assert_str_eq(e2e_str(&res, "reason"), "seats_lost_refunded");
    cr_assert_str_eq(e2e_str(&res, "refundStatus"), "succeeded");
    double amount = num(&res, "amount");
    cr_assert_eq(num(&res, "refund"), amount);
    e2e_res_free(&res);
    long charges, refunds, refunded;
    gateway_counts(bid, &charges, &refunds, &refunded);
    cr_assert_eq(charges, 1);
    cr_assert_eq(refunds, 1, "no charge is left without a ticket or a refund");
    cr_assert_eq((double)refunded, amount);
    seat_map(show, &res);
    cr_assert_str_eq(seat_status(&res, "A3"), "held", "the seat is the other buyer's");
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ retry */

Test(api_bookings, a_retry_during_a_slow_payment_gets_the_same_answer_and_one_charge)
{
    char show[32], hold_id[64];
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    hold_seats(show, "ned", "[\"A4\"]", hold_id);
    const char *key = "Idempotency-Key: retry-slow-1\r\n";
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        e2e_res_t res;
        char line[160] = "none";
        if (book(hold_id, "ned", "tok_slow", key, &res) == 0)
            snprintf(line, sizeof(line), "%d %s", res.http.status, e2e_str(&res, "bookingId"));
        e2e_res_free(&res);
        ssize_t w = write(fds[1], line, strlen(line) + 1);
        seatd_test_child_exit(w > 0 ? 0 : 1);
    }
    close(fds[1]);
    /* Until the first request is paying: the gateway processes its charge (0.8 s; a poll
     * that comes late sees it done, and the retry must answer the same all the same). */
    char paying[64];
    wait_charge_at_gateway(show, hold_id, 409, 200, paying);
    e2e_res_t res;
    cr_assert_eq(book(hold_id, "ned", "tok_slow", key, &res), 0);
    char first[160] = "";
    ssize_t got = read(fds[0], first, sizeof(first) - 1);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    cr_assert(got > 0);
    char second[160];
    snprintf(second, sizeof(second), "%d %s", res.http.status, e2e_str(&res, "bookingId"));
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(second, first, "the retry answers what the first request answered");
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    long charges, refunds, refunded;
    gateway_counts(e2e_str(&res, "bookingId"), &charges, &refunds, &refunded);
    cr_assert_eq(charges, 1);
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ cancellation */

Test(api_bookings, cancelling_twice_refunds_once_and_puts_the_seats_back_on_sale)
{
    char show[32], hold_id[64], bid[64], path[96];
    cr_assert_eq(e2e_create_show(2, 4, 300, show), 0); /* starts in 2030: 100 % */
    hold_seats(show, "ora", "[\"B1\",\"B2\"]", hold_id);
    e2e_res_t res;
    cr_assert_eq(book(hold_id, "ora", "tok_ok", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(bid, sizeof(bid), "%s", e2e_str(&res, "bookingId"));
    double amount = num(&res, "amount");
    cr_assert_eq(amount, 3600);
    e2e_res_free(&res);
    seat_map(show, &res);
    double v0 = num(&res, "version");
    cr_assert_str_eq(seat_status(&res, "B1"), "booked");
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/bookings/%s", bid);
    cr_assert_eq(e2e_call("DELETE", path, "pat", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 404, "only the owner cancels");
    e2e_res_free(&res);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(e2e_call("DELETE", path, "ora", NULL, NULL, &res), 0);
        cr_assert_eq(res.http.status, 200, "%.*s", (int)res.http.body_len, res.http.body);
        cr_assert_str_eq(e2e_str(&res, "status"), "CANCELLED");
        cr_assert_eq(num(&res, "refund"), amount);
        cr_assert_str_eq(e2e_str(&res, "refundStatus"), "succeeded");
        e2e_res_free(&res);
    }
    long charges, refunds, refunded;
    gateway_counts(bid, &charges, &refunds, &refunded);
    cr_assert_eq(charges, 1);
    cr_assert_eq(refunds, 1, "two cancels, one refund");
    cr_assert_eq((double)refunded, amount);

    seat_map(show, &res);
    cr_assert_str_eq(seat_status(&res, "B1"), "available");
    cr_assert_str_eq(seat_status(&res, "B2"), "available");
    cr_assert(num(&res, "version") > v0, "the version moved, so deltas went out");
    e2e_res_free(&res);
    long keys, held, booked;
    e2e_show_counts(show, &keys, &held, &booked);
    cr_assert_eq(booked, 0);
    hold_seats(show, "pat", "[\"B1\"]", hold_id); /* on sale again */
}

/* Creates a show starting 'starts_in_s' from now with an optional refund policy JSON. */
static void create_show_starting(long starts_in_s, const char *policy, char *id)
{
    time_t t = time(NULL) + starts_in_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    char when[32], body[1024];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(body, sizeof(body),
             "{\"title\":\"soon\",\"startsAt\":\"%s\",\"holdTtlSeconds\":300,"
             "\"priceTiers\":{\"standard\":1000},%s%s%s\"seats\":["
             "{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},"
             "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":1}]}",
             when, policy ? "\"refundPolicy\":" : "", policy ? policy : "", policy ? "," : "");
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    snprintf(id, 32, "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);
}

static double book_and_cancel(const char *show, const char *sub)
{
    char hold_id[64], path[96];
    hold_seats(show, sub, "[\"A1\",\"A2\"]", hold_id);
    e2e_res_t res;
    cr_assert_eq(book(hold_id, sub, "tok_ok", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(path, sizeof(path), "/v1/bookings/%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    cr_assert_eq(e2e_call("DELETE", path, sub, NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    double refund = num(&res, "refund");
    e2e_res_free(&res);
    return refund;
}

Test(api_bookings, the_refund_follows_the_tiered_policy_on_time_before_the_show)
{
    char show[32];
    create_show_starting(3600, NULL, show); /* default: >= 30 min -> 50 % */
    cr_assert_eq(book_and_cancel(show, "quin"), 1000);
    create_show_starting(600, NULL, show); /* < 30 min -> 0 */
    cr_assert_eq(book_and_cancel(show, "quin"), 0);
    create_show_starting(3600,
                         "[{\"beforeSeconds\":86400,\"percent\":90},"
                         "{\"beforeSeconds\":0,\"percent\":25}]",
                         show);
    cr_assert_eq(book_and_cancel(show, "quin"), 500, "the show's own policy: 25 %%");

    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin",
                          "{\"title\":\"x\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                          "\"priceTiers\":{\"standard\":1},\"refundPolicy\":[{\"percent\":150}],"
                          "\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
                          "\"tier\":\"standard\",\"x\":1,\"y\":1}]}",
                          NULL, &res),
                 0);
    cr_assert_eq(res.http.status, 400, "a malformed policy is refused");
    e2e_res_free(&res);
}

/* ------------------------------------------------------------------ tickets */

static void verify(const char *token, e2e_res_t *res)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "token", token);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    cr_assert_eq(e2e_call("POST", "/v1/tickets/verify", NULL, body, NULL, res), 0);
    free(body);
    cr_assert_eq(res->http.status, 200, "%.*s", (int)res->http.body_len, res->http.body);
}

static int valid(const e2e_res_t *res)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res->json, "valid"));
}

Test(api_bookings, a_ticket_verifies_until_cancelled_and_a_forged_one_never)
{
    char show[32], hold_id[64], bid[64], token[1024], path[96];
    cr_assert_eq(e2e_create_show(1, 6, 300, show), 0);
    hold_seats(show, "ray", "[\"A5\",\"A6\"]", hold_id);
    e2e_res_t res;
    cr_assert_eq(book(hold_id, "ray", "tok_ok", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(bid, sizeof(bid), "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    get_booking(bid, "ray", &res);
    snprintf(token, sizeof(token), "%s", e2e_str(&res, "ticketToken"));
    cr_assert(token[0]);
    cr_assert(strncmp(e2e_str(&res, "qr"), "<svg", 4) == 0, "the QR code is an SVG");
    e2e_res_free(&res);

    verify(token, &res);
    cr_assert(valid(&res));
    cr_assert_str_eq(e2e_str(&res, "bookingId"), bid);
    cr_assert_str_eq(e2e_str(&res, "showId"), show);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.json, "seatIds")), 2);
    e2e_res_free(&res);

    /* Altered: another seat list under the same signature. */
    char altered[1024];
    snprintf(altered, sizeof(altered), "%s", token);
    char *seat = strstr(altered, "A6");
    cr_assert_not_null(seat);
    seat[1] = '4';
    verify(altered, &res);
    cr_assert_not(valid(&res));
    cr_assert_str_eq(e2e_str(&res, "reason"), "invalid_signature");
    e2e_res_free(&res);

    /* Forged: well formed, signed with a key derived from another secret. */
    unsigned char key[SEATD_TICKET_KEY_LEN];
    const char *wrong = "not-the-service-secret-not-the-service-secret";
    seatd_ticket_key(wrong, strlen(wrong), key);
    char *forged = seatd_ticket_sign(key, bid, "A5,A6");
    cr_assert_not_null(forged);
    verify(forged, &res);
    free(forged);
    cr_assert_not(valid(&res));
    e2e_res_free(&res);
    verify("garbage", &res);
    cr_assert_not(valid(&res));
    e2e_res_free(&res);

    snprintf(path, sizeof(path), "/v1/bookings/%s", bid);
    cr_assert_eq(e2e_call("DELETE", path, "ray", NULL, NULL, &res), 0);
    cr_assert_eq(res.http.status, 200);
    e2e_res_free(&res);
    verify(token, &res);
    cr_assert_not(valid(&res), "a cancelled booking's ticket no longer verifies");
    cr_assert_str_eq(e2e_str(&res, "reason"), "cancelled");
    e2e_res_free(&res);
}
