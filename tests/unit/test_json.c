/* Unit tests for json.c: bounded parsing and the _or_reply getters. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_request.h"
#include "http/json_reply.h"

/* A request with 'body' and 'ctype', as the parser would build it. */
static seatd_req_t *req_with_body(const char *ctype, const char *body)
{
    char raw[4096];
    int n = snprintf(raw, sizeof(raw),
                     "POST /v1/x HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: %zu"
                     "\r\n\r\n%s",
                     ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "",
                     strlen(body), body);
    seatd_req_parser_t *p = seatd_req_parser_new(NULL);
    seatd_req_t *r = NULL;
    size_t used = 0;
    cr_assert_eq(seatd_req_parser_feed(p, raw, (size_t)n, &used, &r), 0);
    cr_assert_not_null(r);
    seatd_req_parser_free(p);
    return r;
}

static int status_of(seatd_req_t *r)
{
    return seatd__req_status(r);
}

/* The "detail" of the rendered problem (owned). */
static char *detail_of(seatd_req_t *r)
{
    const char *body = strstr(seatd__req_response(r)->data, "\r\n\r\n");
    cr_assert_not_null(body);
    cJSON *doc = cJSON_Parse(body + 4);
    cJSON *d = cJSON_GetObjectItem(doc, "detail");
    char *out = strdup(cJSON_IsString(d) ? d->valuestring : "");
    cJSON_Delete(doc);
    return out;
}

Test(json, parses_within_the_depth_limit)
{
    cJSON *doc = NULL;
    /* 16 levels: fine; 17: refused. */
    const char *ok = "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]";
    const char *deep = "[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]";
    cr_assert_eq(seatd_json_parse(ok, strlen(ok), &doc), 0);
    cJSON_Delete(doc);
    cr_assert_eq(seatd_json_parse(deep, strlen(deep), &doc), SEATD_EBADJSON);
    cr_assert_null(doc);
    /* Brackets inside strings do not count. */
    const char *str = "{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}";
    cr_assert_eq(seatd_json_parse(str, strlen(str), &doc), 0);
    cJSON_Delete(doc);
}

Test(json, rejects_trailing_bytes_nul_and_escaped_nul)
{
    cJSON *doc = NULL;
    cr_assert_eq(seatd_json_parse("{} x", 4, &doc), SEATD_EBADJSON);
    cr_assert_eq(seatd_json_parse("{}  \r\n", 6, &doc), 0);
    cJSON_Delete(doc);
    cr_assert_eq(seatd_json_parse("{}\0{}", 5, &doc), SEATD_EBADJSON);
    const char *esc = "{\"a\":\"x\\u0000y\"}";
    cr_assert_eq(seatd_json_parse(esc, strlen(esc), &doc), SEATD_EBADJSON);
    cr_assert_eq(seatd_json_parse("", 0, &doc), SEATD_EBADJSON);
    cr_assert_eq(seatd_json_parse("{\"a\":", 5, &doc), SEATD_EBADJSON);
    /* A raw NUL right after a backslash inside a string (found by fuzzing). */
    static const char bs_nul[] = "{\"a\":\"x\\\0y\"}";
    cr_assert_eq(seatd_json_parse(bs_nul, sizeof(bs_nul) - 1, &doc), SEATD_EBADJSON);
}

/* An object naming a member twice is refused at every depth and size: cJSON's getters read
 * the first, while a proxy, a log or another parser may read the last. */
Test(json, rejects_an_object_that_names_a_member_twice)
{
    cJSON *doc = NULL;
    static const char *dups[] = {
        "{\"seatIds\":[\"A3\"],\"seatIds\":[\"A4\"]}",
        "{\"a\":1,\"b\":{\"x\":1,\"y\":2,\"x\":3}}",
        "[{\"k\":1},{\"k\":1,\"k\":2}]",
        "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"e\":0}",
    };
    for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
        cr_assert_eq(seatd_json_parse(dups[i], strlen(dups[i]), &doc), SEATD_EBADJSON, "%s",
                     dups[i]);
        cr_assert_null(doc);
    }
    /* The same name in different objects, or differing only in case, is fine. */
    const char *ok = "{\"a\":{\"a\":1},\"A\":[{\"a\":2},{\"a\":3}],\"b\":1,\"c\":1,\"d\":1,"
                     "\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1}";
    cr_assert_eq(seatd_json_parse(ok, strlen(ok), &doc), 0);
    cJSON_Delete(doc);
}

