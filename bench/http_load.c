/*
 * http_load.c - the HTTP driver of the load generator (see loadgen.h): keep-alive connections
 * on one libuv loop per process, http-parser for the answers, a closed loop per connection
 * (or paced by --rate), reconnect with a short backoff, and a bounded stop.
 *
 * Connection lifecycle: DOWN -> CONNECTING -> IDLE <-> BUSY -> CLOSING; a dropped socket
 * goes back to DOWN and reconnects after 100 ms unless the run is stopping. Each connection
 * owns two handles (socket + backoff timer) and frees itself in the last close callback.
 */
#include "loadgen.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <uv.h>

#include "jwt.h"

/* ==================================== HTTP driver ======================================== */

#define CONN_WBUF 1024  /* request bytes: the largest is a 4-seat hold with a token */
#define CONN_BODY 2048  /* answer body bytes kept (hold ids, a group hold's, booking status) */
#define CONN_RBUF 65536 /* read buffer per connection */

enum conn_state_e {
    CONN_DOWN,       /* no socket; waiting for the backoff timer */
    CONN_CONNECTING, /* uv_tcp_connect in flight */
    CONN_IDLE,       /* connected, no request, waiting for a rate token */
    CONN_BUSY,       /* a request in flight */
    CONN_CLOSING     /* uv_close(tcp) in flight */
};

typedef struct proc_s proc_t;

typedef struct conn_s {
    union {
        uv_tcp_t tcp;         /* a TCP target */
        uv_pipe_t pipe;       /* a unix socket target */
    } io;                     /* the socket; re-initialised on every reconnect */
    uv_timer_t backoff;       /* reconnect delay */
    uv_connect_t connect_req; /* the connect in flight */
    uv_write_t write_req;     /* the request write in flight */
    http_parser parser;       /* answer parser, reset per request */
    proc_t *p;                /* the owning process state */
    int index;                /* connection number across all processes */
    int pi;                   /* its index in proc_t.conns */
    int state;                /* enum conn_state_e */
    int op;                   /* SEATD_BENCH_OP_* in flight */
    int follow;               /* after a won hold: SEATD_BENCH_OP_BOOK/RELEASE or -1 */
    int nseats;               /* seats of the hold in flight */
    int user;                 /* the virtual user of the hold in flight */
    int handles;              /* open uv handles (tcp + timer), for the final free */
    int answered;             /* the answer in flight completed */
    uint64_t t0;              /* when the request was written, us */
    size_t resp_bytes;        /* bytes of the answer in flight */
    char hold_id[72];         /* the hold the follow-up acts on */
    char etag[64];            /* the last ETag seen (seat map) */
    char hfield[32];          /* the header name being parsed (lower case, truncated) */
    size_t hfield_len;        /* its length */
    int hfield_done;          /* the value part started */
    char hvalue[64];          /* the ETag value being parsed */
    size_t hvalue_len;        /* its length */
    char retry_after[16];     /* the answer's Retry-After (--log) */
    size_t retry_after_len;   /* its length */
    char idem[48];            /* the hold's idempotency key (--idem), "" without */
    char seats[40];           /* the hold's seat ids, comma-separated (--log) */
    int places;               /* places the hold in flight asks for (--areas), 0 without */
    char legs[SEATD_BENCH_MAX_GROUP][40]; /* a won group hold's show holds (--group), then
                                             its payment's show bookings */
    int nlegs;                            /* their count, 0: the last hold was not a group's */
    char body[CONN_BODY];                 /* the first CONN_BODY-1 bytes of the answer body */
    size_t body_len;                      /* their count */
    char wbuf[CONN_WBUF];                 /* the request */
    size_t wlen;                          /* its length */
    char rbuf[CONN_RBUF];                 /* read buffer */
} conn_t;

