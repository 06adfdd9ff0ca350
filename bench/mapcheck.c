/*
 * mapcheck.c - how fresh is the seat map a viewer gets, and does ?minVersion= keep its word?
 * (bench/run's on-sale mix runs it beside the hold load, the map readers and the watchers.)
 *
 * Three kinds of client process, each a small paced loop over plain HTTP through nginx:
 *   - truth: GET …/availability?minVersion=1 (bypasses nginx's micro-cache: the version the
 *     workers see now) every ~2 ms, recording (time, version);
 *   - viewer: GET …/availability (plain, as a million viewers would: may come from the cache)
 *     every ~5 ms, recording (time, version);
 *   - buyers: hold one free seat, then GET …/availability?minVersion=<the hold's version> and
 *     check the answer is at least that version and shows the seat held; release it; repeat.
 *     Hold and release answers are recorded as truth too.
 *
 * Staleness of a viewer's read at time t that showed version v: t - T(v+1), where T(x) is the
 * first moment any truth observation showed a version >= x (0 when no newer version had been
 * seen by then). It is a lower bound of the real staleness at the resolution of the truth
 * clients, and exactly what a viewer would notice. Prints:
 *   mapcheck viewer_reads=… staleness_max_ms=… staleness_p99_ms=… staleness_p50_ms=…
 *            reads=… latency_p50_ms=… latency_p99_ms=… latency_max_ms=… (the viewer's reads,
 *            each on a new connection: connect to last byte)
 *   mapcheck anchor reads=… latency_p50_ms=… … (with --anchor-path: the same paced reads of a
 *            path nginx answers by itself, e.g. /bench/static: the machine's own tail)
 *   mapcheck min_version_reads=… older=… missing_seat=… buyer_holds=…
 * and exits 1 when a ?minVersion= read was older than its version or missed the seat.
 *
 * Usage: SEATD_JWT_SECRET=… seatd_mapcheck --port P --show ID --duration S [--buyers 2]
 *        [--anchor-path /bench/static]
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "http_client.h"
#include "base/mem.h"

#define MAX_OBS (1 << 20) /* observations per kind */

typedef struct {
    int64_t t_us;
    long long version;
    int64_t took_us; /* the request, connect to last byte */
} obs_t;

typedef struct {
    obs_t truth[MAX_OBS];
    obs_t viewer[MAX_OBS];
    obs_t anchor[MAX_OBS]; /* --anchor-path reads: only their latency counts */
    long long ntruth, nviewer, nanchor;
    long long minv_reads, minv_older, minv_missing, buyer_holds, errors;
    int stop;
} shared_t;

static shared_t *SH;
static int PORT;
static char SHOW[32];
static const char *SECRET;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void record(obs_t *arr, long long *n, long long version, int64_t took_us)
{
    long long k = __sync_fetch_and_add(n, 1);
    if (k < MAX_OBS)
        arr[k] = (obs_t){now_us(), version, took_us};
}

/* GET 'path' through nginx; the JSON body (owned, cJSON_Delete) of a 200, else NULL. */
static cJSON *get_json(const char *path, const char *headers, int *status)
{
    seatd_test_http_response_t r;
    *status = 0;
    if (seatd_test_http_request("127.0.0.1", PORT, "GET", path, headers, NULL, 0, &r) < 0)
        return NULL;
    *status = r.status;
    cJSON *j = r.status == 200 ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
    seatd_test_http_response_free(&r);
    return j;
}

static long long num(const cJSON *j, const char *name)
{
    return (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, name));
}

/* The anchor viewer: GET 'path' (nginx answering by itself) at the viewer's pace, so the
 * viewer's latency has a same-moment comparison on the same machine. */
static void anchor_loop(const char *path, int pause_us)
{
    while (!SH->stop) {
        seatd_test_http_response_t r;
        int64_t t0 = now_us();
        int rc = seatd_test_http_request("127.0.0.1", PORT, "GET", path, NULL, NULL, 0, &r);
        int64_t took = now_us() - t0;
        if (rc < 0 || r.status != 200)
            __sync_fetch_and_add(&SH->errors, 1);
        else
            record(SH->anchor, &SH->nanchor, 0, took);
        if (rc >= 0)
            seatd_test_http_response_free(&r);
        usleep(pause_us);
    }
}

static void availability_loop(int truth, int pause_us)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/shows/%s/availability%s", SHOW, truth ? "?minVersion=1" : "");
    while (!SH->stop) {
        int st;
        int64_t t0 = now_us();
        cJSON *j = get_json(path, NULL, &st);
        int64_t took = now_us() - t0;
        if (j == NULL)
            __sync_fetch_and_add(&SH->errors, 1);
        else if (truth)
            record(SH->truth, &SH->ntruth, num(j, "version"), took);
        else
            record(SH->viewer, &SH->nviewer, num(j, "version"), took);
        cJSON_Delete(j);
        usleep(pause_us);
    }
}

