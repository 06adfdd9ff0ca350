/*
 * payment_decode.c - the gateway's answers decoded into a result: a charge, a lookup by
 * idempotency key, a refund, a page of the ledger (the charges listed, their metadata read
 * with seatd_payment_charge_meta), and UNKNOWN whenever the answer does not say otherwise;
 * and the log line of each result. See payment_internal.h.
 */
#include "clients/payment_internal.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"

const char *payment__kind_names[] = {"charge", "lookup", "refund", "list"};

/* ---------------------------------------------------------------------------------------- */
/* Decoding answers                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Copies 's' into 'dst' ('cap' bytes), cutting it short if it does not fit. */
static void set_text(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void copy_str(char *dst, size_t cap, const cJSON *item)
{
    if (cJSON_IsString(item) && item->valuestring)
        set_text(dst, cap, item->valuestring);
}

static long long get_amount(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
        return 0;
    return (long long)v->valuedouble;
}

static int str_is(const cJSON *obj, const char *name, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) && v->valuestring && strcmp(v->valuestring, want) == 0;
}

/* The gateway's error code ({"error":{"code":…}}), or "http <status>". */
static void error_code(seatd_payment_result_t *res, const cJSON *root)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    copy_str(res->code, sizeof(res->code), cJSON_GetObjectItemCaseSensitive(err, "code"));
    if (res->code[0] == '\0')
        snprintf(res->code, sizeof(res->code), "http %d", res->http_status);
}

/* A charge or refund the gateway created or found with "status" "succeeded": APPROVED, with
 * the charge's id (in 'id_field') and the amount. Returns 0, touching nothing, otherwise. */
static int decode_succeeded(seatd_payment_result_t *res, const cJSON *root, const char *id_field)
{
    int st = res->http_status;
    if ((st != 200 && st != 201) || !str_is(root, "status", "succeeded"))
        return 0;
    res->outcome = SEATD_PAY_APPROVED;
    copy_str(res->charge_id, sizeof(res->charge_id),
             cJSON_GetObjectItemCaseSensitive(root, id_field));
    res->amount = get_amount(root, "amount");
    return 1;
}

static void decode_charge(seatd_payment_result_t *res, const cJSON *root)
{
    int st = res->http_status;
    if (decode_succeeded(res, root, "id")) {
        return;
    } else if (st == 402 || st == 400) {
        /* A decline, or a request the gateway refused: either way nothing was charged. */
        res->outcome = SEATD_PAY_DECLINED;
        error_code(res, root);
        copy_str(res->charge_id, sizeof(res->charge_id),
                 cJSON_GetObjectItemCaseSensitive(root, "chargeId"));
    } else {
        error_code(res, root);
    }
}

static void decode_lookup(seatd_payment_result_t *res, const cJSON *root)
{
    int st = res->http_status;
    if (st == 404) {
        res->outcome = SEATD_PAY_NOT_FOUND;
        error_code(res, root);
        return;
    }
    if (st != 200) {
        error_code(res, root);
        return;
    }
    copy_str(res->charge_id, sizeof(res->charge_id), cJSON_GetObjectItemCaseSensitive(root, "id"));
    res->amount = get_amount(root, "amount");
    res->refunded = get_amount(root, "amountRefunded");
    if (str_is(root, "status", "succeeded")) {
        res->outcome = SEATD_PAY_APPROVED;
    } else if (str_is(root, "status", "failed")) {
        res->outcome = SEATD_PAY_DECLINED;
        copy_str(res->code, sizeof(res->code),
                 cJSON_GetObjectItemCaseSensitive(root, "failureCode"));
    } else {
        snprintf(res->code, sizeof(res->code), "unexpected charge status");
    }
}

static void decode_refund(seatd_payment_result_t *res, const cJSON *root)
{
    int st = res->http_status;
    if (decode_succeeded(res, root, "charge")) {
        res->refunded = get_amount(root, "chargeAmountRefunded");
    } else if (st == 400) {
        res->outcome = SEATD_PAY_DECLINED;
        error_code(res, root);
    } else if (st == 404) {
        res->outcome = SEATD_PAY_NOT_FOUND;
        error_code(res, root);
    } else {
        error_code(res, root);
    }
}

