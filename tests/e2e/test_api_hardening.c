/* End-to-end: the deployment's least privilege and nginx's edge (issue 9).
 *
 * Suite api_hardening runs against the e2e stack (tests/e2e/run): file modes of the runtime
 * folder, Redis access control, maxmemory, problem+json for everything nginx answers itself,
 * the page's security headers and an access log without tokens.
 *
 * Suite api_hardening_defaults (test_api_hardening_defaults.c) proves deploy/up's default
 * limits trigger, on a stack of its own.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <glob.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "e2e.h"
#include "hardening_raw.h"

TestSuite(api_hardening, .timeout = 120);
/* ------------------------------------------------------------------ the e2e stack */

static const char *run_dir(void)
{
    const char *run = getenv("SEATD_E2E_RUN");
    cr_assert_not_null(run, "run through tests/e2e/run");
    return run;
}

static void assert_private(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(st.st_mode & 077, 0, "%s is mode %04o: group or others have access", path,
                 (unsigned)(st.st_mode & 07777));
}

Test(api_hardening, runtime_folder_secrets_logs_and_sockets_are_private)
{
    const char *run = run_dir();
    char path[1024];
    assert_private(run);
    static const char *files[] = {"jwt_secret",
                                  "admin.token",
                                  "alice.token",
                                  "redis-admin.pass",
                                  "redis-worker.pass",
                                  "redis-loader.pass",
                                  "nginx.conf",
                                  "gateway-ledger.jsonl",
                                  "logs/gateway.log",
                                  "logs/nginx-access.log",
                                  "logs/notifications.log",
                                  "logs/worker-1.log"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", run, files[i]);
        assert_private(path);
    }
    /* Each Redis node's config (it holds the replicas' password on a cluster) and log. */
    if (e2e_cluster()) {
        int ports[64];
        int n = e2e_redis_ports(ports, 64);
        snprintf(path, sizeof(path), "%s/redis-repl.pass", run);
        assert_private(path);
        for (int i = 0; i < n; i++) {
            snprintf(path, sizeof(path), "%s/redis-%d.conf", run, ports[i]);
            assert_private(path);
            snprintf(path, sizeof(path), "%s/logs/redis-%d.log", run, ports[i]);
            assert_private(path);
        }
    } else {
        snprintf(path, sizeof(path), "%s/redis.conf", run);
        assert_private(path);
        snprintf(path, sizeof(path), "%s/logs/redis.log", run);
        assert_private(path);
    }
    snprintf(path, sizeof(path), "%s/worker-*.sock", run);
    glob_t g;
    cr_assert_eq(glob(path, 0, NULL, &g), 0);
    cr_assert_geq(g.gl_pathc, 1);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct stat st;
        cr_assert_eq(stat(g.gl_pathv[i], &st), 0);
        cr_assert(S_ISSOCK(st.st_mode));
        assert_private(g.gl_pathv[i]);
    }
    globfree(&g);
}

static redisContext *redis_as(const char *user, const char *pass_file)
{
    redisContext *c = redisConnect("127.0.0.1", atoi(getenv("SEATD_E2E_REDIS_PORT")));
    cr_assert(c && !c->err);
    if (user) {
        char pass[256];
        cr_assert_eq(e2e_redis_password(pass_file, pass, sizeof(pass)), 0, "no %s", pass_file);
        redisReply *r = redisCommand(c, "AUTH %s %s", user, pass);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "AUTH %s refused: %s", user,
                  r ? r->str : "no reply");
        freeReplyObject(r);
    }
    return c;
}

/* Runs 'cmd' (argv form) and asserts an error reply starting with 'prefix'. */
static void assert_refused(redisContext *c, const char *who, const char *prefix, int argc,
                           const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    cr_assert_not_null(r);
    cr_assert(r->type == REDIS_REPLY_ERROR && strncmp(r->str, prefix, strlen(prefix)) == 0,
              "%s may run %s %s (reply type %d: %s)", who, argv[0], argc > 1 ? argv[1] : "",
              r->type, r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS ? r->str : "");
    freeReplyObject(r);
}

#define REFUSE(c, who, prefix, ...)                                                                \
    do {                                                                                           \
        const char *argv_[] = {__VA_ARGS__};                                                       \
        assert_refused(c, who, prefix, (int)(sizeof(argv_) / sizeof(argv_[0])), argv_);            \
    } while (0)