Test(json, parse_body_returns_the_object)
{
    seatd_req_t *r = req_with_body("application/json; charset=utf-8", "{\"holdId\":\"42-h1\"}");
    cJSON *body = NULL;
    cr_assert_eq(seatd_json_parse_body_or_reply(r, &body), 0);
    cr_assert_not_null(body);
    cr_assert_eq(seatd_req_is_finished(r), 0);
    cJSON_Delete(body);
    seatd_req_free(r);
}

Test(json, parse_body_replies_415_without_a_json_content_type)
{
    const char *types[] = {NULL, "text/plain", "application/jsonx", "application/x-json"};
    for (size_t i = 0; i < 4; i++) {
        seatd_req_t *r = req_with_body(types[i], "{}");
        cJSON *body = NULL;
        cr_assert_eq(seatd_json_parse_body_or_reply(r, &body), SEATD_EMEDIATYPE, "case %zu", i);
        cr_assert_null(body);
        cr_assert_eq(status_of(r), 415);
        cr_assert(strstr(seatd__req_response(r)->data, "\r\nAccept-Post: application/json\r\n"),
                  "a 415 says what it accepts: %s", seatd__req_response(r)->data);
        seatd_req_free(r);
    }
}

Test(json, parse_body_replies_400_to_bad_json_or_non_objects)
{
    const char *bodies[] = {"", "{", "[1,2]", "\"str\"", "{\"a\":1}{", "nul"};
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        seatd_req_t *r = req_with_body("application/json", bodies[i]);
        cJSON *body = NULL;
        cr_assert_eq(seatd_json_parse_body_or_reply(r, &body), SEATD_EBADJSON, "case %zu", i);
        cr_assert_eq(status_of(r), 400);
        cr_assert(strstr(seatd__req_response(r)->data, "malformed-json"));
        seatd_req_free(r);
    }
}

/* Parses 'text' into an owned tree. */
static cJSON *obj(const char *text)
{
    cJSON *o = cJSON_Parse(text);
    cr_assert_not_null(o);
    return o;
}

/* A body that is not JSON is answered with what is wrong and where: line, column and byte. */
Test(json, a_malformed_body_is_refused_with_what_and_where)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"holdId\":\"x\",}", "a syntax error at line 1, column 15 (byte 14)"},
        {"{\n  \"holdId\": \"x\"\n  \"paymentMethod\": 1}", "a syntax error at line 3, column 3"},
        {"{\"a\":1} x", "more after the JSON value at line 1, column 9 (byte 8)"},
        {"{\"a\":\"x\\u0000\"}", "a \\u0000 escape at line 1, column 8 (byte 7)"},
        {"{\"a\":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}", "nesting deeper than 16 levels at line 1, "
                                                      "column 21 (byte 20)"},
        {"{\"seatIds\":[\"A1\"],\"seatIds\":[\"A2\"]}", "member \"seatIds\" is named twice"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        seatd_req_t *r = req_with_body("application/json", cases[i].body);
        cJSON *out = NULL;
        cr_assert_eq(seatd_json_parse_body_or_reply(r, &out), SEATD_EBADJSON);
        cr_assert_eq(status_of(r), 400);
        char *d = detail_of(r);
        cr_assert(strstr(d, cases[i].want) != NULL, "case %zu: '%s' does not say '%s'", i, d,
                  cases[i].want);
        free(d);
        seatd_req_free(r);
    }
    /* The position cJSON reports is the one seatd_json_parse_why() gives. */
    seatd_json_error_t err;
    cJSON *doc = NULL;
    cr_assert_eq(seatd_json_parse_why("[1,,2]", 6, &doc, &err), SEATD_EBADJSON);
    cr_assert(err.has_position);
    cr_assert_eq(err.offset, 3);
    cr_assert_eq(err.line, 1);
    cr_assert_eq(err.column, 4);
}

