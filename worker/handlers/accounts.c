/*
 * accounts.c - POST /v1/auth/register, /login, /refresh, /logout; GET /v1/me/holds and
 * /v1/me/bookings (issue 14).
 *
 * Passwords are hashed and verified on libuv's thread pool (passwd.h); every other step is one
 * store call. Each request carries one heap context (acct_op_t) through its steps, holding
 * the request across each step with common.h's seatd__step_begin() / seatd__step_end() on
 * op->r (NULL once nobody waits). A registration whose client left after the email was
 * claimed still writes the user record (the claim is a decision made); every other flow
 * stops at the first step that finds nobody waiting.
 *
 * No enumeration: an unknown email and a wrong password answer the same 401
 * invalid-credentials with the same body, after the same work (an unknown email is verified
 * against a dummy hash of the same cost), and both count against the email's failed-login
 * limit. Throttling (seatd_attempt counters): per client address (every login attempt) and per
 * email (failed logins: a success gives its attempt back); registrations per address.
 *
 * The client address is the X-Forwarded-For that nginx sets to $remote_addr
 * (nginx/seatd.conf.in overwrites, never appends): the worker listens on a unix socket or
 * loopback behind nginx, so the header is nginx's. Without it (a direct connection) the
 * address is "local".
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/account.h"
#include "app.h"
#include "http/auth.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json.h"
#include "domain/keys.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/passwd.h"
#include "http/router.h"

#define EMAIL_RAW_MAX 320 /* bytes of the email field before normalising */
#define ADDR_MAX 64
#define ME_HOLDS_MAX 50   /* index entries /v1/me/holds looks at per round */
#define ME_HOLDS_ROUNDS 4 /* rounds at most: a round that found dead entries reads on */
#define ME_BOOKINGS_DEFAULT 20
#define ME_BOOKINGS_MAX 100
#define HOLD_INDEX_RETAIN_MS (24LL * 3600 * 1000) /* holds live minutes; kept a day at most */

typedef struct acct_op_s {
    seatd_req_t *r;   /* NULL once nobody waits */
    seatd_app_t *app; /* borrowed */
    cJSON *body;      /* owned; 'password' points into it */
    const char *password;
    size_t password_len;
    char email[SEATD_ACCOUNT_EMAIL_MAX + 1];
    char name[4 * SEATD_ACCOUNT_NAME_MAX + 1];
    char user_id[65];
    char addr_key[SEATD_KEY_MAX];
    char acct_key[SEATD_KEY_MAX]; /* failed logins of the email, from every address */
    char pair_key[SEATD_KEY_MAX]; /* failed logins of the email from this address */
    char *hash;                   /* owned: the encoded hash (register) or the stored one (login) */
    int admin;
    int gate;                                  /* login: the counter being taken (GATE_*) */
    char token[SEATD_ACCOUNT_TOKEN_MAX];       /* the refresh token answered */
    char token_hash[SEATD_ACCOUNT_SHA256_HEX]; /* its SHA-256 */
    char old_hash[SEATD_ACCOUNT_SHA256_HEX];   /* refresh: the presented token's */
    char family[SEATD_ACCOUNT_FAMILY_ID_MAX];  /* login: the new family */
} acct_op_t;

static acct_op_t *op_new(seatd_req_t *r)
{
    acct_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->app = seatd__app(r);
    return op;
}

static void op_free(acct_op_t *op)
{
    cJSON_Delete(op->body);
    free(op->hash);
    free(op);
}

/* Answers 'err' if anybody waits, and frees 'op'. */
static void answer_problem(acct_op_t *op, int err, const char *detail)
{
    if (op->r)
        seatd_req_finish_problem(op->r, err, detail, NULL);
    op_free(op);
}

/* The step started with 'rc': on failure answers and frees 'op'. */
static void step_started(acct_op_t *op, int rc)
{
    if (seatd__step_begin(&op->r, rc) < 0)
        answer_problem(op, rc, NULL);
}

/* At the end of a store step: 1 (and 'op' freed) if nobody waits or the store failed
 * (answered). */