/* 1 when bit 'i' of base64 bitmap 'b64' is set. */
static int bit_set(const char *b64, long i)
{
    size_t n = strlen(b64);
    unsigned char *bytes = malloc(n / 4 * 3 + 1);
    int len = EVP_DecodeBlock(bytes, (const unsigned char *)b64, (int)n);
    int set = len > 0 && i / 8 < len && (bytes[i / 8] >> (7 - i % 8)) & 1;
    free(bytes);
    return set;
}

static void buyer_loop(int id, char **seat_ids, long nseats)
{
    seatd_auth_t *auth = NULL;
    if (seatd_auth_new(SECRET, strlen(SECRET), &auth) < 0)
        _exit(2);
    unsigned seed = (unsigned)(now_us() ^ (id * 7919));
    for (long n = 0; !SH->stop; n++) {
        char sub[48], *tok = NULL, hdr[4300], path[160], body[96];
        snprintf(sub, sizeof(sub), "mapcheck-%d-%ld", id, n); /* fresh user: no per-user cap */
        if (seatd_auth_sign(auth, sub, 0, 600, &tok) < 0)
            _exit(2);
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\nContent-Type: application/json\r\n",
                 tok);
        free(tok);
        long seat = (long)(rand_r(&seed) % (unsigned)nseats);
        snprintf(path, sizeof(path), "/v1/shows/%s/holds", SHOW);
        snprintf(body, sizeof(body), "{\"seatIds\":[\"%s\"]}", seat_ids[seat]);
        seatd_test_http_response_t r;
        if (seatd_test_http_request("127.0.0.1", PORT, "POST", path, hdr, body, strlen(body), &r) <
            0) {
            __sync_fetch_and_add(&SH->errors, 1);
            continue;
        }
        cJSON *j = r.status == 201 ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
        seatd_test_http_response_free(&r);
        if (j == NULL) /* taken (409), rate limited, …: another seat */
            continue;
        __sync_fetch_and_add(&SH->buyer_holds, 1);
        long long v = num(j, "version");
        char hold_id[80];
        snprintf(hold_id, sizeof(hold_id), "%s",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "holdId")));
        cJSON_Delete(j);
        record(SH->truth, &SH->ntruth, v, 0);

        snprintf(path, sizeof(path), "/v1/shows/%s/availability?minVersion=%lld", SHOW, v);
        int st;
        cJSON *a = get_json(path, NULL, &st);
        __sync_fetch_and_add(&SH->minv_reads, 1);
        if (a == NULL) {
            __sync_fetch_and_add(&SH->errors, 1);
        } else {
            if (num(a, "version") < v)
                __sync_fetch_and_add(&SH->minv_older, 1);
            if (!bit_set(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "held")), seat))
                __sync_fetch_and_add(&SH->minv_missing, 1);
        }
        cJSON_Delete(a);

        snprintf(path, sizeof(path), "/v1/holds/%s", hold_id);
        if (seatd_test_http_request("127.0.0.1", PORT, "DELETE", path, hdr, NULL, 0, &r) == 0) {
            cJSON *d = r.status == 200 ? cJSON_ParseWithLength(r.body, r.body_len) : NULL;
            if (d)
                record(SH->truth, &SH->ntruth, num(d, "version"), 0);
            cJSON_Delete(d);
            seatd_test_http_response_free(&r);
        }
        usleep(2000);
    }
    seatd_auth_free(auth);
}

