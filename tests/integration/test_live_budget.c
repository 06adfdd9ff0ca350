/*
 * The output budget through the real worker (http_server.c, live.c, the real routes): a
 * client that never reads cannot make a worker queue more than its connection's output
 * budget, whether it pipelines layout GETs, floods pings (each one a pong to queue) or lets
 * seat deltas pile up. The worker
 * is a forked child (test_live_server.h) with a small budget; its queued output is read from
 * its own /metrics (seatd_http_output_peak_bytes: the most one connection ever had queued).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "store_harness.h"
#include "test_live_client.h"
#include "test_live_server.h"

#define BUDGET (256u << 10)
#define FLOOD_MAX (32u << 20) /* ping bytes a flooding client sends at most */

static const char *const SEATS[] = {"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", NULL};

static void budget_init(void)
{
    seatd_test_redis_flushall();
    tls_output_budget = BUDGET;
}

TestSuite(live_budget, .init = budget_init, .timeout = 60);

/* Reads and discards until the server's close frame or the end of the stream (10 s at
 * most). Returns the close status, or 0 if the stream ended without one. */
static unsigned drain_until_closed(wsc_t *c)
{
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    long long deadline = wsc_now_ms() + 10000;
    int big = 1 << 20; /* a receive window worth reading with */
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    while (!c->closed && wsc_now_ms() < deadline) {
        wsc_pump(c, 200);
        while (c->qlen > 0) { /* frames queued before the close: drop them */
            free(c->queue[c->qhead]);
            c->qhead = (c->qhead + 1) % WSC_MAX_QUEUE;
            c->qlen--;
        }
    }
    return c->close_status;
}

