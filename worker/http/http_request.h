/*
 * http_request.h - one HTTP/1.1 request: parsing (sans-IO), accessors, and the response.
 *
 * Parsing: a connection owns one seatd_req_parser_t and feeds it the bytes it reads. The
 * parser (http-parser 2.9.4 underneath; only http_request.c includes it) builds a
 * seatd_req_t and hands it over when the whole message, body included, has arrived; it then
 * stops, leaving any pipelined bytes unconsumed until the connection feeds them again. Every
 * size is bounded (seatd_req_limits_t): the request line plus headers, the header count and
 * the body (Content-Length is checked before the body is read; chunked bodies are counted).
 *
 * Lifecycle of a request (STYLE rules 19 and 20): the connection owns the request while it
 * runs. A handler answers exactly once with seatd_req_finish*(); after a finish call 'r' may
 * already be freed and must not be touched. Asynchronous work brackets each operation with
 * seatd_req_hold() / seatd_req_release(): if the client goes away while operations are
 * pending, the request is detached; its callbacks then do `if (seatd_req_release(r)) return;`
 * and whoever brings the count to 0 frees it. A finish on a detached request is a no-op.
 *
 * Responses are rendered here (status line, Content-Type, Content-Length, Connection,
 * X-Request-Id, extra headers, body); the server only writes the bytes.
 *
 * No uv.h, no hiredis: pure apart from the request-id generator. Single-threaded.
 */
#ifndef SEATD_HTTP_REQUEST_H
#define SEATD_HTTP_REQUEST_H

#include <stddef.h>

#include "base/buf.h"
#include "base/errors.h"

typedef struct seatd_req_s seatd_req_t;
typedef struct seatd_req_parser_s seatd_req_parser_t;
typedef struct seatd_principal_s seatd_principal_t;
typedef struct seatd_route_s seatd_route_t;
typedef struct seatd_route_match_s seatd_route_match_t;
struct cJSON;

#define SEATD_REQ_MAX_HEADER 8192 /* default: request line + headers, bytes */
#define SEATD_REQ_MAX_HEADERS 100 /* default: header fields */
#define SEATD_REQ_MAX_BODY 16384  /* default: body bytes (after de-chunking) */
#define SEATD_REQ_ID_MAX 64       /* X-Request-Id: ^[A-Za-z0-9._-]{1,64}$ */

typedef struct seatd_req_limits_s {
    size_t max_header;  /* request line + headers in bytes; beyond -> 431 */
    size_t max_headers; /* header fields (at most SEATD_REQ_MAX_HEADERS); beyond -> 431 */
    size_t max_body;    /* body bytes; beyond -> 413 */
} seatd_req_limits_t;

/* ---------------------------------------------------------------------------------------
 * Accessors for handlers. Every string returned is borrowed until the request is freed.
 * --------------------------------------------------------------------------------------- */

/* "GET", "POST", "DELETE", … */
const char *seatd_req_method(const seatd_req_t *r);
/* The percent-decoded path, without the query string, e.g. "/v1/shows/42". */
const char *seatd_req_path(const seatd_req_t *r);
/* The raw request target as sent (path and query, still encoded). */
const char *seatd_req_target(const seatd_req_t *r);
/* The decoded value of query parameter 'name' ("page" in "?page=2"; '+' means space), the
 * first one if repeated, "" if present without '=', or NULL if absent or badly encoded. */
const char *seatd_req_query(const seatd_req_t *r, const char *name);
/* The first value of header 'name' (case-insensitive), or NULL. Values are trimmed. */
const char *seatd_req_header(const seatd_req_t *r, const char *name);
/* The body (after de-chunking), '*len' its length (may be NULL); never NULL (empty body ""). */
const char *seatd_req_body(const seatd_req_t *r, size_t *len);
/* The router's path parameter 'name' (decoded), or NULL. */
const char *seatd_req_param(const seatd_req_t *r, const char *name);
/* The request id: X-Request-Id if it matches ^[A-Za-z0-9._-]{1,64}$, else a generated one. */
const char *seatd_req_id(const seatd_req_t *r);
/* The matched route (NULL before routing or when none matched). */
const seatd_route_t *seatd_req_route(const seatd_req_t *r);
/* The authenticated principal, or NULL when the route needs no auth / before auth ran.
 * On AUTH routes handlers can rely on it being non-NULL. */