static int cmp_obs(const void *a, const void *b)
{
    const obs_t *x = a, *y = b;
    return x->t_us < y->t_us ? -1 : x->t_us > y->t_us;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Prints "<label>=n latency_p50_ms=… latency_p99_ms=… latency_max_ms=…" of 'n' observations. */
static void print_latency(const char *label, const obs_t *obs, long long n)
{
    int64_t *took = malloc((size_t)(n + 1) * sizeof(int64_t));
    for (long long i = 0; i < n; i++)
        took[i] = obs[i].took_us;
    qsort(took, (size_t)n, sizeof(int64_t), cmp_i64);
    printf(" %s=%lld latency_p50_ms=%.2f latency_p99_ms=%.2f latency_max_ms=%.2f", label, n,
           n ? took[n / 2] / 1000.0 : 0.0, n ? took[(long long)(n * 0.99)] / 1000.0 : 0.0,
           n ? took[n - 1] / 1000.0 : 0.0);
    free(took);
}

int main(int argc, char **argv)
{
    int duration = 10, buyers = 2;
    const char *anchor_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            PORT = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--show"))
            snprintf(SHOW, sizeof(SHOW), "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--duration"))
            duration = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--buyers"))
            buyers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--anchor-path"))
            anchor_path = argv[i + 1];
    }
    SECRET = getenv("SEATD_JWT_SECRET");
    if (PORT <= 0 || !SHOW[0] || !SECRET || duration <= 0 || buyers < 1 || buyers > 16) {
        fprintf(stderr,
                "usage: SEATD_JWT_SECRET=… %s --port P --show ID --duration S "
                "[--buyers N] [--anchor-path /bench/static]\n",
                argv[0]);
        return 2;
    }
    seatd_mem_init();

    /* The seat ids by index, from the layout. */
    char path[96];
    snprintf(path, sizeof(path), "/v1/shows/%s/layout", SHOW);
    int st;
    cJSON *layout = get_json(path, NULL, &st);
    const cJSON *seats = cJSON_GetObjectItemCaseSensitive(layout, "seats");
    long nseats = cJSON_GetArraySize(seats);
    if (nseats <= 0) {
        fprintf(stderr, "mapcheck: no layout for show %s (%d)\n", SHOW, st);
        return 2;
    }
    char **ids = calloc((size_t)nseats, sizeof(char *));
    for (long i = 0; i < nseats; i++)
        ids[i] = strdup(cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(seats, (int)i), "id")));
    cJSON_Delete(layout);

    SH = mmap(NULL, sizeof(*SH), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (SH == MAP_FAILED)
        return 1;
    int nprocs = 2 + buyers + (anchor_path != NULL);
    pid_t *pids = calloc((size_t)nprocs, sizeof(pid_t));
    for (int p = 0; p < nprocs; p++) {
        fflush(NULL);
        if ((pids[p] = fork()) == 0) {
            if (p == 0)
                availability_loop(1, 2000);
            else if (p == 1)
                availability_loop(0, 5000);
            else if (p == 2 + buyers)
                anchor_loop(anchor_path, 5000);
            else
                buyer_loop(p, ids, nseats);
            _exit(0);
        }
    }
    sleep((unsigned)duration);
    SH->stop = 1;
    for (int p = 0; p < nprocs; p++)
        waitpid(pids[p], NULL, 0);

    /* T(x): the first moment a version >= x was observed, from the truth sorted by time. */
    long long nt = SH->ntruth < MAX_OBS ? SH->ntruth : MAX_OBS;
    long long nv = SH->nviewer < MAX_OBS ? SH->nviewer : MAX_OBS;
    qsort(SH->truth, (size_t)nt, sizeof(obs_t), cmp_obs);
    long long maxv = 0;
    for (long long i = 0; i < nt; i++)
        if (SH->truth[i].version > maxv)
            maxv = SH->truth[i].version;
    int64_t *first = malloc((size_t)(maxv + 2) * sizeof(int64_t));
    for (long long x = 0; x <= maxv + 1; x++)
        first[x] = INT64_MAX;
    long long run = -1;
    for (long long i = 0; i < nt; i++) {
        for (long long x = run + 1; x <= SH->truth[i].version; x++)
            first[x] = SH->truth[i].t_us;
        if (SH->truth[i].version > run)
            run = SH->truth[i].version;
    }
    int64_t *stale = malloc((size_t)(nv + 1) * sizeof(int64_t));
    for (long long i = 0; i < nv; i++) {
        long long v = SH->viewer[i].version;
        int64_t t = SH->viewer[i].t_us;
        int64_t newer = v + 1 <= maxv ? first[v + 1] : INT64_MAX;
        stale[i] = newer < t ? t - newer : 0;
    }
    qsort(stale, (size_t)nv, sizeof(int64_t), cmp_i64);
    printf("mapcheck viewer_reads=%lld truth_reads=%lld staleness_max_ms=%.1f "
           "staleness_p99_ms=%.1f staleness_p50_ms=%.1f",
           nv, nt, nv ? stale[nv - 1] / 1000.0 : 0.0,
           nv ? stale[(long long)(nv * 0.99)] / 1000.0 : 0.0, nv ? stale[nv / 2] / 1000.0 : 0.0);
    /* The paced viewer's own latency: what one viewer waits while the others load the stack
     * (wrk's p99 beside it is a saturated closed loop's queue). */
    print_latency("reads", SH->viewer, nv);
    printf("\n");
    if (anchor_path) {
        printf("mapcheck anchor");
        print_latency("reads", SH->anchor, SH->nanchor < MAX_OBS ? SH->nanchor : MAX_OBS);
        printf("\n");
    }
    printf("mapcheck min_version_reads=%lld older=%lld missing_seat=%lld buyer_holds=%lld "
           "errors=%lld\n",
           SH->minv_reads, SH->minv_older, SH->minv_missing, SH->buyer_holds, SH->errors);
    free(first);
    free(stale);
    for (long i = 0; i < nseats; i++)
        free(ids[i]);
    free(ids);
    free(pids);
    return SH->minv_older == 0 && SH->minv_missing == 0 && SH->minv_reads > 0 ? 0 : 1;
}