/* A page of charges ({"data":[…],"hasMore":…}): APPROVED with res->page pointing into
 * 'page', whose strings are borrowed from 'root' (both live until the callback returns). */
static void decode_list(seatd_payment_result_t *res, const cJSON *root, seatd_payment_page_t *page)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (res->http_status != 200 || !cJSON_IsArray(data)) {
        if (res->http_status == 400)
            res->outcome = SEATD_PAY_DECLINED; /* an unknown cursor or limit */
        error_code(res, root);
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(data), k = 0;
    seatd_payment_charge_t *charges = seatd_calloc(n ? n : 1, sizeof(*charges));
    const cJSON *ch;
    cJSON_ArrayForEach(ch, data)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(ch, "id");
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(ch, "idempotencyKey");
        if (!cJSON_IsString(id) || !cJSON_IsString(key))
            continue; /* not a charge we can name: skipped, as the walk skips foreign keys */
        seatd_payment_charge_t *c = &charges[k++];
        c->id = id->valuestring;
        c->key = key->valuestring;
        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(ch, "currency");
        c->currency = cJSON_IsString(cur) && cur->valuestring ? cur->valuestring : "";
        c->succeeded = str_is(ch, "status", "succeeded");
        c->amount = get_amount(ch, "amount");
        c->refunded = get_amount(ch, "amountRefunded");
        c->created_ms = get_amount(ch, "createdMs");
        c->_meta = cJSON_GetObjectItemCaseSensitive(ch, "metadata");
    }
    page->charges = charges;
    page->n = k;
    page->has_more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "hasMore"));
    res->page = page;
    res->outcome = SEATD_PAY_APPROVED;
}

const char *seatd_payment_charge_meta(const seatd_payment_charge_t *c, const char *name)
{
    const cJSON *v = c ? cJSON_GetObjectItemCaseSensitive((const cJSON *)c->_meta, name) : NULL;
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

/* Turns a finished transfer into a result; UNKNOWN unless the answer says otherwise. A list's
 * page borrows from '*rootp' and 'page': the caller frees both after its callback. */
void payment__decode(pay_req_t *q, CURLcode cc, seatd_payment_result_t *res, cJSON **rootp,
                     seatd_payment_page_t *page)
{
    memset(res, 0, sizeof(*res));
    res->outcome = SEATD_PAY_UNKNOWN;
    long status = 0;
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK) {
        /* No (complete) answer: whatever the gateway did, we cannot know it from here. */
        res->http_status = (int)status;
        set_text(res->code, sizeof(res->code),
                 q->too_big ? "gateway answer too large"
                            : (q->errbuf[0] ? q->errbuf : curl_easy_strerror(cc)));
        return;
    }
    res->http_status = (int)status;
    cJSON *root = cJSON_ParseWithLength(q->body.data ? q->body.data : "", q->body.len);
    if (root == NULL && status < 500) {
        snprintf(res->code, sizeof(res->code), "unparseable gateway answer (http %ld)", status);
        return;
    }
    if (q->kind == PAY_CHARGE)
        decode_charge(res, root);
    else if (q->kind == PAY_LOOKUP)
        decode_lookup(res, root);
    else if (q->kind == PAY_LIST)
        decode_list(res, root, page);
    else
        decode_refund(res, root);
    *rootp = root;
}

void payment__log_result(const pay_req_t *q, const seatd_payment_result_t *res)
{
    static const char *outcomes[] = {"approved", "declined", "unknown", "not_found"};
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_json_escape(&b, res->code, strlen(res->code));
    seatd_log(res->outcome == SEATD_PAY_UNKNOWN ? SEATD_LOG_WARN : SEATD_LOG_DEBUG, NULL, "payment",
              "\"op\":\"%s\",\"key\":\"%s\",\"outcome\":\"%s\",\"status\":%d,"
              "\"code\":\"%s\"",
              payment__kind_names[q->kind], q->key, outcomes[res->outcome], res->http_status,
              b.data ? b.data : "");
    seatd_buf_free(&b);
}
