/*
 * http.h - seatctl's HTTP client (libcurl, blocking): one call to the API as admin (the token
 * given or minted, http.c) or as a public read without a token, its failures settled (printed,
 * and the exit status returned), and a successful answer printed.
 *
 * seatctl_http_init() once before the first call, seatctl_http_cleanup() after the last; one
 * thread.
 */
#ifndef SEATD_SEATCTL_HTTP_H
#define SEATD_SEATCTL_HTTP_H

#include "seatctl.h"

#define SEATCTL_HTTP_ERR_MAX 256 /* libcurl's CURL_ERROR_SIZE */

typedef struct seatctl_http_res_s {
    long status;                    /* 0: no answer */
    char *body;                     /* owned, NUL-terminated */
    size_t len;                     /* of 'body' */
    cJSON *json;                    /* the body parsed, or NULL; owned */
    char err[SEATCTL_HTTP_ERR_MAX]; /* why no answer came */
} seatctl_http_res_t;

/* Starts and ends libcurl for the process. */
void seatctl_http_init(void);
void seatctl_http_cleanup(void);

/* Frees what 'res' (borrowed) owns. */
void seatctl_http_res_free(seatctl_http_res_t *res);

/* 'method' 'path' with 'body' (JSON, borrowed, may be NULL) as admin. Returns -1 when the call
 * succeeded (a 2xx; 'res' holds the answer, freed with seatctl_http_res_free()), else the exit
 * status, the failure printed and 'res' freed. */
int seatctl_http_admin(const seatctl_opts_t *o, const char *method, const char *path,
                       const char *body, seatctl_http_res_t *res);

/* A public read: GET 'path' with no token. Returns as seatctl_http_admin(). */
int seatctl_http_public(const seatctl_opts_t *o, const char *path, seatctl_http_res_t *res);

/* Prints a successful answer: its JSON with --json, else the record. Frees 'res'. Returns
 * EXIT_OK. */
int seatctl_print_answer(const seatctl_opts_t *o, seatctl_http_res_t *res);

#endif
