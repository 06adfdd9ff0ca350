/*
 * payment.c - the card gateway client on libcurl's multi interface, driven by libuv; see
 * payment.h. This file holds the calls (charge, lookup, list, refund), the grammar their
 * arguments are checked against before anything is sent, creation and the asynchronous close;
 * the transfers are payment_http.c's, the answers payment_decode.c's (payment_internal.h).
 */
#include "clients/payment_internal.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/log.h"
#include "base/mem.h"

#define PAY_URL_MAX 512           /* longest base URL we accept */
#define PAY_META_MAX 8            /* metadata entries on one charge */
#define PAY_MAX_TIMEOUT_MS 600000 /* longest per-request timeout */

/* ---------------------------------------------------------------------------------------- */
/* Input grammar                                                                            */
/* ---------------------------------------------------------------------------------------- */

/* 1 when 's' is a word of 1 to cap - 1 characters, each a lower-case letter, a digit, one of
 * 'punct' or (when 'upper') an upper-case letter. */
static int valid_word(const char *s, size_t cap, int upper, const char *punct)
{
    if (s == NULL)
        return 0;
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 (upper && c >= 'A' && c <= 'Z') || strchr(punct, c) != NULL;
        if (!ok || n >= cap - 1)
            return 0;
    }
    return n > 0;
}

static int valid_idem_key(const char *s)
{
    return valid_word(s, SEATD_PAY_KEY_MAX, 1, "_.:-");
}

static int valid_source(const char *s)
{
    return valid_word(s, SEATD_PAY_SOURCE_MAX, 0, "_");
}

static int valid_currency(const char *s)
{
    if (s == NULL || strlen(s) != 3)
        return 0;
    for (int i = 0; i < 3; i++)
        if (s[i] < 'A' || s[i] > 'Z')
            return 0;
    return 1;
}

static int valid_charge_id(const char *s)
{
    if (s == NULL || strncmp(s, "ch_", 3) != 0)
        return 0;
    size_t n = 0;
    for (const char *q = s + 3; *q; q++, n++) {
        char c = *q;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!ok || n >= 60)
            return 0;
    }
    return n > 0;
}

static int valid_text(const char *s)
{
    return s == NULL || strlen(s) <= SEATD_PAY_TEXT_MAX;
}

/* ---------------------------------------------------------------------------------------- */
/* Public API                                                                               */
/* ---------------------------------------------------------------------------------------- */

seatd_payment_t *seatd_payment_new(struct uv_loop_s *loop, const char *base_url, int timeout_ms)
{
    if (loop == NULL || base_url == NULL || timeout_ms < 1 || timeout_ms > PAY_MAX_TIMEOUT_MS)
        return NULL;
    size_t n = strlen(base_url);
    if (n == 0 || n >= PAY_URL_MAX ||
        (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return NULL;

    seatd_payment_t *p = seatd_calloc(1, sizeof(*p));
    p->loop = loop;
    p->timeout_ms = timeout_ms;
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    p->base_url = seatd_strndup(base_url, n);
    p->multi = curl_multi_init();
    if (p->multi == NULL)
        goto fail;
    if (curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, payment__on_curl_socket) != CURLM_OK ||
        curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, (void *)p) != CURLM_OK ||
        curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, payment__on_curl_timer) != CURLM_OK ||
        curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, (void *)p) != CURLM_OK)
        goto fail;
    if (uv_timer_init(loop, &p->timer) != 0)
        goto fail;
    p->timer.data = p;
    p->handles = 1;
    return p;

fail:
    if (p->multi)
        curl_multi_cleanup(p->multi);
    free(p->base_url);
    free(p);
    curl_global_cleanup();
    return NULL;
}

int seatd_payment_charge(seatd_payment_t *p, const char *idem_key, long long amount,
                         const char *currency, const char *source, const char *description,
                         seatd_payment_cb cb, void *data)
{
    return seatd_payment_charge_ex(p, idem_key, amount, currency, source, description, NULL, cb,
                                   data);
}

/* 1 if 'meta' is NULL or name/value pairs ending in NULL, at most PAY_META_MAX of them, names
 * of letters only and values of valid text. */