/* Entries of Redis's ACL LOG (denied commands) so far, on every node; their commands into
 * 'out'. With 'reset', each node's log is emptied afterwards. */
static size_t acl_log(char *out, size_t size, int reset)
{
    int ports[64];
    int nports = e2e_redis_ports(ports, 64);
    size_t n = 0;
    out[0] = '\0';
    for (int p = 0; p < nports; p++) {
        redisContext *c = e2e_redis_node(ports[p]);
        cr_assert_not_null(c, "redis on port %d does not answer", ports[p]);
        redisReply *r = redisCommand(c, "ACL LOG 50");
        cr_assert(r && r->type == REDIS_REPLY_ARRAY);
        n += r->elements;
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            for (size_t k = 0; k + 1 < e->elements; k += 2)
                if (e->element[k]->str && strcmp(e->element[k]->str, "object") == 0 &&
                    e->element[k + 1]->str)
                    snprintf(out + strlen(out), size - strlen(out), "%s ", e->element[k + 1]->str);
        }
        freeReplyObject(r);
        if (reset)
            freeReplyObject(redisCommand(c, "ACL LOG RESET"));
        redisFree(c);
    }
    return n;
}

Test(api_hardening, redis_refuses_anonymous_clients_and_confines_the_worker_and_loader_users)
{
    /* Nothing seatd itself sent so far was denied (tests/e2e/run checks the rest at the end:
     * this test resets the log after its own deliberate refusals). */
    char denied[1024], ping[64];
    cr_assert_eq(acl_log(denied, sizeof(denied), 0), 0, "redis denied: %s", denied);
    /* On a cluster the library is versioned (seatd_v<hash>_ping): the name FUNCTION LIST has. */
    seatd_redis_t *admin = e2e_redis();
    e2e_function_name(admin, "seatd_ping", ping, sizeof(ping));
    seatd_redis_free(admin);

    redisContext *anon = redis_as(NULL, NULL);
    REFUSE(anon, "an anonymous client", "NOAUTH", "PING");
    REFUSE(anon, "an anonymous client", "NOAUTH", "FLUSHALL");
    redisFree(anon);

    redisContext *w = redis_as("seatd", "redis-worker.pass");
    REFUSE(w, "the worker user", "NOPERM", "FLUSHALL");
    REFUSE(w, "the worker user", "NOPERM", "FLUSHDB");
    REFUSE(w, "the worker user", "NOPERM", "CONFIG", "SET", "maxmemory", "0");
    REFUSE(w, "the worker user", "NOPERM", "CONFIG", "GET", "requirepass");
    REFUSE(w, "the worker user", "NOPERM", "FUNCTION", "LOAD", "REPLACE",
           "#!lua name=seatd\nredis.register_function('x', function() return 1 end)");
    REFUSE(w, "the worker user", "NOPERM", "FUNCTION", "FLUSH");
    REFUSE(w, "the worker user", "NOPERM", "FUNCTION", "DELETE", "seatd");
    REFUSE(w, "the worker user", "NOPERM", "KEYS", "*");
    REFUSE(w, "the worker user", "NOPERM", "EVAL", "return 1", "0");
    REFUSE(w, "the worker user", "NOPERM", "ACL", "SETUSER", "evil", "on", "+@all");
    REFUSE(w, "the worker user", "NOPERM", "SHUTDOWN", "NOSAVE");
    REFUSE(w, "the worker user", "NOPERM", "CLIENT", "LIST");
    REFUSE(w, "the worker user", "NOPERM", "SCRIPT", "FLUSH");
    REFUSE(w, "the worker user", "NOPERM", "SAVE");
    REFUSE(w, "the worker user", "NOPERM", "MODULE", "LIST");
    REFUSE(w, "the worker user", "NOPERM", "GET", "not-a-seatd-key");
    /* ... and can do its work. */
    redisReply *r = redisCommand(w, "FCALL %s 0", ping);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "the worker user cannot FCALL: %s",
              r && r->str ? r->str : "");
    freeReplyObject(r);
    redisFree(w);

    redisContext *l = redis_as("seatd-loader", "redis-loader.pass");
    REFUSE(l, "the loader user", "NOPERM", "FCALL", ping, "0");
    REFUSE(l, "the loader user", "NOPERM", "GET", "seatd:shows");
    REFUSE(l, "the loader user", "NOPERM", "FLUSHALL");
    REFUSE(l, "the loader user", "NOPERM", "FUNCTION", "FLUSH");
    redisFree(l);

    cr_assert_geq(acl_log(denied, sizeof(denied), 1), 10);
}

