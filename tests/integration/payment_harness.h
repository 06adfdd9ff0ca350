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
#include "gateway_harness.h"

#ifndef SEATD_SOURCE_DIR
#error "SEATD_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

#define SLOW_MS "1500" /* GATEWAY_SLOW_MS for the test gateway */

/* ---------------------------------------------------------------------------------------- */
/* The gateway process (gateway_harness.h: gw_prepare, gw_spawn, gw_halt, gw_stop)          */
/* ---------------------------------------------------------------------------------------- */

static char gw_url[64];

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline void suite_fini(void)
{
    gw_halt();
    gw_stop(); /* (and its dir) */
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
