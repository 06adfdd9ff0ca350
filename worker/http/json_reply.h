/*
 * json_reply.h - a request's JSON body parsed and its fields validated, the request answered
 * 400/415 on failure (problem+json with a detail naming the field and "invalidParams" listing
 * it). The parsing and the checks themselves are json.h's.
 *
 * Functions ending in _or_reply answer the request themselves on failure and return a negative
 * SEATD_E*. A handler may simply return that code: the pipeline sees the request is already
 * answered and does not answer again.
 *
 *     cJSON *body = NULL;
 *     int rc = seatd_json_parse_body_or_reply(r, &body);
 *     if (rc < 0)
 *         return rc;   (already answered 400/415)
 *     ...
 *     cJSON_Delete(body);
 *
 * (Inside an asynchronous callback there is no pipeline: just return after an _or_reply.)
 */
#ifndef SEATD_JSON_REPLY_H
#define SEATD_JSON_REPLY_H

#include <stddef.h>

#include "base/errors.h"
#include "http/json.h"

typedef struct seatd_req_s seatd_req_t;
struct cJSON;

/*
 * Parses the request body into an owned '*out' (cJSON_Delete it). The body must be present,
 * sent with Content-Type application/json (parameters such as charset allowed; else 415
 * unsupported-media-type), be valid JSON nested at most SEATD_JSON_MAX_DEPTH deep, and be an
 * object (else 400 malformed-json, whose detail says what is wrong and where: "line 1, column
 * 14 (byte 13)"). On failure the request is answered, '*out' is NULL and
 * the return is SEATD_EMEDIATYPE or SEATD_EBADJSON. A 415 names what is accepted
 * ("Accept-Post: application/json" on POST, "Accept-Patch" on PATCH).
 */
SEATD_MUSTCHECK int seatd_json_parse_body_or_reply(seatd_req_t *r, struct cJSON **out);

/*
 * Returns 0 when nothing failed. Otherwise answers 'r' with the first failure's problem
 * (its detail, plus "invalidParams") and returns that code. Either way 'v' is cleared.
 */
SEATD_MUSTCHECK int seatd_json_check_done_or_reply(seatd_json_check_t *v, seatd_req_t *r);

/*
 * Reads string member 'name' of 'obj' (borrowed). '*out' is borrowed from 'obj' (valid until
 * it is deleted), or NULL when absent and not 'required'. The string must be 1..'maxlen'
 * bytes ('maxlen' 0 means no limit) and contain no NUL. On failure (missing when required,
 * wrong type, empty, too long) the request is answered 400 bad-request with a detail naming
 * the field, and SEATD_EINVAL is returned.
 */
SEATD_MUSTCHECK int seatd_json_get_string_or_reply(seatd_req_t *r, const struct cJSON *obj,
                                                   const char *name, size_t maxlen, int required,
                                                   const char **out);

/*
 * Reads integer member 'name' of 'obj' into '*out' (left untouched when absent and not
 * 'required'). It must be a JSON number with no fractional part within ['min', 'max'].
 * On failure the request is answered 400 and SEATD_EINVAL is returned.
 */
SEATD_MUSTCHECK int seatd_json_get_int_or_reply(seatd_req_t *r, const struct cJSON *obj,
                                                const char *name, long long min, long long max,
                                                int required, long long *out);

/*
 * Reads array member 'name' of 'obj' (required) whose items are strings of 1..'max_len'
 * bytes. '*arr' is an owned array of '*n' pointers (free() it; the strings themselves are
 * borrowed from 'obj'). More than 'max_items' items is SEATD_ETOOMANY (400 too-many-seats)
 * when 'name' is "seatIds", else SEATD_EINVAL; an empty array is allowed (the caller decides).
 * On failure the request is answered 400 with a detail naming the field, '*arr' is NULL.
 */
SEATD_MUSTCHECK int seatd_json_get_string_array_or_reply(seatd_req_t *r, const struct cJSON *obj,
                                                         const char *name, size_t max_items,
                                                         size_t max_len, const char ***arr,
                                                         size_t *n);

#endif
