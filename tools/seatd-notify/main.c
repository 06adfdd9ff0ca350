/*
 * seatd-notify - the outbox consumer: reads the booking events the scripts append to each
 * show's stream {s:<id>}:bookings (booking.confirmed, booking.cancelled) with a consumer group
 * and "sends" one notification per event: one JSON line appended to a log file.
 *
 *   seatd-notify --redis 127.0.0.1:6379 [--group notifiers] [--consumer <host-pid>]
 *                --log notifications.log [--max-deliveries 5] [--retry-base-ms 500]
 *                [--refresh-ms 1000] [--deliver-delay-ms 0] [--batch 1000]
 *                [--redis-user USER --redis-password-file FILE]
 *                [--wait-replicas 0] [--wait-ms 100]
 *
 * Redis credentials: "AUTH USER <password>" on every connection, the password read from the
 * file (first line); also from SEATD_REDIS_USER / SEATD_REDIS_PASSWORD_FILE.
 *
 * Streams: one per show, in the show's hash slot (the script that changes a booking appends
 * its event in the same atomic step). They are discovered from the catalogue seatd:shows,
 * which holds the shows on sale (and those started less than the retention ago: the
 * sweeper prunes older ones). Every --refresh-ms one page of --batch shows is read, the
 * cursor walking the catalogue and starting over at its end, so each refresh costs at most
 * one page however large the catalogue, and there is no cap on the number of streams. A
 * stream whose show has left the catalogue is forgotten once a whole walk did not see it and
 * it has nothing new or pending for the group. The group is created at id 0 once the stream
 * exists. Each
 * stream is read on its own (XREADGROUP … STREAMS <one stream> >), which also works on Redis
 * Cluster, where one command cannot span slots: again at once after a read that found
 * entries, else after 50 ms doubling to 1 s while the stream stays empty (IDLE_*_MS).
 *
 * Before its notification, every event's booking is filed in its owner's index
 * {u:<owner>}:bookings (ZADD NX, GET /v1/me/bookings): the worker queues that entry when the
 * booking begins but does not wait for it (it lives on another shard than the show's), so the
 * outbox is what guarantees a confirmed booking is listed; an entry whose owner's shard does
 * not answer stays pending and is retried like a failed delivery.
 *
 * Delivery is at-least-once from Redis and made exactly-once in the log by the event id
 * "<showId>:<entryId>": before sending, the consumer claims the per-event key
 * {s:<id>}:notified:<group>:<entryId> with SET NX ("sending:<consumer>", 7-day TTL); after
 * sending it sets "done" and XACKs. A claim that already says "done" is a duplicate (acked,
 * not sent). A claim left "sending" by a consumer that died between claim and "done" is
 * resolved by looking for the event id in the log itself (the receiver is idempotent).
 *
 * Nothing a failover can take back is announced (docs/design.md, "When the network splits") when
 * --wait-replicas N is above 0 (SEATD_REDIS_WAIT_REPLICAS; 0, the default, is off). A primary
 * cut off by a partition keeps accepting writes for a few seconds, and all it took then is
 * discarded when its replica is promoted: a booking.confirmed written there and announced would
 * confirm a booking that no longer exists. So between the claim and the sending, on the
 * connection that wrote the claim (seatd_redis_command_at(), redis_sync.h), the consumer
 *   - reads the entry again (XRANGE) and goes on only if that node holds it as it was read:
 *     after a failover between the read and the claim, the claim's node may never have had it;
 *   - sends WAIT N M (--wait-ms, SEATD_REDIS_WAIT_MS, 100): the claim is a write in the show's
 *     slot, so that node's replication offset for this connection covers it and everything the
 *     node took before it, the event's XADD included.
 * Every claim that leads to a sending is such a write: the first SET NX, and the SET that
 * re-claims a stale or held-back claim on a retry. When fewer than N replicas acknowledge
 * within M ms (or the node does not hold the entry, or does not answer), nothing is sent and
 * nothing acked: the claim becomes "held-for-replicas" (any consumer may take it at once), the
 * entry stays pending and is retried like a failed delivery, one line is logged ("held back
 * <event id>: <why>"), and the rest of that stream waits for the next pass (its entries live
 * on the same node) while the consumer goes on with the other streams. A held-back entry is
 * not dead-lettered for it: past --max-deliveries it is retried at the 60 s backoff cap until
 * its node's replicas acknowledge it.
 *
 * Retries: an event whose delivery fails (a poison event: unknown type, no bookingId) is not
 * acked. The consumer polls XPENDING (with IDLE) and re-claims with XCLAIM each entry idle for
 * at least retry-base * 2^(deliveries-1) ms (capped at 60 s), which also takes over the
 * entries of a dead consumer. XPENDING + XCLAIM rather than XAUTOCLAIM: XAUTOCLAIM has one
 * min-idle for all entries and would claim (and count a delivery for) entries still backing
 * off. After --max-deliveries deliveries the entry is copied to the dead-letter stream
 * {s:<id>}:bookings:dead (fields kept, plus origId, deliveries, reason) and acked.
 *
 * SIGTERM / SIGINT: finish the current event and exit 0. Synchronous hiredis: one process is
 * one consumer; run as many as needed (deploy/up starts one).
 *
 * The files (tools/seatd-notify/, behind notify.h): main.c, the command line and the process
 * (its clock, log and Redis connection); streams.c, the catalogue walk; delivery.c, the events'
 * reading, delivery, retries and dead letters.
 */
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "domain/keys.h"
#include "notify.h"
#include "redis_sync.h"