static int step_gone_or_failed(acct_op_t *op, const seatd_store_result_t *res)
{
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        op_free(op);
        return 1;
    }
    if (res->err) {
        seatd__reply_store_error(op->r, res);
        op_free(op);
        return 1;
    }
    return 0;
}

/* The client address of 'r' into 'out' (ADDR_MAX bytes): the last X-Forwarded-For element. */
static void client_addr(seatd_req_t *r, char *out)
{
    const char *h = seatd_req_header(r, "X-Forwarded-For");
    snprintf(out, ADDR_MAX, "local");
    if (h == NULL)
        return;
    const char *last = strrchr(h, ',');
    last = last ? last + 1 : h;
    while (*last == ' ' || *last == '\t')
        last++;
    size_t n = 0;
    while (last[n] && last[n] != ' ' && last[n] != '\t')
        n++;
    if (n == 0 || n >= ADDR_MAX)
        return;
    for (size_t i = 0; i < n; i++) {
        char c = last[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
              c == '.' || c == ':'))
            return;
    }
    snprintf(out, ADDR_MAX, "%.*s", (int)n, last);
}

/* 429 with Retry-After from a refused attempt. */
static void answer_throttled(acct_op_t *op, const seatd_store_result_t *res, const char *what)
{
    long long secs = (res->attempt.retry_after_ms + 999) / 1000;
    char ra[24], msg[128];
    snprintf(ra, sizeof(ra), "%lld", secs > 0 ? secs : 1);
    snprintf(msg, sizeof(msg), "too many %s; try again in %s s", what, ra);
    if (op->r)
        seatd_req_add_header(op->r, "Retry-After", ra);
    answer_problem(op, SEATD_ERATELIMIT, msg);
}

static void on_given_back(const seatd_store_result_t *res, void *data)
{
    (void)data;
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "login counter not given back; it expires", "\"err\":%d",
                  res->err);
}

/* Reads the body's "email" (normalised into op->email) and, when 'want_password', its
 * "password" (checked against the policy when 'policy'). Answers 400 and returns < 0 on a bad
 * field (every bad field named). */
static int read_credentials_or_reply(acct_op_t *op, int policy, int want_name)
{
    if (seatd_json_parse_body_or_reply(op->r, &op->body) < 0)
        return SEATD_EBADJSON;
    const char *email = NULL, *name = NULL;
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, op->body, "email", EMAIL_RAW_MAX, 1, &email);
    seatd_json_check_string(&v, op->body, "password", SEATD_ACCOUNT_PASSWORD_BYTES, 1,
                            &op->password);
    if (want_name)
        seatd_json_check_text(&v, op->body, "name", SEATD_ACCOUNT_NAME_MAX,
                              4 * SEATD_ACCOUNT_NAME_MAX, 0, &name);
    if (email && seatd_account_email_normalise(email, op->email) < 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "email", "must be an email address", NULL);
    if (op->password) {
        op->password_len = strlen(op->password);
        const char *why = NULL;
        int rc = seatd_account_password_check(op->password, op->password_len, &why);
        if (rc == SEATD_EINVAL || (policy && rc < 0))
            seatd_json_check_fail(&v, rc, "password", why, NULL);
    }
    if (name) {
        long n = seatd_account_utf8_length(name, strlen(name));
        if (n < 0)
            seatd_json_check_fail(&v, SEATD_EINVAL, "name", "must be UTF-8 text", NULL);
        else
            snprintf(op->name, sizeof(op->name), "%s", name);
    }
    return seatd_json_check_done_or_reply(&v, op->r);
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/register: validate -> per-address count -> hash (pool) -> claim the email
 * -> write the user.
 * --------------------------------------------------------------------------------------- */

static void on_email_released(const seatd_store_result_t *res, void *data)
{
    (void)res;
    (void)data;
}

