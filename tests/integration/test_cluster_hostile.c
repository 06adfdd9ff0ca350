/*
 * test_cluster_hostile.c - the cluster-mode rds client against a node that answers what no
 * sane Redis would: a CLUSTER SLOTS range up to 2^63-1, a MOVED to a slot number that
 * overflows a long. A broken or hostile node may slow the client down or fail its commands,
 * never hang its loop or write outside the slot map. The node is a tiny server on the test's
 * own loop (no redis-server).
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <uv.h>

#include "base/log.h"
#include "clients/pubsub.h"
#include "loop.h"
#include "clients/rds.h"
#include "redis_fixture.h"

typedef enum {
    NODE_HUGE_RANGE, /* CLUSTER SLOTS: one range 0 .. 2^63-1 owned by itself */
    NODE_BAD_MOVED,  /* CLUSTER SLOTS sane; every GET answered a MOVED to slot 2^64 - 2^31 */
    NODE_MUTE,       /* confirms SUBSCRIBE, then answers nothing (a hung node) */
} node_mode_t;

typedef struct {
    uv_tcp_t listener;
    uv_tcp_t conn;
    int accepted;
    int port;
    node_mode_t mode;
    int gets; /* GETs answered */
} node_t;

static void on_node_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static char slab[65536];
    (void)h;
    (void)hint;
    *buf = uv_buf_init(slab, sizeof(slab));
}

static void after_node_write(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void node_send(node_t *n, const char *text)
{
    uv_write_t *w = malloc(sizeof(*w));
    char *copy = strdup(text);
    cr_assert(w && copy);
    w->data = copy;
    uv_buf_t b = uv_buf_init(copy, strlen(copy));
    cr_assert_eq(uv_write(w, (uv_stream_t *)&n->conn, &b, 1, after_node_write), 0);
}

/* The node's CLUSTER SLOTS answer: one entry, itself as the primary. */
static void send_slots(node_t *n)
{
    char text[256];
    snprintf(text, sizeof(text),
             "*1\r\n*3\r\n:0\r\n:%s\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n",
             n->mode == NODE_HUGE_RANGE ? "9223372036854775807" : "16383", n->port,
             "0123456789012345678901234567890123456789");
    node_send(n, text);
}

/* Answers each command in the chunk in order (CLUSTER SLOTS, GET; anything else +OK). Good
 * enough for what the client sends here: whole commands, at most a few per read. */
static void on_node_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    node_t *n = s->data;
    if (nread <= 0)
        return;
    for (ssize_t i = 0; i < nread; i++) {
        if (buf->base[i] != '*' || (i > 0 && buf->base[i - 1] != '\n'))
            continue; /* a command starts with '*' at the start of a line */
        const char *cmd = buf->base + i;
        size_t left = (size_t)(nread - i);
        if (n->mode == NODE_MUTE) {
            if (left > 20 && memmem(cmd, left < 40 ? left : 40, "SUBSCRIBE", 9) != NULL &&
                n->gets++ == 0) /* the first SUBSCRIBE only: then it hangs */
                node_send(n, "*3\r\n$9\r\nsubscribe\r\n$3\r\ns:1\r\n:1\r\n");
            continue; /* a liveness probe and anything else: silence */
        }
        if (left > 20 && memmem(cmd, left < 40 ? left : 40, "SLOTS", 5) != NULL) {
            send_slots(n);
        } else if (left > 12 && memcmp(cmd + 4, "$3\r\nGET\r\n", 9) == 0) {
            n->gets++;
            if (n->mode == NODE_BAD_MOVED)
                node_send(n, "-MOVED 18446744071562067968 127.0.0.1:1\r\n");
            else
                node_send(n, "$1\r\nx\r\n");
        } else {
            node_send(n, "+OK\r\n");
        }
    }
}

static void on_extra_closed(uv_handle_t *h)
{
    free(h);
}

static void on_node_connection(uv_stream_t *l, int status)
{
    node_t *n = l->data;
    cr_assert_eq(status, 0);
    uv_tcp_t *c = &n->conn;
    if (n->accepted) { /* one connection is all a pool of one asks for; refuse others */
        uv_tcp_t *extra = malloc(sizeof(*extra));
        uv_tcp_init(l->loop, extra);
        (void)uv_accept(l, (uv_stream_t *)extra);
        uv_close((uv_handle_t *)extra, on_extra_closed);
        return;
    }
    uv_tcp_init(l->loop, c);
    c->data = n;
    cr_assert_eq(uv_accept(l, (uv_stream_t *)c), 0);
    n->accepted = 1;
    uv_read_start((uv_stream_t *)c, on_node_alloc, on_node_read);
}