struct proc_s {
    const seatd_bench_cfg_t *cfg;  /* borrowed */
    seatd_bench_slot_t *slot;      /* borrowed: shared memory */
    uv_loop_t loop;                /* this process's loop */
    uv_timer_t stop_timer;         /* fires at the end of the duration */
    uv_timer_t tick;               /* paces --rate */
    conn_t **conns;                /* owned */
    int nconns;                    /* their count */
    int live_handles;              /* open handles of connections, for the final check */
    int stopping;                  /* no new requests */
    long attempts_left;            /* hold attempts this process may still start (-1: no cap) */
    double tokens;                 /* rate tokens available */
    double tokens_per_ms;          /* rate per process per ms (0: unpaced) */
    uint64_t tokens_at_us;         /* when tokens were last credited */
    uint64_t start_us;             /* when load started */
    uint64_t record_from_us;       /* answers to requests started before are not measured */
    uint64_t last_us;              /* when the last answer arrived */
    uint64_t stop_us;              /* when the run was told to stop */
    int forced;                    /* busy connections were dropped after the deadline */
    seatd_bench_rng_t rng;         /* this process's randomness */
    char **tokens_by_user;         /* minted lazily, owned */
    http_parser_settings settings; /* parser callbacks */
    int log_fd;                    /* --log: O_APPEND, -1 without */
    char logbuf[16384];            /* lines not written yet */
    size_t loglen;                 /* their bytes */
    uint64_t idem_seq;             /* --idem: keys made so far */
};

static void conn_next(conn_t *c);
static void conn_connect(conn_t *c);

static const char *user_token(proc_t *p, int user)
{
    if (!p->tokens_by_user[user]) {
        char sub[32], tok[SEATD_BENCH_JWT_MAX];
        snprintf(sub, sizeof sub, "u%d", user);
        if (seatd_bench_jwt(p->cfg->secret, sub, 0, 24 * 3600, tok, sizeof tok) != 0)
            abort(); /* our own bug: the buffer is sized for any sub we make */
        p->tokens_by_user[user] = strdup(tok);
        if (!p->tokens_by_user[user])
            abort();
    }
    return p->tokens_by_user[user];
}

static void on_conn_handle_closed(uv_handle_t *h)
{
    conn_t *c = h->data;
    c->p->live_handles--;
    if (--c->handles == 0) {
        c->p->conns[c->pi] = NULL;
        free(c);
    }
}

/* The end: close both handles of 'c' for good (it is freed in the last close callback). */
static void conn_finish(conn_t *c)
{
    if (c->state != CONN_DOWN && c->state != CONN_CLOSING && !uv_is_closing((uv_handle_t *)&c->io))
        uv_close((uv_handle_t *)&c->io, on_conn_handle_closed);
    else if (c->state == CONN_DOWN)
        c->handles--, c->p->live_handles--; /* the tcp handle was already closed */
    c->state = CONN_CLOSING;
    if (!uv_is_closing((uv_handle_t *)&c->backoff))
        uv_close((uv_handle_t *)&c->backoff, on_conn_handle_closed);
}

static void on_backoff(uv_timer_t *t)
{
    conn_t *c = t->data;
    if (c->p->stopping) {
        conn_finish(c);
        return;
    }
    conn_connect(c);
}

static void on_tcp_closed_for_retry(uv_handle_t *h)
{
    conn_t *c = h->data;
    c->state = CONN_DOWN;
    if (c->p->stopping) {
        c->handles--; /* tcp is closed; only the timer remains */
        c->p->live_handles--;
        if (!uv_is_closing((uv_handle_t *)&c->backoff))
            uv_close((uv_handle_t *)&c->backoff, on_conn_handle_closed);
        return;
    }
    uv_timer_start(&c->backoff, on_backoff, 100, 0);
}

/* ---- the outcome log (--log) -------------------------------------------------------------- */

static void log_flush(proc_t *p)
{
    for (size_t off = 0; off < p->loglen;) {
        ssize_t w = write(p->log_fd, p->logbuf + off, p->loglen - off);
        if (w <= 0)
            break; /* the log is best effort; the counters still count */
        off += (size_t)w;
    }
    p->loglen = 0;
}

