/*
 * fuzz_json_body.c - libFuzzer harness for request-body JSON (json.h), seat layouts
 * (layout.h) and seat-set normalisation (seats.h).
 *
 * The input is a request body. It goes through:
 *   1. seatd_json_parse(); anything accepted must print and re-parse;
 *   2. seatd_layout_from_json() on its "seats" member (or on itself when it is an array),
 *      with and without its "priceTiers"; an accepted layout must index every seat, print as
 *      the canonical document and parse back into the same layout;
 *   3. seatd_seats_normalise() on the seat ids found in "seatIds" (or in the seats' "id"s),
 *      against no layout and against the layout of step 2; success must mean a strictly
 *      sorted set of valid ids, all in the layout;
 *   4. a real POST request carrying the body (built with the request parser), through
 *      seatd_json_parse_body_or_reply() and the typed getters the handlers use: each either
 *      succeeds or answers the request exactly once.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/mem.h"
#include "domain/seats.h"
#include "base/timefmt.h"
#include "fuzz_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    seatd_mem_init();
    return 0;
}

/* cJSON 1.7.15 prints a double with 15 significant digits whenever that reads back within
 * its epsilon, so a coordinate like 9007199254740993 comes back a few units off: positions
 * are compared with a relative tolerance, everything else exactly. */
static int near(double a, double b)
{
    return a == b || fabs(a - b) <= 4 * DBL_EPSILON * fmax(fabs(a), fabs(b));
}

static int seat_eq(const seatd_layout_seat_t *a, const seatd_layout_seat_t *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->row, b->row) == 0 && a->number == b->number &&
           strcmp(a->tier, b->tier) == 0 && near(a->x, b->x) && near(a->y, b->y);
}

/* Step 2. Returns the layout parsed without tiers (owned) or NULL. */
static seatd_layout_t *layouts(const cJSON *root)
{
    const cJSON *seats =
        cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "seats");
    const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(root, "priceTiers");
    char why[160];
    seatd_layout_t *lt = NULL, *l = NULL;

    /* With the price tiers (when given): tier names must be known. */
    if (tiers) {
        why[0] = 'x';
        int rc = seatd_layout_from_json(seats, tiers, &lt, why, sizeof(why));
        CHECK((rc == 0) == (lt != NULL));
        CHECK(rc == 0 || why[0] != '\0'); /* a reason on every failure */
        /* Bookings price a seat by its exact tier name: every tier must be one. */
        for (size_t i = 0; i < seatd_layout_count(lt); i++)
            CHECK(cJSON_GetObjectItemCaseSensitive(tiers, seatd_layout_seat(lt, i)->tier) != NULL);
        seatd_layout_free(lt);
    }
    /* A small 'why' buffer must truncate, never overflow. */
    char tiny[5];
    int rc = seatd_layout_from_json(seats, NULL, &l, tiny, sizeof(tiny));
    CHECK(rc == 0 || rc == SEATD_EINVAL || rc == SEATD_EBADSEAT || rc == SEATD_EDUPSEAT ||
          rc == SEATD_EEMPTY || rc == SEATD_ETOOMANY);
    if (rc != 0) {
        CHECK(l == NULL && strlen(tiny) < sizeof(tiny));
        return NULL;
    }
    size_t n = seatd_layout_count(l);
    CHECK(n >= 1 && n <= SEATD_LAYOUT_MAX_SEATS && n == (size_t)cJSON_GetArraySize(seats));
    for (size_t i = 0; i < n; i++) {
        const seatd_layout_seat_t *s = seatd_layout_seat(l, i);
        CHECK(s != NULL && seatd_keys_valid_seat_id(s->id));
        CHECK(seatd_layout_find(l, s->id) == (long)i);
        CHECK(s->row[0] != '\0' && s->tier[0] != '\0' && s->number >= 0);
    }
    CHECK(seatd_layout_seat(l, n) == NULL);
    CHECK(seatd_layout_find(l, "") == -1 && seatd_layout_find(l, NULL) == -1);

    /* The canonical document parses back into the same layout. */
    char *text = seatd_layout_to_json(l, "42");
    CHECK(text != NULL);
    cJSON *doc = NULL;
    CHECK(seatd_json_parse(text, strlen(text), &doc) == 0);
    seatd_layout_t *l2 = NULL;
    rc = seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l2, why,
                                sizeof(why));
    if (rc != 0) {
        fprintf(stderr, "canonical layout rejected (%s): %s\n", why, text);
        abort();
    }
    CHECK(seatd_layout_count(l2) == n);
    for (size_t i = 0; i < n; i++)
        CHECK(seat_eq(seatd_layout_seat(l, i), seatd_layout_seat(l2, i)));
    /* Workers cache parsed layouts per show: keep this one under a show id taken from the
     * text, so the bounded cache fills, evicts and replaces. */
    char show[24];
    snprintf(show, sizeof(show), "%u",
             1u + (unsigned)(strlen(text) * 31u + (unsigned char)text[20]) % 97u);
    seatd_layout_cache_put(show, l2);
    CHECK(seatd_layout_cache_get(show) == l2);
    CHECK(seatd_layout_cache_get("0") == NULL);
    cJSON_Delete(doc);
    free(text);
    return l;
}

