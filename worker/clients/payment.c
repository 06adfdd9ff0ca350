/*
 * payment.c - the card gateway client on libcurl's multi interface, driven by libuv; see
 * payment.h.
 *
 * curl tells us, via CURLMOPT_SOCKETFUNCTION, which sockets to watch for what, and, via
 * CURLMOPT_TIMERFUNCTION, when it next needs to be woken. Each watched socket gets a uv_poll_t
 * (pay_sock_t), and the wake-up is one uv_timer_t. Either one firing calls
 * curl_multi_socket_action(), and then check_multi_info() collects the finished transfers and
 * runs their callbacks.
 *
 * Lifetime: the struct owns the timer and one poll handle per socket, and counts them in
 * 'handles'. Close stops curl at once (every easy handle is removed, then the multi handle is
 * cleaned up), closes every uv handle, and in the last close callback fires the abandoned
 * requests' callbacks and frees the struct. User callbacks run only from check_multi_info()
 * and from that last close callback. check_multi_info() stops as soon as a callback has
 * closed the client, so nothing touches curl after close.
 */
#include "clients/payment.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define PAY_URL_MAX 512               /* longest base URL we accept */
#define PAY_MAX_RESPONSE (256 * 1024) /* a gateway answer larger than this is an error */
#define PAY_META_MAX 8                /* metadata entries on one charge */
#define PAY_MAX_TIMEOUT_MS 600000     /* longest per-request timeout */

enum pay_kind_e { PAY_CHARGE, PAY_LOOKUP, PAY_REFUND, PAY_LIST };

static const char *kind_names[] = {"charge", "lookup", "refund", "list"};

/* The counter of each kind x outcome (seatd_pay_outcome_e order) and the latency histogram
 * of each kind (metrics.h). */
static const int kind_outcome_metric[][4] = {
    {SEATD_METRIC_PAY_CHARGE_APPROVED, SEATD_METRIC_PAY_CHARGE_DECLINED,
     SEATD_METRIC_PAY_CHARGE_UNKNOWN, SEATD_METRIC_PAY_CHARGE_NOT_FOUND},
    {SEATD_METRIC_PAY_LOOKUP_APPROVED, SEATD_METRIC_PAY_LOOKUP_DECLINED,
     SEATD_METRIC_PAY_LOOKUP_UNKNOWN, SEATD_METRIC_PAY_LOOKUP_NOT_FOUND},
    {SEATD_METRIC_PAY_REFUND_APPROVED, SEATD_METRIC_PAY_REFUND_DECLINED,
     SEATD_METRIC_PAY_REFUND_UNKNOWN, SEATD_METRIC_PAY_REFUND_NOT_FOUND},
    {SEATD_METRIC_PAY_LIST_APPROVED, SEATD_METRIC_PAY_LIST_DECLINED, SEATD_METRIC_PAY_LIST_UNKNOWN,
     SEATD_METRIC_PAY_LIST_NOT_FOUND},
};
static const int kind_hist[] = {SEATD_HIST_PAY_CHARGE, SEATD_HIST_PAY_LOOKUP, SEATD_HIST_PAY_REFUND,
                                SEATD_HIST_PAY_LIST};

typedef struct pay_req_s pay_req_t;
typedef struct pay_sock_s pay_sock_t;

struct seatd_payment_s {
    uv_loop_t *loop;   /* borrowed; outlives the client */
    CURLM *multi;      /* owned; NULL once closing */
    uv_timer_t timer;  /* curl's wake-up timer */
    char *base_url;    /* owned, without a trailing '/' */
    long timeout_ms;   /* per-request CURLOPT_TIMEOUT_MS */
    int closing;       /* set by seatd_payment_close() */
    int handles;       /* uv handles not yet closed (timer + polls) */
    int nreqs;         /* requests in 'reqs' */
    pay_req_t *reqs;   /* in-flight requests, doubly linked */
    pay_sock_t *socks; /* watched sockets, doubly linked */
};