/* Appends the outcome of the request in flight on 'c' (status 0: no answer). */
static void log_outcome(conn_t *c, int status)
{
    proc_t *p = c->p;
    if (p->log_fd < 0 || c->op == SEATD_BENCH_OP_SEATMAP)
        return;
    char id[72] = "-", info[48] = "-", type[96];
    if (c->op == SEATD_BENCH_OP_BOOK && (status == 200 || status == 201 || status == 202)) {
        if (seatd_bench_json_str(c->body, "bookingId", id, sizeof id) != 0)
            snprintf(id, sizeof id, "-");
        if (seatd_bench_json_str(c->body, "status", info, sizeof info) != 0)
            snprintf(info, sizeof info, "-");
    } else if (status == 201 || status == 200 || status == 204) {
        snprintf(id, sizeof id, "%s", c->hold_id[0] ? c->hold_id : "-");
    } else if (status >= 400 && seatd_bench_json_str(c->body, "type", type, sizeof type) == 0) {
        const char *slash = strrchr(type, '/');
        snprintf(info, sizeof info, "%.40s", slash ? slash + 1 : type);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static const char *const names[] = {"hold", "book", "release", "seatmap", "ghold"};
    char legs[SEATD_BENCH_MAX_GROUP * 41] = "";
    for (int k = 0, l = 0; c->op != SEATD_BENCH_OP_RELEASE && k < c->nlegs; k++)
        l += snprintf(legs + l, sizeof legs - (size_t)l, "%s%s", k ? "," : " ", c->legs[k]);
    if (p->loglen > sizeof p->logbuf - 512)
        log_flush(p);
    int n = snprintf(p->logbuf + p->loglen, sizeof p->logbuf - p->loglen,
                     "%lld %s %d u%d %s %s %s %s %llu %s %s%s\n",
                     (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, names[c->op], status,
                     c->user, c->op == SEATD_BENCH_OP_HOLD && c->idem[0] ? c->idem : "-", id,
                     c->retry_after_len ? c->retry_after : "-", info,
                     (unsigned long long)(seatd_bench_now_us() - c->t0),
                     c->seats[0] ? c->seats : "-", c->places ? p->cfg->areas : "-", legs);
    if (n > 0 && (size_t)n < sizeof p->logbuf - p->loglen)
        p->loglen += (size_t)n;
}

/* Drops the socket; reconnects after a short delay unless the run is stopping. */
static void conn_drop(conn_t *c, int count_error)
{
    if (c->state == CONN_CLOSING || c->state == CONN_DOWN)
        return;
    if (count_error)
        c->p->slot->conn_errors++;
    if (c->state == CONN_BUSY && !c->answered) {
        c->p->slot->status[c->op][0]++; /* the answer never came */
        log_outcome(c, 0);
    }
    c->state = CONN_CLOSING;
    uv_close((uv_handle_t *)&c->io, on_tcp_closed_for_retry);
}

static void after_write(uv_write_t *w, int status)
{
    conn_t *c = w->data;
    if (status < 0 && status != UV_ECANCELED)
        conn_drop(c, 1);
}

static void send_request(conn_t *c, int op)
{
    c->op = op;
    c->state = CONN_BUSY;
    c->answered = 0;
    c->resp_bytes = 0;
    c->body_len = 0;
    c->hfield_len = 0;
    c->hfield_done = 0;
    c->hvalue_len = 0;
    c->retry_after_len = 0;
    c->retry_after[0] = '\0';
    http_parser_init(&c->parser, HTTP_RESPONSE);
    c->parser.data = c;
    c->t0 = seatd_bench_now_us();
    /* Try the write at once: libuv 1.44's uv_write() re-arms the socket's epoll entry when
     * the request completes (an epoll_ctl per request, a sixth of this generator's system
     * calls); only what the socket did not take goes through uv_write(). */
    uv_buf_t b = uv_buf_init(c->wbuf, (unsigned)c->wlen);
    int sent = uv_try_write((uv_stream_t *)&c->io, &b, 1);
    if (sent == (int)c->wlen)
        return;
    if (sent > 0)
        b = uv_buf_init(c->wbuf + sent, (unsigned)(c->wlen - (size_t)sent));
    else if (sent != UV_EAGAIN) {
        conn_drop(c, 1);
        return;
    }
    c->write_req.data = c;
    int rc = uv_write(&c->write_req, (uv_stream_t *)&c->io, &b, 1, after_write);
    if (rc < 0)
        conn_drop(c, 1);
}

static void format_hold(conn_t *c)
{
    proc_t *p = c->p;
    int idx[SEATD_BENCH_MAX_PICK];
    int n = seatd_bench_pick(&p->rng, idx);
    int alone = 0, places = seatd_bench_pick_places(p->cfg, &p->rng, &alone);
    if (alone)
        n = 0;
    const seatd_bench_cfg_t *cfg = p->cfg;
    int group = cfg->group > 0 && seatd_bench_rng_unit(&p->rng) * 100.0 < cfg->group_pct;
    c->op = group ? SEATD_BENCH_OP_GHOLD : SEATD_BENCH_OP_HOLD;
    c->nlegs = 0;
    c->nseats = n;
    c->places = places ? p->cfg->places : 0;
    c->seats[0] = '\0';
    c->user = (int)seatd_bench_rng_range(&p->rng, 0, p->cfg->users - 1);
    char body[320];
    size_t bl = 0, sl = 0;
    if (places)
        bl = (size_t)snprintf(body, sizeof body, "{\"areas\":%s%s", p->cfg->areas_json,
                              alone ? "" : ",\"seatIds\":[");
    else
        bl = (size_t)snprintf(body, sizeof body, "{\"seatIds\":[");
    for (int k = 0; k < n; k++) {
        char id[8];
        seatd_bench_seat_id(idx[k], id);
        bl += (size_t)snprintf(body + bl, sizeof body - bl, "%s\"%s\"", k ? "," : "", id);
        sl += (size_t)snprintf(c->seats + sl, sizeof c->seats - sl, "%s%s", k ? "," : "", id);
    }
    const char *close_list = alone ? "" : "]";
    c->idem[0] = '\0';
    c->hold_id[0] = '\0';
    if (p->cfg->idem &&
        !group) { /* (group holds are sent without one: the log follows theirs by id) */
        snprintf(c->idem, sizeof c->idem, "f%llx-%d-%llu",
                 (unsigned long long)(p->cfg->seed & 0xffffffffu), c->index,
                 (unsigned long long)++p->idem_seq);
        bl += (size_t)snprintf(body + bl, sizeof body - bl, "%s,\"idempotencyKey\":\"%s\"}",
                               close_list, c->idem);
    } else {
        bl += (size_t)snprintf(body + bl, sizeof body - bl, "%s}", close_list);
    }
    c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                               "POST /v1/%s/%s/holds HTTP/1.1\r\nHost: bench\r\n"
                               "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                               "Content-Length: %zu\r\n\r\n%s",
                               group ? "groups" : "shows", group ? cfg->group_id : cfg->show_id,
                               user_token(p, c->user), bl, body);
}

static void format_follow(conn_t *c, int op)
{
    proc_t *p = c->p;
    const char *tok = user_token(p, c->user);
    if (op == SEATD_BENCH_OP_BOOK) {
        char body[160];
        const seatd_bench_cfg_t *cfg = p->cfg;
        const char *pay =
            cfg->npay ? cfg->pay[seatd_bench_rng_range(&p->rng, 0, cfg->npay - 1)] : "tok_ok";
        /* a group hold: its id books every show's hold with one payment */
        int bl = snprintf(body, sizeof body, "{\"holdId\":\"%s\",\"paymentMethod\":\"%s\"}",
                          c->hold_id, pay);
        c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                                   "POST /v1/bookings HTTP/1.1\r\nHost: bench\r\n"
                                   "Authorization: Bearer %s\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Content-Length: %d\r\n\r\n%s",
                                   tok, bl, body);
    } else {
        c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                                   "DELETE /v1/holds/%s HTTP/1.1\r\nHost: bench\r\n"
                                   "Authorization: Bearer %s\r\n\r\n",
                                   c->hold_id, tok);
    }
}