static void node_start(node_t *n, uv_loop_t *loop, node_mode_t mode)
{
    memset(n, 0, sizeof(*n));
    n->mode = mode;
    cr_assert_eq(uv_tcp_init(loop, &n->listener), 0);
    n->listener.data = n;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    cr_assert_eq(uv_tcp_bind(&n->listener, (const struct sockaddr *)&a, 0), 0);
    cr_assert_eq(uv_listen((uv_stream_t *)&n->listener, 16, on_node_connection), 0);
    int len = sizeof(a);
    cr_assert_eq(uv_tcp_getsockname(&n->listener, (struct sockaddr *)&a, &len), 0);
    n->port = ntohs(a.sin_port);
}

static void node_stop(node_t *n)
{
    if (n->accepted && !uv_is_closing((uv_handle_t *)&n->conn))
        uv_close((uv_handle_t *)&n->conn, NULL);
    uv_close((uv_handle_t *)&n->listener, NULL);
}

typedef struct {
    int done, err, type;
    char str[128];
} probe_t;

static void on_probe(const struct redisReply *reply, int err, void *data)
{
    probe_t *p = data;
    p->err = err;
    p->type = seatd_rds_reply_type(reply);
    size_t len = 0;
    const char *s = seatd_rds_reply_str(reply, &len);
    if (s)
        snprintf(p->str, sizeof(p->str), "%.*s", (int)len, s);
    p->done++;
}

/* A client of the node; runs one GET to completion and returns its probe. */
static probe_t get_through(node_mode_t mode)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN);
    uv_loop_t *loop = seatd_test_loop_new();
    node_t n;
    node_start(&n, loop, mode);
    char nodes[64];
    snprintf(nodes, sizeof(nodes), "127.0.0.1:%d", n.port);
    seatd_rds_opts_t o = {0};
    o.cluster_nodes = nodes;
    o.pool_size = 1;
    o.timeout_ms = 2000;
    seatd_rds_t *rds = seatd_rds_new(loop, &o);
    cr_assert_not_null(rds);
    probe_t p = {0};
    const char *argv[] = {"GET", "k"};
    cr_assert_eq(seatd_rds_callv(rds, 2, argv, NULL, on_probe, &p), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &p.done, 10000), 0, "the GET never completed");
    seatd_rds_close(rds);
    node_stop(&n);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
    return p;
}

TestSuite(cluster_hostile, .timeout = 30);

/* The client walked every slot number of the range, one by one, in its loop: 2^63 of them. */
Test(cluster_hostile, a_slot_range_past_16383_is_cut_to_the_slots_that_exist)
{
    probe_t p = get_through(NODE_HUGE_RANGE);
    cr_assert_eq(p.err, 0);
    cr_assert_str_eq(p.str, "x", "the GET was served by the node that owns every slot");
}

/* The slot number overflowed a long, came out negative and passed the bound: the client wrote
 * the slot map at index INT_MIN. */
Test(cluster_hostile, a_moved_to_a_slot_number_that_overflows_is_an_error_not_a_write)
{
    probe_t p = get_through(NODE_BAD_MOVED);
    cr_assert_eq(p.done, 1);
    cr_assert(p.err != 0 || p.type == SEATD_RDS_REPLY_ERROR, "the GET failed (err %d, type %d)",
              p.err, p.type);
}

typedef struct {
    int subscribed, lost;
} ps_events_t;

static void on_ps_event(int event, const char *channel, const char *payload, size_t len, void *data)
{
    ps_events_t *e = data;
    (void)channel, (void)payload, (void)len;
    if (e && event == SEATD_PUBSUB_SUBSCRIBED)
        e->subscribed++;
    if (e && event == SEATD_PUBSUB_LOST)
        e->lost++;
}