struct pay_sock_s {
    uv_poll_t poll;          /* watches 'fd' for curl; poll.data = this */
    curl_socket_t fd;        /* curl's socket */
    seatd_payment_t *p;      /* the owner */
    pay_sock_t *prev, *next; /* in p->socks */
};

struct pay_req_s {
    seatd_payment_t *p;           /* the owner */
    CURL *easy;                   /* owned; NULL once abandoned by close */
    struct curl_slist *headers;   /* owned request headers */
    int kind;                     /* pay_kind_e */
    int too_big;                  /* the answer exceeded PAY_MAX_RESPONSE */
    seatd_buf_t body;             /* the answer's body */
    seatd_payment_cb cb;          /* fires exactly once */
    void *data;                   /* the caller's, passed to 'cb' */
    char key[SEATD_PAY_KEY_MAX];  /* the idempotency key, for logs */
    char errbuf[CURL_ERROR_SIZE]; /* curl's error text */
    pay_req_t *prev, *next;       /* in p->reqs */
};

/* ---------------------------------------------------------------------------------------- */
/* Input grammar                                                                            */
/* ---------------------------------------------------------------------------------------- */

static int valid_idem_key(const char *s)
{
    if (s == NULL)
        return 0;
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == ':' || c == '-';
        if (!ok || n >= SEATD_PAY_KEY_MAX - 1)
            return 0;
    }
    return n > 0;
}

static int valid_source(const char *s)
{
    if (s == NULL)
        return 0;
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok || n >= SEATD_PAY_SOURCE_MAX - 1)
            return 0;
    }
    return n > 0;
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

static void decode_charge(seatd_payment_result_t *res, const cJSON *root)
{
    int st = res->http_status;
    if ((st == 200 || st == 201) && str_is(root, "status", "succeeded")) {
        res->outcome = SEATD_PAY_APPROVED;
        copy_str(res->charge_id, sizeof(res->charge_id),
                 cJSON_GetObjectItemCaseSensitive(root, "id"));
        res->amount = get_amount(root, "amount");
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
    if ((st == 200 || st == 201) && str_is(root, "status", "succeeded")) {
        res->outcome = SEATD_PAY_APPROVED;
        copy_str(res->charge_id, sizeof(res->charge_id),
                 cJSON_GetObjectItemCaseSensitive(root, "charge"));
        res->amount = get_amount(root, "amount");
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
static void decode(pay_req_t *q, CURLcode cc, seatd_payment_result_t *res, cJSON **rootp,
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

static void log_result(const pay_req_t *q, const seatd_payment_result_t *res)
{
    static const char *outcomes[] = {"approved", "declined", "unknown", "not_found"};
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_json_escape(&b, res->code, strlen(res->code));
    seatd_log(res->outcome == SEATD_PAY_UNKNOWN ? SEATD_LOG_WARN : SEATD_LOG_DEBUG, NULL, "payment",
              "\"op\":\"%s\",\"key\":\"%s\",\"outcome\":\"%s\",\"status\":%d,"
              "\"code\":\"%s\"",
              kind_names[q->kind], q->key, outcomes[res->outcome], res->http_status,
              b.data ? b.data : "");
    seatd_buf_free(&b);
}

/* ---------------------------------------------------------------------------------------- */
/* Requests                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static void req_unlink(seatd_payment_t *p, pay_req_t *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        p->reqs = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
    p->nreqs--;
}

/* Releases everything 'q' owns except what is already gone; 'q' must be unlinked. */
static void req_free(pay_req_t *q)
{
    if (q->easy)
        curl_easy_cleanup(q->easy);
    curl_slist_free_all(q->headers);
    seatd_buf_free(&q->body);
    free(q);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    pay_req_t *q = userdata;
    size_t len = size * nmemb;
    if (q->body.len + len > PAY_MAX_RESPONSE) {
        q->too_big = 1;
        return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
    }
    seatd_buf_append(&q->body, ptr, len);
    return len;
}

/*
 * Sets up and queues one request. 'path' and 'json' (NULL for a GET) are borrowed.
 * Returns 0 (queued; cb fires once) or a negative SEATD_E* (nothing queued).
 */
static int req_start(seatd_payment_t *p, int kind, const char *idem_key, const char *path,
                     const char *json, seatd_payment_cb cb, void *data)
{
    if (p->closing)
        return SEATD_ESHUTDOWN;
    if (p->nreqs >= SEATD_PAY_MAX_INFLIGHT)
        return SEATD_EOVERLOAD;

    pay_req_t *q = seatd_calloc(1, sizeof(*q));
    seatd_buf_t url = SEATD_BUF_INIT;
    seatd_buf_t hdr = SEATD_BUF_INIT;
    int rc = SEATD_EINTERNAL;
    q->p = p;
    q->kind = kind;
    q->cb = cb;
    q->data = data;
    snprintf(q->key, sizeof(q->key), "%s", idem_key);
    q->easy = curl_easy_init();
    if (q->easy == NULL)
        goto fail;

    seatd_buf_printf(&url, "%s%s", p->base_url, path);
    struct curl_slist *h = NULL;
    const char *fixed[] = {"Accept: application/json", "Content-Type: application/json", "Expect:"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        h = curl_slist_append(q->headers, fixed[i]);
        if (h == NULL)
            goto fail;
        q->headers = h;
    }
    if (json) {
        seatd_buf_printf(&hdr, "Idempotency-Key: %s", idem_key);
        h = curl_slist_append(q->headers, hdr.data);
        if (h == NULL)
            goto fail;
        q->headers = h;
    }

    CURL *e = q->easy;
    if (curl_easy_setopt(e, CURLOPT_URL, url.data) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)q) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->headers) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)q) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->errbuf) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, p->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, p->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_USERAGENT, "seatd") != CURLE_OK)
        goto fail;
    if (json && curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, json) != CURLE_OK)
        goto fail;
    /* Adding only arms curl's timer (at 0 ms): the transfer starts from the loop. */
    if (curl_multi_add_handle(p->multi, e) != CURLM_OK)
        goto fail;

    q->next = p->reqs;
    if (p->reqs)
        p->reqs->prev = q;
    p->reqs = q;
    p->nreqs++;
    seatd_buf_free(&url);
    seatd_buf_free(&hdr);
    return 0;

