/*
 * test_api_metrics.c - every worker is scrapeable: deploy/up lists each worker's metrics
 * listener in run/<port>/prometheus-targets.json (Prometheus file_sd), each answers /metrics
 * (and /healthz, nothing else), and a hold made through nginx moves the counter of exactly
 * the worker that served it; the Grafana dashboard's queries all name metrics a live worker
 * exports.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "e2e.h"

TestSuite(api_metrics, .timeout = 60);

#define MAX_TARGETS 64

typedef struct {
    int port;      /* the worker's metrics listener on 127.0.0.1 */
    char name[16]; /* its "worker" label */
} target_t;

/* The targets file's entries into 't'; returns how many. */
static int read_targets(target_t *t)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/prometheus-targets.json", getenv("SEATD_E2E_RUN"));
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "deploy/up wrote no %s", path);
    char text[16384];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    cr_assert(cJSON_IsArray(root), "the targets file is not a JSON array");
    int count = 0;
    const cJSON *group;
    cJSON_ArrayForEach(group, root)
    {
        const cJSON *targets = cJSON_GetObjectItemCaseSensitive(group, "targets");
        const cJSON *worker = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(group, "labels"), "worker");
        cr_assert(cJSON_IsArray(targets) && cJSON_GetArraySize(targets) == 1);
        cr_assert(cJSON_IsString(worker));
        const cJSON *addr = cJSON_GetArrayItem(targets, 0);
        cr_assert(cJSON_IsString(addr));
        cr_assert_eq(strncmp(addr->valuestring, "127.0.0.1:", 10), 0, "%s", addr->valuestring);
        cr_assert_lt(count, MAX_TARGETS);
        t[count].port = atoi(addr->valuestring + 10);
        snprintf(t[count].name, sizeof(t[count].name), "%s", worker->valuestring);
        count++;
    }
    cJSON_Delete(root);
    return count;
}

/* GET 'path' from a worker's metrics listener: the status, and the body into 'body' (owned,
 * free(); may be NULL). */
static int scrape(const target_t *t, const char *path, char **body)
{
    seatd_test_http_response_t r;
    cr_assert_eq(seatd_test_http_request("127.0.0.1", t->port, "GET", path, NULL, NULL, 0, &r), 0,
                 "worker %s's metrics listener (port %d) did not answer", t->name, t->port);
    int status = r.status;
    if (body) {
        *body = r.body ? strdup(r.body) : strdup("");
    }
    seatd_test_http_response_free(&r);
    return status;
}

/* The value of sample 'line_prefix' ("name{labels} ", or "\nname " for one without labels:
 * its HELP line holds "name " too) in worker 't''s /metrics. */
static long long sample(const target_t *t, const char *line_prefix)
{
    char *body = NULL;
    cr_assert_eq(scrape(t, "/metrics", &body), 200);
    const char *p = strstr(body, line_prefix);
    cr_assert_not_null(p, "worker %s exports no %s", t->name, line_prefix);
    long long v = atoll(p + strlen(line_prefix));
    free(body);
    return v;
}

Test(api_metrics, every_worker_is_listed_and_scrapeable)
{
    target_t t[MAX_TARGETS];
    int n = read_targets(t);
    const char *workers = getenv("SEATD_WORKERS");
    cr_assert_eq(n, workers ? atoi(workers) : 2, "one target per worker");
    for (int i = 0; i < n; i++) {
        char *body = NULL;
        cr_assert_eq(scrape(&t[i], "/metrics", &body), 200);
        cr_assert_not_null(strstr(body, "# TYPE seatd_holds_total counter\n"));
        cr_assert_not_null(strstr(body, "# TYPE seatd_redis_rtt_seconds histogram\n"));
        free(body);
        cr_assert_eq(scrape(&t[i], "/healthz", NULL), 200);
        /* The listener serves metrics and health, not the API. */
        cr_assert_eq(scrape(&t[i], "/v1/shows", NULL), 404);
        for (int j = 0; j < i; j++)
            cr_assert_neq(t[i].port, t[j].port);
    }
}

