/*
 * fanout.c - seatd_fanout: one side of the live-map fan-out benchmark (issue 31; bench/fanout
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
#include "hist.h"
#include "http/auth.h"
#include "http/ws_codec.h"
#include "bench_util.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define MAX_PROCS 64
#define MAX_PUBS 64
#define MAX_OPS (1 << 21) /* changes in one run */
#define MAX_SEATS 4096    /* seats of the show (S1..Sn) */
#define HEAD_MAX 192      /* bytes of a seatd frame needed to read its versions */
#define RBUF (256 * 1024) /* read buffer per client process */
#define VERIFY_MAX 8      /* verified connections per client process */

enum { SIDE_SEATD, SIDE_NCHAN };
enum { ST_AVAILABLE = 0, ST_HELD = 1 };

/* Counters of one client process (written by it alone, read by the parent). */
typedef struct {
    volatile long long delivered;  /* changes x watchers, each counted once */
    volatile long long frames;     /* data frames read */
    volatile long long bytes;      /* bytes read after the upgrades */
    volatile long long snapshots;  /* seatd: snapshots after the first one */
    volatile long long broken;     /* seatd: a delta that did not chain on the last version */
    volatile long long dup;        /* nchan: a message seen twice by one watcher */
    volatile long long closed;     /* connections the server closed */
    volatile long long unresolved; /* latency samples whose change was never acknowledged */
    volatile long long complete;   /* watchers that got every change (after the drain) */
    volatile long long verified;   /* frames whose content was checked */
    volatile long long bad;        /* of which wrong */
    volatile long long pongs;      /* pings answered */
    volatile int deflated;         /* watchers whose permessage-deflate offer was taken */
    volatile int finished;         /* results below are final */
    seatd_hist_t hist;             /* latency of the changes published in the window, us */
    char pad[128];
} proc_stats_t;

typedef struct {
    int side;
    int port;
    int nseats;
    int nsources;
    int verify;
    char target[64]; /* show id (seatd) or channel (nchan) */
    volatile int connected;
    volatile int greeted;      /* seatd: got its snapshot; nchan: upgraded */
    volatile int connect_fail; /* a connection or upgrade that failed */
    volatile long long v0;     /* seatd: the show's version before the first change */
    volatile int stop;         /* clients: finish (after the drain) */
    volatile long long win_start_ns, win_end_ns;
    /* publishers */
    volatile long long t0_ns; /* op i is due at t0 + i * gap */
    volatile long long gap_ns;
    volatile long long ops_max;   /* ops to publish */
    volatile long long next_pair; /* the next hold/release pair to take */
    volatile long long ops_ok, ops_fail, late_ms_max;
    volatile long long max_k; /* highest change number acknowledged */
    volatile int pub_done;
    proc_stats_t proc[MAX_PROCS];
    /* the publishers' log, by change number k (seatd: version - v0; nchan: seq), 1-based */
    volatile long long send_ns[MAX_OPS + 1];
    volatile uint16_t op_seat[MAX_OPS + 1];
    volatile uint8_t op_st[MAX_OPS + 1];
} shared_t;