Test(json, get_string_reads_and_bounds_strings)
{
    cJSON *o = obj("{\"holdId\":\"42-h1\",\"n\":3,\"e\":\"\",\"long\":\"abcdef\"}");
    const char *s = NULL;
    seatd_req_t *r = req_with_body("application/json", "{}");
    cr_assert_eq(seatd_json_get_string_or_reply(r, o, "holdId", 64, 1, &s), 0);
    cr_assert_str_eq(s, "42-h1");
    cr_assert_eq(seatd_json_get_string_or_reply(r, o, "absent", 64, 0, &s), 0);
    cr_assert_null(s);
    cr_assert_eq(seatd_req_is_finished(r), 0);
    seatd_req_free(r);

    struct {
        const char *name;
        size_t max;
    } bad[] = {{"absent", 64}, {"n", 64}, {"e", 64}, {"long", 5}};
    for (size_t i = 0; i < 4; i++) {
        r = req_with_body("application/json", "{}");
        cr_assert_eq(seatd_json_get_string_or_reply(r, o, bad[i].name, bad[i].max, 1, &s),
                     SEATD_EINVAL, "case %zu", i);
        cr_assert_eq(status_of(r), 400);
        char *d = detail_of(r);
        cr_assert(strstr(d, bad[i].name), "detail '%s' names the field", d);
        free(d);
        seatd_req_free(r);
    }
    cJSON_Delete(o);
}

Test(json, get_int_reads_integers_in_range)
{
    cJSON *o = obj("{\"ttl\":300,\"f\":1.5,\"s\":\"3\",\"big\":100000}");
    long long v = -1;
    seatd_req_t *r = req_with_body("application/json", "{}");
    cr_assert_eq(seatd_json_get_int_or_reply(r, o, "ttl", 1, 3600, 1, &v), 0);
    cr_assert_eq(v, 300);
    v = 7;
    cr_assert_eq(seatd_json_get_int_or_reply(r, o, "absent", 1, 3600, 0, &v), 0);
    cr_assert_eq(v, 7, "untouched when absent");
    seatd_req_free(r);
    const char *bad[] = {"f", "s", "big", "absent"};
    for (size_t i = 0; i < 4; i++) {
        r = req_with_body("application/json", "{}");
        cr_assert_eq(seatd_json_get_int_or_reply(r, o, bad[i], 1, 3600, 1, &v), SEATD_EINVAL,
                     "case %s", bad[i]);
        char *d = detail_of(r);
        cr_assert(strstr(d, bad[i]));
        free(d);
        seatd_req_free(r);
    }
    cJSON_Delete(o);
}