static void on_user_created(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    seatd__step_end(&op->r);
    if (res->err) {
        /* The claim without its user would block the email for ever: give it back. */
        if (seatd_store_email_release(op->app->store, op->email, op->user_id, on_email_released,
                                      NULL) < 0)
            seatd_log(SEATD_LOG_WARN, NULL, "email claim not released", "\"userId\":\"%s\"",
                      op->user_id);
        if (op->r)
            seatd__reply_store_error(op->r, res);
        op_free(op);
        return;
    }
    seatd_log(SEATD_LOG_INFO, NULL, "account registered", "\"userId\":\"%s\"", op->user_id);
    if (op->r) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "userId", res->account.user_id);
        cJSON_AddStringToObject(o, "email", res->account.email);
        cJSON_AddStringToObject(o, "name", res->account.name);
        if (res->account.admin)
            cJSON_AddBoolToObject(o, "admin", 1);
        seatd_req_finish_json(op->r, 201, o);
    }
    op_free(op);
}

static void on_email_claimed(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    seatd__step_end(&op->r);
    if (res->err) {
        if (op->r)
            seatd__reply_store_error(op->r, res);
        op_free(op);
        return;
    }
    /* Claimed: the user record is written even if the client has left. */
    seatd_user_args_t a = {.user_id = op->user_id,
                           .email = op->email,
                           .name = op->name,
                           .hash = op->hash,
                           .admin = op->admin};
    step_started(op, seatd_store_user_create(op->app->store, &a, on_user_created, op));
}

static void on_hashed(int err, const char *encoded, void *data)
{
    acct_op_t *op = data;
    if (seatd__step_end(&op->r)) {
        op_free(op);
        return;
    }
    if (err) {
        answer_problem(op, SEATD_EINTERNAL, "the password could not be hashed");
        return;
    }
    op->hash = seatd_strdup(encoded);
    int rc = seatd_account_new_user_id(op->user_id);
    if (rc == 0)
        rc = seatd_store_email_claim(op->app->store, op->email, op->user_id, on_email_claimed, op);
    step_started(op, rc);
}

static void on_register_counted(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) {
        answer_throttled(op, res, "registrations from this address");
        return;
    }
    step_started(op,
                 seatd_passwd_hash(op->app->loop, op->password, op->password_len, on_hashed, op));
}

int seatd_handle_auth_register(seatd_req_t *r)
{
    acct_op_t *op = op_new(r);
    if (read_credentials_or_reply(op, 1, 1) < 0) {
        op_free(op);
        return 0;
    }
    char addr[ADDR_MAX];
    client_addr(r, addr);
    snprintf(op->addr_key, sizeof(op->addr_key), "seatd:register:addr:%s", addr);
    const seatd_config_t *cfg = op->app->cfg;
    step_started(op, seatd_store_attempt(op->app->store, op->addr_key, 1, cfg->register_per_addr,
                                         cfg->login_addr_window_ms, on_register_counted, op));
    return 0;
}

/* POST /v1/admin/users (role admin; `seatctl user create`): the same as a registration, with
 * "admin": true allowed and no per-address limit. */
int seatd_handle_admin_users_create(seatd_req_t *r)
{
    acct_op_t *op = op_new(r);
    if (read_credentials_or_reply(op, 1, 1) < 0) {
        op_free(op);
        return 0;
    }
    const cJSON *admin = cJSON_GetObjectItemCaseSensitive(op->body, "admin");
    if (admin && !cJSON_IsBool(admin)) {
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, SEATD_EINVAL, "admin", "must be true or false", NULL);
        int rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 */
        op_free(op);
        return rc;
    }
    op->admin = cJSON_IsTrue(admin);
    step_started(op,
                 seatd_passwd_hash(op->app->loop, op->password, op->password_len, on_hashed, op));
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Token pairs: login and refresh answer the same shape.
 * --------------------------------------------------------------------------------------- */

