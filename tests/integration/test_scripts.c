/*
 * test_scripts.c - the Functions library glue (worker/store/scripts.c) against a real redis-server:
 * loaded on connect, reloaded and retried when missing, recovered after a restart.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/errors.h"
#include "base/log.h"
#include "loop.h"
#include "clients/rds.h"
#include "redis_fixture.h"
#include "store/scripts.h"

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    seatd_log_set_level(SEATD_LOG_WARN);
    seatd_test_redis_flushall();
}

TestSuite(scripts, .init = setup, .timeout = 30);

/* What one seatd_ping call saw. */
typedef struct ping_probe_s {
    int calls;       /* must end at exactly 1 */
    int err;         /* transport error */
    int is_pong;     /* the reply was {"pong","1","library","seatd"} */
    char error[160]; /* an error reply's text */
} ping_probe_t;

static void on_ping(const struct redisReply *reply, int err, void *data)
{
    ping_probe_t *p = data;
    p->calls++;
    p->err = err;
    if (seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ERROR) {
        size_t len;
        const char *s = seatd_rds_reply_str(reply, &len);
        snprintf(p->error, sizeof(p->error), "%.*s", (int)len, s);
    }
    static const char *want[] = {"pong", "1", "library", "seatd"};
    if (seatd_rds_reply_elements(reply) != 4)
        return;
    for (size_t i = 0; i < 4; i++) {
        const char *s = seatd_rds_reply_str(seatd_rds_reply_element(reply, i), NULL);
        if (!s || strcmp(s, want[i]) != 0)
            return;
    }
    p->is_pong = 1;
}

typedef struct env_s {
    uv_loop_t *loop;
    seatd_rds_t *rds;
    seatd_scripts_t *scripts;
} env_t;

static void env_open(env_t *e, int pool)
{
    e->loop = seatd_test_loop_new();
    seatd_rds_opts_t o = {.host = "127.0.0.1",
                          .port = seatd_test_redis_port(),
                          .pool_size = pool,
                          .timeout_ms = 2000};
    cr_assert_gt(o.port, 0);
    e->rds = seatd_rds_new(e->loop, &o);
    e->scripts = seatd_scripts_new(e->rds);
}

static void env_close(env_t *e)
{
    seatd_scripts_free(e->scripts);
    seatd_rds_close(e->rds);
    cr_assert_eq(seatd_test_loop_free(e->loop), 0, "the loop did not close cleanly");
}

static int ping_once(env_t *e, ping_probe_t *p)
{
    memset(p, 0, sizeof(*p));
    int rc = seatd_scripts_fcall(e->scripts, "seatd_ping", 0, NULL, 0, NULL, NULL, on_ping, p);
    if (rc)
        return rc;
    return seatd_test_loop_run_until(e->loop, &p->calls, 5000);
}

/* Polls until the pool reports 'want' ready connections. */
typedef struct ready_wait_s {
    uv_timer_t t;
    seatd_rds_t *rds;
    unsigned want;
    int done;
} ready_wait_t;

static void on_ready_tick(uv_timer_t *t)
{
    ready_wait_t *w = t->data;
    seatd_rds_stats_t st;
    seatd_rds_get_stats(w->rds, &st);
    if (st.connected >= w->want && st.pending == 0)
        w->done = 1;
}

static void on_free_closed(uv_handle_t *h)
{
    free(h->data);
}

static int wait_connected(env_t *e, unsigned want)
{
    ready_wait_t *w = calloc(1, sizeof(*w));
    w->rds = e->rds;
    w->want = want;
    uv_timer_init(e->loop, &w->t);
    w->t.data = w;
    uv_timer_start(&w->t, on_ready_tick, 5, 5);
    int rc = seatd_test_loop_run_until(e->loop, &w->done, 5000);
    uv_close((uv_handle_t *)&w->t, on_free_closed);
    return rc;
}

static int library_listed(void)
{
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = seatd_test_redis_command(c, "FUNCTION LIST LIBRARYNAME seatd");
    int found = 0;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *lib = r->element[i];
            for (size_t j = 0; j + 1 < lib->elements; j += 2)
                if (strcmp(lib->element[j]->str, "library_name") == 0 &&
                    strcmp(lib->element[j + 1]->str, "seatd") == 0)
                    found = 1;
        }
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return found;
}

static void sync_command(const char *cmd)
{
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = seatd_test_redis_command(c, cmd);
    cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s failed", cmd);
    freeReplyObject(r);
    redisFree(c);
}

Test(scripts, loads_the_library_on_every_connection)
{
    sync_command("FUNCTION FLUSH");
    env_t e;
    env_open(&e, 2);
    ping_probe_t p;
    cr_assert_eq(ping_once(&e, &p), 0);
    cr_assert_eq(p.err, 0, "got %s", seatd_err_name(p.err));
    cr_assert(p.is_pong, "seatd_ping answered: %s", p.error);
    cr_assert_eq(wait_connected(&e, 2), 0);
    cr_assert_eq(seatd_scripts_load_count(e.scripts), 2, "one load per pooled connection");
    cr_assert(library_listed(), "FUNCTION LIST does not show the seatd library");

    size_t len = 0;
    const char *src = seatd_scripts_library_source(&len);
    cr_assert_gt(len, 0);
    cr_assert_eq(strncmp(src, "#!lua name=seatd", 16), 0);
    cr_assert_eq(strlen(src), len);

    env_close(&e);
    cr_assert_eq(p.calls, 1);
}