static void format_seatmap(conn_t *c)
{
    const seatd_bench_cfg_t *cfg = c->p->cfg;
    int inm = cfg->inm && c->etag[0];
    c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                               "GET /v1/shows/%s/seats HTTP/1.1\r\nHost: bench\r\n%s%s%s%s\r\n",
                               cfg->show_id, inm ? "If-None-Match: " : "", inm ? c->etag : "",
                               inm ? "\r\n" : "", cfg->gzip ? "Accept-Encoding: gzip\r\n" : "");
}

/* Starts the connection's next request, or parks it (rate) or ends it (stopping). */
static void conn_next(conn_t *c)
{
    proc_t *p = c->p;
    if (p->stopping) {
        c->state = CONN_IDLE;
        conn_finish(c);
        return;
    }
    if (c->follow >= 0) {
        int op = c->follow;
        c->follow = -1;
        format_follow(c, op);
        send_request(c, op);
        return;
    }
    if (p->attempts_left == 0) {
        c->state = CONN_IDLE;
        return;
    }
    if (p->tokens_per_ms > 0) {
        if (p->tokens < 1.0) {
            c->state = CONN_IDLE;
            return;
        }
        p->tokens -= 1.0;
    }
    if (p->attempts_left > 0)
        p->attempts_left--;
    if (p->cfg->seatmap) {
        format_seatmap(c);
        send_request(c, SEATD_BENCH_OP_SEATMAP);
    } else {
        format_hold(c);
        send_request(c, c->op);
    }
}