static void answer_pair(acct_op_t *op, const seatd_store_result_t *res)
{
    const seatd_config_t *cfg = op->app->cfg;
    char *jwt = NULL;
    int rc = seatd_auth_sign(op->app->auth, res->account.user_id, res->account.admin,
                             cfg->access_token_ttl_s, &jwt);
    if (rc < 0) {
        answer_problem(op, SEATD_EINTERNAL, "the access token could not be signed");
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "accessToken", jwt);
    cJSON_AddStringToObject(o, "refreshToken", op->token);
    cJSON_AddNumberToObject(o, "expiresIn", (double)cfg->access_token_ttl_s);
    cJSON_AddStringToObject(o, "tokenType", "Bearer");
    cJSON_AddStringToObject(o, "userId", res->account.user_id);
    seatd__json_add_time(o, "refreshExpiresAt", res->account.expires_at_ms);
    free(jwt);
    seatd_req_add_header(op->r, "Cache-Control", "no-store");
    seatd_req_finish_json(op->r, 200, o);
    op_free(op);
}

/* A fresh refresh token for op->user_id into op->token / op->token_hash. */
static int new_token(acct_op_t *op)
{
    int rc = seatd_account_new_refresh_token(op->user_id, op->token);
    if (rc == 0)
        seatd_account_sha256_hex(op->token, strlen(op->token), op->token_hash);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/login: validate -> per-address count -> per-email count -> email -> user
 * -> verify (pool; a dummy hash for an unknown email) -> session.
 * --------------------------------------------------------------------------------------- */

static void on_session_started(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    answer_pair(op, res);
}

static void on_verified(int ok, void *data)
{
    acct_op_t *op = data;
    if (seatd__step_end(&op->r)) {
        op_free(op);
        return;
    }
    if (!ok) {
        seatd_log(SEATD_LOG_INFO, NULL, "login failed", "\"userId\":\"%s\"",
                  op->user_id[0] ? op->user_id : "-");
        answer_problem(op, SEATD_ECREDENTIALS, "the email or password is wrong");
        return;
    }
    /* A success is not a failure: its attempts on the email's counters are given back. */
    if (seatd_store_attempt(op->app->store, op->pair_key, 0, 0, 0, on_given_back, NULL) < 0)
        on_given_back(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
    if (seatd_store_attempt(op->app->store, op->acct_key, 0, 0, 0, on_given_back, NULL) < 0)
        on_given_back(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
    int rc = seatd_account_new_family_id(op->family);
    if (rc == 0)
        rc = new_token(op);
    if (rc == 0)
        rc = seatd_store_session_start(op->app->store, op->user_id, op->family, op->token_hash,
                                       op->app->cfg->refresh_ttl_ms, on_session_started, op);
    step_started(op, rc);
}

static void verify(acct_op_t *op)
{
    step_started(op, seatd_passwd_verify(op->app->loop, op->hash, op->password, op->password_len,
                                         on_verified, op));
}

static void on_user_for_login(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        op_free(op);
        return;
    }
    if (res->err && res->err != SEATD_ENOTFOUND) {
        seatd__reply_store_error(op->r, res);
        op_free(op);
        return;
    }
    if (!res->err) {
        op->hash = seatd_strdup(res->account.hash);
        op->admin = res->account.admin;
    }
    verify(op);
}

static void on_email_for_login(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    snprintf(op->user_id, sizeof(op->user_id), "%s", res->account.user_id);
    if (!op->user_id[0] || !seatd_keys_valid_sub(op->user_id)) {
        op->user_id[0] = '\0';
        verify(op); /* unknown: the dummy hash, same cost */
        return;
    }
    step_started(op, seatd_store_user_get(op->app->store, op->user_id, on_user_for_login, op));
}

/* A login's counters, taken in this order before the password is checked: attempts from the
 * client address, then the email's failures twice: from this address (a few: the guesser's
 * own address is stopped) and from all addresses (many more: a guesser spread over addresses
 * is stopped too). A single count per email let anyone lock its owner out with five wrong
 * passwords; now that takes --login-fails-per-account-total of them, from at least that over
 * --login-fails-per-account addresses, while the owner's own address is not counted. */
enum { GATE_ADDR, GATE_PAIR, GATE_ACCOUNT, GATES };

static void on_login_counted(const seatd_store_result_t *res, void *data);

static int count_login(acct_op_t *op)
{
    const seatd_config_t *cfg = op->app->cfg;
    const struct {
        const char *key;
        int64_t cap, window_ms;
    } g[GATES] = {
        [GATE_ADDR] = {op->addr_key, cfg->login_per_addr, cfg->login_addr_window_ms},
        [GATE_PAIR] = {op->pair_key, cfg->login_fails_per_account, cfg->login_account_window_ms},
        [GATE_ACCOUNT] = {op->acct_key, cfg->login_fails_per_account_total,
                          cfg->login_account_window_ms},
    };
    return seatd_store_attempt(op->app->store, g[op->gate].key, 1, g[op->gate].cap,
                               g[op->gate].window_ms, on_login_counted, op);
}

static void on_login_counted(const seatd_store_result_t *res, void *data)
{
    static const char *const refused[GATES] = {
        [GATE_ADDR] = "login attempts from this address",
        [GATE_PAIR] = "failed logins for this account from this address",
        [GATE_ACCOUNT] = "failed logins for this account",
    };
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) { /* the counters taken before stay taken: it was an attempt */
        answer_throttled(op, res, refused[op->gate]);
        return;
    }
    if (++op->gate < GATES)
        step_started(op, count_login(op));
    else
        step_started(op, seatd_store_email_get(op->app->store, op->email, on_email_for_login, op));
}

int seatd_handle_auth_login(seatd_req_t *r)
{
    acct_op_t *op = op_new(r);
    if (read_credentials_or_reply(op, 0, 0) < 0) {
        op_free(op);
        return 0;
    }
    char addr[ADDR_MAX], h[SEATD_ACCOUNT_SHA256_HEX];
    client_addr(r, addr);
    snprintf(op->addr_key, sizeof(op->addr_key), "seatd:login:addr:%s", addr);
    seatd_account_sha256_hex(op->email, strlen(op->email), h);
    snprintf(op->acct_key, sizeof(op->acct_key), "seatd:login:acct:%.32s", h);
    snprintf(op->pair_key, sizeof(op->pair_key), "seatd:login:acct:%.32s:%s", h, addr);
    op->gate = GATE_ADDR;
    step_started(op, count_login(op));
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/refresh, POST /v1/auth/logout
 * --------------------------------------------------------------------------------------- */

/* Reads "refreshToken": its user into op->user_id and its SHA-256 into op->old_hash. */
static int read_refresh_token_or_reply(acct_op_t *op)
{
    if (seatd_json_parse_body_or_reply(op->r, &op->body) < 0)
        return SEATD_EBADJSON;
    const char *token = NULL;
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, op->body, "refreshToken", SEATD_ACCOUNT_TOKEN_MAX, 1, &token);
    if (token && seatd_account_parse_refresh_token(token, op->user_id) < 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "refreshToken", "is not a seatd refresh token",
                              NULL);
    if (token)
        seatd_account_sha256_hex(token, strlen(token), op->old_hash);
    return seatd_json_check_done_or_reply(&v, op->r);
}

static void on_refreshed(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    answer_pair(op, res);
}

int seatd_handle_auth_refresh(seatd_req_t *r)
{
    acct_op_t *op = op_new(r);
    if (read_refresh_token_or_reply(op) < 0) {
        op_free(op);
        return 0;
    }
    int rc = new_token(op);
    if (rc == 0)
        rc = seatd_store_session_refresh(op->app->store, op->user_id, op->old_hash, op->token_hash,
                                         on_refreshed, op);
    step_started(op, rc);
    return 0;
}

static void on_revoked(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (step_gone_or_failed(op, res))
        return;
    seatd_req_finish_json(op->r, 204, NULL);
    op_free(op);
}

int seatd_handle_auth_logout(seatd_req_t *r)
{
    acct_op_t *op = op_new(r);
    if (read_refresh_token_or_reply(op) < 0) {
        op_free(op);
        return 0;
    }
    step_started(
        op, seatd_store_session_revoke(op->app->store, op->user_id, op->old_hash, on_revoked, op));
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The per-user indexes, written when a booking has begun (bookings.c; seatd-notify files
 * confirmed and cancelled ones from the outbox) and when a hold is made (holds.c).
 * --------------------------------------------------------------------------------------- */

int seatd__index_hold(seatd_req_t *r, const char *hold_id, seatd_store_cb cb, void *data)
{
    return seatd_store_me_add(seatd__app(r)->store, seatd__sub(r), "holds", hold_id,
                              HOLD_INDEX_RETAIN_MS, cb, data);
}

int seatd__index_booking(seatd_app_t *app, const char *owner, const char *booking_id,
                         seatd_store_cb cb, void *data)
{
    return seatd_store_me_add(app->store, owner, "bookings", booking_id, 0, cb, data);
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/me/holds, GET /v1/me/bookings: one index read, then every entry read in parallel
 * from its show; entries whose hold or booking does not exist (never made, or gone) are left
 * out. Each read holds the request; the answer goes out when the last one is back.
 * --------------------------------------------------------------------------------------- */

typedef struct me_op_s me_op_t;

typedef struct me_item_s {
    me_op_t *op;
    cJSON *json; /* owned until taken into the answer; NULL: left out */
    char id[SEATD_ID_MAX];
    int dead; /* a hold no longer live (or gone): its index entry is removed */
} me_item_t;

struct me_op_s {
    seatd_req_t *r; /* the request: each item read holds it */
    seatd_store_t *store;
    char sub[65];   /* the buyer, for the index clean-up after the answer */
    int bookings;   /* 1: bookings, 0: holds */
    size_t n, left; /* items, items still being read */
    int gone;       /* the client left, or something was answered */
    int more;
    size_t round_start; /* holds: the first item of this round */
    int rounds;         /* holds: rounds read after the first */
    char cursor[96];    /* "<score>.<id>" of the last index entry of this page */
    me_item_t *items;
};

static void me_op_free(me_op_t *op)
{
    for (size_t i = 0; i < op->n; i++)
        cJSON_Delete(op->items[i].json);
    free(op->items);
    free(op);
}

static cJSON *me_booking_json(const seatd_booking_result_t *b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "bookingId", b->booking_id);
    cJSON_AddStringToObject(o, "showId", b->show_id);
    cJSON_AddStringToObject(o, "holdId", b->hold_id);
    seatd__json_add_csv_array(o, "seatIds", b->seat_ids);
    cJSON_AddStringToObject(o, "status", b->status);
    cJSON_AddNumberToObject(o, "amount", (double)b->amount);
    if (b->currency[0])
        cJSON_AddStringToObject(o, "currency", b->currency);
    if (b->created_at_ms)
        seatd__json_add_time(o, "createdAt", b->created_at_ms);
    if (b->confirmed_at_ms)
        seatd__json_add_time(o, "confirmedAt", b->confirmed_at_ms);
    return o;
}

static void me_answer(me_op_t *op)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, op->bookings ? "bookings" : "holds");
    for (size_t i = 0; i < op->n; i++) {
        if (op->items[i].json) {
            cJSON_AddItemToArray(arr, op->items[i].json);
            op->items[i].json = NULL;
        }
    }
    if (op->bookings) {
        if (op->more)
            cJSON_AddStringToObject(o, "nextCursor", op->cursor);
        else
            cJSON_AddNullToObject(o, "nextCursor");
    }
    seatd_req_finish_json(op->r, 200, o);
}