Test(scripts, reloads_and_retries_once_after_function_flush)
{
    env_t e;
    env_open(&e, 1);
    ping_probe_t p;
    cr_assert_eq(ping_once(&e, &p), 0);
    cr_assert(p.is_pong);
    unsigned long loads = seatd_scripts_load_count(e.scripts);

    sync_command("FUNCTION FLUSH");
    cr_assert_not(library_listed());
    cr_assert_eq(ping_once(&e, &p), 0);
    cr_assert_eq(p.calls, 1, "the caller sees one answer, not the failed first try");
    cr_assert_eq(p.err, 0);
    cr_assert(p.is_pong, "seatd_ping answered: %s", p.error);
    cr_assert_eq(seatd_scripts_load_count(e.scripts), loads + 1);
    cr_assert(library_listed());

    /* A function that does not exist even after the reload: one retry, then its error. */
    ping_probe_t missing = {0};
    cr_assert_eq(seatd_scripts_fcall(e.scripts, "seatd_no_such_fn", 0, NULL, 0, NULL, NULL, on_ping,
                                     &missing),
                 0);
    cr_assert_eq(seatd_test_loop_run_until(e.loop, &missing.calls, 5000), 0);
    cr_assert_eq(missing.err, 0);
    cr_assert(strstr(missing.error, "Function not found") != NULL, "got: %s", missing.error);
    cr_assert_eq(seatd_scripts_load_count(e.scripts), loads + 2, "exactly one reload");

    env_close(&e);
    cr_assert_eq(p.calls, 1);
    cr_assert_eq(missing.calls, 1);
}

Test(scripts, passes_keys_and_binary_args_through_fcall)
{
    /* seatd_ping ignores its keys and args; Redis still validates nkeys against them. */
    env_t e;
    env_open(&e, 1);
    const char *keys[] = {"{s:1}:a", "{s:1}:b"};
    const char *args[] = {"x\0y", "z"};
    size_t lens[] = {3, 1};
    ping_probe_t p = {0};
    cr_assert_eq(seatd_scripts_fcall(e.scripts, "seatd_ping", 2, keys, 2, args, lens, on_ping, &p),
                 0);
    cr_assert_eq(seatd_test_loop_run_until(e.loop, &p.calls, 5000), 0);
    cr_assert(p.is_pong, "seatd_ping answered: %s", p.error);
    cr_assert_eq(seatd_scripts_fcall(e.scripts, "seatd_ping", -1, NULL, 0, NULL, NULL, on_ping, &p),
                 SEATD_EINVAL);
    env_close(&e);
    cr_assert_eq(p.calls, 1);
}

/* Restart from inside the loop, then call seatd_ping until it answers. */
typedef struct restart_s {
    env_t *e;
    int restarted;
    int failures;
    int calls;
    int ok;
} restart_t;

static void ping_again(uv_timer_t *t);

static void on_restart_ping(const struct redisReply *reply, int err, void *data)
{
    restart_t *r = data;
    r->calls++;
    ping_probe_t p = {0};
    on_ping(reply, err, &p);
    if (p.is_pong) {
        r->ok = 1;
        return;
    }
    r->failures++;
    uv_timer_t *t = calloc(1, sizeof(*t));
    uv_timer_init(r->e->loop, t);
    t->data = r;
    uv_timer_start(t, ping_again, 50, 0);
}

static void on_timer_closed(uv_handle_t *h)
{
    free(h);
}

static void ping_again(uv_timer_t *t)
{
    restart_t *r = t->data;
    uv_close((uv_handle_t *)t, on_timer_closed);
    if (seatd_scripts_fcall(r->e->scripts, "seatd_ping", 0, NULL, 0, NULL, NULL, on_restart_ping,
                            r) != 0)
        r->ok = -1;
}

Test(scripts, serves_calls_again_after_a_server_restart)
{
    if (seatd_test_redis_is_cluster())
        cr_skip_test("restarts the suite's one redis-server empty; on a cluster node a restart "
                     "would come back without its cluster state (test_cluster.c covers node "
                     "loss)");
    env_t e;
    env_open(&e, 2);
    ping_probe_t p;
    cr_assert_eq(ping_once(&e, &p), 0);
    cr_assert(p.is_pong);
    cr_assert_eq(wait_connected(&e, 2), 0);
    unsigned long loads = seatd_scripts_load_count(e.scripts);

    seatd_test_redis_t fx;
    cr_assert_eq(seatd_test_redis_from_env(&fx), 0);
    cr_assert_eq(seatd_test_redis_restart(&fx), 0);
    cr_assert_not(library_listed(), "the restarted server starts without functions");

    restart_t r = {.e = &e};
    uv_timer_t *t = calloc(1, sizeof(*t));
    uv_timer_init(e.loop, t);
    t->data = &r;
    uv_timer_start(t, ping_again, 0, 0);
    cr_assert_eq(seatd_test_loop_run_until(e.loop, &r.ok, 8000), 0);
    cr_assert_eq(r.ok, 1);
    cr_assert_eq(r.calls, r.failures + 1);
    cr_assert(library_listed());
    cr_assert_gt(seatd_scripts_load_count(e.scripts), loads);
    seatd_rds_stats_t st;
    seatd_rds_get_stats(e.rds, &st);
    cr_assert_geq(st.reconnects, 1);

    env_close(&e);
}
