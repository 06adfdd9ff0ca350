/*
 * ws_fanout.c - the live seat map's fan-out benchmark: N WebSocket clients on one show, spread
 * over P client processes (epoll, non-blocking, framing through seatd_ws in client mode),
 * while holds run through the HTTP API. It reports, one line per figure:
 *   - delta delivery latency p50/p99/max: from the moment a hold request is sent to the
 *     moment each client receives the delta that shows its seat held (the delta JSON has no
 *     timestamp: send times are kept per seat in shared memory, CLOCK_MONOTONIC);
 *   - deltas expected vs received (every client must see every held seat exactly once);
 *   - the worker's RSS before and after the clients connected, and per connection.
 *
 * Usage: seatd_ws_fanout --port P --worker-pid PID [--clients 5000] [--procs 4]
 *                        [--holds 400] [--rate 50] [--seats 2000]
 *        seatd_ws_fanout --port P --show ID --watch-ms MS [--clients 1000] [--procs 2]
 *                        [--deflate 1]
 * The second form only watches an existing show (bench/run's on-sale mix, where the holds come
 * from the load generator): it counts the frames and the bytes read, and checks every delta
 * chains on the last. --deflate 1 offers permessage-deflate as browsers do (and inflates).
 * Needs SEATD_JWT_SECRET (to mint the admin and user tokens). bench/ws_fanout.sh starts Redis
 * and one worker and runs this; see there.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "base/buf.h"
#include "base/mem.h"
#include "http/ws_codec.h"
#include "bench_util.h"

#define MAX_SEATS 4096
#define MAX_SAMPLES (1 << 22) /* latency samples across all clients */

typedef struct {
    volatile long long send_ns[MAX_SEATS]; /* when the hold of seat i was sent (0: not yet) */
    volatile int ready;                    /* clients connected with their snapshot */
    volatile int stop;                     /* the parent says: finish up */
    volatile long long nsamples;           /* used entries of 'lat_us' */
    volatile long long received;           /* held-seat changes received */
    volatile long long dup;                /* a seat seen held twice by one client */
    volatile long long broken;             /* deltas that did not chain */
    volatile long long frames;             /* text frames received (watch mode) */
    volatile long long bytes;              /* bytes read after the upgrades (watch mode) */
    volatile int deflate;                  /* offer permessage-deflate */
    volatile int deflated;                 /* clients whose offer was taken */
    volatile int watch;                    /* watch mode: no per-seat bookkeeping */
    float lat_us[MAX_SAMPLES];
} shared_t;

static shared_t *SH;
static int PORT = 0, NSEATS = 2000;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int tcp_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)PORT);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* A blocking HTTP request; returns the status and the body (owned) in '*body'. */
static int http(const char *method, const char *path, const char *token, const char *body,
                char **out)
{
    int fd = tcp_connect();
    if (fd < 0)
        return -1;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b,
                     "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                     "%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, token, body ? strlen(body) : 0, body ? body : "");
    if (write(fd, b.data, b.len) != (ssize_t)b.len) {
        close(fd);
        seatd_buf_free(&b);
        return -1;
    }
    seatd_buf_reset(&b);
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        seatd_buf_append(&b, buf, (size_t)n);
    close(fd);
    int status = -1;
    if (b.len > 12)
        sscanf(b.data, "HTTP/1.1 %d", &status);
    char *sep = b.data ? strstr(b.data, "\r\n\r\n") : NULL;
    if (out)
        *out = seatd_strdup(sep ? sep + 4 : "");
    seatd_buf_free(&b);
    return status;
}

/* ---------------------------------------------------------------------------------------
 * Client processes
 * --------------------------------------------------------------------------------------- */

typedef struct {
    int fd;
    seatd_ws_t *ws;
    long long ver;      /* last version seen */
    uint8_t *seen_held; /* per seat: seen held already */
    int snapshot;       /* got the snapshot */
} conn_t;

static conn_t *cur_conn;