static void on_index_pruned(const seatd_store_result_t *res, void *data)
{
    (void)data;
    if (res->err)
        seatd_log(SEATD_LOG_INFO, NULL, "dead hold entries not removed from the buyer's index",
                  "\"error\":\"%s\"", seatd_err_name(res->err));
}

/* The holds index keeps an entry per hold made, live or not, and /v1/me/holds reads only the
 * ME_HOLDS_MAX newest: entries of holds found no longer live are removed (releases remove
 * their own), or enough of them would hide a live hold behind them. */
static void me_prune(me_op_t *op)
{
    const char *dead[64];
    size_t n = 0;
    for (size_t i = op->round_start; i < op->n && n < 64; i++)
        if (op->items[i].dead)
            dead[n++] = op->items[i].id;
    if (n && seatd_store_me_remove(op->store, op->sub, "holds", dead, n, on_index_pruned, NULL) < 0)
        on_index_pruned(&(seatd_store_result_t){.err = SEATD_EOVERLOAD}, NULL);
}

static int me_next_round(me_op_t *op);

/* One item read is back: releases the request; the last one answers. */
static void me_item_done(me_op_t *op, int err)
{
    if (seatd_req_release(op->r))
        op->gone = 1; /* 'r' may be freed once the last read is back: not touched again */
    else if (err && !op->gone) {
        op->gone = 1;
        seatd_req_finish_problem(op->r, err, NULL, NULL);
    }
    if (--op->left > 0)
        return;
    if (!op->bookings)
        me_prune(op);
    if (me_next_round(op))
        return;
    if (!op->gone)
        me_answer(op);
    me_op_free(op);
}

