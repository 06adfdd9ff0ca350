/* json.c - bounded JSON body parsing and typed getters that reply on failure; see json.h. */
#include "http/json.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* Records in 'err' (may be NULL) that 'what' is wrong at byte 'offset' of 'text'. Returns
 * SEATD_EBADJSON. */
static int bad_at(seatd_json_error_t *err, const char *what, const char *text, size_t offset)
{
    if (err == NULL)
        return SEATD_EBADJSON;
    memset(err, 0, sizeof(*err));
    err->what = what;
    err->has_position = 1;
    err->offset = offset;
    err->line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; i++)
        if (text[i] == '\n') {
            err->line++;
            line_start = i + 1;
        }
    err->column = offset - line_start + 1;
    return SEATD_EBADJSON;
}

/*
 * One pass over the text before cJSON sees it: bounds the nesting depth (cJSON's own limit
 * is 1000) and rejects NUL bytes and "\u0000" escapes (cJSON would silently truncate the
 * string there, so "a\u0000b" would read as "a").
 */
static int prescan(const char *text, size_t len, seatd_json_error_t *err)
{
    int depth = 0, in_string = 0;
    /* No NUL anywhere, escaped or not (found by fuzz/fuzz_json_body: "\\<NUL>"). */
    const char *nul = memchr(text, '\0', len);
    if (nul != NULL)
        return bad_at(err, "a NUL byte", text, (size_t)(nul - text));
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') {
                if (i + 1 < len && text[i + 1] == 'u' && i + 5 < len &&
                    memcmp(text + i + 2, "0000", 4) == 0)
                    return bad_at(err, "a \\u0000 escape", text, i);
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
                return bad_at(err, "nesting deeper than " STR(SEATD_JSON_MAX_DEPTH) " levels", text,
                              i);
        } else if (c == '}' || c == ']')
            depth--;
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The first member name an object of the tree names twice ({"seatIds":["A3"],"seatIds":["A4"]}),
 * or NULL. cJSON keeps both and every getter reads the first, while a proxy, a log or another
 * parser may read the last: the request one of them saw is not the one that ran. Small objects
 * are compared pairwise, larger ones sorted (a 4 MiB object of distinct names stays n log n).
 * The depth is bounded by prescan().
 */
static const char *duplicate_name(const cJSON *node)
{
    for (; node; node = node->next) {
        if (cJSON_IsObject(node)) {
            size_t n = 0;
            for (const cJSON *c = node->child; c; c = c->next)
                n++;
            if (n > 1 && n <= 8) {
                for (const cJSON *a = node->child; a; a = a->next)
                    for (const cJSON *b = a->next; b; b = b->next)
                        if (strcmp(a->string, b->string) == 0)
                            return a->string;
            } else if (n > 8) {
                const char **names = seatd_malloc(n * sizeof(*names));
                size_t i = 0;
                for (const cJSON *c = node->child; c; c = c->next)
                    names[i++] = c->string;
                qsort(names, n, sizeof(*names), by_name);
                const char *dup = NULL;
                for (i = 1; i < n && !dup; i++)
                    if (strcmp(names[i - 1], names[i]) == 0)
                        dup = names[i];
                free(names);
                if (dup)
                    return dup;
            }
        }
        if (cJSON_IsObject(node) || cJSON_IsArray(node)) {
            const char *dup = duplicate_name(node->child);
            if (dup)
                return dup;
        }
    }
    return NULL;
}

/* 'name' is short plain ASCII that may be repeated in a detail as it is. */
static int plain_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof(((seatd_json_error_t *)0)->member))
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

int seatd_json_parse(const char *text, size_t len, cJSON **out)
{
    return seatd_json_parse_why(text, len, out, NULL);
}

int seatd_json_parse_why(const char *text, size_t len, cJSON **out, seatd_json_error_t *err)
{
    *out = NULL;
    if (text == NULL || len == 0)
        return bad_at(err, "no JSON value", "", 0);
    int rc = prescan(text, len, err);
    if (rc < 0)
        return rc;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (root == NULL) /* 'end': where cJSON's parser stopped (cJSON_GetErrorPtr()) */
        return bad_at(err, "a syntax error", text,
                      end && end >= text && end < text + len ? (size_t)(end - text) : len - 1);
    /* Only whitespace may follow the value. */
    for (const char *p = end; p < text + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            return bad_at(err, "more after the JSON value", text, (size_t)(p - text));
        }
    }
    const char *dup = duplicate_name(root);
    if (dup) {
        if (err) {
            memset(err, 0, sizeof(*err));
            err->what = "a member named twice in one object";
            if (plain_name(dup))
                snprintf(err->member, sizeof(err->member), "%s", dup);
        }
        cJSON_Delete(root);
        return SEATD_EBADJSON;
    }
    *out = root;
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Validation that collects every bad field
 * --------------------------------------------------------------------------------------- */

void seatd_json_check_init(seatd_json_check_t *v)
{
    memset(v, 0, sizeof(*v));
}

void seatd_json_check_clear(seatd_json_check_t *v)
{
    cJSON_Delete(v->params);
    seatd_json_check_init(v);
}

int seatd_json_check_failed(const seatd_json_check_t *v, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, v->params)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return 1;
    }
    return 0;
}