/* A hold of one seat of a fresh 1x5 show as 'sub' through nginx; the HTTP status. */
static int hold_one(const char *show, const char *seat, const char *sub, e2e_res_t *res)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    snprintf(body, sizeof(body), "{\"seatIds\":[\"%s\"]}", seat);
    cr_assert_eq(e2e_call("POST", path, sub, body, NULL, res), 0);
    return res->http.status;
}

Test(api_hardening, the_library_is_reloaded_by_the_loader_user_after_function_flush)
{
    char show[32];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    /* Every primary forgets the library (a cluster's replicas follow theirs). */
    int ports[64], primaries[64], np = 0;
    int n = e2e_redis_ports(ports, 64);
    for (int i = 0; i < n; i++) {
        redisContext *c = e2e_redis_node(ports[i]);
        cr_assert_not_null(c, "redis on port %d does not answer", ports[i]);
        if (e2e_redis_node_is_primary(c)) {
            redisReply *r = redisCommand(c, "FUNCTION FLUSH");
            cr_assert(r && r->type == REDIS_REPLY_STATUS);
            freeReplyObject(r);
            primaries[np++] = ports[i];
        }
        redisFree(c);
    }
    cr_assert_geq(np, 1);
    e2e_res_t res;
    cr_assert_eq(hold_one(show, "A1", "flusher", &res), 201, "%.*s", (int)res.http.body_len,
                 res.http.body);
    e2e_res_free(&res);
    /* The library is back: as "seatd" on one node; on a cluster as "seatd_v<hash>", at least
     * on the primary of the show's shard (the hold ran there). */
    int loaded = 0;
    for (int i = 0; i < np; i++) {
        redisContext *c = e2e_redis_node(primaries[i]);
        cr_assert_not_null(c);
        redisReply *r =
            redisCommand(c, "FUNCTION LIST LIBRARYNAME %s", e2e_cluster() ? "seatd_v*" : "seatd");
        cr_assert(r && r->type == REDIS_REPLY_ARRAY);
        loaded += r->elements == 1;
        freeReplyObject(r);
        redisFree(c);
    }
    cr_assert_geq(loaded, 1, "no primary has the library again");
}

static int workers_alive(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "for f in %s/worker-*.pid; do kill -0 $(cat $f) || exit 1; done",
             run_dir());
    return system(cmd) == 0;
}