static void on_me_hold(const seatd_store_result_t *res, void *data)
{
    me_item_t *it = data;
    me_op_t *op = it->op;
    int err = 0;
    if (!res->err) {
        const char *st = res->hold.status;
        if (strcmp(st, "HELD") == 0 || strcmp(st, "PENDING_PAYMENT") == 0)
            it->json = seatd__json_hold(&res->hold, NULL);
        else
            it->dead = 1; /* released, expired or booked: it never comes back */
    } else if (res->err == SEATD_ENOTFOUND || res->err == SEATD_ENOSHOW) {
        it->dead = 1;
    } else {
        err = res->err;
    }
    me_item_done(op, err);
}

static void on_me_booking(const seatd_store_result_t *res, void *data)
{
    me_item_t *it = data;
    me_op_t *op = it->op;
    int err = 0;
    if (!res->err)
        it->json = me_booking_json(&res->booking);
    else if (res->err != SEATD_ENOTFOUND && res->err != SEATD_ENOSHOW)
        err = res->err;
    me_item_done(op, err);
}

/* Reads every entry of one page of the index 'a' in its show (the request is held by each
 * read), after the entries of earlier rounds. */
static void me_fan_out(me_op_t *op, const seatd_account_result_t *a)
{
    seatd_req_t *r = op->r;
    op->more = a->more;
    if (a->nentries) /* the entry itself, not only its score: entries share milliseconds */
        snprintf(op->cursor, sizeof(op->cursor), "%s.%s", a->scores[a->nentries - 1],
                 a->ids[a->nentries - 1]);
    /* No read of an earlier round is pending: the items may move. */
    op->items = seatd_realloc(op->items, (op->n + a->nentries + 1) * sizeof(*op->items));
    memset(op->items + op->n, 0, (a->nentries + 1) * sizeof(*op->items));
    /* Hold the request once for the whole fan-out, so no read can free it before the last
     * one is queued. */
    seatd_req_hold(r);
    op->left = 1;
    for (size_t i = 0; i < a->nentries; i++) {
        me_item_t *it = &op->items[op->n++];
        it->op = op;
        snprintf(it->id, sizeof(it->id), "%s", a->ids[i]);
        int rc = op->bookings
                     ? seatd_store_booking_get(op->store, a->ids[i], op->sub, on_me_booking, it)
                     : seatd_store_hold_get(op->store, a->ids[i], op->sub, on_me_hold, it);
        if (rc == SEATD_EBADID)
            continue; /* not an id of ours: left out */
        if (rc < 0) {
            if (!op->gone) {
                op->gone = 1;
                seatd_req_finish_problem(r, rc, NULL, NULL);
            }
            break;
        }
        seatd_req_hold(r);
        op->left++;
    }
    me_item_done(op, 0);
}

