/* End-to-end: the deployment's least privilege and nginx's edge (issue 9).
 *
 * Suite api_hardening runs against the e2e stack (tests/e2e/run): file modes of the runtime
 * folder, Redis access control, maxmemory, problem+json for everything nginx answers itself,
 * the page's security headers and an access log without tokens.
 *
 * Suite api_hardening_defaults starts a stack of its own with deploy/up's DEFAULT limits (the
 * e2e stack lifts them for the other suites) and proves each one triggers: hold, booking and
 * ?minVersion= read rate limits per address, limit_conn per address (WebSocket and plain), the
 * worker's per-user hold limit, the header timeout, worker_processes auto; each 429 of nginx's
 * names its limit in its detail. Requests come from distinct loopback source addresses
 * (127.0.x.y) so each limit is met on its own. That stack has one Redis node even when the
 * suites run on a cluster: the limits under test are the edge's.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "base/buf.h"
#include "e2e.h"

TestSuite(api_hardening, .timeout = 120);
typedef struct hstack_s hstack_t;
static hstack_t *live_stack; /* the defaults stack, stopped by fini even when a test fails */
static void defaults_fini(void);
TestSuite(api_hardening_defaults, .timeout = 240, .fini = defaults_fini);

/* ------------------------------------------------------------------ raw HTTP from an address */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A TCP connection from 'src' (a loopback address) to 127.0.0.1:'port'; fd or -1. */
static int connect_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (src) {
        inet_pton(AF_INET, src, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&d, sizeof(d)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct {
    int status;
    char head[8192]; /* status line and headers */
    char body[8192];
} raw_res_t;

/* The value of header 'name' in 'r' (copied into a static buffer), or NULL. */
static const char *raw_header(const raw_res_t *r, const char *name)
{
    static char v[1024];
    size_t n = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *s = line + n + 1;
            while (*s == ' ')
                s++;
            size_t len = strcspn(s, "\r\n");
            snprintf(v, sizeof(v), "%.*s", (int)(len < sizeof(v) - 1 ? len : sizeof(v) - 1), s);
            return v;
        }
    }
    return NULL;
}

/* Reads one response head (and up to Content-Length bytes of body) from 'fd'; 0 or -1. */
static int read_response(int fd, raw_res_t *r)
{
    memset(r, 0, sizeof(*r));
    char buf[16384];
    size_t got = 0;
    char *end = NULL;
    while (got < sizeof(buf) - 1) {
        ssize_t k = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end) {
            size_t hlen = (size_t)(end - buf);
            snprintf(r->head, sizeof(r->head), "%.*s", (int)hlen, buf);
            const char *cl = raw_header(r, "content-length");
            size_t want = cl ? (size_t)atol(cl) : 0;
            if (got - hlen - 4 >= want || strncmp(buf + 9, "101", 3) == 0)
                break;
        }
    }
    if (!end)
        return -1;
    size_t hlen = (size_t)(end - buf);
    snprintf(r->head, sizeof(r->head), "%.*s", (int)hlen, buf);
    snprintf(r->body, sizeof(r->body), "%s", end + 4);
    r->status = atoi(buf + 9);
    return r->status > 0 ? 0 : -1;
}

/* Sends 'req' from 'src' and reads the answer; 0 or -1. */
static int raw_from(const char *src, int port, const char *req, size_t len, raw_res_t *r)
{
    int fd = connect_from(src, port);
    if (fd < 0)
        return -1;
    int rc = send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len ? read_response(fd, r) : -1;
    close(fd);
    return rc;
}

/* 'r' is RFC 9457 problem+json whose "status" is its HTTP status. */
static void assert_problem(const raw_res_t *r, const char *what)
{
    const char *ct = raw_header(r, "content-type");
    cr_assert(ct && strncmp(ct, "application/problem+json", 24) == 0,
              "%s: %d answered with Content-Type %s: %.200s", what, r->status, ct ? ct : "(none)",
              r->body);
    cJSON *j = cJSON_Parse(r->body);
    cr_assert_not_null(j, "%s: body is not JSON: %.200s", what, r->body);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(j, "status");
    cr_assert(cJSON_IsString(type) &&
                  strncmp(type->valuestring, "https://seatd.dev/problems/", 27) == 0,
              "%s: no problem type: %s", what, r->body);
    cr_assert(cJSON_IsNumber(status) && status->valueint == r->status,
              "%s: body status differs from %d: %s", what, r->status, r->body);
    cJSON_Delete(j);
}

