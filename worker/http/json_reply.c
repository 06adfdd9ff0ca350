/* json_reply.c - a request's JSON body parsed and checked, answered 400/415 on failure; see
 * json_reply.h. */
#include "http/json_reply.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http_request.h"

/* "application/json", optionally followed by parameters ("; charset=utf-8"). */
static int is_json_type(const char *ct)
{
    static const char want[] = "application/json";
    if (ct == NULL || strncasecmp(ct, want, sizeof(want) - 1) != 0)
        return 0;
    char next = ct[sizeof(want) - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

int seatd_json_parse_body_or_reply(seatd_req_t *r, cJSON **out)
{
    *out = NULL;
    size_t len = 0;
    const char *body = seatd_req_body(r, &len);
    if (len == 0) {
        seatd_req_finish_problem(r, SEATD_EBADJSON, "a JSON object body is required", NULL);
        return SEATD_EBADJSON;
    }
    if (!is_json_type(seatd_req_header(r, "content-type"))) {
        /* Say what is accepted (Accept-Post, W3C LDP; Accept-Patch, RFC 5789). */
        const char *method = seatd_req_method(r);
        if (method && strcmp(method, "POST") == 0)
            seatd_req_add_header(r, "Accept-Post", "application/json");
        else if (method && strcmp(method, "PATCH") == 0)
            seatd_req_add_header(r, "Accept-Patch", "application/json");
        seatd_req_finish_problem(r, SEATD_EMEDIATYPE,
                                 "send the body with Content-Type: application/json", NULL);
        return SEATD_EMEDIATYPE;
    }
    cJSON *root = NULL;
    seatd_json_error_t err;
    if (seatd_json_parse_why(body, len, &root, &err) < 0) {
        /* Say what and where: "the body is not valid JSON: a syntax error at line 1, column 14
         * (byte 13)". */
        char detail[192];
        if (err.has_position)
            snprintf(detail, sizeof(detail),
                     "the body is not valid JSON: %s at line %zu, column %zu (byte %zu)", err.what,
                     err.line, err.column, err.offset);
        else if (err.member[0])
            snprintf(detail, sizeof(detail),
                     "the body is not valid JSON: member \"%s\" is named twice in one object",
                     err.member);
        else
            snprintf(detail, sizeof(detail), "the body is not valid JSON: %s", err.what);
        seatd_req_finish_problem(r, SEATD_EBADJSON, detail, NULL);
        return SEATD_EBADJSON;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        seatd_req_finish_problem(r, SEATD_EBADJSON, "the body must be a JSON object", NULL);
        return SEATD_EBADJSON;
    }
    *out = root;
    return 0;
}

int seatd_json_check_done_or_reply(seatd_json_check_t *v, seatd_req_t *r)
{
    int err = v->err;
    if (err == 0) {
        seatd_json_check_clear(v);
        return 0;
    }
    cJSON *extra = cJSON_CreateObject();
    cJSON_AddItemToObject(extra, "invalidParams", v->params);
    v->params = NULL;
    seatd_req_finish_problem(r, err, v->detail, extra);
    seatd_json_check_clear(v);
    return err;
}

/* ---------------------------------------------------------------------------------------
 * Single-field getters: one check, answered at once
 * --------------------------------------------------------------------------------------- */

int seatd_json_get_string_or_reply(seatd_req_t *r, const cJSON *obj, const char *name,
                                   size_t maxlen, int required, const char **out)
{
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, obj, name, maxlen, required, out);
    return seatd_json_check_done_or_reply(&v, r);
}

int seatd_json_get_int_or_reply(seatd_req_t *r, const cJSON *obj, const char *name, long long min,
                                long long max, int required, long long *out)
{
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_int(&v, obj, name, min, max, required, out);
    return seatd_json_check_done_or_reply(&v, r);
}

int seatd_json_get_string_array_or_reply(seatd_req_t *r, const cJSON *obj, const char *name,
                                         size_t max_items, size_t max_len, const char ***arr,
                                         size_t *n)
{
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string_array(&v, obj, name, max_items, max_len, arr, n);
    return seatd_json_check_done_or_reply(&v, r);
}