static shared_t *SH;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A TCP connection to 127.0.0.1:port from 127.0.0.<2 + src> (src < 0: the default address). */
static int tcp_connect(int src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (src >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        struct sockaddr_in l = {0};
        l.sin_family = AF_INET;
        l.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)src);
        if (bind(fd, (struct sockaddr *)&l, sizeof(l)) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)SH->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* ---------------------------------------------------------------------------------------
 * A keep-alive HTTP/1.1 client (the publishers and the show's creation)
 * --------------------------------------------------------------------------------------- */

typedef struct {
    int fd;
    seatd_buf_t in;
} http_conn_t;

/* Sends one request on 'h' (reconnecting once if the kept connection was closed) and reads
 * the answer; the body (NUL-terminated) is left in '*body' (owned by 'h', valid until the next
 * call). Returns the status or -1. */
static int http_req(http_conn_t *h, const char *method, const char *path, const char *token,
                    const char *body, const char **out)
{
    seatd_buf_t req = SEATD_BUF_INIT;
    seatd_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path);
    if (token)
        seatd_buf_printf(&req, "Authorization: Bearer %s\r\n", token);
    if (body)
        seatd_buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                         strlen(body));
    seatd_buf_printf(&req, "\r\n%s", body ? body : "");
    int status = -1;
    for (int attempt = 0; attempt < 2 && status < 0; attempt++) {
        if (h->fd < 0 && (h->fd = tcp_connect(-1)) < 0)
            break;
        size_t off = 0;
        while (off < req.len) {
            ssize_t n = write(h->fd, req.data + off, req.len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        seatd_buf_reset(&h->in);
        size_t need = 0, head = 0;
        int chunked = 0, ok = off == req.len;
        while (ok) {
            if (head == 0) {
                char *e = h->in.data ? memmem(h->in.data, h->in.len, "\r\n\r\n", 4) : NULL;
                if (e) {
                    head = (size_t)(e - h->in.data) + 4;
                    char *cl = memmem(h->in.data, head, "Content-Length:", 15);
                    if (!cl)
                        cl = memmem(h->in.data, head, "content-length:", 15);
                    chunked = memmem(h->in.data, head, "chunked", 7) != NULL;
                    need = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
                }
            }
            if (head && !chunked && h->in.len >= head + need)
                break;
            if (head && chunked && memmem(h->in.data + head, h->in.len - head, "0\r\n\r\n", 5))
                break;
            char buf[16384];
            ssize_t n = read(h->fd, buf, sizeof(buf));
            if (n <= 0) {
                ok = 0;
                break;
            }
            seatd_buf_append(&h->in, buf, (size_t)n);
        }
        if (!ok) {
            close(h->fd);
            h->fd = -1;
            continue;
        }
        seatd_buf_append(&h->in, "", 1); /* NUL */
        sscanf(h->in.data, "HTTP/1.1 %d", &status);
        if (out)
            *out = h->in.data + head;
        if (memmem(h->in.data, head, "Connection: close", 17)) {
            close(h->fd);
            h->fd = -1;
        }
    }
    seatd_buf_free(&req);
    return status;
}

static long long json_ll(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* ---------------------------------------------------------------------------------------
 * Publishers
 * --------------------------------------------------------------------------------------- */

static char **TOKENS; /* seatd: one user per seat */

static void wait_until(long long t)
{
    for (long long now = now_ns(); now < t; now = now_ns()) {
        long long d = t - now;
        struct timespec ts = {d / 1000000000LL, d % 1000000000LL};
        nanosleep(&ts, NULL);
    }
}

static void note_late(long long due)
{
    long long late = (now_ns() - due) / 1000000;
    if (late > SH->late_ms_max)
        SH->late_ms_max = late; /* racy max: a report, not a check */
}

/* One publisher process: takes hold/release pairs until ops_max. */
static void publisher_proc(void)
{
    http_conn_t h = {.fd = -1, .in = SEATD_BUF_INIT};
    char path[128], body[160];
    for (;;) {
        long long p = __sync_fetch_and_add(&SH->next_pair, 1);
        /* a side that cannot keep the rate publishes less, never past the window */
        if (2 * p >= SH->ops_max || now_ns() >= SH->win_end_ns)
            break;
        int seat = (int)(p % SH->nseats); /* index; the seat is S<seat+1> */
        for (int half = 0; half < 2; half++) {
            long long due = SH->t0_ns + (2 * p + half) * SH->gap_ns;
            wait_until(due);
            note_late(due);
            int st = half == 0 ? ST_HELD : ST_AVAILABLE;
            if (SH->side == SIDE_NCHAN) {
                long long k = 2 * p + half + 1;
                snprintf(path, sizeof(path), "/pub/%s", SH->target);
                snprintf(body, sizeof(body), "{\"seq\":%lld,\"seat\":\"S%d\",\"status\":\"%s\"}", k,
                         seat + 1, st == ST_HELD ? "held" : "available");
                SH->op_seat[k] = (uint16_t)seat;
                SH->op_st[k] = (uint8_t)st;
                SH->send_ns[k] = now_ns();
                int status = http_req(&h, "POST", path, NULL, body, NULL);
                if (status == 201 || status == 202) {
                    __sync_fetch_and_add(&SH->ops_ok, 1);
                    long long m;
                    while ((m = SH->max_k) < k && !__sync_bool_compare_and_swap(&SH->max_k, m, k))
                        ;
                } else {
                    __sync_fetch_and_add(&SH->ops_fail, 1);
                }
                continue;
            }
            /* seatd: hold, then release that hold */
            static char hold_id[96];
            const char *resp = NULL;
            long long t_send = now_ns();
            int status;
            if (half == 0) {
                snprintf(path, sizeof(path), "/v1/shows/%s/holds", SH->target);
                snprintf(body, sizeof(body), "{\"seatIds\":[\"S%d\"]}", seat + 1);
                status = http_req(&h, "POST", path, TOKENS[seat], body, &resp);
                hold_id[0] = '\0';
                const char *hid = status == 201 ? strstr(resp, "\"holdId\":\"") : NULL;
                if (hid)
                    sscanf(hid + 10, "%95[^\"]", hold_id);
                if (!hid)
                    status = -status;
            } else {
                if (!hold_id[0]) {
                    __sync_fetch_and_add(&SH->ops_fail, 1);
                    continue;
                }
                snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
                status = http_req(&h, "DELETE", path, TOKENS[seat], NULL, &resp);
            }
            long long v = status == 200 || status == 201 ? json_ll(resp, "\"version\":") : -1;
            long long k = v - SH->v0;
            if (v < 0 || k < 1 || k > MAX_OPS) {
                __sync_fetch_and_add(&SH->ops_fail, 1);
                if (SH->ops_fail <= 5)
                    fprintf(stderr, "fanout: publisher: %s seat S%d: status %d %.200s\n",
                            half ? "release" : "hold", seat + 1, status, resp ? resp : "");
                continue;
            }
            SH->op_seat[k] = (uint16_t)seat;
            SH->op_st[k] = (uint8_t)st;
            SH->send_ns[k] = t_send;
            __sync_fetch_and_add(&SH->ops_ok, 1);
            long long m;
            while ((m = SH->max_k) < k && !__sync_bool_compare_and_swap(&SH->max_k, m, k))
                ;
        }
    }
    if (h.fd >= 0)
        close(h.fd);
    _exit(0);
}

/* ---------------------------------------------------------------------------------------
 * Client processes
 * --------------------------------------------------------------------------------------- */

typedef struct {
    long long from, to; /* versions covered (from..to) */
    int snapshot;
    int n;
    uint16_t *seat;
    uint8_t *st;
} vframe_t;

typedef struct {
    int fd;
    int closed;
    int deflate;
    long long ver;    /* seatd: the last version this watcher has (-1: no snapshot yet) */
    long long got;    /* changes this watcher got */
    uint8_t *partial; /* an incomplete frame's bytes */
    uint32_t plen, pcap;
    uint8_t *seen; /* nchan: bitmap by seq (dup check) */
    int verify;    /* content checked: frames kept in 'vf' */
    vframe_t *vf;
    int nvf, cvf;
} conn_t;

static proc_stats_t *PS;
static z_stream Z;
static int Z_INIT;
static long long *PEND; /* (k, t) pairs whose send time was not known yet */
static size_t NPEND, CPEND;
static size_t SEEN_BYTES;

static void sample(long long k, long long t)
{
    if (k < 1 || k > MAX_OPS)
        return;
    long long s = SH->send_ns[k];
    if (s == 0) {
        if (NPEND + 2 > CPEND) {
            CPEND = CPEND ? CPEND * 2 : 4096;
            PEND = realloc(PEND, CPEND * sizeof(*PEND));
        }
        PEND[NPEND++] = k;
        PEND[NPEND++] = t;
        return;
    }
    if (s >= SH->win_start_ns && SH->win_start_ns > 0)
        seatd_hist_add(&PS->hist, (uint64_t)((t > s ? t - s : 0) / 1000));
}

/* Inflates the start of a compressed message (at most cap - 1 bytes) into 'out'. */
static size_t inflate_head(const uint8_t *p, size_t n, char *out, size_t cap)
{
    if (!Z_INIT) {
        if (inflateInit2(&Z, -15) != Z_OK)
            return 0;
        Z_INIT = 1;
    }
    inflateReset(&Z);
    Z.next_in = (Bytef *)p;
    Z.avail_in = (uInt)n;
    Z.next_out = (Bytef *)out;
    Z.avail_out = (uInt)(cap - 1);
    inflate(&Z, Z_SYNC_FLUSH);
    size_t got = cap - 1 - Z.avail_out;
    out[got] = '\0';
    return got;
}

static void send_ctrl(conn_t *c, int opcode, const uint8_t *payload, size_t len)
{
    uint8_t f[2 + 4 + 125];
    if (len > 125)
        len = 125;
    const uint8_t mask[4] = {0x5a, 0x17, 0xc3, 0x2e};
    f[0] = (uint8_t)(0x80 | opcode);
    f[1] = (uint8_t)(0x80 | len);
    memcpy(f + 2, mask, 4);
    for (size_t i = 0; i < len; i++)
        f[6 + i] = payload[i] ^ mask[i % 4];
    ssize_t n = write(c->fd, f, 6 + len);
    (void)n; /* a control frame this small fits any socket buffer that is not dead */
}

/* The content of a verified connection's frame: kept, checked against the log at the end. */
static void keep_vframe(conn_t *c, const char *text, size_t len, long long from, long long to,
                        int snapshot)
{
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (c->nvf == c->cvf) {
        c->cvf = c->cvf ? c->cvf * 2 : 64;
        c->vf = realloc(c->vf, (size_t)c->cvf * sizeof(*c->vf));
    }
    vframe_t *f = &c->vf[c->nvf++];
    memset(f, 0, sizeof(*f));
    f->from = from;
    f->to = to;
    f->snapshot = snapshot;
    f->seat = calloc(MAX_SEATS, sizeof(*f->seat));
    f->st = calloc(MAX_SEATS, 1);
    if (snapshot) {
        const cJSON *seats = cJSON_GetObjectItemCaseSensitive(j, "seats"), *s = NULL;
        cJSON_ArrayForEach(s, seats)
        {
            int idx = atoi(s->string + 1) - 1;
            if (f->n < MAX_SEATS && idx >= 0 && idx < SH->nseats && cJSON_IsString(s)) {
                f->seat[f->n] = (uint16_t)idx;
                f->st[f->n++] = strcmp(s->valuestring, "held") == 0        ? ST_HELD
                                : strcmp(s->valuestring, "available") == 0 ? ST_AVAILABLE
                                                                           : 9;
            }
        }
    } else {
        const cJSON *ch = NULL;
        cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(j, "changes"))
        {
            const cJSON *seat = cJSON_GetObjectItemCaseSensitive(ch, "seat");
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(ch, "status");
            if (!cJSON_IsString(seat) || !cJSON_IsString(st) || f->n >= MAX_SEATS)
                continue;
            f->seat[f->n] = (uint16_t)(atoi(seat->valuestring + 1) - 1);
            f->st[f->n++] = strcmp(st->valuestring, "held") == 0        ? ST_HELD
                            : strcmp(st->valuestring, "available") == 0 ? ST_AVAILABLE
                                                                        : 9;
        }
    }
    cJSON_Delete(j);
}

/* One data frame of a seatd watcher: its versions, from the first bytes only (the content is
 * checked on the verified connections). */
static void seatd_frame(conn_t *c, const uint8_t *p, size_t n, int compressed, long long t)
{
    char head[HEAD_MAX];
    size_t hl;
    seatd_buf_t full = SEATD_BUF_INIT;
    if (c->verify) {
        if (compressed) {
            if (seatd_ws_inflate((const char *)p, n, 16 << 20, &full) < 0)
                PS->bad++;
        } else {
            seatd_buf_append(&full, p, n);
        }
        hl = full.len < HEAD_MAX - 1 ? full.len : HEAD_MAX - 1;
        memcpy(head, full.data ? full.data : "", hl);
        head[hl] = '\0';
    } else if (compressed) {
        hl = inflate_head(p, n, head, sizeof(head));
    } else {
        hl = n < HEAD_MAX - 1 ? n : HEAD_MAX - 1;
        memcpy(head, p, hl);
        head[hl] = '\0';
    }
    long long v = json_ll(head, "\"version\":");
    if (strncmp(head, "{\"type\":\"snapshot\"", 18) == 0 && v >= 0) {
        if (c->ver < 0) {
            __sync_bool_compare_and_swap(&SH->v0, -1LL, v);
            if (SH->v0 != v && SH->t0_ns == 0)
                fprintf(stderr, "fanout: snapshots at versions %lld and %lld before any change\n",
                        (long long)SH->v0, v);
            __sync_fetch_and_add(&SH->greeted, 1);
        } else {
            PS->snapshots++;
            for (long long x = c->ver + 1; x <= v; x++)
                sample(x - SH->v0, t);
            if (v > c->ver) {
                PS->delivered += v - c->ver;
                c->got += v - c->ver;
            }
        }
        if (c->verify && full.len)
            keep_vframe(c, full.data, full.len, c->ver + 1, v, 1);
        if (v > c->ver)
            c->ver = v;
    } else if (strncmp(head, "{\"type\":\"delta\"", 15) == 0 && v >= 0) {
        long long from = json_ll(head, "\"fromVersion\":");
        if (from != c->ver + 1)
            PS->broken++;
        for (long long x = from > c->ver ? from : c->ver + 1; x <= v; x++) {
            sample(x - SH->v0, t);
            PS->delivered++;
            c->got++;
        }
        if (c->verify && full.len)
            keep_vframe(c, full.data, full.len, from, v, 0);
        if (v > c->ver)
            c->ver = v;
    } else if (c->ver < 0 && strncmp(head, "{\"type\":\"version\"", 17) == 0) {
        c->ver = v; /* not expected: no ?since= here */
    }
    seatd_buf_free(&full);
}

/* One nchan message: {"seq":k,"seat":"S<n>","status":"…"}. */
static void nchan_frame(conn_t *c, const uint8_t *p, size_t n, int compressed, long long t)
{
    char head[HEAD_MAX];
    size_t hl;
    if (compressed) {
        hl = inflate_head(p, n, head, sizeof(head));
    } else {
        hl = n < HEAD_MAX - 1 ? n : HEAD_MAX - 1;
        memcpy(head, p, hl);
        head[hl] = '\0';
    }
    long long k = json_ll(head, "{\"seq\":");
    if (k < 1 || k > MAX_OPS || (size_t)(k / 8) >= SEEN_BYTES) {
        PS->bad++;
        return;
    }
    if (c->seen[k / 8] & (1u << (k % 8))) {
        PS->dup++;
        return;
    }
    c->seen[k / 8] |= (uint8_t)(1u << (k % 8));
    PS->delivered++;
    c->got++;
    sample(k, t);
    if (c->verify) {
        PS->verified++;
        char seat[16] = "", st[16] = "";
        const char *s = strstr(head, "\"seat\":\"S"), *q = strstr(head, "\"status\":\"");
        if (s)
            sscanf(s + 9, "%15[0-9]", seat);
        if (q)
            sscanf(q + 10, "%15[a-z]", st);
        int want = SH->op_st[k];
        if (atoi(seat) - 1 != SH->op_seat[k] ||
            strcmp(st, want == ST_HELD ? "held" : "available") != 0)
            PS->bad++;
    }
}

/* Parses complete frames in data[0..len); returns the bytes consumed. */
static size_t parse_frames(conn_t *c, const uint8_t *data, size_t len, long long t)
{
    size_t off = 0;
    while (len - off >= 2) {
        const uint8_t *f = data + off;
        int fin = f[0] & 0x80, rsv1 = f[0] & 0x40, op = f[0] & 0x0f;
        uint64_t pl = f[1] & 0x7f;
        size_t hdr = 2;
        if (pl == 126) {
            if (len - off < 4)
                break;
            pl = ((uint64_t)f[2] << 8) | f[3];
            hdr = 4;
        } else if (pl == 127) {
            if (len - off < 10)
                break;
            pl = 0;
            for (int i = 0; i < 8; i++)
                pl = (pl << 8) | f[2 + i];
            hdr = 10;
        }
        if (f[1] & 0x80)
            hdr += 4; /* a masked server frame is a protocol error; skip the key anyway */
        if (len - off < hdr + pl)
            break;
        const uint8_t *p = f + hdr;
        if (op == 0x9) {
            send_ctrl(c, 0xA, p, (size_t)pl);
            PS->pongs++;
        } else if (op == 0x8) {
            if (!c->closed) {
                c->closed = 1;
                PS->closed++;
                fprintf(stderr, "fanout: the server closed a watcher: %u %.*s\n",
                        pl >= 2 ? (unsigned)(p[0] << 8 | p[1]) : 0u, (int)(pl > 2 ? pl - 2 : 0),
                        (const char *)p + 2);
            }
        } else if ((op == 0x1 || op == 0x2) && fin) {
            PS->frames++;
            if (SH->side == SIDE_SEATD)
                seatd_frame(c, p, (size_t)pl, rsv1 != 0, t);
            else
                nchan_frame(c, p, (size_t)pl, rsv1 != 0, t);
        } else if (op != 0xA) {
            PS->bad++; /* fragments: neither server sends them here */
        }
        off += hdr + (size_t)pl;
    }
    return off;
}

static void feed(conn_t *c, const uint8_t *data, size_t len, long long t)
{
    if (c->plen) {
        if (c->plen + len > c->pcap) {
            c->pcap = (uint32_t)(c->plen + len) * 2;
            c->partial = realloc(c->partial, c->pcap);
        }
        memcpy(c->partial + c->plen, data, len);
        c->plen += (uint32_t)len;
        size_t used = parse_frames(c, c->partial, c->plen, t);
        memmove(c->partial, c->partial + used, c->plen - used);
        c->plen -= (uint32_t)used;
    } else {
        size_t used = parse_frames(c, data, len, t);
        if (used < len) {
            if (len - used > c->pcap) {
                c->pcap = (uint32_t)(len - used) * 2;
                c->partial = realloc(c->partial, c->pcap);
            }
            memcpy(c->partial, data + used, len - used);
            c->plen = (uint32_t)(len - used);
        }
    }
    if (c->plen == 0 && c->pcap > 65536) {
        free(c->partial);
        c->partial = NULL;
        c->pcap = 0;
    }
}

/* The state of every seat after change k (all seats start available). */
static void state_at(long long k, uint8_t *st)
{
    memset(st, ST_AVAILABLE, (size_t)SH->nseats);
    for (long long i = 1; i <= k && i <= MAX_OPS; i++)
        st[SH->op_seat[i]] = SH->op_st[i];
}

/* The verified seatd connections' frames against the publishers' log. */
static void verify_seatd(conn_t *c)
{
    uint8_t *want = malloc((size_t)SH->nseats), *touched = calloc((size_t)SH->nseats, 1);
    for (int i = 0; i < c->nvf; i++) {
        vframe_t *f = &c->vf[i];
        PS->verified++;
        long long k0 = f->from - 1 - SH->v0, k1 = f->to - SH->v0;
        int ok = 1;
        if (f->snapshot) {
            state_at(k1, want);
            ok = f->n == SH->nseats;
            for (int j = 0; ok && j < f->n; j++)
                ok = f->st[j] == want[f->seat[j]];
        } else {
            /* coalesced: every seat changed in (k0, k1] once, with its last status */
            state_at(k1, want);
            memset(touched, 0, (size_t)SH->nseats);
            int nt = 0;
            for (long long x = k0 + 1; x <= k1; x++)
                if (!touched[SH->op_seat[x]]) {
                    touched[SH->op_seat[x]] = 1;
                    nt++;
                }
            ok = f->n == nt;
            for (int j = 0; ok && j < f->n; j++)
                ok = f->seat[j] < SH->nseats && touched[f->seat[j]] && f->st[j] == want[f->seat[j]];
        }
        if (!ok) {
            PS->bad++;
            if (PS->bad <= 3)
                fprintf(stderr, "fanout: verify: frame %lld..%lld (%s, %d seats) does not match\n",
                        f->from, f->to, f->snapshot ? "snapshot" : "delta", f->n);
        }
        free(f->seat);
        free(f->st);
    }
    free(want);
    free(touched);
}

/* Reads whatever the ready watchers have (waiting up to 'timeout_ms' for one). */
static void poll_once(int ep, int timeout_ms)
{
    static uint8_t buf[RBUF];
    struct epoll_event evs[512];
    int n = epoll_wait(ep, evs, 512, timeout_ms);
    long long t = now_ns();
    for (int i = 0; i < n; i++) {
        conn_t *c = evs[i].data.ptr;
        for (;;) {
            ssize_t r = read(c->fd, buf, sizeof(buf));
            if (r > 0) {
                PS->bytes += r;
                feed(c, buf, (size_t)r, t);
                if ((size_t)r < sizeof(buf))
                    break;
                continue;
            }
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                break;
            if (!c->closed) {
                c->closed = 1;
                PS->closed++;
            }
            epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            break;
        }
    }
}

static void client_proc(int pi, int first, int nconns)
{
    PS = &SH->proc[pi];
    conn_t *cs = calloc((size_t)nconns, sizeof(*cs));
    int ep = epoll_create1(0);
    char req[512], path[128];
    snprintf(path, sizeof(path), "%s%s%s", SH->side == SIDE_SEATD ? "/v1/shows/" : "/sub/",
             SH->target, SH->side == SIDE_SEATD ? "/seats/ws" : "");
    int rl = bench_ws_upgrade_request(req, sizeof(req), path, 1);
    SEEN_BYTES = SH->side == SIDE_NCHAN ? (size_t)(SH->ops_max / 8 + 2) : 0;
    for (int i = 0; i < nconns; i++) {
        conn_t *c = &cs[i];
        c->ver = -1;
        c->verify = i < SH->verify;
        int src = SH->nsources > 0 ? (first + i) % SH->nsources : -1;
        for (int tries = 0; (c->fd = tcp_connect(src)) < 0 && tries < 50; tries++)
            usleep(20000);
        if (c->fd < 0 || write(c->fd, req, (size_t)rl) != rl) {
            fprintf(stderr, "fanout: connect %d failed: %s\n", first + i, strerror(errno));
            __sync_fetch_and_add(&SH->connect_fail, 1);
            c->closed = 1;
            continue;
        }
        char head[4096];
        size_t len = 0;
        char *end = NULL;
        ssize_t n = 0;
        head[0] = '\0';
        while (!end && len < sizeof(head) - 1) {
            n = read(c->fd, head + len, sizeof(head) - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
            head[len] = '\0';
            end = strstr(head, "\r\n\r\n");
        }
        if (!end || strncmp(head, "HTTP/1.1 101", 12) != 0) {
            fprintf(stderr, "fanout: upgrade %d failed (%zu bytes, then %s): %.40s\n", first + i,
                    len,
                    n == 0  ? "end of stream"
                    : n < 0 ? strerror(errno)
                            : "too long",
                    head);
            __sync_fetch_and_add(&SH->connect_fail, 1);
            close(c->fd);
            c->closed = 1;
            continue;
        }
        *end = '\0';
        if (strcasestr(head, "\r\nSec-WebSocket-Extensions: permessage-deflate")) {
            c->deflate = 1;
            PS->deflated++;
        }
        if (SH->side == SIDE_NCHAN) {
            c->seen = calloc(SEEN_BYTES, 1);
            __sync_fetch_and_add(&SH->greeted, 1);
        }
        __sync_fetch_and_add(&SH->connected, 1);
        size_t rest = len - (size_t)(end + 4 - head);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        if (rest)
            feed(c, (const uint8_t *)end + 4, rest, now_ns());
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        if (i % 64 == 63) /* read as a browser would: at once, not after every connect */
            poll_once(ep, 0);
    }
    while (!SH->stop)
        poll_once(ep, 50);
    /* The publishers are done: every change has its send time now. */
    for (size_t i = 0; i + 1 < NPEND; i += 2) {
        long long s = SH->send_ns[PEND[i]];
        if (s == 0)
            PS->unresolved++;
        else if (s >= SH->win_start_ns)
            seatd_hist_add(&PS->hist, (uint64_t)((PEND[i + 1] > s ? PEND[i + 1] - s : 0) / 1000));
    }
    long long expect = SH->ops_ok;
    for (int i = 0; i < nconns; i++) {
        conn_t *c = &cs[i];
        if (!c->closed && c->got == expect)
            PS->complete++;
        if (SH->side == SIDE_SEATD && c->verify)
            verify_seatd(c);
        if (c->fd >= 0)
            close(c->fd);
        free(c->partial);
        free(c->seen);
        free(c->vf);
    }
    free(cs);
    PS->finished = 1;
    _exit(0);
}

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
    t->t_ns = now_ns();
}

static long long sum_delivered(void)
{
    long long s = 0;
    for (int i = 0; i < MAX_PROCS; i++)
        s += SH->proc[i].delivered;
    return s;
}

static long long sum_field(size_t off)
{
    long long s = 0;
    for (int i = 0; i < MAX_PROCS; i++)
        s += *(volatile long long *)((char *)&SH->proc[i] + off);
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
    for (int i = 0; i < SH->nseats; i++)
        seatd_buf_printf(&b,
                         "%s{\"id\":\"S%d\",\"row\":\"R%d\",\"number\":%d,\"tier\":\"standard\","
                         "\"x\":%d,\"y\":%d}",
                         i ? "," : "", i + 1, i / 40, i % 40 + 1, i % 40, i / 40);
    seatd_buf_puts(&b, "]}");
    http_conn_t h = {.fd = -1, .in = SEATD_BUF_INIT};
    const char *resp = NULL;
    int st = http_req(&h, "POST", "/v1/shows", admin, b.data, &resp);
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
    SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (SH == MAP_FAILED)
        return 1;
    SH->side = side;
    SH->port = port;
    SH->nseats = nseats;
    SH->nsources = sources;
    SH->verify = verify;
    SH->ops_max = ops_max;
    SH->gap_ns = (long long)(1e9 / rate);
    SH->v0 = side == SIDE_SEATD ? -1 : 0;
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
        if (create_show(auth, SH->target, sizeof(SH->target)) < 0)
            return 1;
        TOKENS = calloc((size_t)nseats, sizeof(*TOKENS));
        for (int i = 0; i < nseats; i++) {
            char sub[32];
            snprintf(sub, sizeof(sub), "fan%d", i + 1);
            if (seatd_auth_sign(auth, sub, 0, 7200, &TOKENS[i]) < 0)
                return 1;
        }
    } else {
        snprintf(SH->target, sizeof(SH->target), "%s", target);
    }

    /* Before: the serving processes and the kernel with no watcher. */
    long rss0 = group_rss(&G_NGINX) + group_rss(&G_APP);
    long rss0_nginx = group_rss(&G_NGINX), rss0_app = group_rss(&G_APP);
    long sock0, inuse0, slab0 = meminfo_kb("Slab");
    sockstat(&sock0, &inuse0);

    /* The watchers. */
    long long tc0 = now_ns();
    int cpids[MAX_PROCS];
    for (int p = 0; p < procs; p++) {
        int first = (int)((long long)clients * p / procs);
        int n = (int)((long long)clients * (p + 1) / procs) - first;
        fflush(NULL);
        if ((cpids[p] = fork()) == 0)
            client_proc(p, first, n);
        G_CLIENTS.pid[G_CLIENTS.n++] = cpids[p];
    }
    while (SH->greeted + SH->connect_fail < clients &&
           now_ns() - tc0 < (long long)(connect_s * 1e9))
        usleep(20000);
    double conn_s = (double)(now_ns() - tc0) / 1e9;
    int held = SH->greeted;
    fprintf(stderr, "fanout: %s: %d of %d watchers connected in %.1f s (%d failed)\n",
            side == SIDE_SEATD ? "seatd" : "nchan", held, clients, conn_s, SH->connect_fail);
    /* Let the first frames drain, then memory with every watcher idle. */
    usleep((useconds_t)(settle_s * 1e6));
    long rss1_nginx = group_rss(&G_NGINX), rss1_app = group_rss(&G_APP);
    long rss1 = rss1_nginx + rss1_app;
    long sock1, inuse1, slab1 = meminfo_kb("Slab");
    sockstat(&sock1, &inuse1);
    if (side == SIDE_SEATD && SH->v0 < 0) {
        fprintf(stderr, "fanout: no snapshot reached any watcher\n");
        SH->stop = 1;
        for (int p = 0; p < procs; p++)
            waitpid(cpids[p], NULL, 0);
        return 1;
    }

    /* The publishers, open loop from t0. */
    SH->t0_ns = now_ns() + 200000000LL;
    SH->win_start_ns = SH->t0_ns + (long long)(warmup * 1e9);
    SH->win_end_ns = SH->win_start_ns + (long long)(seconds * 1e9);
    int ppids[MAX_PUBS];
    for (int k = 0; k < pubs; k++) {
        fflush(NULL);
        if ((ppids[k] = fork()) == 0)
            publisher_proc();
        G_PUBS.pid[G_PUBS.n++] = ppids[k];
    }
    wait_until(SH->win_start_ns);
    ticks_t a, b;
    snap_ticks(&a);
    long long d0 = sum_delivered(), f0 = SUM(frames), by0 = SUM(bytes), ok0 = SH->ops_ok;
    /* A guard for a shared machine: a side that buffers what it cannot send grows without
     * bound; past --max-rss-mb the publishers stop and the run says so. */
    int aborted = 0;
    while (now_ns() < SH->win_end_ns) {
        usleep(100000);
        if (!aborted && group_rss(&G_NGINX) + group_rss(&G_APP) > max_rss_mb * 1024) {
            aborted = 1;
            SH->ops_max = 0;
            fprintf(stderr, "fanout: the serving processes passed %ld MB: publishing stopped\n",
                    max_rss_mb);
        }
    }
    snap_ticks(&b);
    long long d1 = sum_delivered(), f1 = SUM(frames), by1 = SUM(bytes), ok1 = SH->ops_ok;
    long rss2_nginx = group_rss(&G_NGINX), rss2_app = group_rss(&G_APP);
    long rss2 = rss2_nginx + rss2_app;
    long sock2, inuse2;
    sockstat(&sock2, &inuse2);
    /* The publishers finish the last pairs; then every watcher must get every change. */
    for (int k = 0; k < pubs; k++)
        waitpid(ppids[k], NULL, 0);
    SH->pub_done = 1;
    long long t_pub_end = now_ns();
    long long expected = SH->ops_ok * (long long)held;
    long long last = -1, t_last = now_ns();
    while (sum_delivered() < expected && now_ns() - t_pub_end < (long long)(drain_s * 1e9)) {
        usleep(50000);
        long long d = sum_delivered();
        if (d != last) {
            last = d;
            t_last = now_ns();
        } else if (now_ns() - t_last > 10000000000LL) {
            break; /* nothing moved for 10 s */
        }
    }
    double drain = (double)(now_ns() - t_pub_end) / 1e9;
    long long delivered = sum_delivered();
    SH->stop = 1;
    for (int p = 0; p < procs; p++)
        waitpid(cpids[p], NULL, 0);

    /* The figures. */
    long long deflated = 0;
    for (int p = 0; p < procs; p++)
        deflated += SH->proc[p].deflated;
    seatd_hist_t hist = {0};
    for (int p = 0; p < procs; p++)
        seatd_hist_merge(&hist, &SH->proc[p].hist);
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
           (double)(ok1 - ok0) / win, seconds, (long long)SH->ops_ok, (long long)SH->ops_fail,
           (long long)SH->late_ms_max, delivered, expected, SUM(complete), drain, dps,
           (double)(f1 - f0) / win, (double)(by1 - by0) / win, pct(&hist, 0.5), pct(&hist, 0.99),
           hist.count ? (double)hist.max_us / 1000.0 : -1, (unsigned long long)hist.count, cpu,
           cpu_nginx, cpu_app, cpu_redis, cpu_clients, cpu_pubs, busy,
           busy > cpu + cpu_redis + cpu_clients + cpu_pubs
               ? busy - cpu - cpu_redis - cpu_clients - cpu_pubs
               : 0.0,
           dps > 0 ? cpu / dps * 1e6 : -1, rss_conn, (double)(rss1_nginx - rss0_nginx) / n,
           (double)(rss1_app - rss0_app) / n, (double)(rss2 - rss0) / n,
           (double)(rss2_nginx - rss0_nginx) / n, (double)(rss2_app - rss0_app) / n, sock_conn,
           (double)(sock2 - sock0) * pg / n, (double)(slab1 - slab0) / n, rss_conn + sock_conn,
           SUM(broken), SUM(dup), SUM(snapshots), SUM(closed), SUM(unresolved), deflated, clients,
           SUM(verified), SUM(bad), SH->connect_fail, aborted);
    fflush(stdout);
    if (auth)
        seatd_auth_free(auth);
    int ok = held == clients && delivered == expected && SUM(broken) == 0 && SUM(dup) == 0 &&
             SUM(bad) == 0 && SUM(closed) == 0 && !aborted;
    return ok ? 0 : 1;
}