Test(json, get_string_array_reads_seat_ids)
{
    cJSON *o = obj("{\"seatIds\":[\"C7\",\"C8\"],\"empty\":[],\"mixed\":[\"a\",1],"
                   "\"notarr\":\"C7\",\"many\":[\"a\",\"b\",\"c\"],\"longs\":[\"abcdef\"]}");
    const char **arr = NULL;
    size_t n = 0;
    seatd_req_t *r = req_with_body("application/json", "{}");
    cr_assert_eq(seatd_json_get_string_array_or_reply(r, o, "seatIds", 10, 16, &arr, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(arr[0], "C7");
    cr_assert_str_eq(arr[1], "C8");
    free(arr);
    cr_assert_eq(seatd_json_get_string_array_or_reply(r, o, "empty", 10, 16, &arr, &n), 0);
    cr_assert_eq(n, 0);
    free(arr);
    seatd_req_free(r);

    struct {
        const char *name;
        int err;
    } bad[] = {{"mixed", SEATD_EINVAL},
               {"notarr", SEATD_EINVAL},
               {"absent", SEATD_EINVAL},
               {"many", SEATD_EINVAL},
               {"longs", SEATD_EINVAL}};
    for (size_t i = 0; i < 5; i++) {
        r = req_with_body("application/json", "{}");
        cr_assert_eq(seatd_json_get_string_array_or_reply(r, o, bad[i].name, 2, 5, &arr, &n),
                     bad[i].err, "case %s", bad[i].name);
        cr_assert_null(arr);
        cr_assert_eq(status_of(r), 400);
        char *d = detail_of(r);
        cr_assert(strstr(d, bad[i].name));
        free(d);
        seatd_req_free(r);
    }
    cJSON_Delete(o);
}

Test(json, too_many_seat_ids_is_too_many_seats)
{
    cJSON *o = obj("{\"seatIds\":[\"A1\",\"A2\",\"A3\"]}");
    const char **arr = NULL;
    size_t n = 0;
    seatd_req_t *r = req_with_body("application/json", "{}");
    cr_assert_eq(seatd_json_get_string_array_or_reply(r, o, "seatIds", 2, 16, &arr, &n),
                 SEATD_ETOOMANY);
    cr_assert(strstr(seatd__req_response(r)->data, "too-many-seats"));
    seatd_req_free(r);
    cJSON_Delete(o);
}

/* The "invalidParams" member of the rendered problem (owned copy), or NULL. */
static cJSON *invalid_params_of(seatd_req_t *r)
{
    const char *body = strstr(seatd__req_response(r)->data, "\r\n\r\n");
    cr_assert_not_null(body);
    cJSON *doc = cJSON_Parse(body + 4);
    cJSON *p = cJSON_DetachItemFromObject(doc, "invalidParams");
    cJSON_Delete(doc);
    return p;
}

static void assert_param(const cJSON *params, int i, const char *name, const char *reason)
{
    const cJSON *p = cJSON_GetArrayItem(params, i);
    cr_assert(cJSON_IsObject(p), "invalidParams[%d] missing", i);
    cr_assert_str_eq(cJSON_GetObjectItem(p, "name")->valuestring, name);
    const char *got = cJSON_GetObjectItem(p, "reason")->valuestring;
    cr_assert(strstr(got, reason), "reason of %s: '%s' lacks '%s'", name, got, reason);
}

Test(json, a_check_names_every_bad_field_in_invalid_params)
{
    cJSON *o = obj("{\"n\":1.5,\"seatIds\":\"A1\",\"ok\":\"x\"}");
    seatd_req_t *r = req_with_body("application/json", "{}");
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const char *hold = NULL, *method = NULL, *ok = NULL, **arr = NULL;
    size_t n = 0;
    long long num = 7;
    seatd_json_check_string(&v, o, "holdId", 64, 1, &hold);
    seatd_json_check_string(&v, o, "paymentMethod", 64, 1, &method);
    seatd_json_check_string(&v, o, "ok", 64, 1, &ok);
    seatd_json_check_int(&v, o, "n", 1, 10, 1, &num);
    seatd_json_check_string_array(&v, o, "seatIds", 10, 16, &arr, &n);
    seatd_json_check_fail(&v, SEATD_EINVAL, "holdId", "twice", NULL); /* listed once */
    cr_assert_null(hold);
    cr_assert_null(method);
    cr_assert_str_eq(ok, "x", "good fields are still read");
    cr_assert_eq(num, 7, "a bad integer leaves the out value untouched");
    cr_assert_null(arr);
    cr_assert_eq(seatd_json_check_done_or_reply(&v, r), SEATD_EINVAL);
    cr_assert_null(v.params);
    cr_assert_eq(status_of(r), 400);
    char *d = detail_of(r);
    cr_assert_str_eq(d, "field 'holdId' is required", "the first field's detail, as before");
    free(d);
    cJSON *params = invalid_params_of(r);
    cr_assert_eq(cJSON_GetArraySize(params), 4);
    assert_param(params, 0, "holdId", "required");
    assert_param(params, 1, "paymentMethod", "required");
    assert_param(params, 2, "n", "must be an integer from 1 to 10");
    assert_param(params, 3, "seatIds", "must be an array of strings");
    cJSON_Delete(params);
    seatd_req_free(r);

    /* Nothing bad: no answer, 0. */
    r = req_with_body("application/json", "{}");
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, o, "ok", 64, 1, &ok);
    cr_assert_eq(seatd_json_check_done_or_reply(&v, r), 0);
    cr_assert_eq(seatd_req_is_finished(r), 0);
    seatd_req_free(r);
    cJSON_Delete(o);
}

Test(json, the_single_field_getters_list_their_field_too)
{
    cJSON *o = obj("{}");
    seatd_req_t *r = req_with_body("application/json", "{}");
    const char *s = NULL;
    cr_assert_eq(seatd_json_get_string_or_reply(r, o, "token", 64, 1, &s), SEATD_EINVAL);
    cJSON *params = invalid_params_of(r);
    cr_assert_eq(cJSON_GetArraySize(params), 1);
    assert_param(params, 0, "token", "required");
    cJSON_Delete(params);
    seatd_req_free(r);
    cJSON_Delete(o);
}

/* Human text: counted in characters (JSON Schema's maxLength), valid UTF-8 only, and no
 * control characters (a title printed on an operator's terminal cannot clear it or forge a
 * row of a table). */
Test(json, text_counts_characters_and_refuses_control_characters_and_bad_utf8)
{
    static const struct {
        const char *s;
        long chars;
    } cases[] = {
        {"Hamlet", 6},
        {"\xc3\xa9t\xc3\xa9", 3}, /* été */
        {"\xf0\x9f\x8e\xac", 1},  /* U+1F3AC */
        {"\xe2\x80\xae", 1},      /* U+202E (a format character, not a control) */
        {"a\nb", -1},             /* a line feed */
        {"\x1b[2J", -1},          /* ESC */
        {"a\x7f", -1},            /* DEL */
        {"\xc2\x9b", -1},         /* U+009B, C1 CSI */
        {"\xc3", -1},             /* cut short */
        {"\xc0\xaf", -1},         /* overlong */
        {"\xed\xa0\x80", -1},     /* a surrogate */
        {"\xf4\x90\x80\x80", -1}, /* beyond U+10FFFF */
        {"\x80", -1},             /* a continuation byte first */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_eq(seatd_json_text_chars(cases[i].s), cases[i].chars, "case %zu", i);

    char json[2048];
    char e101[2 * 101 + 1] = "", e100[2 * 100 + 1] = "";
    for (int i = 0; i < 101; i++)
        strcat(e101, "\xc3\xa9");
    memcpy(e100, e101, 200);
    snprintf(json, sizeof(json), "{\"a\":\"%s\",\"b\":\"%s\",\"c\":\"x\\u0007y\",\"d\":7}", e100,
             e101);
    cJSON *o = obj(json);
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    const char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *none = NULL;
    seatd_json_check_text(&v, o, "a", 100, 400, 1, &a);
    seatd_json_check_text(&v, o, "b", 100, 400, 1, &b);
    seatd_json_check_text(&v, o, "c", 100, 400, 1, &c);
    seatd_json_check_text(&v, o, "d", 100, 400, 1, &d);
    seatd_json_check_text(&v, o, "none", 100, 400, 0, &none);
    cr_assert_str_eq(a, e100, "100 characters of 2 bytes each fit");
    cr_assert_null(b);
    cr_assert_null(c);
    cr_assert_null(d);
    cr_assert_null(none);
    cr_assert(!seatd_json_check_failed(&v, "a"));
    cr_assert(seatd_json_check_failed(&v, "b"));
    cr_assert(seatd_json_check_failed(&v, "c"));
    cr_assert(seatd_json_check_failed(&v, "d"));
    cr_assert(!seatd_json_check_failed(&v, "none"));
    seatd_req_t *r = req_with_body("application/json", "{}");
    cr_assert_eq(seatd_json_check_done_or_reply(&v, r), SEATD_EINVAL);
    seatd_req_free(r);
    cJSON_Delete(o);
}
