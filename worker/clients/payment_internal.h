/*
 * payment_internal.h - what the files of the card gateway client share: the client, a watched
 * socket and one request, and the functions one file calls in another. Not an interface:
 * include it only from payment.c (the calls and their input grammar, creation, close),
 * payment_http.c (requests on curl's multi interface, the curl <-> libuv glue) and
 * payment_decode.c (the gateway's answers); everything else goes through payment.h.
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
#ifndef SEATD_PAYMENT_INTERNAL_H
#define SEATD_PAYMENT_INTERNAL_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <uv.h>

#include "base/buf.h"
#include "clients/payment.h"

enum pay_kind_e { PAY_CHARGE, PAY_LOOKUP, PAY_REFUND, PAY_LIST };

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

/* ---------------------------------------------------------------- payment.c */

void payment__maybe_free(seatd_payment_t *p);

/* ---------------------------------------------------------------- payment_http.c */

int payment__req_start(seatd_payment_t *p, int kind, const char *idem_key, const char *path,
                       const char *json, seatd_payment_cb cb, void *data);
void payment__req_unlink(seatd_payment_t *p, pay_req_t *q);
void payment__req_free(pay_req_t *q);
void payment__on_handle_close(uv_handle_t *h);
void payment__sock_close(seatd_payment_t *p, pay_sock_t *s);
int payment__on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp);
int payment__on_curl_timer(CURLM *multi, long timeout_ms, void *userp);

/* ---------------------------------------------------------------- payment_decode.c */

extern const char *payment__kind_names[];
void payment__decode(pay_req_t *q, CURLcode cc, seatd_payment_result_t *res, cJSON **rootp,
                     seatd_payment_page_t *page);
void payment__log_result(const pay_req_t *q, const seatd_payment_result_t *res);

#endif