static void on_wait(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* A loopback port nobody listens on (bound, then let go). */
static int closed_port(uv_loop_t *loop)
{
    uv_tcp_t s;
    cr_assert_eq(uv_tcp_init(loop, &s), 0);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    cr_assert_eq(uv_tcp_bind(&s, (const struct sockaddr *)&a, 0), 0);
    int len = sizeof(a);
    cr_assert_eq(uv_tcp_getsockname(&s, (struct sockaddr *)&a, &len), 0);
    uv_close((uv_handle_t *)&s, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    return ntohs(a.sin_port);
}

/* Every node of the cluster refusing connections (a cluster restart): the subscriber went
 * from node to node with no pause, thousands of connects a second, a core at 100 %. Now
 * 100 ms doubling to 5 s between nodes while none comes up. */
Test(cluster_hostile, the_subscriber_waits_between_nodes_that_refuse)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    uv_loop_t *loop = seatd_test_loop_new();
    char nodes[64];
    snprintf(nodes, sizeof(nodes), "127.0.0.1:%d,127.0.0.1:%d", closed_port(loop),
             closed_port(loop));
    seatd_pubsub_set_nodes(nodes);
    seatd_pubsub_t *ps = seatd_pubsub_new(loop, "127.0.0.1", 1, NULL, on_ps_event, NULL);
    cr_assert_eq(seatd_pubsub_subscribe(ps, "s:1"), 0);
    int waited = 0;
    uv_timer_t t;
    uv_timer_init(loop, &t);
    t.data = &waited;
    uv_timer_start(&t, on_wait, 1600, 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &waited, 10000), 0);
    unsigned long attempts = seatd_pubsub_attempts(ps);
    cr_assert_eq(seatd_pubsub_connected(ps), 0);
    /* 0, 0.1, 0.3, 0.7, 1.5 s: five; a few more for a slow machine's late timers */
    cr_assert(attempts >= 2 && attempts <= 8, "%lu connection attempts in 1.6 s", attempts);
    seatd_pubsub_close(ps);
    uv_close((uv_handle_t *)&t, NULL);
    seatd_pubsub_set_nodes(NULL);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

/* ...and a quiet but healthy node (a real redis-server, no message for seconds) keeps its
 * subscriber: the probe is answered, nothing is lost, no reconnection (hiredis 0.14 drops
 * the ["pong", ""] of a PING on a subscribed connection: with PING as the probe every idle
 * subscriber was replaced every few seconds, its watchers sent snapshots). */
Test(cluster_hostile, a_quiet_healthy_node_keeps_its_subscriber)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    uv_loop_t *loop = seatd_test_loop_new();
    ps_events_t e = {0};
    seatd_pubsub_t *ps =
        seatd_pubsub_new(loop, "127.0.0.1", seatd_test_redis_port(), NULL, on_ps_event, &e);
    cr_assert_eq(seatd_pubsub_subscribe(ps, "{s:1}:ch"), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &e.subscribed, 5000), 0, "subscribed");
    int waited = 0;
    uv_timer_t t;
    uv_timer_init(loop, &t);
    t.data = &waited;
    uv_timer_start(&t, on_wait, 6000, 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &waited, 15000), 0);
    cr_assert_eq(e.lost, 0, "6 s of quiet lost nothing");
    cr_assert_eq(seatd_pubsub_attempts(ps), 1, "one connection all along");
    cr_assert_eq(seatd_pubsub_connected(ps), 1);
    seatd_pubsub_close(ps);
    uv_close((uv_handle_t *)&t, NULL);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}

/* A node that stops answering without closing (SIGSTOP, a partition with no reset) left the
 * live map frozen with no LOST event for as long as it lasted: now a PING after a second of
 * silence, and the connection replaced when it goes unanswered (LOST: the feeds resync). */
Test(cluster_hostile, a_subscriber_whose_node_goes_silent_is_told_and_reconnects)
{
    seatd_log_set_level(SEATD_LOG_ERROR);
    uv_loop_t *loop = seatd_test_loop_new();
    node_t n;
    node_start(&n, loop, NODE_MUTE);
    ps_events_t e = {0};
    seatd_pubsub_t *ps = seatd_pubsub_new(loop, "127.0.0.1", n.port, NULL, on_ps_event, &e);
    cr_assert_eq(seatd_pubsub_subscribe(ps, "s:1"), 0);
    cr_assert_eq(seatd_test_loop_run_until(loop, &e.subscribed, 5000), 0, "subscribed");
    cr_assert_eq(seatd_test_loop_run_until(loop, &e.lost, 10000), 0,
                 "LOST within 10 s of the node going silent");
    cr_assert_geq(seatd_pubsub_attempts(ps), 2, "a new connection was made");
    seatd_pubsub_close(ps);
    node_stop(&n);
    cr_assert_eq(seatd_test_loop_free(loop), 0);
}
