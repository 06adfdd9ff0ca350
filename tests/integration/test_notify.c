/*
 * Integration tests for tools/seatd-notify.c (issue 9): stream discovery pages through the
 * catalogue with no cap on the number of streams (it stopped silently at 4,096 before), and
 * forgets the streams of shows that left the catalogue once they are drained.
 *
 * The consumer is the real binary, run against the runner's redis-server with a small
 * --batch so the walk takes several pages; events are written straight into the streams as
 * book_confirm writes them.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_fixture.h"

#ifndef SEATD_NOTIFY_BIN
#error "SEATD_NOTIFY_BIN must name the seatd-notify binary (tests/CMakeLists.txt)"
#endif

#define SHOWS 4200 /* more than the old silent cap of 4,096 */

static void notify_init(void)
{
    seatd_test_redis_flushall();
}

TestSuite(notify, .init = notify_init, .timeout = 120);

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static pid_t start_notify(const char *log, const char *err)
{
    char redis[64];
    snprintf(redis, sizeof(redis), "127.0.0.1:%d", seatd_test_redis_port());
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        FILE *f = freopen(err, "w", stderr);
        (void)f;
        execl(SEATD_NOTIFY_BIN, SEATD_NOTIFY_BIN, "--redis", redis, "--group", "g1", "--consumer",
              "c1", "--log", log, "--refresh-ms", "20", "--batch", "500", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int stop_notify(pid_t pid)
{
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static long count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[4096];
    long n = 0;
    while (fgets(line, sizeof(line), f))
        if (needle == NULL || strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

/* Waits up to 'ms' for 'path' to hold at least 'want' lines (containing 'needle'). */
static long wait_lines(const char *path, const char *needle, long want, long ms)
{
    long n = 0;
    for (long waited = 0; waited <= ms; waited += 50) {
        n = count_lines(path, needle);
        if (n >= want)
            break;
        sleep_ms(50);
    }
    return n;
}

Test(notify, discovers_every_show_stream_beyond_4096_by_paging_and_forgets_pruned_ones)
{
    char dir[] = "/tmp/seatd-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char log[128], err[128];
    snprintf(log, sizeof(log), "%s/notifications.log", dir);
    snprintf(err, sizeof(err), "%s/notify.err", dir);

    redisContext *c = seatd_test_redis_connect();
    /* One command at a time: on a cluster the streams live on every shard, and
     * seatd_test_redis_command follows the redirections. */
    for (int i = 1; i <= SHOWS; i++) {
        redisReply *r = seatd_test_redis_command(c, "ZADD seatd:shows 1900000000000 %d", i);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", r ? r->str : c->errstr);
        freeReplyObject(r);
        r = seatd_test_redis_command(c,
                                     "XADD {s:%d}:bookings * type booking.confirmed bookingId "
                                     "%d-b01 showId %d owner u seatIds A1 amount 100 currency EUR",
                                     i, i, i);
        cr_assert(r && r->type == REDIS_REPLY_STRING, "%s", r ? r->str : c->errstr);
        freeReplyObject(r);
    }

    pid_t pid = start_notify(log, err);
    long n = wait_lines(log, NULL, SHOWS, 90000);
    cr_assert_eq(n, SHOWS, "one notification per show's event (%ld of %d)", n, SHOWS);
    char last[64];
    snprintf(last, sizeof(last), "\"eventId\":\"%d:", SHOWS);
    cr_assert_eq(count_lines(log, last), 1, "the 4,200th show's stream was read too");

    /* 100 shows leave the catalogue (as the sweeper prunes them): their drained streams are
     * forgotten at the end of the next walk. */
    for (int i = 1; i <= 100; i++)
        freeReplyObject(seatd_test_redis_command(c, "ZREM seatd:shows %d", i));
    cr_assert_eq(wait_lines(err, "forgot 100 streams", 1, 30000), 1);
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_eq(count_lines(log, NULL), SHOWS, "nothing sent twice");
    redisFree(c);
    unlink(log);
    unlink(err);
    rmdir(dir);
}

/* The outbox completes the buyers' indexes: every booking event is filed in its owner's
 * {u:<owner>}:bookings before it is sent (the worker queues that entry when the booking
 * begins but never waits for it), and an entry the worker already wrote keeps its score. */
Test(notify, files_every_booking_event_in_its_owners_index_keeping_earlier_entries)
{
    char dir[] = "/tmp/seatd-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char log[128], err[128];
    snprintf(log, sizeof(log), "%s/notifications.log", dir);
    snprintf(err, sizeof(err), "%s/notify.err", dir);

    redisContext *c = seatd_test_redis_connect();
    freeReplyObject(seatd_test_redis_command(c, "ZADD seatd:shows 1900000000000 7"));
    /* alice's first booking was filed by the worker at 1000; her second was not (its write
     * failed); bob's cancelled booking neither. */
    freeReplyObject(seatd_test_redis_command(c, "ZADD {u:alice}:bookings 1000 7-b01"));
    static const struct {
        const char *type, *booking, *owner, *at;
    } events[] = {{"booking.confirmed", "7-b01", "alice", "5000"},
                  {"booking.confirmed", "7-b02", "alice", "6000"},
                  {"booking.cancelled", "7-b03", "bob", "7000"}};
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        redisReply *r = seatd_test_redis_command(
            c,
            "XADD {s:7}:bookings * type %s bookingId %s showId 7 owner %s seatIds A1 "
            "amount 100 currency EUR at %s",
            events[i].type, events[i].booking, events[i].owner, events[i].at);
        cr_assert(r && r->type == REDIS_REPLY_STRING, "%s", r ? r->str : c->errstr);
        freeReplyObject(r);
    }

    pid_t pid = start_notify(log, err);
    cr_assert_eq(wait_lines(log, NULL, 3, 30000), 3, "three notifications");
    cr_assert_eq(stop_notify(pid), 0);
    static const struct {
        const char *key, *booking;
        long long score;
    } want[] = {{"{u:alice}:bookings", "7-b01", 1000},
                {"{u:alice}:bookings", "7-b02", 6000},
                {"{u:bob}:bookings", "7-b03", 7000}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        redisReply *r = seatd_test_redis_command(c, "ZSCORE %s %s", want[i].key, want[i].booking);
        cr_assert(r && r->type == REDIS_REPLY_STRING, "%s is in %s", want[i].booking, want[i].key);
        cr_assert_eq(atoll(r->str), want[i].score, "%s's score", want[i].booking);
        freeReplyObject(r);
    }
    redisFree(c);
    unlink(log);
    unlink(err);
    rmdir(dir);
}

/* A show's consumer group that disappears (its stream deleted and written again, a restore, a
 * failover that lost the XGROUP CREATE) is created again: the consumer read NOGROUP as "no
 * entries" for ever, and that show's notifications and index filings stopped, unlogged. */
Test(notify, a_consumer_group_that_disappears_is_created_again)
{
    char dir[] = "/tmp/seatd-notify-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char log[128], err[128];
    snprintf(log, sizeof(log), "%s/notifications.log", dir);
    snprintf(err, sizeof(err), "%s/notify.err", dir);
    redisContext *c = seatd_test_redis_connect();
    freeReplyObject(seatd_test_redis_command(c, "ZADD seatd:shows 1900000000000 9001"));
    const char *add = "XADD {s:9001}:bookings * type booking.confirmed bookingId 9001-b0%d "
                      "showId 9001 owner carol seatIds A1 amount 100 currency EUR at 5000";
    freeReplyObject(seatd_test_redis_command(c, add, 1));
    pid_t pid = start_notify(log, err);
    cr_assert_eq(wait_lines(log, "9001-b01", 1, 30000), 1, "the first event");
    freeReplyObject(seatd_test_redis_command(c, "DEL {s:9001}:bookings"));
    freeReplyObject(seatd_test_redis_command(c, add, 2));
    freeReplyObject(seatd_test_redis_command(c, add, 3));
    cr_assert_eq(wait_lines(log, "9001-b02", 1, 15000), 1, "an event after the group was lost");
    cr_assert_eq(wait_lines(log, "9001-b03", 1, 15000), 1);
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_geq(count_lines(err, "NOGROUP"), 1, "the loss is logged");
    redisFree(c);
    unlink(log);
    unlink(err);
    rmdir(dir);
}