Test(live_budget, a_client_flooding_pings_without_reading_queues_at_most_the_budget)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", SEATS, 60000), 0);
    seatd_live_opts_t lo = {.idle_ms = 1500}; /* a paused client is silent: closed after this */
    tls_t srv;
    cr_assert_eq(tls_start(&srv, &lo), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cJSON_Delete(j);

    /* Masked pings with 125-byte payloads (a zero mask), 500 to a write. */
    enum { FRAME = 2 + 4 + 125, PER_WRITE = 500 };
    static char chunk[FRAME * PER_WRITE];
    for (int i = 0; i < PER_WRITE; i++) {
        char *f = chunk + i * FRAME;
        f[0] = (char)0x89;
        f[1] = (char)(0x80 | 125);
        memset(f + 2, 0, 4);
        memset(f + 6, 'p', 125);
    }
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    size_t sent = 0;
    long long deadline = wsc_now_ms() + 20000;
    /* Until the worker stops reading (the socket stays full for 500 ms) or FLOOD_MAX. */
    while (sent < FLOOD_MAX && wsc_now_ms() < deadline) {
        ssize_t n = write(c.fd, chunk, sizeof(chunk));
        if (n > 0) {
            sent += (size_t)n;
            if ((size_t)n < sizeof(chunk)) { /* finish the partial frame before pausing */
                size_t off = (size_t)n;
                while (off < sizeof(chunk) && wsc_now_ms() < deadline) {
                    struct pollfd p = {c.fd, POLLOUT, 0};
                    if (poll(&p, 1, 500) <= 0)
                        break;
                    ssize_t m = write(c.fd, chunk + off, sizeof(chunk) - off);
                    if (m > 0)
                        off += (size_t)m, sent += (size_t)m;
                }
                if (off < sizeof(chunk))
                    break;
            }
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            break;
        struct pollfd p = {c.fd, POLLOUT, 0};
        if (poll(&p, 1, 500) <= 0)
            break; /* the worker reads nothing more */
    }
    long long peak = tls_metric(&srv, "seatd_http_output_peak_bytes");
    long long paused = tls_metric(&srv, "seatd_http_output_paused_total");
    fprintf(stderr,
            "live budget: %zu bytes of pings sent by a client that reads nothing; the "
            "worker's peak queued output %lld bytes (budget %u)\n",
            sent, peak, BUDGET);
    cr_assert_geq(peak, 0, "the worker reports its queued output");
    cr_assert_leq(peak, (long long)BUDGET, "peak %lld over the budget", peak);
    cr_assert_geq(paused, 1, "reading paused");
    cr_assert_lt(sent, FLOOD_MAX, "the worker stopped reading the flood");

    /* Silent for idle_ms since reading paused: the worker closes it (1001, or 1008 when its
     * last read's pongs passed the budget), and frees everything it queued. */
    unsigned st = drain_until_closed(&c);
    cr_assert(c.closed, "the flooding client is closed");
    cr_assert(st == 1001 || st == 1008 || st == 0, "close %u", st);
    wsc_close(&c);
    long long left = -1;
    for (int i = 0; i < 100 && left != 0; i++) { /* until the worker saw the close (5 s) */
        left = tls_metric(&srv, "seatd_live_watchers");
        if (left != 0)
            poll(NULL, 0, 50);
    }
    cr_assert_eq(left, 0);
    cr_assert_eq(tls_metric(&srv, "seatd_http_output_bytes"), 0, "nothing stays queued");
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

Test(live_budget, deltas_to_a_client_that_does_not_read_stop_at_the_budget_and_close_it)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    static char names[90][8];
    const char *many[91];
    for (int i = 0; i < 90; i++) {
        snprintf(names[i], sizeof(names[i]), "B%d", i + 1);
        many[i] = names[i];
    }
    many[90] = NULL;
    cr_assert_eq(th_create_show(&t, "1", many, 60000), 0);
    /* Every tick's delta is its own frame, and only the byte budget limits the queue. */
    seatd_live_opts_t lo = {.tick_ms = 1, .max_queue_frames = 1u << 30};
    tls_t srv;
    cr_assert_eq(tls_start(&srv, &lo), 0);
    wsc_t c;
    cr_assert_eq(wsc_connect(&c, srv.port, "/v1/shows/1/seats/ws"), 101);
    cJSON *j = wsc_next(&c, 3000);
    cr_assert_str_eq(wsc_type(j), "snapshot");
    cJSON_Delete(j);
    int small = 4096;
    setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));

    /* The client reads nothing from here on; every cycle holds and releases all 90 seats
     * (a delta of ~3 KB). */
    long long closed = 0;
    int cycles = 0;
    for (; cycles < 5000 && closed < 1; cycles++) {
        cr_assert_eq(th_hold(&t, &r, "1", "u1", many, 60000, 90, NULL), 0);
        char hold[SEATD_ID_MAX];
        snprintf(hold, sizeof(hold), "%s", th_get(&r, "holdId"));
        cr_assert_eq(th_release(&t, &r, hold, "u1"), 0);
        if (cycles % 20 == 19)
            closed = tls_metric(&srv, "seatd_live_slow_closed_total");
    }
    long long peak = tls_metric(&srv, "seatd_http_output_peak_bytes");
    fprintf(stderr,
            "live budget: %d hold/release cycles to a client that reads nothing; the "
            "worker's peak queued output %lld bytes (budget %u)\n",
            cycles, peak, BUDGET);
    cr_assert_geq(closed, 1, "the client was closed for being slow");
    cr_assert_geq(peak, 0);
    /* Data frames are checked before they are queued; only our close frame may follow. */
    cr_assert_leq(peak, (long long)BUDGET + 131, "peak %lld over the budget", peak);
    cr_assert_eq(tls_metric(&srv, "seatd_http_output_closed_total"), closed);
    /* The close frame waits behind the queued deltas; if they are not read within the
     * worker's close grace (2 s) the connection ends without it. */
    unsigned st = drain_until_closed(&c);
    cr_assert(c.closed, "the slow client's connection ends");
    cr_assert(st == 1008 || st == 0, "close %u", st);
    wsc_close(&c);
    th_res_clear(&r);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}

/* Creates show 'show' with 'n' seats S1..Sn straight through the store (the layout is far
 * over the harness's 8 KiB). */
