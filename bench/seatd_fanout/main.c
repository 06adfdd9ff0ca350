/*
 * main.c - seatd_fanout: one side of the live-map fan-out benchmark (issue 31; bench/fanout
 * runs it once against seatd and once against nchan, the same way, and compares).
 *
 * One run: N WebSocket watchers of one show (or one nchan channel), spread over P client
 * processes (epoll, non-blocking reads, a minimal client framing: unmasked server frames,
 * masked pongs and closes) and over loopback source addresses 127.0.0.2.. (so that ephemeral
 * ports never run short), each offering permessage-deflate as browsers do. Once all are
 * connected (seatd: each has its snapshot), K publisher processes change seats at a fixed rate
 * (open loop: op i is due at t0 + i / rate, a late one goes at once), each change a hold of one
 * seat, then its release:
 *   --side seatd  POST /v1/shows/{id}/holds {"seatIds":["S<n>"]} and DELETE /v1/holds/{id}
 *                 through nginx (one user per seat); each answer's "version" names the change,
 *                 and a watcher has change v once a frame covering v reached it: a delta
 *                 fromVersion..version (coalesced as the worker likes), or a snapshot after a
 *                 gap. Changes are counted by version, not by frame.
 *   --side nchan  POST /pub/<channel> with {"seq":k,"seat":"S<n>","status":"held"|"available"}:
 *                 one message per change, each of which must reach every watcher.
 * Measured (the serving processes are given by pid: --nginx-pids, --app-pids; --redis-pids
 * only reported): watchers held; changes delivered per second in the window (change x
 * watcher); publish -> client latency (the publisher's send time of the change, kept in shared
 * memory by change number, to the moment a client read the frame that carries it) p50/p99/max;
 * CPU-seconds per second of the serving processes (/proc/<pid>/stat utime + stime over the
 * window); memory per connection: the serving processes' RSS before the clients connected and
 * after (idle, then again at the end of the window), and the kernel's TCP memory
 * (/proc/net/sockstat "mem", pages) and slab (/proc/meminfo) alike, each divided by N.
 * After the window the publishers stop and the run waits (--drain-s) until every watcher has
 * every change. One connection per client process (--verify) also checks the content of
 * what it got against the publishers' log of changes.
 *
 * The last line is one line of key=value figures starting "fanout side=".
 * Needs SEATD_JWT_SECRET for the seatd side (it creates the show: S1..S<seats>, as ws_fanout).
 *
 * The files (bench/seatd_fanout/, behind fanout.h): main.c, the parent (the processes, /proc
 * figures, the report); publisher.c; client.c; net.c, the TCP and HTTP client.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/mem.h"
#include "bench_util.h"
#include "fanout.h"
#include "hist.h"
#include "http/auth.h"
#include "http/ws_codec.h"
shared_t *fanout_shared;
char **fanout_tokens; /* seatd: one user per seat */

/* ---------------------------------------------------------------------------------------
 * The parent: processes, /proc figures, the report
 * --------------------------------------------------------------------------------------- */

typedef struct {
    int pid[64];
    int n;
} group_t;

static void parse_pids(const char *s, group_t *g)
{
    g->n = 0;
    while (s && *s && g->n < 64) {
        char *end;
        long p = strtol(s, &end, 10);
        if (end == s) {
            s++;
            continue;
        }
        if (p > 0)
            g->pid[g->n++] = (int)p;
        s = end;
    }
}

/* utime + stime of 'pid', clock ticks (0 if gone). */
static long long cpu_ticks(int pid)
{
    char path[64], line[2048];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long ut = 0, st = 0;
    if (fgets(line, sizeof(line), f)) {
        char *p = strrchr(line, ')');
        /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
         * utime stime */
        if (p)
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st);
    }
    fclose(f);
    return ut + st;
}

static long long group_ticks(const group_t *g)
{
    long long t = 0;
    for (int i = 0; i < g->n; i++)
        t += cpu_ticks(g->pid[i]);
    return t;
}

static long group_rss(const group_t *g)
{
    long kb = 0;
    for (int i = 0; i < g->n; i++) {
        long one = bench_rss_kb(g->pid[i]);
        kb += one > 0 ? one : 0; /* a process gone counts nothing */
    }
    return kb;
}

/* /proc/net/sockstat TCP "mem" (pages) and "inuse". */
static void sockstat(long *mem_pages, long *inuse)
{
    FILE *f = fopen("/proc/net/sockstat", "r");
    char line[256];
    *mem_pages = *inuse = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "TCP: inuse %ld orphan %*d tw %*d alloc %*d mem %ld", inuse, mem_pages) ==
            2)
            break;
    if (f)
        fclose(f);
}

