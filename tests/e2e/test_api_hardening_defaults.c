/* End-to-end: deploy/up's default limits at nginx's edge (issue 9).
 *
 * Suite api_hardening_defaults starts a stack of its own with deploy/up's DEFAULT limits (the
 * e2e stack lifts them for the other suites) and proves each one triggers: hold, booking and
 * ?minVersion= read rate limits per address, limit_conn per address (WebSocket and plain), the
 * worker's per-user hold limit, the header timeout, worker_processes auto; each 429 of nginx's
 * names its limit in its detail. Requests come from distinct loopback source addresses
 * (127.0.x.y, hardening_raw.h) so each limit is met on its own. That stack has one Redis node
 * even when the suites run on a cluster: the limits under test are the edge's.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "e2e.h"
#include "hardening_raw.h"
typedef struct hstack_s hstack_t;
static hstack_t *live_stack; /* the defaults stack, stopped by fini even when a test fails */
static void defaults_fini(void);
TestSuite(api_hardening_defaults, .timeout = 240, .fini = defaults_fini);

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
