/*
 * Integration tests for tools/seatd-notify/ (issue 9): stream discovery pages through the
 * catalogue with no cap on the number of streams (it stopped silently at 4,096 before), and
 * forgets the streams of shows that left the catalogue once they are drained. With
 * --wait-replicas, an event is announced only once a replica of its show's node acknowledged
 * it (docs/design.md, "When the network splits").
 *
 * The consumer is the real binary, run against the runner's redis-server with a small
 * --batch so the walk takes several pages; events are written straight into the streams as
 * book_confirm writes them. The replica tests start their own servers (a primary, a replica
 * of it, or a local cluster), children of the test process that die with it, so that they
 * mean the same when the runner's Redis is a cluster.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_fixture.h"
#include "domain/rds_slot.h"
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

/* Starts the consumer on 127.0.0.1:'port' (group g1, consumer c1), with the flags 'extra' and
 * the "NAME=value" environment entries 'env' (both NULL-terminated, or NULL) added; its stderr
 * goes to 'err'. The replica settings come only from 'extra' and 'env', never from the
 * runner's environment. */
static pid_t start_notify_on(int port, const char *log, const char *err, const char *const *extra,
                             const char *const *env)
{
    char redis[64];
    snprintf(redis, sizeof(redis), "127.0.0.1:%d", port);
    const char *args[40] = {
        SEATD_NOTIFY_BIN, "--redis", redis,          "--group", "g1",      "--consumer", "c1",
        "--log",          log,       "--refresh-ms", "20",      "--batch", "500"};
    int n = 13;
    for (int i = 0; extra && extra[i]; i++) {
        cr_assert_lt(n, 39);
        args[n++] = extra[i];
    }
    args[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        FILE *f = freopen(err, "w", stderr);
        (void)f;
        unsetenv("SEATD_REDIS_WAIT_REPLICAS");
        unsetenv("SEATD_REDIS_WAIT_MS");
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execv(SEATD_NOTIFY_BIN, (char *const *)args);
        _exit(127);
    }
    return pid;
}

static pid_t start_notify(const char *log, const char *err)
{
    return start_notify_on(seatd_test_redis_port(), log, err, NULL, NULL);
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

/* ---------------------------------------------------------------------------------------
 * --wait-replicas: nothing a failover can take back is announced
 * ------------------------------------------------------------------------------------- */

typedef struct {
    char dir[64];  /* the test's temp dir */
    char log[128]; /* the notifications log */
    char err[128]; /* the consumer's stderr */
} files_t;

static void files_init(files_t *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/seatd-notify-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->log, sizeof(f->log), "%s/notifications.log", f->dir);
    snprintf(f->err, sizeof(f->err), "%s/notify.err", f->dir);
}

static void files_remove(files_t *f)
{
    unlink(f->log);
    unlink(f->err);
    rmdir(f->dir);
}

/* Waits up to 'ms' for the consumer's stderr 'err' to hold 'want' lines containing 'needle'
 * (its tries held back), but no longer than until 'log' holds a line containing 'sent' (NULL:
 * any line): then a hold-back failed, and waiting on would only hide it. Returns the count. */
static long wait_held(const char *err, const char *needle, long want, const char *log,
                      const char *sent, long ms)
{
    long n = 0;
    for (long waited = 0; waited <= ms; waited += 50) {
        n = count_lines(err, needle);
        if (n >= want || count_lines(log, sent) > 0)
            break;
        sleep_ms(50);
    }
    return n;
}