/* Step 3 for one id array. */
static void normalise(const char *const *ids, size_t n, const seatd_layout_t *l)
{
    const char **out = calloc(n ? n : 1, sizeof(*out));
    for (int pass = 0; pass < 2; pass++) {
        const seatd_layout_t *with = pass ? l : NULL;
        if (pass && l == NULL)
            break;
        const char *bad = (const char *)1;
        size_t max = pass ? 0 : 8;
        int rc = seatd_seats_normalise(ids, n, max, with, out, &bad);
        if (rc == 0) {
            CHECK(bad == NULL && n >= 1 && (max == 0 || n <= max));
            for (size_t i = 0; i < n; i++) {
                CHECK(seatd_keys_valid_seat_id(out[i]));
                if (i)
                    CHECK(strcmp(out[i - 1], out[i]) < 0);
                if (with)
                    CHECK(seatd_layout_find(with, out[i]) >= 0);
            }
        } else if (rc == SEATD_EEMPTY) {
            CHECK(n == 0 && bad == NULL);
        } else if (rc == SEATD_ETOOMANY) {
            CHECK(max && n > max && bad == NULL);
        } else {
            CHECK(rc == SEATD_EBADSEAT || rc == SEATD_EDUPSEAT || rc == SEATD_EUNKNOWNSEAT);
            int found = 0; /* 'bad' points at one of the caller's ids */
            for (size_t i = 0; i < n; i++)
                found |= bad == ids[i];
            CHECK(found);
            if (rc == SEATD_EBADSEAT)
                CHECK(!seatd_keys_valid_seat_id(bad));
            if (rc == SEATD_EUNKNOWNSEAT)
                CHECK(with && seatd_layout_find(with, bad) < 0);
        }
    }
    free(out);
}

static void seat_sets(const cJSON *root, const seatd_layout_t *l)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "seatIds");
    int by_id = 0;
    if (!cJSON_IsArray(arr)) {
        arr = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "seats");
        by_id = 1;
    }
    if (!cJSON_IsArray(arr))
        return;
    size_t n = (size_t)cJSON_GetArraySize(arr), k = 0;
    const char **ids = calloc(n ? n : 1, sizeof(*ids));
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *s =
            by_id && cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "id") : it;
        if (cJSON_IsString(s) && s->valuestring)
            ids[k++] = s->valuestring;
    }
    normalise(ids, k, l);
    free(ids);
}

/* Step 4: the handlers' path, on a real request. */
static void on_finish(seatd_req_t *r, void *data)
{
    int *calls = data;
    (*calls)++;
}

/* The handlers' reading of a body: POST /v1/shows when it has "seats", else a hold. Returns
 * 0 when every field was acceptable, or -1 once the request has been answered. */