static void on_me_index(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    me_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->store = seatd__app(r)->store;
    snprintf(op->sub, sizeof(op->sub), "%s", seatd__sub(r));
    op->bookings = strcmp(seatd_req_route(r)->name, "me_bookings") == 0;
    me_fan_out(op, &res->account);
}

/* The next page of the holds index is back (me_next_round). */
static void on_me_holds_next(const seatd_store_result_t *res, void *data)
{
    me_op_t *op = data;
    if (seatd_req_release(op->r)) { /* the client left: nothing to answer */
        me_op_free(op);
        return;
    }
    if (res->err) { /* what the earlier rounds found is still the answer */
        me_answer(op);
        me_op_free(op);
        return;
    }
    me_fan_out(op, &res->account);
}

/* After a round of /v1/me/holds that found holds no longer live (now removed from the index),
 * looks at the next ME_HOLDS_MAX entries, up to ME_HOLDS_ROUNDS rounds: a live hold behind
 * a run of dead entries is still listed. Returns 1 when a round was started. */
static int me_next_round(me_op_t *op)
{
    size_t dead = 0;
    for (size_t i = op->round_start; i < op->n; i++)
        dead += op->items[i].dead;
    if (op->bookings || op->gone || !op->more || dead == 0 || ++op->rounds >= ME_HOLDS_ROUNDS)
        return 0;
    op->round_start = op->n;
    seatd_req_hold(op->r);
    if (seatd_store_me_list(op->store, op->sub, "holds", op->cursor, ME_HOLDS_MAX, on_me_holds_next,
                            op) < 0) {
        seatd_req_release(op->r); /* the answer still holds it: not its last reference */
        return 0;
    }
    return 1;
}

