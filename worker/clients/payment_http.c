/*
 * payment_http.c - the gateway client's transfers: one request set up and queued on curl's
 * multi interface, the answer's body collected (bounded), the finished transfers collected
 * and their callbacks run, and the glue that lets libuv drive curl: a uv_poll_t per socket
 * curl asks to watch, one uv_timer_t for its wake-up. See payment_internal.h.
 */
#include "clients/payment_internal.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/list.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"

#define PAY_MAX_RESPONSE (256 * 1024) /* a gateway answer larger than this is an error */

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

/* ---------------------------------------------------------------------------------------- */
/* Requests                                                                                 */
/* ---------------------------------------------------------------------------------------- */

void payment__req_unlink(seatd_payment_t *p, pay_req_t *q)
{
    SEATD_LIST_UNLINK(p->reqs, q);
    p->nreqs--;
}

/* Releases everything 'q' owns except what is already gone; 'q' must be unlinked. */
void payment__req_free(pay_req_t *q)
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
int payment__req_start(seatd_payment_t *p, int kind, const char *idem_key, const char *path,
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

    SEATD_LIST_PUSH(p->reqs, q);
    p->nreqs++;
    seatd_buf_free(&url);
    seatd_buf_free(&hdr);
    return 0;

fail:
    seatd_log(SEATD_LOG_ERROR, NULL, "payment request setup failed", "\"op\":\"%s\"",
              payment__kind_names[kind]);
    seatd_buf_free(&url);
    seatd_buf_free(&hdr);
    payment__req_free(q);
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
        payment__decode(q, cc, &res, &root, &page);
        payment__log_result(q, &res);
        double secs = 0;
        if (curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &secs) != CURLE_OK)
            secs = 0;
        seatd_metrics_observe(kind_hist[q->kind], secs);
        seatd_metrics_inc(kind_outcome_metric[q->kind][res.outcome]);
        curl_multi_remove_handle(p->multi, e);
        payment__req_unlink(p, q);
        seatd_payment_cb cb = q->cb;
        void *data = q->data;
        payment__req_free(q);
        cb(&res, data);
        free((void *)page.charges);
        cJSON_Delete(root);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* curl <-> libuv glue                                                                      */
/* ---------------------------------------------------------------------------------------- */

void payment__on_handle_close(uv_handle_t *h)
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
    payment__maybe_free(p);
}

void payment__sock_close(seatd_payment_t *p, pay_sock_t *s)
{
    uv_poll_stop(&s->poll);
    SEATD_LIST_UNLINK(p->socks, s);
    uv_close((uv_handle_t *)&s->poll, payment__on_handle_close);
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
int payment__on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    seatd_payment_t *p = userp;
    pay_sock_t *s = socketp;
    if (p->closing)
        return 0; /* close() has closed every poll handle itself */
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(p->multi, fd, NULL);
            payment__sock_close(p, s);
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
        SEATD_LIST_PUSH(p->socks, s);
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
int payment__on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
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
