/*
 * json.h - thin helpers over cJSON: parse a text with limits (depth, duplicate names) and
 * say where it is wrong; validate an object's fields, collecting every bad one. What answers
 * a request with the outcome (the _or_reply functions) is json_reply.h, a floor higher in
 * spirit: this file knows nothing of requests, so that auth.c can parse a token's JSON
 * without a circle through the request.
 *
 * Pure: no I/O. cJSON trees follow cJSON's ownership rules (see STYLE "Contracts").
 */
#ifndef SEATD_JSON_H
#define SEATD_JSON_H

#include <stddef.h>

#include "base/errors.h"

struct cJSON;

#define SEATD_JSON_MAX_DEPTH 16 /* nesting of objects and arrays in a request body */

/*
 * Parses 'text' ('len' bytes, borrowed) with the depth limit. Returns 0 and an owned '*out'
 * (cJSON_Delete it), or SEATD_EBADJSON (syntax, depth, trailing bytes, NUL bytes, and any
 * "\u0000" escape: cJSON's strings are NUL-terminated, so "alice\u0000evil" would read as
 * "alice"; refusing it here means no string of a parsed tree is ever shorter than sent), and
 * an object that names a member twice (cJSON's getters read the first, others the last).
 * Every JSON seatd reads from outside (bodies, JWT header and claims) goes through here.
 */
SEATD_MUSTCHECK int seatd_json_parse(const char *text, size_t len, struct cJSON **out);

/* Where and why a text is not JSON seatd accepts (seatd_json_parse_why()). */
typedef struct seatd_json_error_s {
    const char *what; /* static: "a syntax error", "a \\u0000 escape", ... */
    int has_position; /* 0: no one place is at fault (a member named twice) */
    size_t offset;    /* the byte at fault, from 0 */
    size_t line;      /* its line, from 1 */
    size_t column;    /* its column in bytes, from 1 */
    char member[40];  /* a member named twice: its name when short and plain ASCII, else "" */
} seatd_json_error_t;

/* As seatd_json_parse(), and on failure '*err' says what is wrong and where (the position
 * cJSON's parser stopped at, or the byte seatd's own checks refused). */
SEATD_MUSTCHECK int seatd_json_parse_why(const char *text, size_t len, struct cJSON **out,
                                         seatd_json_error_t *err);

/*
 * Validation that reports every bad field of a body at once (RFC 9457 "invalidParams"):
 *
 *     seatd_json_check_t v;
 *     seatd_json_check_init(&v);
 *     seatd_json_check_string(&v, body, "holdId", 64, 1, &hold_id);
 *     seatd_json_check_string(&v, body, "paymentMethod", 64, 1, &method);
 *     if (seatd_json_check_done_or_reply(&v, r) < 0)
 *         return 0;   (answered 400, every bad field named; 'v' is cleared)
 *
 * The check_* functions record a failure and go on (a field that failed leaves its out value
 * NULL, or untouched for integers). The answer's "detail" is the first bad field's, worded as
 * the single-field getters below word it; its type is the first failure's code; and
 * "invalidParams" lists each bad field once, in the order checked:
 * [{"name":"holdId","reason":"required"},{"name":"paymentMethod","reason":"required"}].
 * Pure until done_or_reply; seatd_json_check_clear() drops a check that is not answered.
 */
typedef struct seatd_json_check_s {
    int err;              /* the first failure's code; 0 while none */
    char detail[256];     /* the first failure's detail */
    struct cJSON *params; /* owned: the invalidParams array; NULL while none */
} seatd_json_check_t;

void seatd_json_check_init(seatd_json_check_t *v);
/* Frees what 'v' holds (a check that will not be answered). */
void seatd_json_check_clear(seatd_json_check_t *v);
/* 1 when field 'name' has already failed. */
int seatd_json_check_failed(const seatd_json_check_t *v, const char *name);
/*
 * Records that field 'name' (borrowed) is bad with code 'err' (a negative SEATD_E*) for
 * 'reason' (borrowed, e.g. "required", "must be …"). 'detail' (borrowed, may be NULL: then
 * "field '<name>' <reason>") becomes the answer's detail if this is the first failure. A field
 * is listed once (a second failure of the same field is ignored). Returns 'err'.
 */
int seatd_json_check_fail(seatd_json_check_t *v, int err, const char *name, const char *reason,
                          const char *detail);
/* As seatd_json_get_string_or_reply(), recording instead of answering. */
int seatd_json_check_string(seatd_json_check_t *v, const struct cJSON *obj, const char *name,
                            size_t maxlen, int required, const char **out);
/* A human text (a title, a name): as seatd_json_check_string(), and valid UTF-8 of 1 to
 * 'max_chars' characters (code points: JSON Schema's maxLength) and at most 'max_bytes'
 * bytes, without control characters (U+0000-U+001F, U+007F-U+009F: a terminal or a log that
 * shows the text must not be steered by it). */
int seatd_json_check_text(seatd_json_check_t *v, const struct cJSON *obj, const char *name,
                          size_t max_chars, size_t max_bytes, int required, const char **out);
/* The number of characters of 's' (0 < its length), or -1 when it is not valid UTF-8 (overlong
 * forms, surrogates and code points above U+10FFFF are not) or holds a control character. */
long seatd_json_text_chars(const char *s);
/* As seatd_json_get_int_or_reply(), recording instead of answering. */
int seatd_json_check_int(seatd_json_check_t *v, const struct cJSON *obj, const char *name,
                         long long min, long long max, int required, long long *out);
/* As seatd_json_get_string_array_or_reply(), recording instead of answering. */
int seatd_json_check_string_array(seatd_json_check_t *v, const struct cJSON *obj, const char *name,
                                  size_t max_items, size_t max_len, const char ***arr, size_t *n);
#endif
