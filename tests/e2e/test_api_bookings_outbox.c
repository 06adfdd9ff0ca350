/*
 * End-to-end: the outbox consumer (tools/seatd-notify) over the shows' booking streams:
 * consumer groups, exactly one notification per event across crashes, dead letters.
 * Each test uses its own consumer group and notifications file.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

TestSuite(api_bookings_outbox, .timeout = 90);

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts one seatd-notify; its stderr goes to '<log>.<name>.err'. */
static pid_t start_consumer(const char *group, const char *name, const char *log,
                            const char *max_deliveries, const char *base_ms, const char *delay)
{
    char bin[512], redis[64], err[600];
    const char *build = getenv("SEATD_BUILD_DIR");
    cr_assert_not_null(build);
    snprintf(bin, sizeof(bin), "%s/seatd-notify", build);
    snprintf(redis, sizeof(redis), "127.0.0.1:%s", getenv("SEATD_E2E_REDIS_PORT"));
    snprintf(err, sizeof(err), "%s.%s.err", log, name);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* no stray consumer if the test dies */
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execl(bin, bin, "--redis", redis, "--group", group, "--consumer", name, "--log", log,
              "--max-deliveries", max_deliveries, "--retry-base-ms", base_ms, "--refresh-ms", "200",
              "--deliver-delay-ms", delay, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Stops a consumer with SIGTERM; returns its exit status (0: clean, no sanitizer report). */
static int stop_consumer(pid_t pid)
{
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Lines of 'log' whose event id starts with "<show>:" ; fills 'ids' (n x 64) when given. */
static int lines_for(const char *log, const char *show, char (*ids)[64], int max)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return 0;
    char line[4096], prefix[64];
    snprintf(prefix, sizeof(prefix), "{\"eventId\":\"%s:", show);
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, prefix, strlen(prefix)) != 0)
            continue;
        if (ids && n < max) {
            const char *s = line + strlen("{\"eventId\":\"");
            const char *e = strchr(s, '"');
            snprintf(ids[n], 64, "%.*s", (int)(e ? e - s : 0), s);
        }
        n++;
    }
    fclose(f);
    return n;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void add_events(seatd_redis_t *c, const char *show, int n, int from)
{
    for (int i = 0; i < n; i++) {
        redisReply *r =
            seatd_redis_command(c,
                                "XADD {s:%s}:bookings * type booking.confirmed bookingId "
                                "%s-b%020d showId %s owner u%d seatIds A1 amount 1200",
                                show, show, from + i, show, i);
        cr_assert(r && r->type == REDIS_REPLY_STRING);
        freeReplyObject(r);
    }
}

static long long pending_count(seatd_redis_t *c, const char *show, const char *group)
{
    redisReply *r = seatd_redis_command(c, "XPENDING {s:%s}:bookings %s", show, group);
    long long n =
        (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0) ? r->element[0]->integer : -1;
    freeReplyObject(r);
    return n;
}

