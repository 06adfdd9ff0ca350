/*
 * payment_harness.h - the fake card gateway (deploy/gateway/gateway.js) for the payment suites
 * (test_payment.c, test_payment_reconcile.c): the gateway process, run with GATEWAY_SLOW_MS =
 * SLOW_MS on a free loopback port with a ledger in a fresh temp dir, and blocking raw requests
 * to it for facts the client API does not expose.
 *
 * Header-only (static inline): each suite sets up its own gateway in its .init, so each file's
 * copy of the gateway's state is the one its tests use. suite_fini() stops it for both suites.
 */
#ifndef SEATD_TEST_PAYMENT_HARNESS_H
#define SEATD_TEST_PAYMENT_HARNESS_H

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"

#ifndef SEATD_SOURCE_DIR
#error "SEATD_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GATEWAY_JS SEATD_SOURCE_DIR "/deploy/gateway/gateway.js"
#define NODE_BIN "/usr/bin/node"
#define SLOW_MS "1500" /* GATEWAY_SLOW_MS for the test gateway */

/* ---------------------------------------------------------------------------------------- */
/* The gateway process                                                                      */
/* ---------------------------------------------------------------------------------------- */

static char gw_dir[64];
static char gw_ledger[128];
static char gw_log[128];
static char gw_url[64];
static int gw_port;
static pid_t gw_pid = -1;

static inline int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static inline int can_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline void gw_start(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* The child only execs node; it must never return into the test. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fd = open(gw_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        for (int i = 3; i < 1024; i++)
            close(i);
        char port[16];
        snprintf(port, sizeof(port), "%d", gw_port);
        setenv("GATEWAY_SLOW_MS", SLOW_MS, 1);
        execl(NODE_BIN, "node", GATEWAY_JS, "--port", port, "--ledger", gw_ledger, (char *)NULL);
        _exit(127);
    }
    gw_pid = pid;
    for (int i = 0; i < 500; i++) { /* up to 10 s */
        if (can_connect(gw_port))
            return;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            gw_pid = -1;
            cr_assert_fail("the gateway exited at start (status %d); see %s", status, gw_log);
        }
        sleep_ms(20);
    }
    cr_assert_fail("the gateway did not listen on port %d; see %s", gw_port, gw_log);
}

static inline void gw_stop(void)
{
    if (gw_pid <= 0)
        return;
    kill(gw_pid, SIGTERM);
    for (int i = 0; i < 250; i++) { /* up to 5 s, then SIGKILL */
        if (waitpid(gw_pid, NULL, WNOHANG) == gw_pid) {
            gw_pid = -1;
            return;
        }
        sleep_ms(20);
    }
    kill(gw_pid, SIGKILL);
    waitpid(gw_pid, NULL, 0);
    gw_pid = -1;
}

static inline void suite_fini(void)
{
    gw_stop();
    unlink(gw_ledger);
    unlink(gw_log);
    rmdir(gw_dir);
}
/* ---------------------------------------------------------------------------------------- */
/* Raw requests to the gateway (blocking; for facts the client API does not expose)         */
/* ---------------------------------------------------------------------------------------- */

typedef struct raw_s {
    long status;      /* HTTP status, 0 if none */
    int replayed;     /* saw "Idempotent-Replayed: true" */
    seatd_buf_t body; /* the answer's body */
} raw_t;

static inline size_t raw_on_body(char *ptr, size_t size, size_t n, void *data)
{
    seatd_buf_append(&((raw_t *)data)->body, ptr, size * n);
    return size * n;
}

static inline size_t raw_on_header(char *ptr, size_t size, size_t n, void *data)
{
    const char *want = "idempotent-replayed: true";
    if (size * n >= strlen(want) && strncasecmp(ptr, want, strlen(want)) == 0)
        ((raw_t *)data)->replayed = 1;
    return size * n;
}

/* GET 'path', or POST 'json' to it with 'key'. The caller frees r->body. */
static inline void raw(const char *path, const char *key, const char *json, raw_t *r)
{
    memset(r, 0, sizeof(*r));
    char url[256];
    snprintf(url, sizeof(url), "%s%s", gw_url, path);
    CURL *e = curl_easy_init();
    cr_assert_not_null(e);
    struct curl_slist *h = NULL;
    char hk[200];
    if (key) {
        snprintf(hk, sizeof(hk), "Idempotency-Key: %s", key);
        h = curl_slist_append(h, hk);
        h = curl_slist_append(h, "Content-Type: application/json");
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, raw_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, raw_on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
    if (json)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, json);
    CURLcode cc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    cr_assert_eq(cc, CURLE_OK, "raw request to %s: %s", path, curl_easy_strerror(cc));
}

/* Reads one integer from /v1/stats: 'name' at the top, or byKey[key][name] if 'key'. */
static inline long long stat_of(const char *key, const char *name)
{
    raw_t r;
    raw("/v1/stats", NULL, NULL, &r);
    cr_assert_eq(r.status, 200);
    cJSON *root = cJSON_Parse(r.body.data);
    seatd_buf_free(&r.body);
    cr_assert_not_null(root);
    const cJSON *obj = root;
    if (key)
        obj =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "byKey"), key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    long long n = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
    cJSON_Delete(root);
    return n;
}

#endif /* SEATD_TEST_PAYMENT_HARNESS_H */