notify_state_t notify;

volatile sig_atomic_t notify_stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    notify_stop_flag = 1;
}

long long notify_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The pace at which a pending list with entries is looked at: half the first retry's wait. */
long notify_reclaim_base(void)
{
    return notify.retry_base_ms / 2 > 0 ? notify.retry_base_ms / 2 : 1;
}

void notify_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !notify_stop_flag) {
    }
}

void notify_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "{\"prog\":\"seatd-notify\",\"consumer\":\"%s\",\"msg\":\"", notify.consumer);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\"}\n");
    va_end(ap);
}

/* Runs a command on the node that owns its key (redis_sync.c follows a cluster's
 * redirections); connects (with a pause after a failure) when there is no client yet. Owned
 * reply or NULL. The consumer's commands are safe to send twice (XREADGROUP re-delivers, the
 * claim key dedupes). */
redisReply *notify_cmdv(int argc, const char **argv, const size_t *lens)
{
    for (int attempt = 0; attempt < 2 && !notify_stop_flag; attempt++) {
        if (notify.c == NULL) {
            char err[256];
            /* A WAIT blocks its connection for up to --wait-ms: the reply must come before
             * the client's own timeout. */
            int timeout = CLIENT_TIMEOUT_MS;
            if (notify.wait_replicas > 0 && notify.wait_ms + 1000 > timeout)
                timeout = (int)notify.wait_ms + 1000;
            seatd_redis_opts_t o = {.host = notify.host,
                                    .port = notify.port,
                                    .user = notify.redis_user[0] ? notify.redis_user : NULL,
                                    .password =
                                        notify.redis_password[0] ? notify.redis_password : NULL,
                                    .timeout_ms = timeout};
            notify.c = seatd_redis_connect(&o, err, sizeof(err));
            if (notify.c == NULL) {
                static char last[256];
                if (strcmp(last, err) != 0) /* once per distinct failure, not every 500 ms */
                    notify_log("redis: %s", err);
                snprintf(last, sizeof(last), "%s", err);
                notify_sleep_ms(500);
                continue;
            }
        }
        redisReply *r = seatd_redis_commandv(notify.c, argc, argv, lens);
        if (r)
            return r;
    }
    return NULL;
}

redisReply *notify_cmd(int argc, const char **argv)
{
    return notify_cmdv(argc, argv, NULL);
}