Test(api_metrics, a_hold_moves_the_counter_of_the_worker_that_served_it)
{
    target_t t[MAX_TARGETS];
    int n = read_targets(t);
    char show[32], path[64];
    cr_assert_eq(e2e_create_show(2, 5, 300, show), 0);
    const char *created = "seatd_holds_total{outcome=\"created\"} ";
    long long before[MAX_TARGETS], sum_before = 0;
    for (int i = 0; i < n; i++) {
        before[i] = sample(&t[i], created);
        sum_before += before[i];
    }

    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "metrics-user", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "%.*s", (int)res.http.body_len, res.http.body);
    e2e_res_free(&res);

    /* The hold was answered before we scrape: its counter moved already. */
    long long sum_after = 0;
    int moved = 0;
    for (int i = 0; i < n; i++) {
        long long now = sample(&t[i], created);
        sum_after += now;
        if (now != before[i]) {
            cr_assert_eq(now, before[i] + 1, "worker %s moved by %lld", t[i].name, now - before[i]);
            moved++;
        }
    }
    cr_assert_eq(sum_after, sum_before + 1);
    cr_assert_eq(moved, 1, "exactly one worker served the hold");
}

/* Every seatd_* name in the dashboard's PromQL is a sample a live worker exports. */
Test(api_metrics, the_dashboard_queries_only_what_workers_export)
{
    target_t t[MAX_TARGETS];
    cr_assert_geq(read_targets(t), 1);
    /* A hold first, so the holds_create route has its latency histogram. */
    char show[32], path[64];
    cr_assert_eq(e2e_create_show(1, 2, 300, show), 0);
    e2e_res_t res;
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    for (int i = 0; i < 2; i++) { /* two holds: with 2 workers, likely both; at least one */
        char body[64];
        snprintf(body, sizeof(body), "{\"seatIds\":[\"A%d\"]}", i + 1);
        cr_assert_eq(e2e_call("POST", path, "metrics-dash", body, NULL, &res), 0);
        e2e_res_free(&res);
    }
    seatd_buf_t all = SEATD_BUF_INIT;
    int n = read_targets(t);
    for (int i = 0; i < n; i++) {
        char *body = NULL;
        cr_assert_eq(scrape(&t[i], "/metrics", &body), 200);
        seatd_buf_puts(&all, body);
        free(body);
    }
    FILE *f = fopen(SEATD_SOURCE_DIR "/deploy/grafana-dashboard.json", "rb");
    cr_assert_not_null(f);
    seatd_buf_t text = SEATD_BUF_INIT;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        seatd_buf_append(&text, chunk, got);
    fclose(f);
    cJSON *d = cJSON_ParseWithLength(text.data, text.len);
    cr_assert_not_null(d);
    int names = 0;
    const cJSON *panel, *target;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItemCaseSensitive(d, "panels"))
    {
        cJSON_ArrayForEach(target, cJSON_GetObjectItemCaseSensitive(panel, "targets"))
        {
            const char *expr =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(target, "expr"));
            cr_assert_not_null(expr);
            for (const char *p = strstr(expr, "seatd_"); p; p = strstr(p, "seatd_")) {
                const char *e = p;
                while (isalnum((unsigned char)*e) || *e == '_')
                    e++;
                char name[128], line[132];
                snprintf(name, sizeof(name), "%.*s", (int)(e - p), p);
                snprintf(line, sizeof(line), "\n%s{", name);
                int found = strstr(all.data, line) != NULL;
                snprintf(line, sizeof(line), "\n%s ", name);
                found |= strstr(all.data, line) != NULL;
                cr_assert(found, "the dashboard queries %s; no worker exports it", name);
                names++;
                p = e;
            }
        }
    }
    cr_assert_gt(names, 10);
    cJSON_Delete(d);
    seatd_buf_free(&text);
    seatd_buf_free(&all);
}

/* The sum of sample 'line_prefix' over every worker. */
static long long sample_sum(const char *line_prefix)
{
    target_t t[MAX_TARGETS];
    int n = read_targets(t);
    long long sum = 0;
    for (int i = 0; i < n; i++)
        sum += sample(&t[i], line_prefix);
    return sum;
}

/* The waiting room is visible to an operator: joins by outcome, admissions, holds refused for
 * want of one, and (from the sweepers' ticks) the rooms with people in them. */
