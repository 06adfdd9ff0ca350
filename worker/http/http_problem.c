/*
 * http_problem.c - the error answers: RFC 9457 problem+json documents built from the errors
 * table (type, title, status), with a handler's detail and extra members, the headers some
 * statuses call for (Retry-After, WWW-Authenticate), and the answer to a request the parser
 * refused before there was a request object. See http_request.h.
 */
#include "http/http_request_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define PROBLEM_BASE "https://seatd.dev/problems/"

/* Whether 'name' is a standard member of a problem document or an earlier member of 'extra'
 * than 'it': such an extra member is left out, never overriding. */
static int problem_member_taken(const cJSON *extra, const cJSON *it)
{
    static const char *const standard[] = {"type", "title", "status", "detail", "instance"};
    for (size_t i = 0; i < sizeof(standard) / sizeof(standard[0]); i++)
        if (strcmp(it->string, standard[i]) == 0)
            return 1;
    for (const cJSON *e = extra->child; e && e != it; e = e->next)
        if (e->string && strcmp(e->string, it->string) == 0)
            return 1;
    return 0;
}

/* Writes the RFC 9457 document of 'err' into 'b': the standard members by hand (a 409 is
 * the most frequent answer of an on-sale: no tree, no number formatting), then the members of
 * 'extra' (a cJSON object or NULL; borrowed). */
static void problem_text(seatd_buf_t *b, int err, const char *detail, const char *instance,
                         const cJSON *extra, const char *members)
{
    seatd_buf_puts(b, "{\"type\":\"" PROBLEM_BASE);
    seatd_buf_puts(b, seatd_err_type(err));
    seatd_buf_puts(b, "\"");
    seatd_buf_json_member(b, "title", seatd_err_message(err));
    seatd_buf_puts(b, ",\"status\":");
    seatd_buf_put_uint(b, (unsigned)seatd_err_http_status(err));
    if (detail)
        seatd_buf_json_member(b, "detail", detail);
    if (instance)
        seatd_buf_json_member(b, "instance", instance);
    if (cJSON_IsObject(extra)) {
        for (const cJSON *it = extra->child; it; it = it->next) {
            if (it->string == NULL || problem_member_taken(extra, it))
                continue;
            char *value = cJSON_PrintUnformatted(it);
            if (value == NULL)
                continue;
            seatd_buf_puts(b, ",\"");
            seatd_buf_json_escape(b, it->string, strlen(it->string));
            seatd_buf_puts(b, "\":");
            seatd_buf_puts(b, value);
            free(value);
        }
    }
    if (members && members[0]) {
        seatd_buf_puts(b, ",");
        seatd_buf_puts(b, members);
    }
    seatd_buf_puts(b, "}");
}

static void finish_problem(seatd_req_t *r, int err, const char *detail, const cJSON *extra,
                           const char *members)
{
    int status = seatd_err_http_status(err);
    seatd_buf_t text = SEATD_BUF_INIT;
    problem_text(&text, err, detail, r->path ? r->path : NULL, extra, members);
    if ((status == 429 || status == 503) &&
        !(r->resp_headers.data && strstr(r->resp_headers.data, "Retry-After:")))
        seatd_req_add_header(r, "Retry-After", "1"); /* unless the handler set its own */
    if (status == 401 &&
        !(r->resp_headers.data && strstr(r->resp_headers.data, "WWW-Authenticate:")))
        seatd_req_add_header(r, "WWW-Authenticate", "Bearer"); /* unless a challenge was set */
    seatd_req_finish(r, status, "application/problem+json", text.data, text.len);
    seatd_buf_free(&text);
}

void seatd_req_finish_problem(seatd_req_t *r, int err, const char *detail, cJSON *extra)
{
    if (!r->detached)
        finish_problem(r, err, detail, extra, NULL);
    cJSON_Delete(extra);
}

void seatd_req_finish_problem_members(seatd_req_t *r, int err, const char *detail,
                                      const char *members)
{
    if (!r->detached)
        finish_problem(r, err, detail, NULL, members);
}

void seatd_req_parser_error_response(int err, seatd_buf_t *out)
{
    int status = seatd_err_http_status(err);
    seatd_buf_t text = SEATD_BUF_INIT;
    problem_text(&text, err, NULL, NULL, NULL, NULL);
    char id[SEATD_REQ_ID_MAX + 1];
    req__generate_id(id);
    seatd_buf_printf(out,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\nX-Request-Id: %s\r\n%s\r\n",
                     status, req__reason(status), text.len, id,
                     status == 429 || status == 503 ? "Retry-After: 1\r\n" : "");
    seatd_buf_append(out, text.data, text.len);
    seatd_buf_free(&text);
}