/* 'r''s problem has a "detail" that contains 'want' (which limit a 429 met). */
static void assert_detail(const raw_res_t *r, const char *what, const char *want)
{
    cJSON *j = cJSON_Parse(r->body);
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "detail"));
    cr_assert(d && strstr(d, want), "%s: the detail does not say '%s': %s", what, want, r->body);
    cJSON_Delete(j);
}

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

/* ------------------------------------------------------------------ a stack with defaults */

static int port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

struct hstack_s {
    int port;
    char run[256];
    char secret[256];
};

static void shell_env(const hstack_t *s, char *out, size_t size)
{
    snprintf(out, size,
             "env -u SEATD_HOLD_RATE -u SEATD_HOLD_BURST -u SEATD_BOOKING_RATE "
             "-u SEATD_BOOKING_BURST -u SEATD_CONN_PER_ADDR -u SEATD_WS_CONN_PER_ADDR "
             "-u SEATD_MINV_RATE -u SEATD_MINV_BURST "
             "-u SEATD_HOLD_RATE_PER_USER -u SEATD_HOLD_RATE_WINDOW_MS -u SEATD_JWT_SECRET "
             "-u SEATD_REDIS_PORT -u SEATD_GATEWAY_PORT -u SEATD_METRICS_PORT -u SEATD_REDIS_USER "
             "-u SEATD_REDIS_PASSWORD_FILE -u SEATD_WORKER_ARGS -u SEATD_NGINX_ACCESS_LOG "
             "-u SEATD_REDIS_SHARDS -u SEATD_REDIS_REPLICAS " /* the edge's limits: one Redis */
             "SEATD_PORT=%d SEATD_RUN_DIR=%s SEATD_WORKERS=2 SEATD_NO_DEMO=1 SEATD_SKIP_BUILD=1 "
             "SEATD_BUILD_DIR=%s",
             s->port, s->run, getenv("SEATD_BUILD_DIR") ? getenv("SEATD_BUILD_DIR") : "build");
}

static void stack_up(hstack_t *s)
{
    memset(s, 0, sizeof(*s));
    srand((unsigned)getpid() ^ (unsigned)time(NULL));
    for (int i = 0; i < 50 && !s->port; i++) {
        int p = 20000 + rand() % 8000;
        if (port_free(p) && port_free(p + 1000) && port_free(p + 2000) && port_free(p + 3000) &&
            port_free(p + 3001))
            s->port = p;
    }
    cr_assert(s->port, "no free ports");
    snprintf(s->run, sizeof(s->run), "/tmp/seatd-hardening.XXXXXX");
    cr_assert_not_null(mkdtemp(s->run));
    char env[1024], cmd[2048];
    shell_env(s, env, sizeof(env));
    snprintf(cmd, sizeof(cmd), "%s %s/deploy/up > %s/up.log 2>&1", env, SEATD_SOURCE_DIR, s->run);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof(cmd), "cat %s/up.log >&2", s->run);
        (void)system(cmd);
    }
    cr_assert_eq(rc, 0, "deploy/up with the defaults failed");
    char path[512];
    snprintf(path, sizeof(path), "%s/jwt_secret", s->run);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(s->secret, sizeof(s->secret), f));
    fclose(f);
    s->secret[strcspn(s->secret, "\r\n")] = '\0';
}

static void stack_down(hstack_t *s)
{
    char env[1024], cmd[2048];
    shell_env(s, env, sizeof(env));
    snprintf(cmd, sizeof(cmd), "%s %s/deploy/down >/dev/null 2>&1; rm -rf %s", env,
             SEATD_SOURCE_DIR, s->run);
    (void)system(cmd);
}

static void defaults_fini(void)
{
    if (live_stack)
        stack_down(live_stack);
    live_stack = NULL;
}

static void hstack_token(const hstack_t *s, const char *sub, int admin, char *out, size_t size)
{
    seatd_auth_t *auth = NULL;
    cr_assert_eq(seatd_auth_new(s->secret, strlen(s->secret), &auth), 0);
    char *t = NULL;
    cr_assert_eq(seatd_auth_sign(auth, sub, admin, 3600, &t), 0);
    snprintf(out, size, "%s", t);
    free(t);
    seatd_auth_free(auth);
}

/* Sends up to 'max' copies of 'req' from 'src'; the first 429 goes to 'r'. The count of
 * answers before it, or -1 if none was 429. */
static int until_429(const char *src, int port, const char *req, int max, raw_res_t *r)
{
    for (int i = 0; i < max; i++) {
        if (raw_from(src, port, req, strlen(req), r) < 0)
            return -2;
        if (r->status == 429)
            return i;
    }
    return -1;
}

/* The children of 'parent' whose command line starts with 'title' (nginx's master also runs
 * a cache manager and a cache loader beside its workers). */