static void on_msg(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len, unsigned status,
                   void *user)
{
    conn_t *c = user;
    if (opcode != SEATD_WS_TEXT)
        return;
    long long t = now_ns();
    cJSON *j = cJSON_ParseWithLength((const char *)data, len);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "snapshot") == 0) {
        c->ver = (long long)cJSON_GetObjectItemCaseSensitive(j, "version")->valuedouble;
        if (!c->snapshot)
            __sync_fetch_and_add(&SH->ready, 1);
        c->snapshot = 1;
    } else if (cJSON_IsString(type) && strcmp(type->valuestring, "delta") == 0) {
        long long from = (long long)cJSON_GetObjectItemCaseSensitive(j, "fromVersion")->valuedouble;
        if (from != c->ver + 1)
            __sync_fetch_and_add(&SH->broken, 1);
        c->ver = (long long)cJSON_GetObjectItemCaseSensitive(j, "version")->valuedouble;
        if (SH->watch) {
            cJSON_Delete(j);
            __sync_fetch_and_add(&SH->frames, 1);
            return;
        }
        const cJSON *ch = NULL;
        cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(j, "changes"))
        {
            const char *seat = cJSON_GetObjectItemCaseSensitive(ch, "seat")->valuestring;
            const char *st = cJSON_GetObjectItemCaseSensitive(ch, "status")->valuestring;
            int idx = atoi(seat + 1) - 1; /* seats are S1..Sn */
            if (strcmp(st, "held") != 0 || idx < 0 || idx >= NSEATS)
                continue;
            if (c->seen_held[idx]++) {
                __sync_fetch_and_add(&SH->dup, 1);
                continue;
            }
            __sync_fetch_and_add(&SH->received, 1);
            long long sent = SH->send_ns[idx];
            long long k = __sync_fetch_and_add(&SH->nsamples, 1);
            if (sent > 0 && k < MAX_SAMPLES)
                SH->lat_us[k] = (float)((t - sent) / 1000.0);
        }
    }
    cJSON_Delete(j);
}

static void flush_out(conn_t *c)
{
    seatd_buf_t out = SEATD_BUF_INIT;
    if (seatd_ws_output(c->ws, &out) > 0) {
        ssize_t n = write(c->fd, out.data, out.len);
        (void)n; /* pongs and closes are tiny; a full socket buffer here means we are dead */
    }
    seatd_buf_free(&out);
}

static int client_proc(int nconns)
{
    conn_t *cs = calloc((size_t)nconns, sizeof(*cs));
    int ep = epoll_create1(0);
    const char *show = getenv("WSF_SHOW");
    char req[640], path[128];
    snprintf(path, sizeof(path), "/v1/shows/%s/seats/ws", show);
    int rl = bench_ws_upgrade_request(req, sizeof(req), path, SH->deflate);
    for (int i = 0; i < nconns; i++) {
        conn_t *c = &cs[i];
        c->seen_held = calloc((size_t)NSEATS, 1);
        c->ver = -1;
        for (int tries = 0; (c->fd = tcp_connect()) < 0 && tries < 50; tries++)
            usleep(20000);
        if (c->fd < 0 || write(c->fd, req, (size_t)rl) != rl) {
            fprintf(stderr, "ws_fanout: connect %d failed: %s\n", i, strerror(errno));
            _exit(2);
        }
        /* Read the 101 head; the rest is frames. */
        char head[4096];
        size_t len = 0;
        char *end = NULL;
        while (!end && len < sizeof(head) - 1) {
            ssize_t n = read(c->fd, head + len, sizeof(head) - 1 - len);
            if (n <= 0)
                _exit(3);
            len += (size_t)n;
            head[len] = '\0';
            end = strstr(head, "\r\n\r\n");
        }
        if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
            fprintf(stderr, "ws_fanout: upgrade refused: %.40s\n", head);
            _exit(4);
        }
        c->ws = seatd_ws_new(1, 16 << 20, on_msg, c);
        *end = '\0'; /* the headers alone */
        if (strstr(head, "\r\nSec-WebSocket-Extensions: permessage-deflate")) {
            seatd_ws_set_deflate(c->ws);
            __sync_fetch_and_add(&SH->deflated, 1);
        }
        size_t rest = len - (size_t)(end + 4 - head);
        if (rest && seatd_ws_feed(c->ws, end + 4, rest) < 0)
            _exit(5);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    }
    static char buf[1 << 16];
    struct epoll_event evs[256];
    long long stop_at = 0;
    for (;;) {
        if (SH->stop && stop_at == 0)
            stop_at = now_ns() + 200000000LL; /* drain what is in flight */
        if (stop_at && now_ns() > stop_at)
            break;
        int n = epoll_wait(ep, evs, 256, 50);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            cur_conn = c;
            ssize_t r;
            while ((r = read(c->fd, buf, sizeof(buf))) > 0) {
                __sync_fetch_and_add(&SH->bytes, r);
                if (seatd_ws_feed(c->ws, buf, (size_t)r) < 0)
                    break;
            }
            if (r == 0) {
                fprintf(stderr, "ws_fanout: the server closed a client\n");
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            }
            flush_out(c);
        }
    }
    for (int i = 0; i < nconns; i++) {
        close(cs[i].fd);
        seatd_ws_free(cs[i].ws);
        free(cs[i].seen_held);
    }
    free(cs);
    _exit(0);
}