/* A connection to 127.0.0.1:'port'; aborts the test on failure. Returns owned (redisFree). */
static redisContext *connect_port(int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    cr_assert(c && !c->err, "connect to %d: %s", port, c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    return c;
}

/* A command that must succeed (not an error reply); returns its owned reply. */
static redisReply *must(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s: %s", fmt, r ? r->str : c->errstr);
    return r;
}

/* Lists show 'show' in the catalogue and appends one booking event of 'type' for 'booking' to
 * its stream; the entry id goes to 'id' (64 bytes), if not NULL. */
static void add_event(redisContext *c, int show, const char *type, const char *booking, char *id)
{
    freeReplyObject(must(c, "ZADD seatd:shows 1900000000000 %d", show));
    redisReply *r = must(c,
                         "XADD {s:%d}:bookings * type %s bookingId %s showId %d owner dora "
                         "seatIds A1 amount 100 currency EUR at 5000",
                         show, type, booking, show);
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    if (id)
        snprintf(id, 64, "%s", r->str);
    freeReplyObject(r);
}

/* The claim of a dead consumer (claimed at Unix ms 1, never sent) on event 'id' of 'show'. */
static void add_stale_claim(redisContext *c, int show, const char *id)
{
    freeReplyObject(must(c, "SET {s:%d}:notified:g1:%s sending:1:dead-consumer", show, id));
}

/* The number of entries of 'show''s stream pending in group g1. */
static long long pending_of(redisContext *c, int show)
{
    redisReply *r = must(c, "XPENDING {s:%d}:bookings g1", show);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements >= 1);
    long long n = r->element[0]->integer;
    freeReplyObject(r);
    return n;
}

