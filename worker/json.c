/* json.c - bounded JSON body parsing and typed getters that reply on failure; see json.h. */
#include "json.h"
#include "http_request.h"
#include "mem.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * One pass over the text before cJSON sees it: bounds the nesting depth (cJSON's own limit
 * is 1000) and rejects NUL bytes and "\u0000" escapes (cJSON would silently truncate the
 * string there, so "a\u0000b" would read as "a").
 */
static int prescan(const char *text, size_t len)
{
    int depth = 0, in_string = 0;
    /* No NUL anywhere, escaped or not (found by fuzz/fuzz_json_body: "\\<NUL>"). */
    if (memchr(text, '\0', len) != NULL)
        return SEATD_EBADJSON;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') {
                if (i + 1 < len && text[i + 1] == 'u' && i + 5 < len &&
                    memcmp(text + i + 2, "0000", 4) == 0)
                    return SEATD_EBADJSON;
                i++; /* skip the escaped character */
            } else if (c == '"') {
                in_string = 0;
            }
            continue;
        }
        if (c == '"')
            in_string = 1;
        else if (c == '{' || c == '[') {
            if (++depth > SEATD_JSON_MAX_DEPTH)
                return SEATD_EBADJSON;
        } else if (c == '}' || c == ']')
            depth--;
    }
    return 0;
}

int seatd_json_parse(const char *text, size_t len, cJSON **out)
{
    *out = NULL;
    if (text == NULL || len == 0 || prescan(text, len) < 0)
        return SEATD_EBADJSON;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (root == NULL)
        return SEATD_EBADJSON;
    /* Only whitespace may follow the value. */
    for (const char *p = end; p < text + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            return SEATD_EBADJSON;
        }
    }
    *out = root;
    return 0;
}

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
        seatd_req_finish_problem(r, SEATD_EMEDIATYPE,
                                 "send the body with Content-Type: application/json", NULL);
        return SEATD_EMEDIATYPE;
    }
    cJSON *root = NULL;
    if (seatd_json_parse(body, len, &root) < 0) {
        char detail[96];
        snprintf(detail, sizeof(detail),
                 "the body is not valid JSON (or is nested deeper than %d levels)",
                 SEATD_JSON_MAX_DEPTH);
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

/* Answers 400 with a detail naming 'name'; returns 'err'. */
static int reply_field(seatd_req_t *r, int err, const char *name, const char *what)
{
    char detail[256];
    snprintf(detail, sizeof(detail), "field '%.64s' %.160s", name, what);
    seatd_req_finish_problem(r, err, detail, NULL);
    return err;
}

int seatd_json_get_string_or_reply(seatd_req_t *r, const cJSON *obj, const char *name,
                                   size_t maxlen, int required, const char **out)
{
    *out = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (v == NULL || cJSON_IsNull(v)) {
        if (!required)
            return 0;
        return reply_field(r, SEATD_EINVAL, name, "is required");
    }
    char what[96];
    if (maxlen)
        snprintf(what, sizeof(what), "must be a string of 1 to %zu characters", maxlen);
    else
        snprintf(what, sizeof(what), "must be a non-empty string");
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return reply_field(r, SEATD_EINVAL, name, what);
    size_t len = strlen(v->valuestring);
    if (len == 0 || (maxlen && len > maxlen))
        return reply_field(r, SEATD_EINVAL, name, what);
    *out = v->valuestring;
    return 0;
}

int seatd_json_get_int_or_reply(seatd_req_t *r, const cJSON *obj, const char *name,
                                long long min, long long max, int required, long long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (v == NULL || cJSON_IsNull(v)) {
        if (!required)
            return 0;
        return reply_field(r, SEATD_EINVAL, name, "is required");
    }
    char what[128];
    snprintf(what, sizeof(what), "must be an integer from %lld to %lld", min, max);
    if (!cJSON_IsNumber(v))
        return reply_field(r, SEATD_EINVAL, name, what);
    double d = v->valuedouble;
    /* Beyond 2^53 doubles stop being exact integers; no seatd field needs that range. */
    if (!isfinite(d) || floor(d) != d || fabs(d) > 9007199254740992.0 || d < (double)min ||
        d > (double)max)
        return reply_field(r, SEATD_EINVAL, name, what);
    *out = (long long)d;
    return 0;
}

int seatd_json_get_string_array_or_reply(seatd_req_t *r, const cJSON *obj, const char *name,
                                         size_t max_items, size_t max_len, const char ***arr,
                                         size_t *n)
{
    *arr = NULL;
    *n = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (v == NULL || cJSON_IsNull(v))
        return reply_field(r, SEATD_EINVAL, name, "is required");
    if (!cJSON_IsArray(v))
        return reply_field(r, SEATD_EINVAL, name, "must be an array of strings");
    size_t count = (size_t)cJSON_GetArraySize(v);
    if (count > max_items) {
        char what[96];
        snprintf(what, sizeof(what), "has more than %zu items", max_items);
        int err = strcmp(name, "seatIds") == 0 ? SEATD_ETOOMANY : SEATD_EINVAL;
        return reply_field(r, err, name, what);
    }
    const char **items = seatd_calloc(count ? count : 1, sizeof(*items));
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        size_t len = cJSON_IsString(it) && it->valuestring ? strlen(it->valuestring) : 0;
        if (len == 0 || (max_len && len > max_len)) {
            free(items);
            char what[128];
            snprintf(what, sizeof(what), "must hold only strings of 1 to %zu characters",
                     max_len);
            return reply_field(r, SEATD_EINVAL, name, what);
        }
        items[i++] = it->valuestring;
    }
    *arr = items;
    *n = i;
    return 0;
}