/* ---------------------------------------------------------------------------------------
 * The parent: show, clients, holds, figures
 * --------------------------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Forks 'procs' client processes sharing 'clients' watchers of $WSF_SHOW and waits (60 s at
 * most) until all have their snapshot; '*connect_s' is how long that took. Returns the pids
 * (owned). */
static int *start_clients(int clients, int procs, double *connect_s)
{
    long long t0 = now_ns();
    int *pids = calloc((size_t)procs, sizeof(int));
    for (int p = 0; p < procs; p++) {
        int n = clients / procs + (p < clients % procs);
        fflush(NULL);
        if ((pids[p] = fork()) == 0)
            client_proc(n);
    }
    while (SH->ready < clients && now_ns() - t0 < 60000000000LL)
        usleep(20000);
    *connect_s = (double)(now_ns() - t0) / 1e9;
    return pids;
}

/* Watch mode: 'clients' watchers on show 'show' for 'ms' once all are connected, then the
 * figures. */
static int watch_only(const char *show, int clients, int procs, int ms, int deflate)
{
    SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (SH == MAP_FAILED)
        return 1;
    SH->watch = 1;
    SH->deflate = deflate;
    setenv("WSF_SHOW", show, 1);
    double connect_s = 0;
    int *pids = start_clients(clients, procs, &connect_s);
    printf("ws_fanout watch connected=%d\n", SH->ready); /* bench/run starts the load now */
    fflush(stdout);
    long long f0 = SH->frames, b0 = SH->bytes, t1 = now_ns();
    while (now_ns() - t1 < (long long)ms * 1000000LL)
        usleep(20000);
    double secs = (double)(now_ns() - t1) / 1e9;
    long long frames = SH->frames - f0, bytes = SH->bytes - b0;
    SH->stop = 1;
    for (int p = 0; p < procs; p++)
        waitpid(pids[p], NULL, 0);
    printf("ws_fanout watch clients=%d connected=%d connect_s=%.2f frames=%lld frames_per_s=%.0f "
           "broken_chain=%lld bytes_per_s=%.0f bytes_per_frame=%.0f deflate=%d/%d\n",
           clients, SH->ready, connect_s, frames, secs > 0 ? frames / secs : 0.0, SH->broken,
           secs > 0 ? bytes / secs : 0.0, frames > 0 ? (double)bytes / frames : 0.0, SH->deflated,
           clients);
    free(pids);
    return SH->ready == clients && SH->broken == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int clients = 5000, procs = 4, holds = 400, rate = 50, worker_pid = 0, watch_ms = 0;
    const char *existing = NULL;
    int deflate = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            PORT = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--worker-pid"))
            worker_pid = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients"))
            clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--procs"))
            procs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--holds"))
            holds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate"))
            rate = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seats"))
            NSEATS = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--show"))
            existing = argv[i + 1];
        else if (!strcmp(argv[i], "--watch-ms"))
            watch_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--deflate"))
            deflate = atoi(argv[i + 1]) != 0;
    }
    if (existing && watch_ms > 0)
        return watch_only(existing, clients, procs, watch_ms, deflate);
    const char *secret = getenv("SEATD_JWT_SECRET");
    seatd_auth_t *auth = NULL;
    char *admin = NULL, *user = NULL;
    if (PORT <= 0 || !secret || seatd_auth_new(secret, strlen(secret), &auth) < 0 ||
        seatd_auth_sign(auth, "admin", 1, 3600, &admin) < 0 ||
        seatd_auth_sign(auth, "fan", 0, 3600, &user) < 0 || NSEATS > MAX_SEATS || holds > NSEATS) {
        fprintf(stderr, "usage: SEATD_JWT_SECRET=… %s --port P --worker-pid PID [...]\n", argv[0]);
        return 2;
    }
    seatd_mem_init();

    /* One show of NSEATS seats S1..Sn. */
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "{\"title\":\"fanout\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                       "\"holdTtlSeconds\":600,\"priceTiers\":{\"standard\":1000},\"seats\":[");
    for (int i = 0; i < NSEATS; i++)
        seatd_buf_printf(&b,
                         "%s{\"id\":\"S%d\",\"row\":\"R%d\",\"number\":%d,\"tier\":\"standard\","
                         "\"x\":%d,\"y\":%d}",
                         i ? "," : "", i + 1, i / 40, i % 40 + 1, i % 40, i / 40);
    seatd_buf_puts(&b, "]}");
    char *resp = NULL;
    int st = http("POST", "/v1/shows", admin, b.data, &resp);
    seatd_buf_free(&b);
    cJSON *j = cJSON_Parse(resp);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
    if (st != 201 || !cJSON_IsString(id)) {
        fprintf(stderr, "ws_fanout: create show: %d %s\n", st, resp);
        return 1;
    }
    char show[32];
    snprintf(show, sizeof(show), "%s", id->valuestring);
    cJSON_Delete(j);
    free(resp);
    setenv("WSF_SHOW", show, 1);

    SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (SH == MAP_FAILED)
        return 1;
    long rss0 = worker_pid ? bench_rss_kb(worker_pid) : -1;
    double connect_s = 0;
    int *pids = start_clients(clients, procs, &connect_s);
    usleep(300000);
    long rss1 = worker_pid ? bench_rss_kb(worker_pid) : -1;
    printf("ws_fanout clients=%d procs=%d connected=%d in %.2f s\n", clients, procs, SH->ready,
           connect_s);

    /* Holds, one seat each, at 'rate' per second, sent with their send time recorded. */
    long long gap = 1000000000LL / (rate > 0 ? rate : 1), next = now_ns();
    int ok = 0;
    for (int i = 0; i < holds; i++) {
        while (now_ns() < next)
            usleep(200);
        next += gap;
        char path[64], body[64];
        snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
        snprintf(body, sizeof(body), "{\"seatIds\":[\"S%d\"]}", i + 1);
        char sub[32], *tok = NULL; /* one user per hold: the per-user seat limit */
        snprintf(sub, sizeof(sub), "fan%d", i);
        if (seatd_auth_sign(auth, sub, 0, 3600, &tok) < 0)
            return 1;
        SH->send_ns[i] = now_ns();
        if (http("POST", path, tok, body, NULL) == 201)
            ok++;
        free(tok);
    }
    long long wait_until = now_ns() + 5000000000LL;
    long long expected = (long long)ok * SH->ready;
    while (SH->received < expected && now_ns() < wait_until)
        usleep(20000);
    long rss2 = worker_pid ? bench_rss_kb(worker_pid) : -1;
    SH->stop = 1;
    for (int p = 0; p < procs; p++)
        waitpid(pids[p], NULL, 0);

    long long ns = SH->nsamples < MAX_SAMPLES ? SH->nsamples : MAX_SAMPLES;
    qsort(SH->lat_us, (size_t)ns, sizeof(float), cmp_float);
    double p50 = ns ? SH->lat_us[ns / 2] / 1000.0 : -1;
    double p99 = ns ? SH->lat_us[(long long)(ns * 0.99)] / 1000.0 : -1;
    double mx = ns ? SH->lat_us[ns - 1] / 1000.0 : -1;
    printf("ws_fanout holds=%d ok=%d rate=%d/s deltas_expected=%lld received=%lld dup=%lld "
           "broken_chain=%lld\n",
           holds, ok, rate, expected, SH->received, SH->dup, SH->broken);
    printf("ws_fanout delta_latency_ms p50=%.1f p99=%.1f max=%.1f (hold sent -> client has it)\n",
           p50, p99, mx);
    if (worker_pid)
        printf("ws_fanout worker_rss_kb idle=%ld connected=%ld after_holds=%ld "
               "per_connection_kb=%.1f\n",
               rss0, rss1, rss2, clients ? (double)(rss1 - rss0) / SH->ready : 0.0);
    free(pids);
    free(admin);
    free(user);
    seatd_auth_free(auth);
    return SH->received == expected && SH->broken == 0 && SH->dup == 0 ? 0 : 1;
}