const seatd_principal_t *seatd_req_principal(const seatd_req_t *r);
/* The application context given to seatd_http_server_new() (or seatd__req_set_app()). */
void *seatd_req_app(const seatd_req_t *r);
/* 1 for HTTP/1.1 (and later), 0 for HTTP/1.0. */
int seatd_req_http_minor(const seatd_req_t *r);

/* ---------------------------------------------------------------------------------------
 * Answering. Exactly one finish per request (a second one is our bug: it asserts), except
 * that every finish on a detached request is a no-op. After a finish, 'r' may be freed.
 * --------------------------------------------------------------------------------------- */

/* Adds a response header; 'name' and 'value' are borrowed (copied). Content-Length,
 * Connection and X-Request-Id are set by the renderer and must not be added. CR/LF in either
 * string are replaced by spaces. */
void seatd_req_add_header(seatd_req_t *r, const char *name, const char *value);

/* Answers 'status' with 'body' ('len' bytes, borrowed: copied; may be NULL when 'len' is 0)
 * of 'content_type' (borrowed; NULL sends no Content-Type). */
void seatd_req_finish(seatd_req_t *r, int status, const char *content_type, const char *body,
                      size_t len);

/* Answers 'status' with 'root' serialised as application/json. Takes 'root' (freed here;
 * NULL sends an empty body with no content type, e.g. for 204). */
void seatd_req_finish_json(seatd_req_t *r, int status, struct cJSON *root);

/*
 * Answers the RFC 9457 problem for 'err' (a negative SEATD_E*) as application/problem+json:
 * {"type":"https://seatd.dev/problems/<slug>","title":<message>,"status":<status>,
 *  "detail":'detail' (omitted when NULL),"instance":<request path>, ...every member of 'extra'}.
 * Takes 'extra' (an object, may be NULL; e.g. {"conflictingSeats":[...]}); 'detail' borrowed.
 * Adds "Retry-After: 1" for 429 and 503 (unless a Retry-After was added), "WWW-Authenticate:
 * Bearer" for 401 (unless a WWW-Authenticate was added).
 */
void seatd_req_finish_problem(seatd_req_t *r, int err, const char *detail, struct cJSON *extra);
/* The same with the extra members already written: 'members' is JSON text of object members
 * without braces ("\"name\":value,…", borrowed, may be NULL or ""), appended as they are. For
 * the hot answers (a conflict), which need no JSON tree. */
void seatd_req_finish_problem_members(seatd_req_t *r, int err, const char *detail,
                                      const char *members);

/* 1 once seatd_req_finish*() has been called (and the request is not detached). */
int seatd_req_is_finished(const seatd_req_t *r);

/* ---------------------------------------------------------------------------------------
 * Asynchronous operations (STYLE rule 19).
 * --------------------------------------------------------------------------------------- */

/* Counts one more pending operation on 'r'. Call when the operation was accepted. */
void seatd_req_hold(seatd_req_t *r);
/*
 * Counts one pending operation as done. Returns 1 if the request no longer wants an answer
 * (the client went away, or it was already answered): the caller must return at once
 * without touching 'r', which has been freed if this was its last pending operation.
 * Returns 0 otherwise: 'r' is alive and still waits for its one finish.
 */
int seatd_req_release(seatd_req_t *r);
/* 1 if the client has gone away (the connection closed) while the request was pending. */
int seatd_req_is_detached(const seatd_req_t *r);

/* ---------------------------------------------------------------------------------------
 * Parser (sans-IO): used by http_server.c and tests.
 * --------------------------------------------------------------------------------------- */

/* Returns an owned parser (freed with seatd_req_parser_free()). 'limits' is copied; NULL
 * or zero fields mean the SEATD_REQ_MAX_* defaults. */
seatd_req_parser_t *seatd_req_parser_new(const seatd_req_limits_t *limits);

/*
 * Lets one route ('method' and exact raw 'path', e.g. POST /v1/shows, whose body is a whole
 * seat layout) carry bodies up to 'max' bytes instead of the parser's max_body. Process-wide
 * configuration: call once at start-up, before any parser runs. Strings are copied.
 */
