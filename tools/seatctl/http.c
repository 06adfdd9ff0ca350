/*
 * http.c - seatctl's HTTP client (http.h): one blocking libcurl call, as admin with the token
 * given or minted from the JWT secret, or as a public read; a non-2xx answer printed as the
 * problem's title and detail (with --json the problem itself).
 */
#include "http.h"
#include "http/auth.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADMIN_TOKEN_TTL_S 300 /* a minted admin token lives 5 minutes */

_Static_assert(SEATCTL_HTTP_ERR_MAX >= CURL_ERROR_SIZE, "libcurl's error buffer fits");

void seatctl_http_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void seatctl_http_cleanup(void)
{
    curl_global_cleanup();
}

/* ---------------------------------------------------------------------------------------
 * HTTP (libcurl)
 * --------------------------------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *data)
{
    seatctl_http_res_t *res = data;
    size_t add = size * n;
    char *b = realloc(res->body, res->len + add + 1);
    if (!b)
        return 0;
    memcpy(b + res->len, p, add);
    res->len += add;
    b[res->len] = '\0';
    res->body = b;
    return add;
}

void seatctl_http_res_free(seatctl_http_res_t *res)
{
    free(res->body);
    cJSON_Delete(res->json);
}

/* The admin token: --token, $SEATD_TOKEN, or minted from the JWT secret (seatctl_jwt_secret());
 * the runtime folder's only when 'may_use_run'. Owned, or NULL with 'why' set. */
static char *admin_token(const seatctl_opts_t *o, int may_use_run, char *why, size_t whylen)
{
    const char *t = o->token ? o->token : getenv("SEATD_TOKEN");
    if (t && t[0])
        return strdup(t);
    char secret[SECRET_FILE_MAX], err[512];
    if (seatctl_jwt_secret(may_use_run, secret, sizeof secret, err, sizeof err) < 0) {
        snprintf(why, whylen,
                 "no admin token (%.120s): give --token, or set SEATD_TOKEN, SEATD_JWT_SECRET, "
                 "or the stack's SEATD_PORT / SEATD_RUN_DIR",
                 err);
        return NULL;
    }
    seatd_auth_t *auth = NULL;
    char *token = NULL;
    if (seatd_auth_new(secret, strlen(secret), &auth) < 0 ||
        seatd_auth_sign(auth, "seatctl", 1, ADMIN_TOKEN_TTL_S, &token) < 0)
        snprintf(why, whylen, "cannot mint an admin token from the JWT secret");
    memset(secret, 0, sizeof secret);
    seatd_auth_free(auth);
    return token;
}

/* 'method' 'path' with 'body' (JSON, may be NULL): as admin, or with no token at all for a
 * public read ('public_read'). Returns 0 when an answer came (any status), -1 otherwise
 * ('res->err' says why). */
static int http_call(const seatctl_opts_t *o, const char *method, const char *path,
                     const char *body, int public_read, seatctl_http_res_t *res)
{
    memset(res, 0, sizeof *res);
    char base[2048];
    const char *explicit = seatctl_api_url(o, base, sizeof base);
    char *token = NULL;
    if (!public_read)
        token = admin_token(o, !explicit || seatctl_stack.run_given, res->err, sizeof res->err);
    seatctl_announce(strncmp(base, "http://", 7) == 0 ? base + 7 : base, explicit);
    if (!public_read && !token)
        return -1;
    char url[4096], auth[4096];
    snprintf(url, sizeof url, "%s%s", base, path);
    if (token)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    free(token);
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(res->err, sizeof res->err, "libcurl failed to start");
        return -1;
    }
    struct curl_slist *h = public_read ? NULL : curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Accept: application/json");
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, res);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, res->err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body || strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
    else if (!res->err[0])
        snprintf(res->err, sizeof res->err, "%s", curl_easy_strerror(cc));
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK)
        return -1;
    if (res->body)
        res->json = cJSON_ParseWithLength(res->body, res->len);
    return 0;
}

/*
 * Runs one call (as admin, or a public read without a token) and settles the failures: no
 * answer, or a non-2xx status (the problem's title and detail on stderr; with --json the
 * problem itself on stdout). Returns -1 when the call succeeded ('res' holds the answer, to
 * be freed), else the exit status.
 */
static int http_generic(const seatctl_opts_t *o, const char *method, const char *path,
                        const char *body, int public_read, seatctl_http_res_t *res)
{
    if (http_call(o, method, path, body, public_read, res) < 0) {
        int rc = seatctl_fail(o, "%s %s: %s", method, path, res->err);
        seatctl_http_res_free(res);
        return rc;
    }
    if (res->status >= 200 && res->status < 300)
        return -1;
    const char *title = seatctl_tstr(res->json, "title"),
               *detail = seatctl_tstr(res->json, "detail");
    fprintf(stderr, "seatctl: %s %s: %ld %s%s%s\n", method, path, res->status,
            title[0] ? title : "failed", detail[0] ? ": " : "", detail);
    if (!public_read && (res->status == 401 || res->status == 403))
        fprintf(stderr, "seatctl: the token is not an admin token of this stack\n");
    if (o->json) {
        if (res->json) {
            seatctl_print_json(res->json);
            res->json = NULL;
        } else {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "status", (double)res->status);
            cJSON_AddStringToObject(j, "error", "no JSON answer");
            seatctl_print_json(j);
        }
    }
    seatctl_http_res_free(res);
    return EXIT_FAIL;
}

int seatctl_http_admin(const seatctl_opts_t *o, const char *method, const char *path,
                       const char *body, seatctl_http_res_t *res)
{
    return http_generic(o, method, path, body, 0, res);
}

/* A public read (GET, no token). */
int seatctl_http_public(const seatctl_opts_t *o, const char *path, seatctl_http_res_t *res)
{
    return http_generic(o, "GET", path, NULL, 1, res);
}
/* Prints a successful answer: its JSON with --json, else the record. */
int seatctl_print_answer(const seatctl_opts_t *o, seatctl_http_res_t *res)
{
    if (o->json) {
        seatctl_print_json(res->json ? res->json : cJSON_CreateObject());
        res->json = NULL;
    } else {
        seatctl_print_record(res->json);
    }
    seatctl_http_res_free(res);
    return EXIT_OK;
}