fail:
    seatd_log(SEATD_LOG_ERROR, NULL, "payment request setup failed", "\"op\":\"%s\"",
              kind_names[kind]);
    seatd_buf_free(&url);
    seatd_buf_free(&hdr);
    req_free(q);
    return rc;
}

/* Collects finished transfers and runs their callbacks; stops once a callback closed 'p'. */
static void check_multi_info(seatd_payment_t *p)
{
    CURLMsg *msg;
    int left;
    while (!p->closing && (msg = curl_multi_info_read(p->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode cc = msg->data.result; /* 'msg' is invalid after remove_handle */
        char *priv = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        pay_req_t *q = (pay_req_t *)priv;
        seatd_payment_result_t res;
        seatd_payment_page_t page = {0};
        cJSON *root = NULL;
        decode(q, cc, &res, &root, &page);
        log_result(q, &res);
        double secs = 0;
        if (curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &secs) != CURLE_OK)
            secs = 0;
        seatd_metrics_observe(kind_hist[q->kind], secs);
        seatd_metrics_inc(kind_outcome_metric[q->kind][res.outcome]);
        curl_multi_remove_handle(p->multi, e);
        req_unlink(p, q);
        seatd_payment_cb cb = q->cb;
        void *data = q->data;
        req_free(q);
        cb(&res, data);
        free((void *)page.charges);
        cJSON_Delete(root);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* curl <-> libuv glue                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void maybe_free(seatd_payment_t *p);

static void on_handle_close(uv_handle_t *h)
{
    seatd_payment_t *p;
    if (h->type == UV_POLL) {
        pay_sock_t *s = h->data;
        p = s->p;
        free(s);
    } else {
        p = h->data;
    }
    p->handles--;
    maybe_free(p);
}

static void sock_close(seatd_payment_t *p, pay_sock_t *s)
{
    uv_poll_stop(&s->poll);
    if (s->prev)
        s->prev->next = s->next;
    else
        p->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    uv_close((uv_handle_t *)&s->poll, on_handle_close);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    pay_sock_t *s = h->data;
    seatd_payment_t *p = s->p;
    if (p->closing)
        return;
    int flags = 0;
    if (status < 0) {
        flags = CURL_CSELECT_ERR;
    } else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    int running = 0;
    curl_multi_socket_action(p->multi, s->fd, flags, &running);
    check_multi_info(p);
}

static void on_timer(uv_timer_t *t)
{
    seatd_payment_t *p = t->data;
    if (p->closing)
        return;
    int running = 0;
    curl_multi_socket_action(p->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(p);
}

/* CURLMOPT_SOCKETFUNCTION: watch 'fd' for 'what', or stop watching it. */
static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    seatd_payment_t *p = userp;
    pay_sock_t *s = socketp;
    if (p->closing)
        return 0; /* close() has closed every poll handle itself */
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(p->multi, fd, NULL);
            sock_close(p, s);
        }
        return 0;
    }
    if (s == NULL) {
        s = seatd_calloc(1, sizeof(*s));
        if (uv_poll_init_socket(p->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        s->fd = fd;
        s->p = p;
        s->next = p->socks;
        if (p->socks)
            p->socks->prev = s;
        p->socks = s;
        p->handles++;
        curl_multi_assign(p->multi, fd, s);
    }
    int events = 0;
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

/* CURLMOPT_TIMERFUNCTION: curl wants a wake-up in 'timeout_ms' (-1: none). */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    seatd_payment_t *p = userp;
    if (p->closing)
        return 0;
    if (timeout_ms < 0)
        uv_timer_stop(&p->timer);
    else
        uv_timer_start(&p->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
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
    if (curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket) != CURLM_OK ||
        curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, (void *)p) != CURLM_OK ||
        curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
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
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (json == NULL)
        return SEATD_EINTERNAL;
    int rc = req_start(p, PAY_CHARGE, idem_key, "/v1/charges", json, cb, data);
    free(json);
    return rc;
}

int seatd_payment_lookup(seatd_payment_t *p, const char *idem_key, seatd_payment_cb cb, void *data)
{
    if (p == NULL || cb == NULL || !valid_idem_key(idem_key))
        return SEATD_EINVAL;
    char path[64 + SEATD_PAY_KEY_MAX];
    /* The key grammar needs no percent-encoding in a query string. */
    snprintf(path, sizeof(path), "/v1/charges?idempotencyKey=%s", idem_key);
    return req_start(p, PAY_LOOKUP, idem_key, path, NULL, cb, data);
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
    return req_start(p, PAY_LIST, starting_after && starting_after[0] ? starting_after : "-", path,
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
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (json == NULL)
        return SEATD_EINTERNAL;
    int rc = req_start(p, PAY_REFUND, idem_key, "/v1/refunds", json, cb, data);
    free(json);
    return rc;
}

/* Runs once every uv handle is closed: fails the abandoned requests, then frees 'p'. */
static void maybe_free(seatd_payment_t *p)
{
    if (!p->closing || p->handles > 0)
        return;
    while (p->reqs) {
        pay_req_t *q = p->reqs;
        req_unlink(p, q);
        seatd_payment_result_t res;
        memset(&res, 0, sizeof(res));
        res.outcome = SEATD_PAY_UNKNOWN;
        snprintf(res.code, sizeof(res.code), "shutdown");
        log_result(q, &res);
        seatd_payment_cb cb = q->cb;
        void *data = q->data;
        req_free(q);
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
        sock_close(p, p->socks);
    uv_timer_stop(&p->timer);
    uv_close((uv_handle_t *)&p->timer, on_handle_close);
    /* Abandon every transfer; the requests stay listed until their callbacks fire. */
    for (pay_req_t *q = p->reqs; q; q = q->next) {
        curl_multi_remove_handle(p->multi, q->easy);
        curl_easy_cleanup(q->easy);
        q->easy = NULL;
    }
    curl_multi_cleanup(p->multi);
    p->multi = NULL;
}
