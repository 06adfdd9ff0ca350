/*
 * gateway_harness.h - the fake card gateway (deploy/gateway/gateway.js) as a test fixture.
 *
 * gw_start() runs node on a free loopback port with a ledger in a fresh temp dir
 * (GATEWAY_SLOW_MS = GW_SLOW_MS: tok_slow stays "processing" for the whole test) and returns
 * once it answers /healthz; gw_stop() kills it and removes the dir. Its steps, gw_prepare(),
 * gw_spawn() and gw_halt(), serve a suite that restarts it on the same ledger. gw_call() and
 * friends are blocking requests that assert (parent process only); gw_try_charge() does not assert
 * and may be used by forked racers. Header-only (static), like store_harness.h.
 */
#ifndef SEATD_TEST_GATEWAY_HARNESS_H
#define SEATD_TEST_GATEWAY_HARNESS_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"

#ifndef SEATD_SOURCE_DIR
#error "SEATD_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define GATEWAY_JS SEATD_SOURCE_DIR "/deploy/gateway/gateway.js"
#define NODE_BIN "/usr/bin/node"
#define GW_SLOW_MS "120000"
#define GW_AMOUNT 2400 /* what gw_charge() charges: th_book_begin()'s amount */

static inline void gw_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char gw_dir[64], gw_ledger[128], gw_log[128];
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

/* A fresh temp dir ('tmpl': mkdtemp's template) for the ledger and the log, and a free port. */
static inline void gw_prepare(const char *tmpl)
{
    snprintf(gw_dir, sizeof(gw_dir), "%s", tmpl);
    cr_assert_not_null(mkdtemp(gw_dir));
    snprintf(gw_ledger, sizeof(gw_ledger), "%s/ledger.jsonl", gw_dir);
    snprintf(gw_log, sizeof(gw_log), "%s/gateway.log", gw_dir);
    gw_port = free_port();
}

/* Runs the gateway on gw_port with gw_ledger (GATEWAY_SLOW_MS = 'slow_ms'); returns once it
 * answers /healthz. Again after gw_halt(): the same port, the same ledger. */
static inline void gw_spawn(const char *slow_ms)
{
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
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
        setenv("GATEWAY_SLOW_MS", slow_ms, 1);
        execl(NODE_BIN, "node", GATEWAY_JS, "--port", port, "--ledger", gw_ledger, (char *)NULL);
        _exit(127);
    }
    gw_pid = pid;
    for (int i = 0; i < 1500; i++) { /* it answers /healthz: up to 30 s on a loaded machine */
        seatd_test_http_response_t res;
        if (seatd_test_http_request("127.0.0.1", gw_port, "GET", "/healthz", NULL, NULL, 0, &res) ==
            0) {
            int ok = res.status == 200;
            seatd_test_http_response_free(&res);
            if (ok)
                return;
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            gw_pid = -1;
            cr_assert_fail("the gateway exited at start (status %d); see %s", status, gw_log);
        }
        gw_sleep_ms(20);
    }
    cr_assert_fail("the gateway did not answer on port %d; see %s", gw_port, gw_log);
}

static inline void gw_start(void)
{
    gw_prepare("/tmp/seatd-rec-XXXXXX");
    gw_spawn(GW_SLOW_MS);
}

/* Stops the gateway gently (SIGTERM, SIGKILL after 5 s), keeping its dir: gw_spawn() may run
 * it again on the same ledger. */
static inline void gw_halt(void)
{
    if (gw_pid <= 0)
        return;
    kill(gw_pid, SIGTERM);
    for (int i = 0; i < 250; i++) {
        if (waitpid(gw_pid, NULL, WNOHANG) == gw_pid) {
            gw_pid = -1;
            return;
        }
        gw_sleep_ms(20);
    }
    kill(gw_pid, SIGKILL);
    waitpid(gw_pid, NULL, 0);
    gw_pid = -1;
}

static inline void gw_stop(void)
{
    if (gw_pid > 0) {
        kill(gw_pid, SIGKILL); /* a tok_slow charge may be running; nothing to keep */
        waitpid(gw_pid, NULL, 0);
        gw_pid = -1;
    }
    unlink(gw_ledger);
    unlink(gw_log);
    rmdir(gw_dir);
}

/* A blocking request to the fake gateway; returns the status, body parsed into '*json'
 * (owned, may be NULL). */
static inline int gw_call(const char *method, const char *path, const char *key, const char *body,
                          cJSON **json)
{
    char headers[256] = "";
    if (key)
        snprintf(headers, sizeof(headers),
                 "Idempotency-Key: %s\r\nContent-Type: application/json\r\n", key);
    seatd_test_http_response_t res;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", gw_port, method, path, key ? headers : NULL,
                                         body, body ? strlen(body) : 0, &res),
                 0, "%s %s", method, path);
    int status = res.status;
    if (json)
        *json = cJSON_Parse(res.body ? res.body : "");
    seatd_test_http_response_free(&res);
    return status;
}

/* Charges 'amount' to 'source' under 'key' at the fake gateway (what the worker did before
 * it lost the answer); returns the HTTP status. */
static inline int gw_charge(const char *key, const char *source)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"amount\":%d,\"currency\":\"EUR\",\"source\":\"%s\",\"description\":\"test\"}",
             GW_AMOUNT, source);
    return gw_call("POST", "/v1/charges", key, body, NULL);
}

/* The lookup's status for 'key', and the amount refunded on its charge (0 if none). */
static inline int gw_lookup(const char *key, long long *refunded)
{
    char path[160];
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", key);
    cJSON *j = NULL;
    int status = gw_call("GET", path, NULL, NULL, &j);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "amountRefunded");
    if (refunded)
        *refunded = cJSON_IsNumber(r) ? (long long)r->valuedouble : 0;
    cJSON_Delete(j);
    return status;
}

/* Refunds made under refund key 'key' ("refund-<bid>" or "cancel-<bid>"), from /v1/stats. */
static inline long long gw_refunds_of(const char *charge_key)
{
    cJSON *j = NULL;
    cr_assert_eq(gw_call("GET", "/v1/stats", NULL, NULL, &j), 200);
    const cJSON *k =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "byKey"), charge_key);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(k, "refunds");
    long long v = cJSON_IsNumber(n) ? (long long)n->valuedouble : 0;
    cJSON_Delete(j);
    return v;
}

/* Charges GW_AMOUNT to 'source' under 'key' without asserting (for forked racers). Returns
 * the HTTP status, or -1. */
static inline int gw_try_charge(int port, const char *key, const char *source)
{
    char headers[256], body[256];
    snprintf(headers, sizeof(headers), "Idempotency-Key: %s\r\nContent-Type: application/json\r\n",
             key);
    snprintf(body, sizeof(body),
             "{\"amount\":%d,\"currency\":\"EUR\",\"source\":\"%s\",\"description\":\"model\"}",
             GW_AMOUNT, source);
    seatd_test_http_response_t res;
    if (seatd_test_http_request("127.0.0.1", port, "POST", "/v1/charges", headers, body,
                                strlen(body), &res) != 0)
        return -1;
    int status = res.status;
    seatd_test_http_response_free(&res);
    return status;
}

#endif