Test(api_metrics, the_waiting_room_is_counted)
{
    const char *placed = "seatd_queue_joins_total{outcome=\"placed\"} ";
    const char *again = "seatd_queue_joins_total{outcome=\"already_placed\"} ";
    const char *admitted = "seatd_queue_admitted_total{by=\"request\"} ";
    const char *refused = "seatd_holds_total{outcome=\"queue_required\"} ";
    long long placed0 = sample_sum(placed), again0 = sample_sum(again);
    long long admitted0 = sample_sum(admitted), refused0 = sample_sum(refused);
    target_t t[MAX_TARGETS];
    long long rooms0[MAX_TARGETS], waiting0[MAX_TARGETS];
    int n = read_targets(t);
    for (int i = 0; i < n; i++) {
        rooms0[i] = sample(&t[i], "\nseatd_queue_rooms ");
        waiting0[i] = sample(&t[i], "\nseatd_queue_waiting ");
    }

    /* A room open since a minute ago over 2 seats, one per shopper. */
    char opens[32], body[1024], show[32], path[96];
    time_t t0 = time(NULL) - 60;
    struct tm tm;
    gmtime_r(&t0, &tm);
    strftime(opens, sizeof(opens), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(body, sizeof(body),
             "{\"title\":\"Counted\",\"startsAt\":\"2030-01-01T20:00:00Z\","
             "\"priceTiers\":{\"standard\":1200},\"queue\":{\"opensAt\":\"%s\","
             "\"maxShoppers\":10,\"admissionSeconds\":60,\"seatsPerShopper\":1},\"seats\":["
             "{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":0},"
             "{\"id\":\"A2\",\"row\":\"A\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":0}]}",
             opens);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/shows", "admin", body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201);
    snprintf(show, sizeof(show), "%s", e2e_str(&res, "id"));
    e2e_res_free(&res);

    /* Three join (two admitted at once, the third waits), one joins again. */
    snprintf(path, sizeof(path), "/v1/shows/%s/queue", show);
    const char *who[] = {"m-alice", "m-bob", "m-carol", "m-carol"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(e2e_call("POST", path, who[i], NULL, NULL, &res), 0);
        cr_assert_eq(res.http.status, i < 3 ? 201 : 200);
        cr_assert_str_eq(e2e_str(&res, "state"), i < 2 ? "ADMITTED" : "WAITING");
        e2e_res_free(&res);
    }
    /* A hold without an admission. */
    snprintf(path, sizeof(path), "/v1/shows/%s/holds", show);
    cr_assert_eq(e2e_call("POST", path, "m-dave", "{\"seatIds\":[\"A1\"]}", NULL, &res), 0);
    cr_assert_eq(res.http.status, 403);
    e2e_res_free(&res);

    cr_assert_eq(sample_sum(placed), placed0 + 3);
    cr_assert_eq(sample_sum(again), again0 + 1);
    cr_assert_eq(sample_sum(admitted), admitted0 + 2);
    cr_assert_eq(sample_sum(refused), refused0 + 1);
    /* Within a few sweeper ticks, every worker reports the room and its waiter. */
    int seen = 0;
    for (int tries = 0; tries < 50 && seen < n; tries++) {
        seen = 0;
        for (int i = 0; i < n; i++)
            seen += sample(&t[i], "\nseatd_queue_rooms ") >= rooms0[i] + 1 &&
                    sample(&t[i], "\nseatd_queue_waiting ") >= waiting0[i] + 1;
        if (seen < n)
            usleep(100 * 1000);
    }
    cr_assert_eq(seen, n, "%d of %d workers report the room", seen, n);
}

/* Idle connections to a metrics listener cannot crowd the scraper out: with 300 connections
 * that say nothing open, a scrape is answered within a few seconds (they are closed for
 * silence after 2 s); 70 of them held /metrics at 503 for 10 s, renewable at will. */
static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

Test(api_metrics, idle_connections_do_not_lock_the_scraper_out)
{
    target_t t[MAX_TARGETS];
    cr_assert_geq(read_targets(t), 1);
    enum { N = 300 };
    int fds[N];
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t[0].port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < N; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        cr_assert_geq(fds[i], 0);
        cr_assert_eq(connect(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
    }
    usleep(200 * 1000); /* accepted (or turned away) by the worker */
    int ok = 0;
    for (long long deadline = mono_ms() + 6000; !ok && mono_ms() < deadline;) {
        seatd_test_http_response_t r;
        if (seatd_test_http_request("127.0.0.1", t[0].port, "GET", "/metrics", NULL, NULL, 0, &r) ==
            0) {
            ok = r.status == 200;
            seatd_test_http_response_free(&r);
        }
        if (!ok)
            usleep(200 * 1000);
    }
    for (int i = 0; i < N; i++)
        close(fds[i]);
    cr_assert(ok, "the scraper was shut out for 6 s by %d silent connections", N);
}