Test(api_hardening, redis_at_maxmemory_refuses_writes_with_503_and_recovers)
{
    /* Every primary (one node, or each shard's): its maxmemory, and the policy. */
    int ports[64], n = 0;
    redisContext *nodes[64];
    char saved[64][32];
    int all = e2e_redis_ports(ports, 64);
    for (int i = 0; i < all; i++) {
        redisContext *c = e2e_redis_node(ports[i]);
        cr_assert_not_null(c, "redis on port %d does not answer", ports[i]);
        if (!e2e_redis_node_is_primary(c)) {
            redisFree(c);
            continue;
        }
        redisReply *r = redisCommand(c, "CONFIG GET maxmemory");
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        long long maxmemory = atoll(r->element[1]->str);
        snprintf(saved[n], sizeof(saved[n]), "%s", r->element[1]->str);
        freeReplyObject(r);
        cr_assert_gt(maxmemory, 0, "redis has no maxmemory: it grows until the OOM killer acts");
        r = redisCommand(c, "CONFIG GET maxmemory-policy");
        cr_assert(r && r->elements == 2 && strcmp(r->element[1]->str, "noeviction") == 0);
        freeReplyObject(r);
        nodes[n++] = c;
    }
    cr_assert_geq(n, 1);

    char show[32];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    /* Memory "full": every write is refused with OOM from now on. */
    for (int i = 0; i < n; i++) {
        redisReply *r = redisCommand(nodes[i], "CONFIG SET maxmemory 1");
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    e2e_res_t res;
    int status = hold_one(show, "A1", "oomer", &res);
    char retry[16] = "", ctype[64] = "", body[512];
    const char *h = seatd_test_http_header(&res.http, "retry-after");
    snprintf(retry, sizeof(retry), "%s", h ? h : "");
    h = seatd_test_http_header(&res.http, "content-type");
    snprintf(ctype, sizeof(ctype), "%s", h ? h : "");
    snprintf(body, sizeof(body), "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);
    char path[64];
    snprintf(path, sizeof(path), "/v1/shows/%s", show);
    cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
    int read_status = res.http.status;
    e2e_res_free(&res);
    /* Restore before asserting, so a failure does not leave the stack full. */
    for (int i = 0; i < n; i++) {
        freeReplyObject(redisCommand(nodes[i], "CONFIG SET maxmemory %s", saved[i]));
        redisFree(nodes[i]);
    }
    cr_assert_eq(status, 503, "a hold at maxmemory answered %d: %s", status, body);
    cr_assert(retry[0], "503 without Retry-After");
    cr_assert_eq(read_status, 200, "reads failed at maxmemory: %d", read_status);
    cr_assert(strncmp(ctype, "application/problem+json", 24) == 0);
    cr_assert(workers_alive());
    long seat_keys, held, booked;
    e2e_show_counts(show, &seat_keys, &held, &booked);
    cr_assert_eq(seat_keys, 0, "the refused hold left a seat key");
    cr_assert_eq(hold_one(show, "A1", "oomer", &res), 201);
    e2e_res_free(&res);
}

Test(api_hardening, redis_restart_replays_its_aof_under_the_acl)
{
    if (e2e_cluster())
        cr_skip_test("restarts the one Redis process from its redis.conf and log: a cluster "
                     "node's restart and failover are tests/cluster's scenarios");
    char show[32], cmd[1024], path[64];
    cr_assert_eq(e2e_create_show(1, 5, 300, show), 0);
    e2e_res_t res;
    cr_assert_eq(hold_one(show, "A2", "replayer", &res), 201);
    e2e_res_free(&res);
    const char *run = run_dir();
    int rport = atoi(getenv("SEATD_E2E_REDIS_PORT"));
    snprintf(cmd, sizeof(cmd),
             "export REDISCLI_AUTH=$(cat %s/redis-admin.pass); "
             "redis-cli --no-auth-warning -p %d shutdown >/dev/null 2>&1; "
             "for i in $(seq 50); do kill -0 $(cat %s/redis.pid 2>/dev/null) 2>/dev/null || break; "
             "sleep 0.1; done; "
             "redis-server %s/redis.conf && for i in $(seq 100); do "
             "[ \"$(redis-cli --no-auth-warning -p %d ping 2>/dev/null)\" = PONG ] && exit 0; "
             "sleep 0.1; done; exit 1",
             run, rport, run, run, rport);
    cr_assert_eq(system(cmd), 0, "redis did not come back");
    snprintf(cmd, sizeof(cmd), "grep -q CRITICAL %s/logs/redis.log", run);
    cr_assert_neq(system(cmd), 0, "redis logged a CRITICAL error replaying its AOF");
    snprintf(path, sizeof(path), "/v1/shows/%s", show);
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        cr_assert_eq(e2e_call("GET", path, NULL, NULL, NULL, &res), 0);
        ok = res.http.status == 200;
        e2e_res_free(&res);
        if (!ok)
            usleep(100 * 1000);
    }
    cr_assert(ok, "the show did not survive a redis restart");
    long seat_keys, held, booked;
    e2e_show_counts(show, &seat_keys, &held, &booked);
    cr_assert_eq(seat_keys, 1, "the hold did not survive a redis restart");
    cr_assert_eq(e2e_wait_workers_ready(15000), 0, "a worker did not reconnect after the restart");
}

Test(api_hardening, everything_nginx_answers_itself_is_problem_json)
{
    static const struct {
        const char *req;
        int status; /* 0: any error status */
    } cases[] = {
        {"GET /%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET /v1/holds/%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 0},
        {"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"garbage\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\n\r\n", 400},
        {"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"FOO / HTTP/1.1\r\nHost: x\r\n\r\n", 405},
        {"POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405},
        {"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        {"GET /v1/shows HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: "
         "chunked\r\n\r\n0\r\n\r\n",
         400},
        {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 403}, /* from 127.0.0.9, below */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        raw_res_t r;
        const char *src = strstr(cases[i].req, "/metrics") ? "127.0.0.9" : NULL;
        cr_assert_eq(raw_from(src, e2e_port(), cases[i].req, strlen(cases[i].req), &r), 0,
                     "no answer to %.40s", cases[i].req);
        if (cases[i].status)
            cr_assert_eq(r.status, cases[i].status, "%.40s answered %d", cases[i].req, r.status);
        else
            cr_assert_geq(r.status, 400, "%.40s answered %d", cases[i].req, r.status);
        assert_problem(&r, cases[i].req);
    }
    /* A URI longer than the header buffers: 414. */
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "GET /v1/shows?");
    for (int i = 0; i < 10000; i++)
        seatd_buf_puts(&b, "a");
    seatd_buf_puts(&b, " HTTP/1.1\r\nHost: x\r\n\r\n");
    raw_res_t r;
    cr_assert_eq(raw_from(NULL, e2e_port(), b.data, b.len, &r), 0);
    seatd_buf_free(&b);
    cr_assert_eq(r.status, 414);
    assert_problem(&r, "a 10,000-byte URI");
}

Test(api_hardening, the_page_has_security_headers_and_tokens_stay_out_of_the_access_log)
{
    raw_res_t r;
    const char *page = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    cr_assert_eq(raw_from(NULL, e2e_port(), page, strlen(page), &r), 0);
    cr_assert_eq(r.status, 200);
    const char *csp = raw_header(&r, "content-security-policy");
    cr_assert(csp && strstr(csp, "default-src 'self'") && strstr(csp, "frame-ancestors 'none'") &&
                  strstr(csp, "object-src 'none'"),
              "CSP: %s", csp ? csp : "(none)");
    const char *xfo = raw_header(&r, "x-frame-options");
    cr_assert(xfo && strcasecmp(xfo, "DENY") == 0);
    const char *nosniff = raw_header(&r, "x-content-type-options");
    cr_assert(nosniff && strcmp(nosniff, "nosniff") == 0);
    cr_assert_not_null(raw_header(&r, "referrer-policy"));

    /* A token in a query string and in Authorization: neither reaches the access log. */
    char req[2048], mark[64];
    snprintf(mark, sizeof(mark), "hardening-%ld", (long)getpid());
    snprintf(req, sizeof(req),
             "GET /%s?show=1&token=SECRETQUERYTOKEN42 HTTP/1.1\r\nHost: x\r\n"
             "Connection: close\r\n\r\n",
             mark);
    cr_assert_eq(raw_from(NULL, e2e_port(), req, strlen(req), &r), 0);
    const char *token = e2e_token("logged", 0);
    char bearer[1200];
    snprintf(bearer, sizeof(bearer), "%s", token);
    snprintf(req, sizeof(req),
             "GET /v1/holds/1-h%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Connection: close\r\n\r\n",
             mark + 10, bearer);
    cr_assert_eq(raw_from(NULL, e2e_port(), req, strlen(req), &r), 0);
    char path[1024], cmd[1400];
    snprintf(path, sizeof(path), "%s/logs/nginx-access.log", run_dir());
    /* nginx logs once the answer is sent: wait for the second request's line. */
    snprintf(cmd, sizeof(cmd), "grep -q '/v1/holds/1-h%s' %s", mark + 10, path);
    int logged = 0;
    for (int i = 0; i < 100 && !logged; i++) {
        logged = system(cmd) == 0;
        if (!logged)
            usleep(50 * 1000);
    }
    cr_assert(logged, "the request was not logged");
    snprintf(cmd, sizeof(cmd), "grep -q '\"/%s\"' %s", mark, path);
    cr_assert_eq(system(cmd), 0, "the page request is not logged with its own path");
    snprintf(cmd, sizeof(cmd), "grep -q SECRETQUERYTOKEN42 %s", path);
    cr_assert_neq(system(cmd), 0, "a query-string token is in the access log");
    const char *sig = strrchr(bearer, '.');
    cr_assert_not_null(sig);
    snprintf(cmd, sizeof(cmd), "grep -qF -- '%s' %s", sig + 1, path);
    cr_assert_neq(system(cmd), 0, "the bearer token is in the access log");
}