/* ---- answers ---------------------------------------------------------------------------- */

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    conn_t *c = hp->data;
    if (c->hfield_done) { /* a new header starts */
        c->hfield_len = 0;
        c->hvalue_len = 0;
        c->hfield_done = 0;
    }
    for (size_t i = 0; i < len && c->hfield_len + 1 < sizeof c->hfield; i++) {
        char ch = at[i];
        c->hfield[c->hfield_len++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    c->hfield[c->hfield_len] = '\0';
    return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    conn_t *c = hp->data;
    c->hfield_done = 1;
    if (strcmp(c->hfield, "retry-after") == 0) {
        for (size_t i = 0; i < len && c->retry_after_len + 1 < sizeof c->retry_after; i++)
            c->retry_after[c->retry_after_len++] = at[i];
        c->retry_after[c->retry_after_len] = '\0';
        return 0;
    }
    if (strcmp(c->hfield, "etag") != 0)
        return 0;
    for (size_t i = 0; i < len && c->hvalue_len + 1 < sizeof c->hvalue; i++)
        c->hvalue[c->hvalue_len++] = at[i];
    c->hvalue[c->hvalue_len] = '\0';
    memcpy(c->etag, c->hvalue, c->hvalue_len + 1);
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    conn_t *c = hp->data;
    size_t room = sizeof c->body - 1 - c->body_len;
    size_t n = len < room ? len : room;
    memcpy(c->body + c->body_len, at, n);
    c->body_len += n;
    c->body[c->body_len] = '\0';
    return 0;
}

/* Every value of field 'name' after its first in the answer (a group hold's show holds, a
 * group payment's show bookings: the group's own id comes first) into c->legs. */
static void parse_after_first(conn_t *c, const char *name)
{
    char quoted[24];
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    const char *q = strstr(c->body, quoted);
    c->nlegs = 0;
    while (q && (q = strstr(q + strlen(quoted), quoted)) && c->nlegs < SEATD_BENCH_MAX_GROUP) {
        if (seatd_bench_json_str(q, name, c->legs[c->nlegs], sizeof c->legs[0]) == 0)
            c->nlegs++;
    }
}

static void parse_legs(conn_t *c)
{
    parse_after_first(c, "holdId");
}

static void parse_members(conn_t *c)
{
    parse_after_first(c, "bookingId");
}

static int on_message_complete(http_parser *hp)
{
    conn_t *c = hp->data;
    proc_t *p = c->p;
    seatd_bench_slot_t *s = p->slot;
    uint64_t now = seatd_bench_now_us();
    int status = hp->status_code;
    int rec = c->t0 >= p->record_from_us; /* not a warm-up request */
    c->answered = 1;
    p->last_us = now;
    if (rec) {
        seatd_hist_add(&s->lat[c->op], now - c->t0);
        s->status[c->op][status < SEATD_BENCH_NSTATUS ? status : 0]++;
        s->bytes[c->op] += c->resp_bytes;
    }
    switch (c->op) {
    case SEATD_BENCH_OP_GHOLD:
        if (status == 201) {
            s->all_group_wins++;
            s->group_wins += (uint64_t)rec;
            parse_legs(c);
        } else if (status == 409) {
            s->group_conflicts += (uint64_t)rec;
        }
        /* a group hold counts as a hold too */
        /* fall through */
    case SEATD_BENCH_OP_HOLD:
        if (status == 201) {
            s->all_wins++;
            s->wins += (uint64_t)rec;
            s->seats_won += rec ? (uint64_t)c->nseats : 0;
            s->places_won += rec ? (uint64_t)c->places : 0;
            s->area_wins += (uint64_t)(rec && c->places);
            double u = seatd_bench_rng_unit(&p->rng) * 100.0;
            if (seatd_bench_json_str(c->body, "holdId", c->hold_id, sizeof c->hold_id) == 0) {
                if (u < p->cfg->book_pct)
                    c->follow = SEATD_BENCH_OP_BOOK;
                else if (u < p->cfg->book_pct + p->cfg->release_pct)
                    c->follow = SEATD_BENCH_OP_RELEASE;
            }
        } else if (status == 409) {
            s->conflicts += (uint64_t)rec;
        }
        break;
    case SEATD_BENCH_OP_BOOK: {
        char st[32];
        if ((status == 201 || status == 200) &&
            seatd_bench_json_str(c->body, "status", st, sizeof st) == 0 &&
            strcmp(st, "CONFIRMED") == 0) {
            s->all_bookings++;
            s->bookings += (uint64_t)rec;
        }
        if (c->nlegs)
            parse_members(c); /* a group payment: its bookings, one per show (--log) */
        break;
    }
    case SEATD_BENCH_OP_RELEASE:
        if (status == 200 || status == 204)
            s->releases += (uint64_t)rec;
        break;
    default:
        break;
    }
    log_outcome(c, status);
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    conn_t *c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    conn_t *c = st->data;
    if (nread == 0)
        return;
    if (nread < 0) {
        conn_drop(c, c->state == CONN_BUSY || nread != UV_EOF);
        return;
    }
    if (c->state != CONN_BUSY) { /* bytes nobody asked for */
        conn_drop(c, 1);
        return;
    }
    c->resp_bytes += (size_t)nread;
    size_t used = http_parser_execute(&c->parser, &c->p->settings, buf->base, (size_t)nread);
    if (c->parser.http_errno != HPE_OK || used != (size_t)nread) {
        conn_drop(c, 1);
        return;
    }
    if (c->answered) {
        if (!http_should_keep_alive(&c->parser))
            conn_drop(c, 0);
        else
            conn_next(c);
    }
}

static void on_connect(uv_connect_t *req, int status)
{
    conn_t *c = req->data;
    if (status == UV_ECANCELED) /* the socket is being closed already */
        return;
    if (status < 0) {
        conn_drop(c, 1);
        return;
    }
    if (c->io.tcp.type == UV_TCP)
        uv_tcp_nodelay(&c->io.tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->io, on_alloc, on_read) < 0) {
        conn_drop(c, 1);
        return;
    }
    c->state = CONN_IDLE;
    conn_next(c);
}