void seatd_req_set_large_body_route(const char *method, const char *path, size_t max);
/* Frees 'p' and the request it is building, if any. NULL is a no-op. */
void seatd_req_parser_free(seatd_req_parser_t *p);

/*
 * Feeds 'len' bytes of 'data' (borrowed). '*consumed' is set to the bytes used; the caller
 * drops them and feeds the rest later (after the returned request is finished).
 * Returns:
 *   0 with '*out' NULL: everything was consumed, more bytes are needed;
 *   0 with '*out' set: a complete request (owned by the caller, see seatd_req_free()); the
 *     bytes after it were not consumed (pipelining);
 *   SEATD_EINVAL (malformed: answer 400), SEATD_EHDRTOOLARGE (431), SEATD_ETOOLARGE (413):
 *     the connection cannot continue; answer with seatd_req_parser_error_response() and close.
 */
SEATD_MUSTCHECK int seatd_req_parser_feed(seatd_req_parser_t *p, const char *data, size_t len,
                                          size_t *consumed, seatd_req_t **out);
/* 1 when the parser has started a message that is not complete yet (bytes are pending). */
int seatd_req_parser_in_message(const seatd_req_parser_t *p);
/* 1 when the current message's headers are complete (the body is being read). */
int seatd_req_parser_in_body(const seatd_req_parser_t *p);
/* Returns 1, once, when the current message announced "Expect: 100-continue" and its
 * headers are complete: the server then writes "HTTP/1.1 100 Continue\r\n\r\n". */
int seatd_req_parser_take_continue(seatd_req_parser_t *p);
/* Tells the parser the connection reached EOF. Returns 0 if no message was in progress. */
int seatd_req_parser_eof(seatd_req_parser_t *p);

/* Appends a complete "Connection: close" problem response for 'err' to 'out': for parser
 * errors, and for connections refused before any request (503 with Retry-After). */
void seatd_req_parser_error_response(int err, seatd_buf_t *out);

/* ---------------------------------------------------------------------------------------
 * Server glue (http_server.c). Not for handlers.
 * --------------------------------------------------------------------------------------- */

/* Called by a finish on a non-detached request, once the response is rendered into the
 * request. The hook must not free 'r': it calls seatd__req_disown() when it is done. */
typedef void (*seatd_req_finish_cb)(seatd_req_t *r, void *data);

/* Sets the finish hook and its data. */
void seatd__req_set_finish_cb(seatd_req_t *r, seatd_req_finish_cb cb, void *data);
/* Sets the application context returned by seatd_req_app(). */
void seatd__req_set_app(seatd_req_t *r, void *app);
/* Records the route and copies the path parameters of 'm' (borrowed). */
void seatd__req_set_route(seatd_req_t *r, const seatd_route_match_t *m);
/* Copies '*p' as the request's principal. */
void seatd__req_set_principal(seatd_req_t *r, const seatd_principal_t *p);
/* Asks the renderer to send "Connection: close" (the server will close after this reply). */
void seatd__req_set_close(seatd_req_t *r);
/* 1 if the connection must be closed after the response (client asked, HTTP/1.0 without
 * keep-alive, parser state, or seatd__req_set_close()). */
int seatd__req_wants_close(const seatd_req_t *r);
/* The rendered response of a finished request: borrowed until the request is freed. The
 * server moves it out with seatd_buf_steal(). */
seatd_buf_t *seatd__req_response(seatd_req_t *r);
/* The status of the rendered response (0 before finish). */
int seatd__req_status(const seatd_req_t *r);
/* The raw (still encoded) path, as the router wants it. */
const char *seatd__req_raw_path(const seatd_req_t *r);
/*
 * The connection lets go of 'r': it was answered, or the client went away (then the request
 * is marked detached). Frees 'r' now if no operation is pending; otherwise the last
 * seatd_req_release() frees it. Returns 1 if 'r' was freed.
 */
int seatd__req_disown(seatd_req_t *r);
/* Frees 'r' unconditionally (tests and parser error paths). NULL is a no-op. */
void seatd_req_free(seatd_req_t *r);

#endif