static int count_children(pid_t parent, const char *title)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ppid = 0;
        if (fgets(buf, sizeof(buf), f)) {
            const char *p = strrchr(buf, ')');
            if (p == NULL || sscanf(p + 2, "%*c %d", &ppid) != 1)
                ppid = 0;
        }
        fclose(f);
        if (ppid != parent)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        f = fopen(path, "r");
        if (f && fgets(buf, sizeof(buf), f) && strncmp(buf, title, strlen(title)) == 0)
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

Test(api_hardening_defaults, the_default_limits_trigger)
{
    static hstack_t s;
    stack_up(&s);
    live_stack = &s;
    char admin[1200], user[1200], req[4096];
    hstack_token(&s, "admin", 1, admin, sizeof(admin));
    hstack_token(&s, "ratey", 0, user, sizeof(user));

    /* A show to hold seats of (creating shows is not rate-limited). */
    const char *show_body = "{\"title\":\"limits\",\"startsAt\":\"2030-01-01T20:00:00Z\","
                            "\"holdTtlSeconds\":300,\"priceTiers\":{\"standard\":1000},"
                            "\"seats\":[{\"id\":\"A1\",\"row\":\"A\",\"number\":1,"
                            "\"tier\":\"standard\",\"x\":1,\"y\":1}]}";
    snprintf(req, sizeof(req),
             "POST /v1/shows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
             admin, strlen(show_body), show_body);
    raw_res_t r;
    cr_assert_eq(raw_from("127.0.0.2", s.port, req, strlen(req), &r), 0);
    cr_assert_eq(r.status, 201, "%s", r.body);
    cJSON *j = cJSON_Parse(r.body);
    char show[32];
    snprintf(show, sizeof(show), "%s", cJSON_GetObjectItem(j, "id")->valuestring);
    cJSON_Delete(j);

    /* nginx: worker_processes auto. */
    char path[512];
    snprintf(path, sizeof(path), "%s/nginx.pid", s.run);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    int master = 0;
    cr_assert_eq(fscanf(f, "%d", &master), 1);
    fclose(f);
    cr_assert_eq(count_children(master, "nginx: worker process"),
                 (int)sysconf(_SC_NPROCESSORS_ONLN),
                 "nginx does not run one worker process per core");

    /* 1. Hold creation per address: 429 problem+json with Retry-After within 100 tries. */
    snprintf(req, sizeof(req),
             "POST /v1/shows/%s/holds HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: 18\r\nConnection: close\r\n\r\n{\"seatIds\":[\"A1\"]}",
             show);
    int n = until_429("127.0.0.4", s.port, req, 100, &r);
    cr_assert_geq(n, 1, "hold creation from one address is not rate-limited (%d)", n);
    fprintf(stderr, "defaults: hold creation from one address: 429 after %d requests\n", n);
    assert_problem(&r, "the hold rate limit");
    assert_detail(&r, "the hold rate limit",
                  "too many hold requests from one address: at most 5 a "
                  "second (bursts of 10)");
    cr_assert_not_null(raw_header(&r, "retry-after"));

    /* 2. Booking attempts per address. */
    snprintf(req, sizeof(req),
             "POST /v1/bookings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
    n = until_429("127.0.0.5", s.port, req, 100, &r);
    cr_assert_geq(n, 1, "booking attempts from one address are not rate-limited (%d)", n);
    fprintf(stderr, "defaults: booking POSTs from one address: 429 after %d requests\n", n);
    assert_problem(&r, "the booking rate limit");
    assert_detail(&r, "the booking rate limit",
                  "too many booking attempts from one address: at most 1 a second (bursts of 5)");
    cr_assert_not_null(raw_header(&r, "retry-after"));

    /* 3. The worker's per-user hold limit: one user from many addresses (so no address
     * reaches nginx's limit) gets 429 from the worker itself. */
    int before = -1;
    for (int i = 0; i < 200 && before < 0; i++) {
        char src[32];
        snprintf(src, sizeof(src), "127.0.1.%d", 1 + i / 4);
        snprintf(req, sizeof(req),
                 "POST /v1/shows/%s/holds HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                 "Content-Type: application/json\r\nContent-Length: 18\r\nConnection: close\r\n"
                 "\r\n{\"seatIds\":[\"A1\"]}",
                 show, user);
        cr_assert_eq(raw_from(src, s.port, req, strlen(req), &r), 0);
        if (r.status == 429)
            before = i;
        else
            cr_assert(r.status == 201 || r.status == 409, "hold %d answered %d: %s", i, r.status,
                      r.body);
    }
    cr_assert_geq(before, 1, "one user's holds are not limited per user");
    fprintf(stderr, "defaults: one user's holds: 429 from the worker after %d requests\n", before);
    assert_problem(&r, "the per-user hold limit");
    cr_assert_not_null(raw_header(&r, "retry-after"));
    cr_assert_not_null(raw_header(&r, "x-request-id"), "that 429 did not come from a worker");
    cr_assert(strstr(r.body, "rate-limited"));

    /* 4. limit_conn on the live seat map: 8 WebSockets per address, the 9th is refused. */
    snprintf(req, sizeof(req),
             "GET /v1/shows/%s/seats/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n",
             show);
    int fds[80], nfds = 0, refused = 0;
    for (int i = 0; i < 20 && !refused; i++) {
        int fd = connect_from("127.0.0.6", s.port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
        cr_assert_eq(read_response(fd, &r), 0);
        if (r.status == 429) {
            refused = 1;
            close(fd);
        } else {
            cr_assert_eq(r.status, 101, "%s", r.head);
            fds[nfds++] = fd;
        }
    }
    cr_assert(refused, "%d WebSockets from one address were all accepted", nfds);
    cr_assert_eq(nfds, 8);
    assert_problem(&r, "the WebSocket connection limit");
    assert_detail(&r, "the WebSocket connection limit",
                  "too many live seat maps (WebSockets) open at once from one address: at most 8");
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    nfds = 0;

    /* 5. limit_conn elsewhere: 64 requests stalled in their bodies, then a 429. */
    const char *stall = "POST /v1/shows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Content-Length: 1000\r\n\r\n{";
    for (int i = 0; i < 64; i++) {
        int fd = connect_from("127.0.0.7", s.port);
        cr_assert_geq(fd, 0);
        cr_assert_eq(send(fd, stall, strlen(stall), MSG_NOSIGNAL), (ssize_t)strlen(stall));
        fds[nfds++] = fd;
    }
    const char *probe = "GET /v1/shows HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    int limited = 0;
    double deadline = now_s() + 30; /* only a limit that never engages reaches it */
    while (!limited && now_s() < deadline) {
        cr_assert_eq(raw_from("127.0.0.7", s.port, probe, strlen(probe), &r), 0);
        limited = r.status == 429;
    }
    cr_assert(limited, "64 open requests from one address did not block the 65th");
    assert_problem(&r, "the connection limit");
    assert_detail(&r, "the connection limit",
                  "too many requests open at once from one address: at most 64");
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    nfds = 0;

    /* 5b. Seat-status reads that bypass the cache (?minVersion=) per address. */
    snprintf(req, sizeof(req),
             "GET /v1/shows/%s/seats?minVersion=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
             show);
    n = until_429("127.0.0.9", s.port, req, 200, &r);
    cr_assert_geq(n, 1, "minVersion reads from one address are not rate-limited (%d)", n);
    assert_problem(&r, "the minVersion read limit");
    assert_detail(&r, "the minVersion read limit",
                  "too many seat-status reads with a query string (?minVersion=) from one "
                  "address: at most 10 a second (bursts of 20)");

    /* 6. A client trickling its headers is cut off by the short header timeout (the old
     * default kept it 60 s). */
    int fd = connect_from("127.0.0.8", s.port);
    cr_assert_geq(fd, 0);
    const char *partial = "GET / HTTP/1.1\r\nHost: x\r\n";
    cr_assert_eq(send(fd, partial, strlen(partial), MSG_NOSIGNAL), (ssize_t)strlen(partial));
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int closed = 0;
    deadline = now_s() + 30;
    while (!closed && now_s() < deadline) {
        if (poll(&pfd, 1, 1000) > 0) {
            char buf[512];
            ssize_t k = recv(fd, buf, sizeof(buf), 0);
            (void)k; /* an answer (408) or a close: either ends the trickle */
            closed = 1;
        }
    }
    close(fd);
    cr_assert(closed, "a connection trickling its headers stayed open for 30 s");
    fprintf(stderr, "defaults: a trickled request head was cut after %.1f s\n",
            now_s() - (deadline - 30));

    /* Stop it here so its workers' sanitizer reports (if built so) fail this test. */
    char env[1024], cmd[2048];
    shell_env(&s, env, sizeof(env));
    snprintf(cmd, sizeof(cmd), "%s %s/deploy/down >/dev/null 2>&1", env, SEATD_SOURCE_DIR);
    (void)system(cmd);
    snprintf(cmd, sizeof(cmd),
             "grep -lE 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' "
             "%s/logs/worker-*.log >&2",
             s.run);
    cr_assert_neq(system(cmd), 0, "sanitizer reports in the defaults stack's worker logs");
}