static int create_big_show(th_t *t, const char *show, size_t n)
{
    char(*names)[16] = calloc(n, sizeof(*names));
    const char **ids = calloc(n + 1, sizeof(*ids));
    seatd_buf_t layout = SEATD_BUF_INIT;
    seatd_buf_printf(&layout, "{\"showId\":\"%s\",\"seats\":[", show);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "S%u", (unsigned)(i + 1) % 100000u);
        ids[i] = names[i];
        seatd_buf_printf(&layout,
                         "%s{\"id\":\"%s\",\"row\":\"S\",\"number\":%zu,\"tier\":\"standard\","
                         "\"x\":%zu,\"y\":%zu}",
                         i ? "," : "", names[i], i + 1, i % 50, i / 50);
    }
    seatd_buf_puts(&layout, "]}");
    seatd_show_args_t a = {0};
    a.show_id = show;
    a.title = "Big show";
    a.starts_at_ms = 1800000000000LL;
    a.hold_ttl_ms = 60000;
    a.price_tiers_json = "{\"standard\":1200}";
    a.layout_json = layout.data;
    a.seat_ids = ids;
    a.nseats = n;
    th_res_t r = {0};
    int rc = th_finish(t, &r, seatd_store_create_show(t->store, &a, th_on_result, &r));
    th_res_clear(&r);
    seatd_buf_free(&layout);
    free(ids);
    free(names);
    return rc;
}

#define LAYOUT_GETS 200

Test(live_budget, pipelined_layout_gets_to_a_client_that_does_not_read_stay_within_the_budget)
{
    th_t t;
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(create_big_show(&t, "1", 2000), 0);
    tls_t srv;
    cr_assert_eq(tls_start(&srv, NULL), 0);
    seatd_test_http_response_t one;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", srv.port, "GET", "/v1/shows/1/layout", NULL,
                                         NULL, 0, &one),
                 0);
    cr_assert_eq(one.status, 200);
    size_t answer = one.body_len;
    seatd_test_http_response_free(&one);

    /* 200 layout GETs in one write, from a client with a small receive buffer that reads
     * nothing until the worker paused it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)srv.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    static const char get[] = "GET /v1/shows/1/layout HTTP/1.1\r\nHost: x\r\n\r\n";
    seatd_buf_t reqs = SEATD_BUF_INIT;
    for (int i = 0; i < LAYOUT_GETS; i++)
        seatd_buf_append(&reqs, get, sizeof(get) - 1);
    cr_assert_eq(write(fd, reqs.data, reqs.len), (ssize_t)reqs.len);
    seatd_buf_free(&reqs);
    long long paused = 0;
    for (int i = 0; i < 500 && paused < 1; i++) { /* 10 s at most */
        paused = tls_metric(&srv, "seatd_http_output_paused_total");
        if (paused < 1)
            poll(NULL, 0, 20);
    }
    long long peak = tls_metric(&srv, "seatd_http_output_peak_bytes");
    fprintf(stderr,
            "output budget: %d pipelined layout GETs (%zu-byte answers) from a client "
            "that reads nothing; the worker's peak queued output %lld bytes (budget %u)\n",
            LAYOUT_GETS, answer, peak, BUDGET);
    cr_assert_geq(paused, 1, "the worker paused the connection");
    cr_assert_geq(peak, 0);
    /* The high-water mark plus one answer (with its headers) at most. */
    cr_assert_leq(peak, (long long)(BUDGET / 2 + answer + 1024), "peak %lld", peak);

    /* Reading now, every answer arrives. */
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int big = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    size_t cap = 4u << 20, len = 0;
    char *buf = malloc(cap + 1);
    int answers = 0;
    while (answers < LAYOUT_GETS) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        for (;;) {
            char *end = strstr(buf, "\r\n\r\n");
            char *cl = strstr(buf, "Content-Length: ");
            if (end == NULL || cl == NULL || cl > end)
                break;
            size_t need = (size_t)(end + 4 - buf) + (size_t)atol(cl + 16);
            if (len < need)
                break;
            if (strncmp(buf, "HTTP/1.1 200 ", 13) == 0)
                answers++;
            memmove(buf, buf + need, len - need);
            len -= need;
            buf[len] = '\0';
        }
    }
    free(buf);
    close(fd);
    cr_assert_eq(answers, LAYOUT_GETS);
    peak = tls_metric(&srv, "seatd_http_output_peak_bytes");
    cr_assert_leq(peak, (long long)(BUDGET / 2 + answer + 1024), "peak %lld", peak);
    cr_assert_eq(tls_stop(&srv), 0);
    cr_assert_eq(th_close(&t), 0);
}