static long meminfo_kb(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kb = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            kb = strtol(line + kl + 1, NULL, 10);
            break;
        }
    if (f)
        fclose(f);
    return kb;
}

/* Busy and total ticks of the whole machine (/proc/stat "cpu"). */
static void machine_ticks(long long *busy, long long *total)
{
    FILE *f = fopen("/proc/stat", "r");
    long long v[10] = {0};
    *busy = *total = 0;
    if (f && fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            *total += v[i];
        *busy = *total - v[3] - v[4];
    }
    if (f)
        fclose(f);
}

typedef struct {
    long long nginx, app, redis, clients, pubs, busy, total, t_ns;
} ticks_t;

static group_t G_NGINX, G_APP, G_REDIS, G_CLIENTS, G_PUBS;

static void snap_ticks(ticks_t *t)
{
    t->nginx = group_ticks(&G_NGINX);
    t->app = group_ticks(&G_APP);
    t->redis = group_ticks(&G_REDIS);
    t->clients = group_ticks(&G_CLIENTS);
    t->pubs = group_ticks(&G_PUBS);
    machine_ticks(&t->busy, &t->total);
    t->t_ns = fanout_now_ns();
}

static long long sum_delivered(void)
{
    long long s = 0;
    for (int i = 0; i < MAX_PROCS; i++)
        s += fanout_shared->proc[i].delivered;
    return s;
}

static long long sum_field(size_t off)
{
    long long s = 0;
    for (int i = 0; i < MAX_PROCS; i++)
        s += *(volatile long long *)((char *)&fanout_shared->proc[i] + off);
    return s;
}
#define SUM(f) sum_field(offsetof(proc_stats_t, f))

/* seatd: the show, S1..S<seats>, created through nginx with an admin token. */
static int create_show(seatd_auth_t *auth, char *id, size_t idlen)
{
    char *admin = NULL;
    if (seatd_auth_sign(auth, "fanout-admin", 1, 3600, &admin) < 0)
        return -1;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "{\"title\":\"fanout\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                       "\"holdTtlSeconds\":600,\"priceTiers\":{\"standard\":1000},\"seats\":[");
    for (int i = 0; i < fanout_shared->nseats; i++)
        seatd_buf_printf(&b,
                         "%s{\"id\":\"S%d\",\"row\":\"R%d\",\"number\":%d,\"tier\":\"standard\","
                         "\"x\":%d,\"y\":%d}",
                         i ? "," : "", i + 1, i / 40, i % 40 + 1, i % 40, i / 40);
    seatd_buf_puts(&b, "]}");
    http_conn_t h = {.fd = -1, .in = SEATD_BUF_INIT};
    const char *resp = NULL;
    int st = fanout_http_req(&h, "POST", "/v1/shows", admin, b.data, &resp);
    int rc = -1;
    const char *p = st == 201 && resp ? strstr(resp, "\"id\":\"") : NULL;
    if (p && sscanf(p + 6, "%31[^\"]", id) == 1)
        rc = 0;
    else
        fprintf(stderr, "fanout: create show: %d %.300s\n", st, resp ? resp : "");
    (void)idlen;
    if (h.fd >= 0)
        close(h.fd);
    seatd_buf_free(&h.in);
    seatd_buf_free(&b);
    free(admin);
    return rc;
}

static double pct(const seatd_hist_t *h, double q)
{
    return h->count ? (double)seatd_hist_quantile(h, q) / 1000.0 : -1;
}

