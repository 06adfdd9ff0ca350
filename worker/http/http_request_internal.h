/*
 * http_request_internal.h - what the files of the request module share: the request object's
 * layout and the helpers one file calls in another. Not an interface: include it only from
 * http_request.c (the parser), http_request_object.c (the object, its accessors and the
 * server glue), http_response.c (rendering) and http_problem.c (problem+json); everything
 * else goes through http_request.h. The parser's own state (seatd_req_parser_t, which embeds
 * http-parser's) stays in http_request.c, the one file that includes <http_parser.h>.
 */
#ifndef SEATD_HTTP_REQUEST_INTERNAL_H
#define SEATD_HTTP_REQUEST_INTERNAL_H

#include <stddef.h>

#include "base/buf.h"
#include "http/auth.h"
#include "http/http_request.h"
#include "http/router.h"

typedef struct {
    size_t name_off; /* offset of the NUL-terminated, lower-cased name in 'hdrbuf' */
    size_t val_off;  /* offset of the NUL-terminated, trimmed value in 'hdrbuf' */
    size_t name_len; /* bytes of the name */
    size_t val_len;  /* bytes of the value as received (before trimming) */
} hdr_t;

/* An owned string handed out by seatd_req_query(), freed with the request. */
typedef struct strnode_s {
    struct strnode_s *next; /* next node or NULL */
    char s[];               /* NUL-terminated */
} strnode_t;

struct seatd_req_s {
    /* The request as parsed. */
    char method[16];                   /* "GET", … */
    unsigned short http_major;         /* 1 */
    unsigned short http_minor;         /* 0 or 1 */
    int keep_alive;                    /* http_should_keep_alive() after the headers */
    seatd_buf_t url;                   /* the raw request target */
    char *raw_path;                    /* owned; the path of 'url', still encoded */
    char *path;                        /* owned; 'raw_path' percent-decoded */
    char *query;                       /* owned; the raw query string or NULL */
    seatd_buf_t hdrbuf;                /* header names and values, NUL-separated */
    hdr_t hdrs[SEATD_REQ_MAX_HEADERS]; /* offsets into 'hdrbuf' */
    size_t nhdrs;                      /* used entries of 'hdrs' */
    seatd_buf_t body;                  /* the de-chunked body */
    char id[SEATD_REQ_ID_MAX + 1];     /* the request id */
    strnode_t *strings;                /* decoded query values handed out */

    /* Routing and auth. */
    const seatd_route_t *route;                         /* borrowed from the route table */
    size_t nparams;                                     /* used entries of 'params' */
    seatd_route_param_t params[SEATD_ROUTE_MAX_PARAMS]; /* decoded path parameters */
    seatd_principal_t principal;                        /* valid when 'has_principal' */
    int has_principal;                                  /* 1 once auth succeeded */
    void *app;                                          /* the application context */

    /* The response. */
    seatd_buf_t resp_headers; /* "Name: value\r\n" lines added by the handler */
    seatd_buf_t response;     /* the rendered response, taken by the server */
    int status;               /* the answered status, 0 before finish */
    int force_close;          /* the server asked for Connection: close */

    /* Lifecycle (STYLE rule 19). */
    unsigned pending;              /* operations in flight */
    unsigned finished : 1;         /* a finish ran */
    unsigned detached : 1;         /* the client went away before the finish */
    unsigned owned : 1;            /* the connection (or parser caller) still owns it */
    seatd_req_finish_cb finish_cb; /* the server's hook, or NULL */
    void *finish_data;             /* passed to 'finish_cb' */
};

/* ---------------------------------------------------------------- http_request.c */

char *req__pct_decode(const char *in, size_t len, int plus);
void req__generate_id(char *out);

/* ---------------------------------------------------------------- http_request_object.c */

seatd_req_t *req__new(void);

/* ---------------------------------------------------------------- http_response.c */

const char *req__reason(int status);

#endif