int seatd_json_check_fail(seatd_json_check_t *v, int err, const char *name, const char *reason,
                          const char *detail)
{
    if (seatd_json_check_failed(v, name))
        return err;
    if (v->err == 0) {
        v->err = err;
        if (detail)
            snprintf(v->detail, sizeof(v->detail), "%s", detail);
        else if (strcmp(reason, "required") == 0)
            snprintf(v->detail, sizeof(v->detail), "field '%.64s' is required", name);
        else
            snprintf(v->detail, sizeof(v->detail), "field '%.64s' %.160s", name, reason);
    }
    if (v->params == NULL)
        v->params = cJSON_CreateArray();
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddItemToArray(v->params, p);
    return err;
}

/* Member 'name' of 'obj' into '*it'. Returns 1 when it is there and not null; else 0 when it
 * is not 'required', or the "required" failure (seatd_json_check_fail). */
static int check_member(seatd_json_check_t *v, const cJSON *obj, const char *name, int required,
                        const cJSON **it)
{
    *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (*it != NULL && !cJSON_IsNull(*it))
        return 1;
    if (!required)
        return 0;
    return seatd_json_check_fail(v, SEATD_EINVAL, name, "required", NULL);
}

int seatd_json_check_string(seatd_json_check_t *v, const cJSON *obj, const char *name,
                            size_t maxlen, int required, const char **out)
{
    *out = NULL;
    const cJSON *it = NULL;
    int present = check_member(v, obj, name, required, &it);
    if (present <= 0)
        return present;
    char what[96];
    if (maxlen)
        snprintf(what, sizeof(what), "must be a string of 1 to %zu bytes", maxlen);
    else
        snprintf(what, sizeof(what), "must be a non-empty string");
    if (!cJSON_IsString(it) || it->valuestring == NULL)
        return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
    size_t len = strlen(it->valuestring);
    if (len == 0 || (maxlen && len > maxlen))
        return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
    *out = it->valuestring;
    return 0;
}

long seatd_json_text_chars(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;
    while (*p) {
        unsigned c = *p, len, cp;
        if (c < 0x80)
            len = 1, cp = c;
        else if (c >= 0xc2 && c <= 0xdf)
            len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, cp = c & 0x07;
        else
            return -1; /* a continuation byte first, or 0xc0/0xc1/0xf5..: never valid */
        for (unsigned i = 1; i < len; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return -1;
            cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return -1; /* overlong, a surrogate, or beyond Unicode */
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            return -1;
        p += len;
        n++;
    }
    return n;
}

int seatd_json_check_text(seatd_json_check_t *v, const cJSON *obj, const char *name,
                          size_t max_chars, size_t max_bytes, int required, const char **out)
{
    const char *s = NULL;
    *out = NULL;
    int rc = seatd_json_check_string(v, obj, name, 0, required, &s);
    if (rc < 0 || s == NULL)
        return rc;
    long n = seatd_json_text_chars(s);
    if (n < 1 || (size_t)n > max_chars || strlen(s) > max_bytes) {
        char what[128];
        snprintf(what, sizeof(what),
                 "must be text of 1 to %zu characters (UTF-8, no control characters)", max_chars);
        return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
    }
    *out = s;
    return 0;
}

int seatd_json_check_int(seatd_json_check_t *v, const cJSON *obj, const char *name, long long min,
                         long long max, int required, long long *out)
{
    const cJSON *it = NULL;
    int present = check_member(v, obj, name, required, &it);
    if (present <= 0)
        return present;
    char what[128];
    snprintf(what, sizeof(what), "must be an integer from %lld to %lld", min, max);
    if (!cJSON_IsNumber(it))
        return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
    double d = it->valuedouble;
    /* Beyond 2^53 doubles stop being exact integers; no seatd field needs that range. */
    if (!isfinite(d) || floor(d) != d || fabs(d) > 9007199254740992.0 || d < (double)min ||
        d > (double)max)
        return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
    *out = (long long)d;
    return 0;
}

int seatd_json_check_string_array(seatd_json_check_t *v, const cJSON *obj, const char *name,
                                  size_t max_items, size_t max_len, const char ***arr, size_t *n)
{
    *arr = NULL;
    *n = 0;
    const cJSON *it = NULL;
    int present = check_member(v, obj, name, 1, &it);
    if (present <= 0)
        return present;
    if (!cJSON_IsArray(it))
        return seatd_json_check_fail(v, SEATD_EINVAL, name, "must be an array of strings", NULL);
    size_t count = (size_t)cJSON_GetArraySize(it);
    if (count > max_items) {
        char what[96];
        snprintf(what, sizeof(what), "has more than %zu items", max_items);
        int err = strcmp(name, "seatIds") == 0 ? SEATD_ETOOMANY : SEATD_EINVAL;
        return seatd_json_check_fail(v, err, name, what, NULL);
    }
    const char **items = seatd_calloc(count ? count : 1, sizeof(*items));
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, it)
    {
        size_t len = cJSON_IsString(e) && e->valuestring ? strlen(e->valuestring) : 0;
        if (len == 0 || (max_len && len > max_len)) {
            free(items);
            char what[128];
            snprintf(what, sizeof(what), "must hold only strings of 1 to %zu characters", max_len);
            return seatd_json_check_fail(v, SEATD_EINVAL, name, what, NULL);
        }
        items[i++] = e->valuestring;
    }
    *arr = items;
    *n = i;
    return 0;
}