static int handle(seatd_req_t *r, cJSON **body, const char ***arr, size_t *n, long long *v)
{
    const char *s = NULL;
    int64_t ms;
    if (seatd_json_parse_body_or_reply(r, body) < 0)
        return -1;
    CHECK(cJSON_IsObject(*body));
    if (cJSON_GetObjectItemCaseSensitive(*body, "seats") != NULL) {
        if (seatd_json_get_string_or_reply(r, *body, "title", 200, 1, &s) < 0 ||
            seatd_json_get_string_or_reply(r, *body, "startsAt", 40, 1, &s) < 0 ||
            seatd_json_get_int_or_reply(r, *body, "holdTtlSeconds", 1, 86400, 0, v) < 0)
            return -1;
        CHECK(s != NULL && strlen(s) >= 1 && strlen(s) <= 40);
        if (seatd_time_parse(s, &ms) < 0) {
            seatd_req_finish_problem(r, SEATD_EINVAL, "'startsAt' must be RFC 3339", NULL);
            return -1;
        }
        return 0;
    }
    if (seatd_json_get_string_array_or_reply(r, *body, "seatIds", 1000, 64, arr, n) < 0 ||
        seatd_json_get_string_or_reply(r, *body, "idempotencyKey", 200, 0, &s) < 0 ||
        seatd_json_get_int_or_reply(r, *body, "number", -5, 5, 0, v) < 0)
        return -1;
    CHECK(*n <= 1000 && *arr != NULL);
    for (size_t i = 0; i < *n; i++)
        CHECK((*arr)[i] != NULL && strlen((*arr)[i]) >= 1 && strlen((*arr)[i]) <= 64);
    CHECK(s == NULL || (strlen(s) >= 1 && strlen(s) <= 200));
    return 0;
}

static void via_request(const uint8_t *data, size_t size)
{
    seatd_buf_t raw = SEATD_BUF_INIT;
    seatd_buf_printf(&raw,
                     "POST /v1/shows/42/holds HTTP/1.1\r\nHost: x\r\n"
                     "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                     size % 7 == 3 ? "text/plain" : "application/json; charset=utf-8", size);
    seatd_buf_append(&raw, data, size);
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    size_t consumed = 0;
    seatd_req_t *r = NULL;
    int rc = seatd_req_parser_feed(p, raw.data, raw.len, &consumed, &r);
    seatd_buf_free(&raw);
    if (rc != 0 || r == NULL) { /* too large a body for the default limit */
        CHECK(size > SEATD_REQ_MAX_BODY);
        seatd_req_parser_free(p);
        return;
    }
    int calls = 0;
    seatd__req_set_finish_cb(r, on_finish, &calls);
    cJSON *body = NULL;
    const char **arr = NULL;
    size_t n = 0;
    long long v = 7;
    if (handle(r, &body, &arr, &n, &v) < 0) {
        CHECK(calls == 1); /* answered exactly once */
        CHECK(seatd__req_status(r) >= 400 && seatd__req_status(r) < 500);
    } else {
        CHECK(calls == 0);
        CHECK(v == 7 || (v >= -5 && v <= 86400));
        seatd_req_finish(r, 201, NULL, NULL, 0);
        CHECK(calls == 1);
    }
    free(arr);
    cJSON_Delete(body);
    CHECK(seatd_req_is_finished(r));
    seatd_req_free(r);
    seatd_req_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = NULL;
    int rc = seatd_json_parse((const char *)data, size, &root);
    CHECK(rc == 0 || rc == SEATD_EBADJSON);
    CHECK((rc == 0) == (root != NULL));
    if (rc == 0) {
        CHECK(memchr(data, '\0', size) == NULL);
        /* What we accepted prints and re-parses (nothing beyond the depth limit, no NUL). */
        char *text = cJSON_PrintUnformatted(root);
        CHECK(text != NULL);
        cJSON *again = NULL;
        if (seatd_json_parse(text, strlen(text), &again) != 0) {
            fprintf(stderr, "printed form rejected: %s\n", text);
            abort();
        }
        cJSON_Delete(again);
        free(text);

        seatd_layout_t *l = layouts(root);
        seat_sets(root, l);
        seatd_layout_free(l);
        cJSON_Delete(root);
    }
    via_request(data, size);
    return 0;
}