Test(api_bookings_outbox, four_consumers_send_400_events_once_though_one_is_killed)
{
    char shows[2][32], group[64], log[256];
    cr_assert_eq(e2e_create_show(1, 2, 300, shows[0]), 0);
    cr_assert_eq(e2e_create_show(1, 2, 300, shows[1]), 0);
    snprintf(group, sizeof(group), "t4-%ld", (long)getpid());
    snprintf(log, sizeof(log), "%s/notify-%s.log", getenv("SEATD_E2E_RUN"), group);
    seatd_redis_t *c = e2e_redis();
    add_events(c, shows[0], 200, 0);
    add_events(c, shows[1], 200, 1000);

    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        pids[i] = start_consumer(group, name, log, "5", "300", "5");
    }
    int seen = 0;
    for (int w = 0; w < 300 && seen < 80; w++, sleep_ms(20))
        seen = lines_for(log, shows[0], NULL, 0) + lines_for(log, shows[1], NULL, 0);
    cr_assert(seen >= 80 && seen < 400, "the kill lands mid-way (%d sent)", seen);
    kill(pids[0], SIGKILL);
    waitpid(pids[0], NULL, 0);

    /* Until every event is sent and acknowledged (nothing pending in the group, so nothing
     * is left to reclaim and send again); then the consumers stop, so the log is final. */
    for (int w = 0; w < 600; w++, sleep_ms(50)) {
        seen = lines_for(log, shows[0], NULL, 0) + lines_for(log, shows[1], NULL, 0);
        if (seen >= 400 && pending_count(c, shows[0], group) == 0 &&
            pending_count(c, shows[1], group) == 0)
            break;
    }
    for (int i = 1; i < 4; i++)
        cr_assert_eq(stop_consumer(pids[i]), 0, "consumer %d exits cleanly", i);
    static char ids[1000][64];
    int n0 = lines_for(log, shows[0], ids, 1000);
    int n1 = lines_for(log, shows[1], ids + n0, 1000 - n0);
    cr_assert_eq(n0 + n1, 400, "400 notifications, no more (got %d)", n0 + n1);
    qsort(ids, 400, sizeof(ids[0]), cmp_id);
    for (int i = 1; i < 400; i++)
        cr_assert_str_neq(ids[i], ids[i - 1], "event %s was sent twice", ids[i]);
    cr_assert_eq(pending_count(c, shows[0], group), 0);
    cr_assert_eq(pending_count(c, shows[1], group), 0);
    seatd_redis_free(c);
}

Test(api_bookings_outbox, a_poison_event_is_dead_lettered_after_n_deliveries_and_kept)
{
    char show[32], group[64], log[256];
    cr_assert_eq(e2e_create_show(1, 2, 300, show), 0);
    snprintf(group, sizeof(group), "tp-%ld", (long)getpid());
    snprintf(log, sizeof(log), "%s/notify-%s.log", getenv("SEATD_E2E_RUN"), group);
    seatd_redis_t *c = e2e_redis();
    add_events(c, show, 2, 0);
    redisReply *r =
        seatd_redis_command(c, "XADD {s:%s}:bookings * type booking.exploded bookingId x", show);
    char poison[64];
    snprintf(poison, sizeof(poison), "%s", r->str);
    freeReplyObject(r);
    add_events(c, show, 1, 10);

    pid_t pid = start_consumer(group, "p0", log, "3", "100", "0");
    long long dead = 0;
    for (int w = 0; w < 100 && dead < 1; w++, sleep_ms(100)) {
        r = seatd_redis_command(c, "XLEN {s:%s}:bookings:dead", show);
        dead = r->integer;
        freeReplyObject(r);
    }
    cr_assert_eq(stop_consumer(pid), 0);
    cr_assert_eq(dead, 1, "the poison event is in the dead-letter stream");
    r = seatd_redis_command(c, "XRANGE {s:%s}:bookings:dead - +", show);
    const redisReply *fields = r->element[0]->element[1];
    int saw_orig = 0, saw_count = 0, saw_type = 0;
    for (size_t i = 0; i + 1 < fields->elements; i += 2) {
        const char *k = fields->element[i]->str, *v = fields->element[i + 1]->str;
        saw_orig |= strcmp(k, "origId") == 0 && strcmp(v, poison) == 0;
        saw_count |= strcmp(k, "deliveries") == 0 && strcmp(v, "3") == 0;
        saw_type |= strcmp(k, "type") == 0 && strcmp(v, "booking.exploded") == 0;
    }
    freeReplyObject(r);
    cr_assert(saw_orig && saw_count && saw_type, "the dead letter keeps the event and says why");
    cr_assert_eq(lines_for(log, show, NULL, 0), 3, "the good events were sent, the poison not");
    cr_assert_eq(pending_count(c, show, group), 0);
    r = seatd_redis_command(c, "XLEN {s:%s}:bookings", show);
    cr_assert_eq(r->integer, 4, "the stream keeps every event");
    freeReplyObject(r);
    seatd_redis_free(c);
}