static void conn_connect(conn_t *c)
{
    proc_t *p = c->p;
    const seatd_bench_target_t *t = &p->cfg->targets[c->index % p->cfg->ntargets];
    c->connect_req.data = c;
    c->state = CONN_CONNECTING;
    if (t->port == 0) { /* unix socket: uv_pipe_connect reports errors through on_connect */
        uv_pipe_init(&p->loop, &c->io.pipe, 0);
        c->io.pipe.data = c;
        uv_pipe_connect(&c->connect_req, &c->io.pipe, t->host, on_connect);
        return;
    }
    struct sockaddr_in addr;
    uv_ip4_addr(t->host, t->port, &addr);
    uv_tcp_init(&p->loop, &c->io.tcp);
    c->io.tcp.data = c;
    if (uv_tcp_connect(&c->connect_req, &c->io.tcp, (const struct sockaddr *)&addr, on_connect) <
        0) {
        p->slot->conn_errors++;
        conn_drop(c, 0);
    }
}

/* ---- process lifecycle -------------------------------------------------------------------- */

static void on_stop(uv_timer_t *t)
{
    proc_t *p = t->data;
    if (p->stopping)
        return;
    p->stopping = 1;
    p->stop_us = seatd_bench_now_us();
    for (int i = 0; i < p->nconns; i++) {
        conn_t *c = p->conns[i];
        /* Busy connections finish their answer first (conn_next then ends them). */
        if (!c)
            continue;
        if (c->state == CONN_IDLE)
            conn_finish(c);
        else if (c->state == CONN_DOWN && !uv_is_closing((uv_handle_t *)&c->backoff)) {
            uv_timer_stop(&c->backoff);
            conn_finish(c);
        }
    }
}

static void on_final_close(uv_handle_t *h)
{
}