int main(int argc, char **argv)
{
    int side = -1, port = 0, clients = 1000, procs = 2, pubs = 16, nseats = 2000, sources = 32;
    int verify = 1;
    long max_rss_mb = 4096;
    double rate = 500, seconds = 20, warmup = 5, drain_s = 30, settle_s = 2, connect_s = 300;
    const char *target = NULL;
    const char *nginx_pids = NULL, *app_pids = NULL, *redis_pids = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--side"))
            side = !strcmp(v, "seatd") ? SIDE_SEATD : !strcmp(v, "nchan") ? SIDE_NCHAN : -1;
        else if (!strcmp(k, "--port"))
            port = atoi(v);
        else if (!strcmp(k, "--clients"))
            clients = atoi(v);
        else if (!strcmp(k, "--procs"))
            procs = atoi(v);
        else if (!strcmp(k, "--publishers"))
            pubs = atoi(v);
        else if (!strcmp(k, "--rate"))
            rate = atof(v);
        else if (!strcmp(k, "--seconds"))
            seconds = atof(v);
        else if (!strcmp(k, "--warmup"))
            warmup = atof(v);
        else if (!strcmp(k, "--drain-s"))
            drain_s = atof(v);
        else if (!strcmp(k, "--settle-s"))
            settle_s = atof(v);
        else if (!strcmp(k, "--connect-s"))
            connect_s = atof(v);
        else if (!strcmp(k, "--seats"))
            nseats = atoi(v);
        else if (!strcmp(k, "--sources"))
            sources = atoi(v);
        else if (!strcmp(k, "--verify"))
            verify = atoi(v);
        else if (!strcmp(k, "--max-rss-mb"))
            max_rss_mb = atol(v);
        else if (!strcmp(k, "--channel"))
            target = v;
        else if (!strcmp(k, "--nginx-pids"))
            nginx_pids = v;
        else if (!strcmp(k, "--app-pids"))
            app_pids = v;
        else if (!strcmp(k, "--redis-pids"))
            redis_pids = v;
        else {
            fprintf(stderr, "fanout: unknown option %s\n", k);
            return 2;
        }
    }
    long long ops_max = (long long)(rate * (warmup + seconds) + 0.5) & ~1LL;
    if (side < 0 || port <= 0 || clients < 1 || procs < 1 || procs > MAX_PROCS || pubs < 1 ||
        pubs > MAX_PUBS || rate <= 0 || nseats < pubs || nseats > MAX_SEATS || ops_max < 2 ||
        ops_max > MAX_OPS || verify < 0 || verify > VERIFY_MAX || sources < 0 || sources > 250 ||
        (side == SIDE_NCHAN && !target)) {
        fprintf(stderr,
                "usage: %s --side seatd|nchan --port P [--channel C (nchan)] [--clients N] "
                "[--procs P] [--rate changes/s] [--seconds S] [--warmup S] [--drain-s S] "
                "[--publishers K] [--sources K] [--verify K] [--nginx-pids a,b] "
                "[--app-pids a,b] [--redis-pids a] [--max-rss-mb M]\n",
                argv[0]);
        return 2;
    }
    seatd_mem_init();
    signal(SIGPIPE, SIG_IGN);
    fanout_shared = mmap(NULL, sizeof(*fanout_shared), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (fanout_shared == MAP_FAILED)
        return 1;
    fanout_shared->side = side;
    fanout_shared->port = port;
    fanout_shared->nseats = nseats;
    fanout_shared->nsources = sources;
    fanout_shared->verify = verify;
    fanout_shared->ops_max = ops_max;
    fanout_shared->gap_ns = (long long)(1e9 / rate);
    fanout_shared->v0 = side == SIDE_SEATD ? -1 : 0;
    parse_pids(nginx_pids, &G_NGINX);
    parse_pids(app_pids, &G_APP);
    parse_pids(redis_pids, &G_REDIS);

    seatd_auth_t *auth = NULL;
    if (side == SIDE_SEATD) {
        const char *secret = getenv("SEATD_JWT_SECRET");
        if (!secret || seatd_auth_new(secret, strlen(secret), &auth) < 0) {
            fprintf(stderr, "fanout: the seatd side needs SEATD_JWT_SECRET\n");
            return 2;
        }
        if (create_show(auth, fanout_shared->target, sizeof(fanout_shared->target)) < 0)
            return 1;
        fanout_tokens = calloc((size_t)nseats, sizeof(*fanout_tokens));
        for (int i = 0; i < nseats; i++) {
            char sub[32];
            snprintf(sub, sizeof(sub), "fan%d", i + 1);
            if (seatd_auth_sign(auth, sub, 0, 7200, &fanout_tokens[i]) < 0)
                return 1;
        }
    } else {
        snprintf(fanout_shared->target, sizeof(fanout_shared->target), "%s", target);
    }

    /* Before: the serving processes and the kernel with no watcher. */
    long rss0 = group_rss(&G_NGINX) + group_rss(&G_APP);
    long rss0_nginx = group_rss(&G_NGINX), rss0_app = group_rss(&G_APP);
    long sock0, inuse0, slab0 = meminfo_kb("Slab");
    sockstat(&sock0, &inuse0);

    /* The watchers. */
    long long tc0 = fanout_now_ns();
    int cpids[MAX_PROCS];
    for (int p = 0; p < procs; p++) {
        int first = (int)((long long)clients * p / procs);
        int n = (int)((long long)clients * (p + 1) / procs) - first;
        fflush(NULL);
        if ((cpids[p] = fork()) == 0)
            fanout_client_proc(p, first, n);
        G_CLIENTS.pid[G_CLIENTS.n++] = cpids[p];
    }
    while (fanout_shared->greeted + fanout_shared->connect_fail < clients &&
           fanout_now_ns() - tc0 < (long long)(connect_s * 1e9))
        usleep(20000);
    double conn_s = (double)(fanout_now_ns() - tc0) / 1e9;
    int held = fanout_shared->greeted;
    fprintf(stderr, "fanout: %s: %d of %d watchers connected in %.1f s (%d failed)\n",
            side == SIDE_SEATD ? "seatd" : "nchan", held, clients, conn_s,
            fanout_shared->connect_fail);
    /* Let the first frames drain, then memory with every watcher idle. */
    usleep((useconds_t)(settle_s * 1e6));
    long rss1_nginx = group_rss(&G_NGINX), rss1_app = group_rss(&G_APP);
    long rss1 = rss1_nginx + rss1_app;
    long sock1, inuse1, slab1 = meminfo_kb("Slab");
    sockstat(&sock1, &inuse1);
    if (side == SIDE_SEATD && fanout_shared->v0 < 0) {
        fprintf(stderr, "fanout: no snapshot reached any watcher\n");
        fanout_shared->stop = 1;
        for (int p = 0; p < procs; p++)
            waitpid(cpids[p], NULL, 0);
        return 1;
    }

    /* The publishers, open loop from t0. */
    fanout_shared->t0_ns = fanout_now_ns() + 200000000LL;
    fanout_shared->win_start_ns = fanout_shared->t0_ns + (long long)(warmup * 1e9);
    fanout_shared->win_end_ns = fanout_shared->win_start_ns + (long long)(seconds * 1e9);
    int ppids[MAX_PUBS];
    for (int k = 0; k < pubs; k++) {
        fflush(NULL);
        if ((ppids[k] = fork()) == 0)
            fanout_publisher_proc();
        G_PUBS.pid[G_PUBS.n++] = ppids[k];
    }
    fanout_wait_until(fanout_shared->win_start_ns);
    ticks_t a, b;
    snap_ticks(&a);
    long long d0 = sum_delivered(), f0 = SUM(frames), by0 = SUM(bytes), ok0 = fanout_shared->ops_ok;
    /* A guard for a shared machine: a side that buffers what it cannot send grows without
     * bound; past --max-rss-mb the publishers stop and the run says so. */
    int aborted = 0;
    while (fanout_now_ns() < fanout_shared->win_end_ns) {
        usleep(100000);
        if (!aborted && group_rss(&G_NGINX) + group_rss(&G_APP) > max_rss_mb * 1024) {
            aborted = 1;
            fanout_shared->ops_max = 0;
            fprintf(stderr, "fanout: the serving processes passed %ld MB: publishing stopped\n",
                    max_rss_mb);
        }
    }
    snap_ticks(&b);
    long long d1 = sum_delivered(), f1 = SUM(frames), by1 = SUM(bytes), ok1 = fanout_shared->ops_ok;
    long rss2_nginx = group_rss(&G_NGINX), rss2_app = group_rss(&G_APP);
    long rss2 = rss2_nginx + rss2_app;
    long sock2, inuse2;
    sockstat(&sock2, &inuse2);
    /* The publishers finish the last pairs; then every watcher must get every change. */
    for (int k = 0; k < pubs; k++)
        waitpid(ppids[k], NULL, 0);
    fanout_shared->pub_done = 1;
    long long t_pub_end = fanout_now_ns();
    long long expected = fanout_shared->ops_ok * (long long)held;
    long long last = -1, t_last = fanout_now_ns();
    while (sum_delivered() < expected && fanout_now_ns() - t_pub_end < (long long)(drain_s * 1e9)) {
        usleep(50000);
        long long d = sum_delivered();
        if (d != last) {
            last = d;
            t_last = fanout_now_ns();
        } else if (fanout_now_ns() - t_last > 10000000000LL) {
            break; /* nothing moved for 10 s */
        }
    }
    double drain = (double)(fanout_now_ns() - t_pub_end) / 1e9;
    long long delivered = sum_delivered();
    fanout_shared->stop = 1;
    for (int p = 0; p < procs; p++)
        waitpid(cpids[p], NULL, 0);

    /* The figures. */
    long long deflated = 0;
    for (int p = 0; p < procs; p++)
        deflated += fanout_shared->proc[p].deflated;
    seatd_hist_t hist = {0};
    for (int p = 0; p < procs; p++)
        seatd_hist_merge(&hist, &fanout_shared->proc[p].hist);
    double win = (double)(b.t_ns - a.t_ns) / 1e9, hz = (double)sysconf(_SC_CLK_TCK);
    double cpu_nginx = (double)(b.nginx - a.nginx) / hz / win;
    double cpu_app = (double)(b.app - a.app) / hz / win;
    double cpu_redis = (double)(b.redis - a.redis) / hz / win;
    double cpu_clients = (double)(b.clients - a.clients) / hz / win;
    double cpu_pubs = (double)(b.pubs - a.pubs) / hz / win;
    double busy = b.total > a.total ? (double)(b.busy - a.busy) / (double)(b.total - a.total) *
                                          (double)sysconf(_SC_NPROCESSORS_ONLN)
                                    : 0;
    double cpu = cpu_nginx + cpu_app;
    double dps = (double)(d1 - d0) / win;
    double pg = (double)sysconf(_SC_PAGESIZE) / 1024.0;
    double n = held > 0 ? held : 1;
    double rss_conn = (double)(rss1 - rss0) / n, sock_conn = (double)(sock1 - sock0) * pg / n;
    printf("fanout side=%s clients=%d held=%d connect_s=%.1f procs=%d rate=%.0f "
           "achieved_rate=%.1f seconds=%.0f changes=%lld change_fail=%lld late_ms_max=%lld "
           "delivered=%lld expected=%lld complete=%lld drain_s=%.1f "
           "delivered_per_s=%.0f frames_per_s=%.0f bytes_per_s=%.0f "
           "lat_p50_ms=%.1f lat_p99_ms=%.1f lat_max_ms=%.1f lat_samples=%llu "
           "cpu_s_per_s=%.3f cpu_nginx=%.3f cpu_app=%.3f cpu_redis=%.3f cpu_clients=%.3f "
           "cpu_publishers=%.3f machine_busy_cores=%.2f cpu_others=%.2f cpu_us_per_change=%.3f "
           "rss_kb_per_conn=%.2f rss_nginx_kb_per_conn=%.2f rss_app_kb_per_conn=%.2f "
           "rss_loaded_kb_per_conn=%.2f rss_loaded_nginx_kb_per_conn=%.2f "
           "rss_loaded_app_kb_per_conn=%.2f sock_kb_per_conn=%.2f sock_loaded_kb_per_conn=%.2f "
           "slab_kb_per_conn=%.2f mem_kb_per_conn=%.2f "
           "broken_chain=%lld dup=%lld snapshots=%lld closed=%lld unresolved=%lld "
           "deflate=%lld/%d verified=%lld verify_bad=%lld connect_fail=%d aborted=%d\n",
           side == SIDE_SEATD ? "seatd" : "nchan", clients, held, conn_s, procs, rate,
           (double)(ok1 - ok0) / win, seconds, (long long)fanout_shared->ops_ok,
           (long long)fanout_shared->ops_fail, (long long)fanout_shared->late_ms_max, delivered,
           expected, SUM(complete), drain, dps, (double)(f1 - f0) / win, (double)(by1 - by0) / win,
           pct(&hist, 0.5), pct(&hist, 0.99), hist.count ? (double)hist.max_us / 1000.0 : -1,
           (unsigned long long)hist.count, cpu, cpu_nginx, cpu_app, cpu_redis, cpu_clients,
           cpu_pubs, busy,
           busy > cpu + cpu_redis + cpu_clients + cpu_pubs
               ? busy - cpu - cpu_redis - cpu_clients - cpu_pubs
               : 0.0,
           dps > 0 ? cpu / dps * 1e6 : -1, rss_conn, (double)(rss1_nginx - rss0_nginx) / n,
           (double)(rss1_app - rss0_app) / n, (double)(rss2 - rss0) / n,
           (double)(rss2_nginx - rss0_nginx) / n, (double)(rss2_app - rss0_app) / n, sock_conn,
           (double)(sock2 - sock0) * pg / n, (double)(slab1 - slab0) / n, rss_conn + sock_conn,
           SUM(broken), SUM(dup), SUM(snapshots), SUM(closed), SUM(unresolved), deflated, clients,
           SUM(verified), SUM(bad), fanout_shared->connect_fail, aborted);
    fflush(stdout);
    if (auth)
        seatd_auth_free(auth);
    int ok = held == clients && delivered == expected && SUM(broken) == 0 && SUM(dup) == 0 &&
             SUM(bad) == 0 && SUM(closed) == 0 && !aborted;
    return ok ? 0 : 1;
}