int seatd_handle_me_holds(seatd_req_t *r)
{
    int rc = seatd_store_me_list(seatd__app(r)->store, seatd__sub(r), "holds", NULL, ME_HOLDS_MAX,
                                 on_me_index, r);
    return seatd__step_begin(&r, rc);
}

/* A page's "nextCursor": "<score>.<id>" (a score of 1 to 20 digits, an id of 1 to 64
 * letters, digits, '-' or '_'), or a bare score as older pages gave out. */
static int valid_cursor(const char *c)
{
    size_t digits = strspn(c, "0123456789");
    if (digits == 0 || digits > 20)
        return 0;
    if (c[digits] == '\0')
        return 1;
    const char *id = c + digits + 1;
    size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
    return c[digits] == '.' && n >= 1 && n <= 64 && id[n] == '\0';
}

/* Answers 400 naming query parameter 'name' and what it must be ('reason', borrowed). */
static int bad_query_param(seatd_req_t *r, const char *name, const char *reason)
{
    char detail[192];
    snprintf(detail, sizeof(detail), "query parameter '%s' %s", name, reason);
    cJSON *extra = cJSON_CreateObject();
    cJSON *params = cJSON_AddArrayToObject(extra, "invalidParams");
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddItemToArray(params, p);
    seatd_req_finish_problem(r, SEATD_EINVAL, detail, extra);
    return SEATD_EINVAL;
}

int seatd_handle_me_bookings(seatd_req_t *r)
{
    long long limit = ME_BOOKINGS_DEFAULT;
    const char *l = seatd_req_query(r, "limit");
    if (l) {
        char *end = NULL;
        limit = strtoll(l, &end, 10);
        if (!*l || *end || limit < 1 || limit > ME_BOOKINGS_MAX) {
            char reason[64];
            snprintf(reason, sizeof(reason), "must be an integer in [1, %d]", ME_BOOKINGS_MAX);
            return bad_query_param(r, "limit", reason);
        }
    }
    const char *cursor = seatd_req_query(r, "cursor");
    if (cursor && !valid_cursor(cursor))
        return bad_query_param(r, "cursor",
                               "must be the nextCursor of the previous page, as it was given "
                               "(\"<digits>.<id>\"); leave it out for the first page");
    int rc = seatd_store_me_list(seatd__app(r)->store, seatd__sub(r), "bookings", cursor,
                                 (int)limit, on_me_index, r);
    return seatd__step_begin(&r, rc);
}