int notify_is_error(const redisReply *r)
{
    return r == NULL || r->type == REDIS_REPLY_ERROR;
}

/* Prints the usage to 'out' and exits with 'status' (0 for --help, 2 for a bad command line). */
static void usage(FILE *out, int status)
{
    fprintf(out,
            "usage: seatd-notify --redis host:port --log FILE [--group notifiers]\n"
            "       [--consumer NAME] [--max-deliveries 5] [--retry-base-ms 500]\n"
            "       [--refresh-ms 1000] [--deliver-delay-ms 0] [--batch 1000]\n"
            "       [--redis-user USER] [--redis-password-file FILE]\n"
            "       [--wait-replicas 0] [--wait-ms 100]\n"
            "\n"
            "  --redis host:port         a Redis node (a cluster's other nodes are found from it)\n"
            "  --log FILE                where notifications are appended, one JSON line each\n"
            "  --group NAME              the consumer group (consumers in one group share work)\n"
            "  --consumer NAME           this consumer's name in the group (default host-pid)\n"
            "  --max-deliveries N        tries before an event is dead-lettered\n"
            "  --retry-base-ms MS        the first retry's wait, doubling per try (60 s cap)\n"
            "  --refresh-ms MS           how often a page of the show catalogue is read\n"
            "  --deliver-delay-ms MS     a pause before each sending (tests)\n"
            "  --batch N                 shows per catalogue page (1..100000)\n"
            "  --redis-user USER         ACL user (env SEATD_REDIS_USER)\n"
            "  --redis-password-file F   its password, first line (env SEATD_REDIS_PASSWORD_FILE)\n"
            "  --wait-replicas N         announce an event only once N replicas acknowledged it\n"
            "                            (WAIT N on its claim's connection; fewer: held back,\n"
            "                            retried); 0..16, 0: off (env SEATD_REDIS_WAIT_REPLICAS)\n"
            "  --wait-ms MS              how long that WAIT waits, 1..60000 (env\n"
            "                            SEATD_REDIS_WAIT_MS)\n"
            "  --help                    this text\n");
    exit(status);
}

/* Parses 'v' as a whole integer in ['min', 'max'] into '*out'; 0, or -1 (with a message naming
 * 'what') when it is not one. */
