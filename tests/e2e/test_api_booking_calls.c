/*
 * End-to-end: what a booking costs Redis. A booking awaits at most 5 Redis calls (issue 29):
 * book_begin prices the hold itself and book_confirm answers the whole booking, so the
 * worker reads neither the hold, nor the show, nor the booking again. Counted with MONITOR on
 * the stack's Redis: the FCALLs that name the booking, its hold or its buyer, from the
 * request to its answer (seatd-notify files the index entry with a plain ZADD, the
 * reconciler and the sweeper name shows, not bookings: none of theirs is counted). The decline
 * counters given back once the card is approved (seatd_attempt ... "give") are sent without
 * waiting for their answer, so they are listed but not counted.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_exit.h"
#include "e2e.h"

TestSuite(api_booking_calls, .timeout = 60);

typedef struct {
    pid_t pid;
    char path[64]; /* the commands Redis ran, one per line */
} monitor_t;

/* Starts a child that writes every command the stack's Redis runs to a file; returns when
 * MONITOR is on. */
static void monitor_start(monitor_t *m)
{
    int ports[8];
    cr_assert_geq(e2e_redis_ports(ports, 8), 1);
    snprintf(m->path, sizeof(m->path), "/tmp/seatd-monitor-XXXXXX");
    int fd = mkstemp(m->path);
    cr_assert_geq(fd, 0);
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    m->pid = fork();
    cr_assert_geq(m->pid, 0);
    if (m->pid == 0) {
        redisContext *c = e2e_redis_node(ports[0]);
        redisReply *r = c ? redisCommand(c, "MONITOR") : NULL;
        int ok = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (write(ready[1], ok ? "1" : "0", 1) != 1 || !ok)
            seatd_test_child_exit(1);
        FILE *f = fdopen(fd, "w");
        void *reply = NULL;
        while (redisGetReply(c, &reply) == REDIS_OK) {
            r = reply;
            if (r->type == REDIS_REPLY_STATUS)
                fprintf(f, "%s\n", r->str);
            fflush(f);
            freeReplyObject(r);
        }
        seatd_test_child_exit(0);
    }
    close(fd);
    char ok = 0;
    cr_assert_eq(read(ready[0], &ok, 1), 1);
    cr_assert_eq(ok, '1', "MONITOR refused");
    close(ready[0]);
    close(ready[1]);
}

/* Stops the child; returns the FCALLs it saw that name any of 'names' (NULL-terminated),
 * printing each. */
static int monitor_count(monitor_t *m, const char *const *names)
{
    usleep(100 * 1000); /* the last lines reach the file */
    kill(m->pid, SIGTERM);
    waitpid(m->pid, NULL, 0);
    FILE *f = fopen(m->path, "r");
    cr_assert_not_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "\"FCALL\"") == NULL && strstr(line, "\"fcall\"") == NULL)
            continue;
        if (strstr(line, "\"seatd_attempt\"") && strstr(line, "\"give\"")) {
            cr_log_info("redis call, not awaited: %.200s", line);
            continue;
        }
        for (const char *const *p = names; *p; p++) {
            if (strstr(line, *p)) {
                n++;
                cr_log_info("redis call %d: %.200s", n, line);
                break;
            }
        }
    }
    fclose(f);
    unlink(m->path);
    return n;
}

/* Books hold 'hold_id' of 'sub' with tok_ok ('key': an Idempotency-Key, or NULL) and returns
 * the FCALLs the booking made, its id in 'bid' (64 bytes). */
static int booking_calls(const char *sub, const char *hold_id, const char *key, char *bid)
{
    char body[256], hdr[128] = "";
    snprintf(body, sizeof(body), "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    if (key)
        snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s\r\n", key);
    monitor_t m;
    monitor_start(&m);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, key ? hdr : NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    cr_assert_gt(e2e_num(&res, "amount"), 0);
    snprintf(bid, 64, "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
    char user[96];
    snprintf(user, sizeof(user), "{u:%s}", sub);
    const char *names[] = {hold_id, bid, user, sub, NULL};
    return monitor_count(&m, names);
}

Test(api_booking_calls, a_booking_awaits_at_most_five_redis_calls)
{
    if (e2e_cluster())
        cr_skip_test("MONITOR watches one Redis: counted on the single-node stack");
    char show[32], hold[64], bid[64], sub[64];
    cr_assert_eq(e2e_create_show(1, 8, 300, show), 0);
    snprintf(sub, sizeof(sub), "calls-%d", (int)getpid());

    e2e_hold(show, sub, "[\"A1\",\"A2\"]", hold, sizeof(hold));
    int plain = booking_calls(sub, hold, NULL, bid);
    cr_log_info("a booking without an idempotency key: %d awaited Redis calls", plain);
    cr_expect_leq(plain, 5, "a booking made %d Redis calls", plain);
    cr_expect_geq(plain, 3, "begin, the buyer's index, confirm: %d seen", plain);

    char key[64];
    snprintf(key, sizeof(key), "calls-key-%d", (int)getpid());
    e2e_hold(show, sub, "[\"A3\",\"A4\"]", hold, sizeof(hold));
    int keyed = booking_calls(sub, hold, key, bid);
    cr_log_info("a booking with an idempotency key: %d awaited Redis calls", keyed);
    cr_expect_leq(keyed, 5, "a booking with an idempotency key made %d Redis calls", keyed);
}
