/*
 * http_response.c - writing a request's answer: the status line, Content-Type,
 * Content-Length, Connection, X-Request-Id and the handler's headers, then the body, rendered
 * into the request for the server to send; the finish calls that end every request (STYLE
 * rule 20). Problem documents are in http_problem.c. See http_request.h.
 */
#include "http/http_request_internal.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------------------------------
 * Responses
 * ---------------------------------------------------------------------------------------- */

const char *req__reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

/* Statuses that never carry a body (RFC 9110 6.4.1); they get no Content-Length either. */
static int bodyless(int status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}
/* Appends 's' with CR and LF replaced by spaces (no header injection from handler data). */
static void put_header_text(seatd_buf_t *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        char c = (*p == '\r' || *p == '\n') ? ' ' : *p;
        seatd_buf_append(b, &c, 1);
    }
}

void seatd_req_add_header(seatd_req_t *r, const char *name, const char *value)
{
    put_header_text(&r->resp_headers, name);
    seatd_buf_puts(&r->resp_headers, ": ");
    put_header_text(&r->resp_headers, value);
    seatd_buf_puts(&r->resp_headers, "\r\n");
}

static void render(seatd_req_t *r, int status, const char *content_type, const char *body,
                   size_t len)
{
    seatd_buf_t *b = &r->response;
    seatd_buf_reset(b);
    int head = strcmp(r->method, "HEAD") == 0;
    /* Written piece by piece, not printf'd: every answer goes through here. */
    seatd_buf_puts(b, "HTTP/1.1 ");
    seatd_buf_put_uint(b, (unsigned)status);
    seatd_buf_puts(b, " ");
    seatd_buf_puts(b, req__reason(status));
    seatd_buf_puts(b, "\r\n");
    if (!bodyless(status)) {
        if (content_type) {
            seatd_buf_puts(b, "Content-Type: ");
            seatd_buf_puts(b, content_type);
            seatd_buf_puts(b, "\r\n");
        }
        seatd_buf_puts(b, "Content-Length: ");
        seatd_buf_put_uint(b, len);
        seatd_buf_puts(b, "\r\n");
    }
    if (seatd__req_wants_close(r))
        seatd_buf_puts(b, "Connection: close\r\n");
    else if (r->http_major == 1 && r->http_minor == 0)
        seatd_buf_puts(b, "Connection: keep-alive\r\n");
    seatd_buf_puts(b, "X-Request-Id: ");
    seatd_buf_puts(b, r->id);
    seatd_buf_puts(b, "\r\n");
    if (r->resp_headers.len)
        seatd_buf_append(b, r->resp_headers.data, r->resp_headers.len);
    seatd_buf_puts(b, "\r\n");
    if (!head && !bodyless(status) && len)
        seatd_buf_append(b, body, len);
}

void seatd_req_finish(seatd_req_t *r, int status, const char *content_type, const char *body,
                      size_t len)
{
    if (r->detached)
        return; /* the client went away: nobody to answer */
    assert(!r->finished && "a request was finished twice");
    if (status < 100 || status > 599)
        status = 500;
    r->finished = 1;
    r->status = status;
    render(r, status, content_type, body, len);
    if (r->finish_cb)
        r->finish_cb(r, r->finish_data); /* may free 'r' */
}

void seatd_req_finish_json(seatd_req_t *r, int status, cJSON *root)
{
    if (root == NULL) {
        seatd_req_finish(r, status, NULL, NULL, 0);
        return;
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL) { /* only on allocation failure, which aborts first; kept for safety */
        seatd_req_finish(r, 500, NULL, NULL, 0);
        return;
    }
    seatd_req_finish(r, status, "application/json", text, strlen(text));
    free(text);
}