static long long integer_of(redisContext *c, const char *fmt, int show)
{
    redisReply *r = must(c, fmt, show);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s", fmt);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* The claim of event 'id' of 'show' ("" when there is none) into 'out' (64 bytes). */
static void claim_of(redisContext *c, int show, const char *id, char *out)
{
    redisReply *r = must(c, "GET {s:%d}:notified:g1:%s", show, id);
    snprintf(out, 64, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

/* 1 when INFO 'section' on 'c' contains every one of the NULL-terminated 'needles'. */
static int info_has(redisContext *c, const char *section, const char *const *needles)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    int all = r && r->type == REDIS_REPLY_STRING;
    for (int i = 0; all && needles[i]; i++)
        all = strstr(r->str, needles[i]) != NULL;
    if (r)
        freeReplyObject(r);
    return all;
}

/* Makes the server on 'replica' a replica of the one on 'primary' (port 'primary_port') and
 * waits until it acknowledges a write. */
static void attach_replica(redisContext *primary, int primary_port, redisContext *replica)
{
    /* Redis 7 waits 5 s for more replicas before a diskless full sync by default. */
    freeReplyObject(must(primary, "CONFIG SET repl-diskless-sync-delay 0"));
    freeReplyObject(must(replica, "REPLICAOF 127.0.0.1 %d", primary_port));
    static const char *const up[] = {"master_link_status:up", NULL};
    static const char *const online[] = {"connected_slaves:1", "state=online", NULL};
    int ok = 0;
    for (int waited = 0; !ok && waited < 10000; waited += 20) {
        ok = info_has(replica, "replication", up) && info_has(primary, "replication", online);
        if (!ok)
            sleep_ms(20);
    }
    cr_assert(ok, "the replica did not come online within 10 s");
    /* "online" after a diskless sync, the primary still holds the command stream back until the
     * replica's first ACK (up to its 1 s cron): a write it acknowledged says the stream flows. */
    freeReplyObject(must(primary, "SET notify-test:replica-probe 1"));
    redisReply *r = must(primary, "WAIT 1 5000");
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer == 1, "the replica acknowledges");
    freeReplyObject(r);
}

/* A single redis-server that has no replica: WAIT 1 never succeeds there, so a confirmed
 * booking's event is never announced. It stays pending in the group (retried, and not
 * dead-lettered however often it was tried: it is not undeliverable), on the first try and on
 * every retry; an event whose claim a dead consumer left is taken over but held back too (the
 * retry path's re-claim is followed by a WAIT as well). */
Test(notify, with_wait_replicas_a_confirmed_booking_on_a_node_without_replica_is_never_announced,
     .timeout = 30)
{
    seatd_test_redis_t p;
    cr_assert_eq(seatd_test_redis_start(&p), 0);
    redisContext *c = connect_port(p.port);
    files_t f;
    files_init(&f);
    char id1[64], id2[64];
    add_event(c, 9101, "booking.confirmed", "9101-b01", id1);
    add_event(c, 9102, "booking.confirmed", "9102-b01", id2);
    add_stale_claim(c, 9102, id2);

    static const char *const extra[] = {
        "--wait-replicas",  "1", "--wait-ms", "50", "--retry-base-ms", "100",
        "--max-deliveries", "2", NULL};
    pid_t pid = start_notify_on(p.port, f.log, f.err, extra, NULL);
    /* four tries of each: the first read, then retries past --max-deliveries */
    long tries1 = wait_held(f.err, "held back 9101:", 4, f.log, NULL, 6000);
    long tries2 = wait_held(f.err, "held back 9102:", 4, f.log, NULL, 6000);
    cr_assert_eq(count_lines(f.log, NULL), 0, "nothing announced");
    cr_assert_geq(tries1, 4, "9101's event held back 4 times (%ld), past --max-deliveries", tries1);
    cr_assert_geq(tries2, 4, "9102's event held back 4 times (%ld), past --max-deliveries", tries2);
    cr_assert_eq(count_lines(f.err, "0 of 1 replicas acknowledged within 50 ms"),
                 count_lines(f.err, "held back"), "every hold-back says why");
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_eq(count_lines(f.log, NULL), 0, "nothing announced");

    cr_assert_eq(pending_of(c, 9101), 1, "9101's event stays pending");
    cr_assert_eq(pending_of(c, 9102), 1, "9102's event stays pending");
    cr_assert_eq(integer_of(c, "XLEN {s:%d}:bookings:dead", 9101), 0, "not dead-lettered");
    cr_assert_eq(integer_of(c, "XLEN {s:%d}:bookings:dead", 9102), 0, "not dead-lettered");
    char claim[64];
    claim_of(c, 9101, id1, claim);
    cr_assert_str_neq(claim, "done");
    claim_of(c, 9102, id2, claim);
    cr_assert_str_neq(claim, "done");
    redisFree(c);
    seatd_test_redis_stop(&p);
    files_remove(&f);
}

/* With a replica attached, every event is announced exactly once (a dead consumer's claim is
 * taken over and sent too), and each was on the replica when it was. */
Test(notify, with_wait_replicas_and_a_replica_every_event_is_announced_exactly_once, .timeout = 30)
{
    seatd_test_redis_t p, r;
    cr_assert_eq(seatd_test_redis_start(&p), 0);
    cr_assert_eq(seatd_test_redis_start(&r), 0);
    redisContext *c = connect_port(p.port), *rc = connect_port(r.port);
    attach_replica(c, p.port, rc);
    files_t f;
    files_init(&f);
    char id3[64];
    add_event(c, 9201, "booking.confirmed", "9201-b01", NULL);
    add_event(c, 9201, "booking.cancelled", "9201-b02", NULL);
    add_event(c, 9202, "booking.confirmed", "9202-b01", id3);
    add_stale_claim(c, 9202, id3);

    static const char *const extra[] = {"--wait-replicas", "1", "--wait-ms", "2000", NULL};
    pid_t pid = start_notify_on(p.port, f.log, f.err, extra, NULL);
    cr_assert_eq(wait_lines(f.log, NULL, 3, 10000), 3, "three notifications");
    sleep_ms(300); /* a second sending of any would show now */
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_eq(count_lines(f.log, NULL), 3, "nothing sent twice");
    cr_assert_eq(count_lines(f.log, "\"bookingId\":\"9201-b01\""), 1);
    cr_assert_eq(count_lines(f.log, "\"bookingId\":\"9201-b02\""), 1);
    cr_assert_eq(count_lines(f.log, "\"bookingId\":\"9202-b01\""), 1);
    cr_assert_eq(count_lines(f.err, "held back"), 0);
    cr_assert_eq(pending_of(c, 9201), 0, "acked");
    cr_assert_eq(pending_of(c, 9202), 0, "acked");
    char claim[64];
    claim_of(c, 9202, id3, claim);
    cr_assert_str_eq(claim, "done");
    cr_assert_eq(integer_of(rc, "XLEN {s:%d}:bookings", 9201), 2, "on the replica");
    cr_assert_eq(integer_of(rc, "XLEN {s:%d}:bookings", 9202), 1, "on the replica");
    redisFree(rc);
    redisFree(c);
    seatd_test_redis_stop(&r);
    seatd_test_redis_stop(&p);
    files_remove(&f);
}

/* An event held back for want of a replica is announced, once, as soon as a replica has it:
 * the retry takes the held-back claim, waits again, and sends. Set up through the environment
 * (SEATD_REDIS_WAIT_REPLICAS, SEATD_REDIS_WAIT_MS), as the systemd unit's EnvironmentFile. */
Test(notify, an_event_held_back_for_replicas_is_announced_once_a_replica_has_it, .timeout = 30)
{
    seatd_test_redis_t p, r;
    cr_assert_eq(seatd_test_redis_start(&p), 0);
    cr_assert_eq(seatd_test_redis_start(&r), 0);
    redisContext *c = connect_port(p.port), *rc = connect_port(r.port);
    files_t f;
    files_init(&f);
    char id[64];
    add_event(c, 9301, "booking.confirmed", "9301-b01", id);

    static const char *const extra[] = {"--retry-base-ms", "100", NULL};
    static const char *const env[] = {"SEATD_REDIS_WAIT_REPLICAS=1", "SEATD_REDIS_WAIT_MS=50",
                                      NULL};
    pid_t pid = start_notify_on(p.port, f.log, f.err, extra, env);
    long tries = wait_held(f.err, "held back 9301:", 2, f.log, NULL, 10000);
    cr_assert_eq(count_lines(f.log, NULL), 0, "not announced without a replica");
    cr_assert_geq(tries, 2, "held back, then retried (%ld)", tries);
    attach_replica(c, p.port, rc);
    cr_assert_eq(wait_lines(f.log, "\"bookingId\":\"9301-b01\"", 1, 10000), 1,
                 "announced once the replica has it");
    sleep_ms(300);
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_eq(count_lines(f.log, NULL), 1, "exactly once");
    cr_assert_eq(pending_of(c, 9301), 0, "acked");
    char claim[64];
    claim_of(c, 9301, id, claim);
    cr_assert_str_eq(claim, "done");
    cr_assert_eq(integer_of(rc, "XLEN {s:%d}:bookings", 9301), 1, "on the replica");
    redisFree(rc);
    redisFree(c);
    seatd_test_redis_stop(&r);
    seatd_test_redis_stop(&p);
    files_remove(&f);
}

/* The node of 'show''s slot on cluster 'cl'. */
static int node_of_show(seatd_test_cluster_t *cl, int show)
{
    char key[32];
    snprintf(key, sizeof(key), "{s:%d}", show);
    return seatd_test_cluster_primary_of(cl, seatd_rds_keyslot(key, strlen(key)));
}

/* The index of the replica of node 'primary' on cluster 'cl', or -1. */
static int replica_of(seatd_test_cluster_t *cl, int primary)
{
    for (int i = 0; i < cl->n; i++) {
        redisContext *c = seatd_test_cluster_connect(cl, i);
        redisReply *r = c ? redisCommand(c, "ROLE") : NULL;
        int mine = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
                   strcmp(r->element[0]->str, "slave") == 0 &&
                   r->element[2]->integer == cl->port[primary];
        if (r)
            freeReplyObject(r);
        if (c)
            redisFree(c);
        if (mine)
            return i;
    }
    return -1;
}

/* On a cluster, the WAIT runs on the node of the event's show, on the connection that wrote
 * the claim, not on the first node: a show whose primary lost its replica is held back while
 * a show on a primary with its replica is announced, though the consumer's seed (the first
 * node) has its replica. */
Test(notify, with_wait_replicas_on_a_cluster_the_wait_runs_on_the_shows_node, .timeout = 60)
{
    seatd_test_cluster_t cl;
    cr_assert_eq(seatd_test_cluster_start(&cl, 3, 1), 0, "a local Redis Cluster");
    int lonely = -1, other = -1;
    for (int show = 9401; show < 9500 && (lonely < 0 || other < 0); show++) {
        int node = node_of_show(&cl, show);
        if (lonely < 0 && node > 0)
            lonely = show; /* not the seed's show: a WAIT there would say 1 */
        else if (other < 0 && node >= 0 && (lonely < 0 || node != node_of_show(&cl, lonely)))
            other = show;
    }
    cr_assert(lonely > 0 && other > 0);
    int lonely_node = node_of_show(&cl, lonely), other_node = node_of_show(&cl, other);
    cr_assert_neq(lonely_node, other_node);
    cr_assert_neq(replica_of(&cl, 0), -1, "the seed is a primary with a replica");
    int victim = replica_of(&cl, lonely_node);
    cr_assert_geq(victim, 0);
    seatd_test_cluster_kill(&cl, victim);
    redisContext *lc = seatd_test_cluster_connect(&cl, lonely_node);
    redisContext *oc = seatd_test_cluster_connect(&cl, other_node);
    cr_assert(lc && oc);
    static const char *const alone[] = {"connected_slaves:0", NULL};
    int ok = 0;
    for (int waited = 0; !ok && waited < 5000; waited += 20) {
        ok = info_has(lc, "replication", alone);
        if (!ok)
            sleep_ms(20);
    }
    cr_assert(ok, "the show's primary saw its replica go");

    redisContext *c = connect_port(cl.port[0]);
    files_t f;
    files_init(&f);
    char booking[32];
    for (int k = 0; k < 2; k++) { /* each on its own node; the catalogue where it lives */
        int show = k ? other : lonely;
        redisContext *sc = k ? oc : lc;
        snprintf(booking, sizeof(booking), "%d-b01", show);
        redisReply *r = seatd_test_redis_command(c, "ZADD seatd:shows 1900000000000 %d", show);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
        freeReplyObject(must(sc,
                             "XADD {s:%d}:bookings * type booking.confirmed bookingId %s "
                             "showId %d owner dora seatIds A1 amount 100 currency EUR at 5000",
                             show, booking, show));
    }
    static const char *const extra[] = {"--wait-replicas", "1",   "--wait-ms", "100",
                                        "--retry-base-ms", "200", NULL};
    pid_t pid = start_notify_on(cl.port[0], f.log, f.err, extra, NULL);
    snprintf(booking, sizeof(booking), "\"bookingId\":\"%d-b01\"", other);
    cr_assert_eq(wait_lines(f.log, booking, 1, 15000), 1, "the show with a replica: announced");
    char held[32], lonely_booking[40];
    snprintf(held, sizeof(held), "held back %d:", lonely);
    snprintf(lonely_booking, sizeof(lonely_booking), "\"bookingId\":\"%d-b01\"", lonely);
    long tries = wait_held(f.err, held, 2, f.log, lonely_booking, 15000);
    cr_assert_eq(count_lines(f.log, lonely_booking), 0,
                 "the show whose primary lost its replica: not announced");
    cr_assert_geq(tries, 2, "held back, and retried (%ld)", tries);
    cr_assert_eq(stop_notify(pid), 0);
    cr_assert_eq(count_lines(f.log, NULL), 1, "only the show with a replica was announced");
    cr_assert_eq(pending_of(lc, lonely), 1, "the held-back event stays pending");
    cr_assert_eq(pending_of(oc, other), 0);
    redisFree(c);
    redisFree(lc);
    redisFree(oc);
    seatd_test_cluster_stop(&cl);
    files_remove(&f);
}