static int valid_meta(const char *const *meta)
{
    size_t n = 0;
    for (; meta && meta[n]; n += 2) {
        if (n / 2 >= PAY_META_MAX || meta[n + 1] == NULL || !valid_text(meta[n + 1]) ||
            meta[n][0] == '\0' || strcmp(meta[n], "idempotencyKey") == 0)
            return 0;
        for (const char *c = meta[n]; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
                return 0;
    }
    return 1;
}

/* Starts a request of 'kind' that POSTs 'root' (taken and freed here) to 'path'. */
static int post_json(seatd_payment_t *p, int kind, const char *idem_key, const char *path,
                     cJSON *root, seatd_payment_cb cb, void *data)
{
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (json == NULL)
        return SEATD_EINTERNAL;
    int rc = payment__req_start(p, kind, idem_key, path, json, cb, data);
    free(json);
    return rc;
}

int seatd_payment_charge_ex(seatd_payment_t *p, const char *idem_key, long long amount,
                            const char *currency, const char *source, const char *description,
                            const char *const *meta_pairs, seatd_payment_cb cb, void *data)
{
    if (p == NULL || cb == NULL || !valid_idem_key(idem_key) || amount < 1 ||
        amount > SEATD_PAY_AMOUNT_MAX || !valid_currency(currency) || !valid_source(source) ||
        !valid_text(description) || !valid_meta(meta_pairs))
        return SEATD_EINVAL;

    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "amount", cJSON_CreateNumber((double)amount));
    cJSON_AddItemToObject(root, "currency", cJSON_CreateString(currency));
    cJSON_AddItemToObject(root, "source", cJSON_CreateString(source));
    if (description)
        cJSON_AddItemToObject(root, "description", cJSON_CreateString(description));
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "metadata", meta);
    cJSON_AddItemToObject(meta, "idempotencyKey", cJSON_CreateString(idem_key));
    for (size_t i = 0; meta_pairs && meta_pairs[i]; i += 2)
        cJSON_AddItemToObject(meta, meta_pairs[i], cJSON_CreateString(meta_pairs[i + 1]));
    return post_json(p, PAY_CHARGE, idem_key, "/v1/charges", root, cb, data);
}

int seatd_payment_lookup(seatd_payment_t *p, const char *idem_key, seatd_payment_cb cb, void *data)
{
    if (p == NULL || cb == NULL || !valid_idem_key(idem_key))
        return SEATD_EINVAL;
    char path[64 + SEATD_PAY_KEY_MAX];
    /* The key grammar needs no percent-encoding in a query string. */
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", idem_key);
    return payment__req_start(p, PAY_LOOKUP, idem_key, path, NULL, cb, data);
}

int seatd_payment_list(seatd_payment_t *p, const char *starting_after, int limit,
                       seatd_payment_cb cb, void *data)
{
    if (p == NULL || cb == NULL || limit < 1 || limit > SEATD_PAY_LIST_MAX ||
        (starting_after && starting_after[0] && !valid_charge_id(starting_after)))
        return SEATD_EINVAL;
    char path[128];
    /* A charge id needs no percent-encoding in a query string. */
    snprintf(path, sizeof(path), "/v1/charges?limit=%d%s%s", limit,
             starting_after && starting_after[0] ? "&startingAfter=" : "",
             starting_after ? starting_after : "");
    return payment__req_start(p, PAY_LIST,
                              starting_after && starting_after[0] ? starting_after : "-", path,
                              NULL, cb, data);
}

int seatd_payment_refund(seatd_payment_t *p, const char *idem_key, const char *charge_id,
                         long long amount, const char *reason, seatd_payment_cb cb, void *data)
{
    if (p == NULL || cb == NULL || !valid_idem_key(idem_key) || !valid_charge_id(charge_id) ||
        amount < 0 || amount > SEATD_PAY_AMOUNT_MAX || !valid_text(reason))
        return SEATD_EINVAL;

    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "charge", cJSON_CreateString(charge_id));
    if (amount > 0)
        cJSON_AddItemToObject(root, "amount", cJSON_CreateNumber((double)amount));
    if (reason)
        cJSON_AddItemToObject(root, "reason", cJSON_CreateString(reason));
    return post_json(p, PAY_REFUND, idem_key, "/v1/refunds", root, cb, data);
}

/* Runs once every uv handle is closed: fails the abandoned requests, then frees 'p'. */
void payment__maybe_free(seatd_payment_t *p)
{
    if (!p->closing || p->handles > 0)
        return;
    while (p->reqs) {
        pay_req_t *q = p->reqs;
        payment__req_unlink(p, q);
        seatd_payment_result_t res;
        memset(&res, 0, sizeof(res));
        res.outcome = SEATD_PAY_UNKNOWN;
        snprintf(res.code, sizeof(res.code), "shutdown");
        payment__log_result(q, &res);
        seatd_payment_cb cb = q->cb;
        void *data = q->data;
        payment__req_free(q);
        cb(&res, data);
    }
    free(p->base_url);
    free(p);
    curl_global_cleanup();
}

int seatd_payment_inflight(const seatd_payment_t *p)
{
    return p ? p->nreqs : 0;
}

void seatd_payment_close(seatd_payment_t *p)
{
    if (p == NULL || p->closing)
        return;
    p->closing = 1;
    /* Stop watching first, so no poll handle outlives the socket curl is about to close. */
    while (p->socks)
        payment__sock_close(p, p->socks);
    uv_timer_stop(&p->timer);
    uv_close((uv_handle_t *)&p->timer, payment__on_handle_close);
    /* Abandon every transfer; the requests stay listed until their callbacks fire. */
    for (pay_req_t *q = p->reqs; q; q = q->next) {
        curl_multi_remove_handle(p->multi, q->easy);
        curl_easy_cleanup(q->easy);
        q->easy = NULL;
    }
    curl_multi_cleanup(p->multi);
    p->multi = NULL;
}