static void on_tick(uv_timer_t *t)
{
    proc_t *p = t->data;
    if (p->stopping) {
        if (p->live_handles == 0) { /* every connection is gone: let the loop end */
            uv_close((uv_handle_t *)&p->stop_timer, on_final_close);
            uv_close((uv_handle_t *)&p->tick, on_final_close);
        } else if (seatd_bench_now_us() - p->stop_us > 10u * 1000000u && !p->forced) {
            /* Answers that never came: drop those sockets (counted as status 0). */
            p->forced = 1;
            fprintf(stderr, "loadgen: dropping connections still busy 10 s after the end\n");
            for (int i = 0; i < p->nconns; i++)
                if (p->conns[i])
                    conn_drop(p->conns[i], 1);
        }
        return;
    }
    /* Credit the time that passed, not one tick's worth: a 1 ms timer fires every 1.1 ms or
     * later on a busy machine, and counting ticks ran a paced step at 87-93 % of its rate. */
    double cap = (double)p->nconns;
    uint64_t now_us = seatd_bench_now_us();
    p->tokens += p->tokens_per_ms * (double)(now_us - p->tokens_at_us) / 1000.0;
    p->tokens_at_us = now_us;
    if (p->tokens > cap)
        p->tokens = cap;
    for (int i = 0; i < p->nconns && p->tokens >= 1.0; i++)
        if (p->conns[i] && p->conns[i]->state == CONN_IDLE)
            conn_next(p->conns[i]);
    if (p->attempts_left == 0) { /* --count reached: stop when everybody is idle */
        int busy = 0;
        for (int i = 0; i < p->nconns; i++)
            busy += p->conns[i] && (p->conns[i]->state != CONN_IDLE || p->conns[i]->follow >= 0);
        if (!busy)
            on_stop(&p->stop_timer);
    }
}

int seatd_bench_http_run(const seatd_bench_cfg_t *cfg, int proc, seatd_bench_slot_t *slot)
{
    proc_t p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.slot = slot;
    seatd_bench_rng_seed(&p.rng, cfg->seed + (uint64_t)proc * 7919u);
    p.settings.on_header_field = on_header_field;
    p.settings.on_header_value = on_header_value;
    p.settings.on_body = on_body;
    p.settings.on_message_complete = on_message_complete;
    p.log_fd = -1;
    if (cfg->log_path) {
        p.log_fd = open(cfg->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (p.log_fd < 0) {
            perror("loadgen: --log");
            return -1;
        }
    }
    p.tokens_by_user = calloc((size_t)cfg->users, sizeof *p.tokens_by_user);
    p.nconns = cfg->conns;
    p.conns = calloc((size_t)p.nconns, sizeof *p.conns);
    if (!p.tokens_by_user || !p.conns || uv_loop_init(&p.loop) != 0)
        return -1;
    p.attempts_left = cfg->count > 0 ? (cfg->count + cfg->procs - 1 - proc) / cfg->procs : -1;
    p.tokens_per_ms = cfg->rate > 0 ? cfg->rate / cfg->procs / 1000.0 : 0;

    uv_timer_init(&p.loop, &p.stop_timer);
    uv_timer_init(&p.loop, &p.tick);
    p.stop_timer.data = &p;
    p.tick.data = &p;
    if (cfg->duration_s > 0)
        uv_timer_start(&p.stop_timer, on_stop,
                       (uint64_t)((cfg->warmup_s + cfg->duration_s) * 1000.0), 0);
    uv_timer_start(&p.tick, on_tick, 1, 1);

    p.start_us = seatd_bench_now_us();
    p.tokens_at_us = p.start_us;
    p.record_from_us = p.start_us + (uint64_t)(cfg->warmup_s * 1e6);
    for (int i = 0; i < p.nconns; i++) {
        conn_t *c = calloc(1, sizeof *c);
        if (!c)
            abort();
        c->p = &p;
        c->index = proc * cfg->conns + i;
        c->pi = i;
        c->follow = -1;
        c->handles = 2;
        p.live_handles += 2;
        uv_timer_init(&p.loop, &c->backoff);
        c->backoff.data = c;
        p.conns[i] = c;
        conn_connect(c);
    }
    /* The stop timer and the tick keep the loop alive until on_stop; then connections close
     * themselves as their answers arrive, and the tick closes the timers (or, 10 s later,
     * drops what is still busy). */
    uv_run(&p.loop, UV_RUN_DEFAULT);
    uint64_t end = p.last_us > p.record_from_us ? p.last_us : seatd_bench_now_us();
    slot->elapsed_s = end > p.record_from_us ? (double)(end - p.record_from_us) / 1e6 : 0;
    int rc = uv_loop_close(&p.loop) == 0 ? 0 : -1;
    if (p.log_fd >= 0) {
        log_flush(&p);
        close(p.log_fd);
    }
    for (int i = 0; i < cfg->users; i++)
        free(p.tokens_by_user[i]);
    free(p.tokens_by_user);
    free(p.conns); /* the connections freed themselves in their close callbacks */
    return rc;
}
