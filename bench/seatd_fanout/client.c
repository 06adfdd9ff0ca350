/*
 * client.c - seatd_fanout's client processes: each holds its share of the WebSocket watchers
 * (epoll, non-blocking reads, a minimal client framing), reads every frame's versions (seatd)
 * or sequence number (nchan), samples the publish -> client latency, and checks the content of
 * what its first connections got (--verify) against the publishers' log of changes.
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
    long long s = fanout_shared->send_ns[k];
    if (s == 0) {
        if (NPEND + 2 > CPEND) {
            CPEND = CPEND ? CPEND * 2 : 4096;
            PEND = realloc(PEND, CPEND * sizeof(*PEND));
        }
        PEND[NPEND++] = k;
        PEND[NPEND++] = t;
        return;
    }
    if (s >= fanout_shared->win_start_ns && fanout_shared->win_start_ns > 0)
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
            if (f->n < MAX_SEATS && idx >= 0 && idx < fanout_shared->nseats && cJSON_IsString(s)) {
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
    long long v = fanout_json_ll(head, "\"version\":");
    if (strncmp(head, "{\"type\":\"snapshot\"", 18) == 0 && v >= 0) {
        if (c->ver < 0) {
            __sync_bool_compare_and_swap(&fanout_shared->v0, -1LL, v);
            if (fanout_shared->v0 != v && fanout_shared->t0_ns == 0)
                fprintf(stderr, "fanout: snapshots at versions %lld and %lld before any change\n",
                        (long long)fanout_shared->v0, v);
            __sync_fetch_and_add(&fanout_shared->greeted, 1);
        } else {
            PS->snapshots++;
            for (long long x = c->ver + 1; x <= v; x++)
                sample(x - fanout_shared->v0, t);
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
        long long from = fanout_json_ll(head, "\"fromVersion\":");
        if (from != c->ver + 1)
            PS->broken++;
        for (long long x = from > c->ver ? from : c->ver + 1; x <= v; x++) {
            sample(x - fanout_shared->v0, t);
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
    long long k = fanout_json_ll(head, "{\"seq\":");
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
        int want = fanout_shared->op_st[k];
        if (atoi(seat) - 1 != fanout_shared->op_seat[k] ||
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
            if (fanout_shared->side == SIDE_SEATD)
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
    memset(st, ST_AVAILABLE, (size_t)fanout_shared->nseats);
    for (long long i = 1; i <= k && i <= MAX_OPS; i++)
        st[fanout_shared->op_seat[i]] = fanout_shared->op_st[i];
}

/* The verified seatd connections' frames against the publishers' log. */
static void verify_seatd(conn_t *c)
{
    uint8_t *want = malloc((size_t)fanout_shared->nseats),
            *touched = calloc((size_t)fanout_shared->nseats, 1);
    for (int i = 0; i < c->nvf; i++) {
        vframe_t *f = &c->vf[i];
        PS->verified++;
        long long k0 = f->from - 1 - fanout_shared->v0, k1 = f->to - fanout_shared->v0;
        int ok = 1;
        if (f->snapshot) {
            state_at(k1, want);
            ok = f->n == fanout_shared->nseats;
            for (int j = 0; ok && j < f->n; j++)
                ok = f->st[j] == want[f->seat[j]];
        } else {
            /* coalesced: every seat changed in (k0, k1] once, with its last status */
            state_at(k1, want);
            memset(touched, 0, (size_t)fanout_shared->nseats);
            int nt = 0;
            for (long long x = k0 + 1; x <= k1; x++)
                if (!touched[fanout_shared->op_seat[x]]) {
                    touched[fanout_shared->op_seat[x]] = 1;
                    nt++;
                }
            ok = f->n == nt;
            for (int j = 0; ok && j < f->n; j++)
                ok = f->seat[j] < fanout_shared->nseats && touched[f->seat[j]] &&
                     f->st[j] == want[f->seat[j]];
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
    long long t = fanout_now_ns();
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

void fanout_client_proc(int pi, int first, int nconns)
{
    PS = &fanout_shared->proc[pi];
    conn_t *cs = calloc((size_t)nconns, sizeof(*cs));
    int ep = epoll_create1(0);
    char req[512], path[128];
    snprintf(path, sizeof(path), "%s%s%s",
             fanout_shared->side == SIDE_SEATD ? "/v1/shows/" : "/sub/", fanout_shared->target,
             fanout_shared->side == SIDE_SEATD ? "/seats/ws" : "");
    int rl = bench_ws_upgrade_request(req, sizeof(req), path, 1);
    SEEN_BYTES = fanout_shared->side == SIDE_NCHAN ? (size_t)(fanout_shared->ops_max / 8 + 2) : 0;
    for (int i = 0; i < nconns; i++) {
        conn_t *c = &cs[i];
        c->ver = -1;
        c->verify = i < fanout_shared->verify;
        int src = fanout_shared->nsources > 0 ? (first + i) % fanout_shared->nsources : -1;
        for (int tries = 0; (c->fd = fanout_tcp_connect(src)) < 0 && tries < 50; tries++)
            usleep(20000);
        if (c->fd < 0 || write(c->fd, req, (size_t)rl) != rl) {
            fprintf(stderr, "fanout: connect %d failed: %s\n", first + i, strerror(errno));
            __sync_fetch_and_add(&fanout_shared->connect_fail, 1);
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
            __sync_fetch_and_add(&fanout_shared->connect_fail, 1);
            close(c->fd);
            c->closed = 1;
            continue;
        }
        *end = '\0';
        if (strcasestr(head, "\r\nSec-WebSocket-Extensions: permessage-deflate")) {
            c->deflate = 1;
            PS->deflated++;
        }
        if (fanout_shared->side == SIDE_NCHAN) {
            c->seen = calloc(SEEN_BYTES, 1);
            __sync_fetch_and_add(&fanout_shared->greeted, 1);
        }
        __sync_fetch_and_add(&fanout_shared->connected, 1);
        size_t rest = len - (size_t)(end + 4 - head);
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        if (rest)
            feed(c, (const uint8_t *)end + 4, rest, fanout_now_ns());
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        if (i % 64 == 63) /* read as a browser would: at once, not after every connect */
            poll_once(ep, 0);
    }
    while (!fanout_shared->stop)
        poll_once(ep, 50);
    /* The publishers are done: every change has its send time now. */
    for (size_t i = 0; i + 1 < NPEND; i += 2) {
        long long s = fanout_shared->send_ns[PEND[i]];
        if (s == 0)
            PS->unresolved++;
        else if (s >= fanout_shared->win_start_ns)
            seatd_hist_add(&PS->hist, (uint64_t)((PEND[i + 1] > s ? PEND[i + 1] - s : 0) / 1000));
    }
    long long expect = fanout_shared->ops_ok;
    for (int i = 0; i < nconns; i++) {
        conn_t *c = &cs[i];
        if (!c->closed && c->got == expect)
            PS->complete++;
        if (fanout_shared->side == SIDE_SEATD && c->verify)
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