static int parse_bounded(const char *what, const char *v, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (v[0] == '\0' || *end != '\0' || errno == ERANGE || n < min || n > max) {
        fprintf(stderr, "seatd-notify: %s: '%s' is not an integer in %ld..%ld\n", what, v, min,
                max);
        return -1;
    }
    *out = n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *redis = "127.0.0.1:6379";
    notify.group = "notifiers";
    notify.max_deliveries = 5;
    notify.retry_base_ms = 500;
    notify.refresh_ms = 1000;
    notify.batch = DEFAULT_BATCH;
    notify.walk = 1;
    notify.wait_replicas = 0;
    notify.wait_ms = 100;
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    snprintf(notify.consumer, sizeof(notify.consumer), "%s-%ld", host, (long)getpid());
    const char *user = getenv("SEATD_REDIS_USER");
    const char *pass_file = getenv("SEATD_REDIS_PASSWORD_FILE");
    const char *wait_replicas = getenv("SEATD_REDIS_WAIT_REPLICAS");
    const char *wait_ms = getenv("SEATD_REDIS_WAIT_MS");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0)
            usage(stdout, 0);
        if (i + 1 >= argc)
            usage(stderr, 2);
        const char *v = argv[++i];
        if (strcmp(a, "--redis") == 0)
            redis = v;
        else if (strcmp(a, "--group") == 0)
            notify.group = v;
        else if (strcmp(a, "--consumer") == 0)
            snprintf(notify.consumer, sizeof(notify.consumer), "%s", v);
        else if (strcmp(a, "--log") == 0)
            notify.log_path = v;
        else if (strcmp(a, "--max-deliveries") == 0)
            notify.max_deliveries = atol(v);
        else if (strcmp(a, "--retry-base-ms") == 0)
            notify.retry_base_ms = atol(v);
        else if (strcmp(a, "--refresh-ms") == 0)
            notify.refresh_ms = atol(v);
        else if (strcmp(a, "--deliver-delay-ms") == 0)
            notify.delay_ms = atol(v);
        else if (strcmp(a, "--redis-user") == 0)
            user = v;
        else if (strcmp(a, "--redis-password-file") == 0)
            pass_file = v;
        else if (strcmp(a, "--batch") == 0)
            notify.batch = atol(v);
        else if (strcmp(a, "--wait-replicas") == 0)
            wait_replicas = v;
        else if (strcmp(a, "--wait-ms") == 0)
            wait_ms = v;
        else
            usage(stderr, 2);
    }
    if ((wait_replicas && parse_bounded("--wait-replicas / SEATD_REDIS_WAIT_REPLICAS",
                                        wait_replicas, 0, 16, &notify.wait_replicas) < 0) ||
        (wait_ms &&
         parse_bounded("--wait-ms / SEATD_REDIS_WAIT_MS", wait_ms, 1, 60000, &notify.wait_ms) < 0))
        return 2;
    snprintf(notify.redis_user, sizeof(notify.redis_user), "%s", user ? user : "");
    if (pass_file && pass_file[0]) {
        FILE *pf = fopen(pass_file, "r");
        if (pf == NULL || fgets(notify.redis_password, sizeof(notify.redis_password), pf) == NULL) {
            fprintf(stderr, "seatd-notify: cannot read %s\n", pass_file);
            return 2;
        }
        fclose(pf);
        notify.redis_password[strcspn(notify.redis_password, "\r\n")] = '\0';
    }
    const char *colon = strrchr(redis, ':');
    if (notify.log_path == NULL || colon == NULL || notify.max_deliveries < 1 ||
        notify.retry_base_ms < 1 || notify.refresh_ms < 1 || notify.delay_ms < 0 ||
        notify.batch < 1 || notify.batch > 100000 || !seatd_keys_valid_idem_key(notify.group))
        usage(stderr, 2);
    snprintf(notify.host, sizeof(notify.host), "%.*s", (int)(colon - redis), redis);
    notify.port = atoi(colon + 1);
    notify.log_fd = open(notify.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (notify.log_fd < 0) {
        fprintf(stderr, "seatd-notify: cannot open %s: %s\n", notify.log_path, strerror(errno));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (notify.wait_replicas > 0)
        notify_log("started; group %s, log %s, announcing only what %ld replicas acknowledged "
                   "within %ld ms",
                   notify.group, notify.log_path, notify.wait_replicas, notify.wait_ms);
    else
        notify_log("started; group %s, log %s", notify.group, notify.log_path);

    long long next_refresh = 0;
    while (!notify_stop_flag) {
        long long now = notify_now_ms();
        if (now >= next_refresh) {
            notify_refresh_streams();
            next_refresh = now + notify.refresh_ms;
        }
        int busy = 0;
        for (size_t i = 0; i < notify.nstreams && !notify_stop_flag; i++)
            if (notify.streams[i].grouped && notify.streams[i].next_read <= now)
                busy += notify_read_new(&notify.streams[i]);
        for (size_t i = 0; i < notify.nstreams && !notify_stop_flag; i++)
            if (notify.streams[i].grouped)
                notify_reclaim_when_due(&notify.streams[i], now);
        if (!busy) {
            /* until the first stream is due, and at most IDLE_MIN_MS (new streams, reclaims) */
            long long wake = notify_now_ms() + IDLE_MIN_MS;
            for (size_t i = 0; i < notify.nstreams; i++)
                if (notify.streams[i].grouped && notify.streams[i].next_read < wake)
                    wake = notify.streams[i].next_read;
            long long left = wake - notify_now_ms();
            if (left > 0)
                notify_sleep_ms((long)left);
        }
    }
    notify_log("stopped");
    seatd_redis_free(notify.c);
    close(notify.log_fd);
    free(notify.streams);
    return 0;
}
