/*
 * errors.h - the one table of seatd error codes.
 *
 * Every function that can fail returns 0 or a negative SEATD_E* code. Each code is one row
 * of SEATD_ERRNO_MAP, which also gives its HTTP status, the stable RFC 9457 problem `type`
 * slug, the word a Lua script uses for it in `redis.error_reply("<WORD> detail")`, and a
 * human message. Mapping to HTTP happens only through seatd_err_http_status().
 *
 * Pure: no I/O, no allocation, safe from any thread.
 */
#ifndef SEATD_ERRORS_H
#define SEATD_ERRORS_H

#if defined(__GNUC__)
#define SEATD_MUSTCHECK __attribute__((warn_unused_result))
#else
#define SEATD_MUSTCHECK
#endif

/* XX(name, http status, problem type slug, Lua error word, message) */
#define SEATD_ERRNO_MAP(XX)                                                                        \
    XX(INVAL, 400, "bad-request", "INVAL", "the request is invalid")                               \
    XX(BADJSON, 400, "malformed-json", "BADJSON", "the body is not valid JSON of the right shape") \
    XX(BADSEAT, 400, "invalid-seat-id", "BADSEAT", "a seat id is malformed")                       \
    XX(DUPSEAT, 400, "duplicate-seat", "DUPSEAT", "a seat id appears twice")                       \
    XX(EMPTY, 400, "empty-seat-set", "EMPTY", "no seats were asked for")                           \
    XX(TOOMANY, 400, "too-many-seats", "TOOMANY", "too many seats in one hold")                    \
    XX(UNKNOWNSEAT, 400, "unknown-seat", "UNKNOWN_SEAT", "a seat is not in this show's layout")    \
    XX(UNKNOWNAREA, 400, "unknown-area", "UNKNOWN_AREA", "an area is not in this show")            \
    XX(BADID, 400, "invalid-id", "BADID", "an id is malformed")                                    \
    XX(WEAKPASSWORD, 400, "weak-password", "WEAK_PASSWORD",                                        \
       "the password is one of the most common passwords")                                         \
    XX(UNAUTH, 401, "unauthorized", "UNAUTH", "a valid bearer token is required")                  \
    XX(CREDENTIALS, 401, "invalid-credentials", "CREDENTIALS", "the email or password is wrong")   \
    XX(TOKEN, 401, "invalid-refresh-token", "TOKEN",                                               \
       "the refresh token is unknown, expired, used or revoked")                                   \
    XX(DECLINED, 402, "payment-declined", "DECLINED", "the payment was declined")                  \
    XX(FORBIDDEN, 403, "forbidden", "FORBIDDEN", "this route needs another role")                  \
    XX(QUEUEREQUIRED, 403, "queue-required", "QUEUE_REQUIRED",                                     \
       "this show sells through its waiting room: a valid admission is required")                  \
    XX(NOSHOW, 404, "show-not-found", "NOSHOW", "no such show")                                    \
    XX(NOTFOUND, 404, "not-found", "NOTFOUND", "no such resource")                                 \
    XX(NOROUTE, 404, "no-route", "NOROUTE", "no such route")                                       \
    XX(NOQUEUE, 404, "no-queue", "NO_QUEUE", "this show has no waiting room")                      \
    XX(METHOD, 405, "method-not-allowed", "METHOD", "method not allowed on this route")            \
    XX(CONFLICT, 409, "seat-conflict", "CONFLICT", "seats were already taken")                     \
    XX(NOBLOCK, 409, "no-block-available", "NO_BLOCK", "no block of adjacent seats is free")       \
    XX(ORPHANSEAT, 409, "orphan-seat", "ORPHAN_SEAT", "the hold would leave a single seat alone")  \
    XX(NOTFORSALE, 409, "seat-not-for-sale", "NOT_FOR_SALE",                                       \
       "seats are kept for a sales channel the token does not carry")                              \
    XX(AREASOLDOUT, 409, "area-sold-out", "AREA_SOLD_OUT",                                         \
       "a standing area has fewer places free than asked")                                         \
    XX(STATE, 409, "invalid-state", "STATE", "the resource is not in a state that allows this")    \
    XX(INFLIGHT, 409, "idempotency-key-in-flight", "INFLIGHT",                                     \
       "a request with this idempotency key is still in progress")                                 \
    XX(EXISTS, 409, "already-exists", "EXISTS", "the resource already exists")                     \
    XX(EMAILTAKEN, 409, "email-taken", "EMAIL_TAKEN", "an account with this email already exists") \
    XX(SALESCLOSED, 409, "sales-closed", "SALES_CLOSED", "sales for this show have closed")        \
    XX(EXPIRED, 410, "hold-expired", "EXPIRED", "the hold has expired")                            \
    XX(TOOLARGE, 413, "body-too-large", "TOOLARGE", "the request body is too large")               \
    XX(MEDIATYPE, 415, "unsupported-media-type", "MEDIATYPE", "the body must be application/json") \
    XX(IDEMMISMATCH, 422, "idempotency-key-reuse", "IDEM_MISMATCH",                                \
       "this idempotency key was used with a different request")                                   \
    XX(LIMIT, 422, "seat-limit", "LIMIT", "the per-user seat limit for this show is reached")      \
    XX(RATELIMIT, 429, "rate-limited", "RATELIMIT", "too many requests")                           \
    XX(HDRTOOLARGE, 431, "headers-too-large", "HDRTOOLARGE", "request headers are too large")      \
    XX(INTERNAL, 500, "internal", "INTERNAL", "internal error")                                    \
    XX(UNPRICED, 500, "unpriced", "UNPRICED", "the show's seat prices are not in the store")       \
    XX(PROTO, 502, "bad-upstream-reply", "PROTO", "an upstream answered something unexpected")     \
    XX(PAYMENT, 502, "payment-error", "PAYMENT", "the payment gateway failed")                     \
    XX(UNAVAILABLE, 503, "unavailable", "UNAVAILABLE", "the store is unavailable, retry later")    \
    XX(OVERLOAD, 503, "overloaded", "OVERLOAD", "too many requests are queued, retry later")       \
    XX(SHUTDOWN, 503, "shutting-down", "SHUTDOWN", "the worker is shutting down")                  \
    XX(TIMEOUT, 503, "timeout", "TIMEOUT", "an upstream did not answer in time, retry later")      \
    XX(NOTDURABLE, 503, "not-durable", "NOTDURABLE",                                               \
       "the change did not reach a replica in time, retry later")

enum seatd_errno_e {
    SEATD_OK = 0,
    SEATD__EBASE = -1000, /* keeps our codes clear of -errno values */
#define SEATD_ERRNO_ENUM(name, status, type, word, msg) SEATD_E##name,
    SEATD_ERRNO_MAP(SEATD_ERRNO_ENUM)
#undef SEATD_ERRNO_ENUM
        SEATD__ELAST
};

/* The HTTP status for 'err' (a negative SEATD_E* code); 500 for anything unknown. */
int seatd_err_http_status(int err);

/* The stable problem type slug for 'err', e.g. "seat-conflict". Returns a static string. */
const char *seatd_err_type(int err);

/* The human message for 'err'. Returns a static string. */
const char *seatd_err_message(int err);

/* The symbolic name of 'err', e.g. "CONFLICT". Returns a static string. */
const char *seatd_err_name(int err);

/*
 * Maps the first word of a Lua error reply (e.g. "CONFLICT C7 C8") to its code.
 * 'word' is borrowed and need not be NUL-terminated: 'len' bytes are read.
 * Returns SEATD_EINTERNAL when the word is not in the table.
 */
int seatd_err_from_lua_word(const char *word, unsigned long len);

#endif
