/*
 * accounts.c - POST /v1/auth/register, POST /v1/admin/users and POST /v1/auth/login
 * (issue 14), and the steps every account handler shares (accounts_internal.h); token pairs,
 * refresh and logout are in accounts_session.c, GET /v1/me/holds and /v1/me/bookings in
 * accounts_me.c.
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
#include "handlers/accounts_internal.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/account.h"
#include "app.h"
#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json.h"
#include "domain/keys.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/passwd.h"

#define EMAIL_RAW_MAX 320 /* bytes of the email field before normalising */
#define ADDR_MAX 64

acct_op_t *accounts__op_new(seatd_req_t *r)
{
    acct_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->app = seatd__app(r);
    return op;
}

void accounts__op_free(acct_op_t *op)
{
    cJSON_Delete(op->body);
    free(op->hash);
    free(op);
}

/* Answers 'err' if anybody waits, and frees 'op'. */
void accounts__answer_problem(acct_op_t *op, int err, const char *detail)
{
    if (op->r)
        seatd_req_finish_problem(op->r, err, detail, NULL);
    accounts__op_free(op);
}

/* The step started with 'rc': on failure answers and frees 'op'. */
void accounts__step_started(acct_op_t *op, int rc)
{
    if (seatd__step_begin(&op->r, rc) < 0)
        accounts__answer_problem(op, rc, NULL);
}

/* At the end of a store step: 1 (and 'op' freed) if nobody waits or the store failed
 * (answered). */
int accounts__step_gone_or_failed(acct_op_t *op, const seatd_store_result_t *res)
{
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        accounts__op_free(op);
        return 1;
    }
    if (res->err) {
        seatd__reply_store_error(op->r, res);
        accounts__op_free(op);
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
    accounts__answer_problem(op, SEATD_ERATELIMIT, msg);
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
        accounts__op_free(op);
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
    accounts__op_free(op);
}

static void on_email_claimed(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    seatd__step_end(&op->r);
    if (res->err) {
        if (op->r)
            seatd__reply_store_error(op->r, res);
        accounts__op_free(op);
        return;
    }
    /* Claimed: the user record is written even if the client has left. */
    seatd_user_args_t a = {.user_id = op->user_id,
                           .email = op->email,
                           .name = op->name,
                           .hash = op->hash,
                           .admin = op->admin};
    accounts__step_started(op, seatd_store_user_create(op->app->store, &a, on_user_created, op));
}

static void on_hashed(int err, const char *encoded, void *data)
{
    acct_op_t *op = data;
    if (seatd__step_end(&op->r)) {
        accounts__op_free(op);
        return;
    }
    if (err) {
        accounts__answer_problem(op, SEATD_EINTERNAL, "the password could not be hashed");
        return;
    }
    op->hash = seatd_strdup(encoded);
    int rc = seatd_account_new_user_id(op->user_id);
    if (rc == 0)
        rc = seatd_store_email_claim(op->app->store, op->email, op->user_id, on_email_claimed, op);
    accounts__step_started(op, rc);
}

static void on_register_counted(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (accounts__step_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) {
        answer_throttled(op, res, "registrations from this address");
        return;
    }
    accounts__step_started(
        op, seatd_passwd_hash(op->app->loop, op->password, op->password_len, on_hashed, op));
}

int seatd_handle_auth_register(seatd_req_t *r)
{
    acct_op_t *op = accounts__op_new(r);
    if (read_credentials_or_reply(op, 1, 1) < 0) {
        accounts__op_free(op);
        return 0;
    }
    char addr[ADDR_MAX];
    client_addr(r, addr);
    snprintf(op->addr_key, sizeof(op->addr_key), "seatd:register:addr:%s", addr);
    const seatd_config_t *cfg = op->app->cfg;
    accounts__step_started(
        op, seatd_store_attempt(op->app->store, op->addr_key, 1, cfg->register_per_addr,
                                cfg->login_addr_window_ms, on_register_counted, op));
    return 0;
}

/* POST /v1/admin/users (role admin; `seatctl user create`): the same as a registration, with
 * "admin": true allowed and no per-address limit. */
int seatd_handle_admin_users_create(seatd_req_t *r)
{
    acct_op_t *op = accounts__op_new(r);
    if (read_credentials_or_reply(op, 1, 1) < 0) {
        accounts__op_free(op);
        return 0;
    }
    const cJSON *admin = cJSON_GetObjectItemCaseSensitive(op->body, "admin");
    if (admin && !cJSON_IsBool(admin)) {
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, SEATD_EINVAL, "admin", "must be true or false", NULL);
        int rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 */
        accounts__op_free(op);
        return rc;
    }
    op->admin = cJSON_IsTrue(admin);
    accounts__step_started(
        op, seatd_passwd_hash(op->app->loop, op->password, op->password_len, on_hashed, op));
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/login: validate -> per-address count -> per-email count -> email -> user
 * -> verify (pool; a dummy hash for an unknown email) -> session.
 * --------------------------------------------------------------------------------------- */

static void on_session_started(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (accounts__step_gone_or_failed(op, res))
        return;
    accounts__answer_pair(op, res);
}

static void on_verified(int ok, void *data)
{
    acct_op_t *op = data;
    if (seatd__step_end(&op->r)) {
        accounts__op_free(op);
        return;
    }
    if (!ok) {
        seatd_log(SEATD_LOG_INFO, NULL, "login failed", "\"userId\":\"%s\"",
                  op->user_id[0] ? op->user_id : "-");
        accounts__answer_problem(op, SEATD_ECREDENTIALS, "the email or password is wrong");
        return;
    }
    /* A success is not a failure: its attempts on the email's counters are given back. */
    static const char what[] = "login counter given back (else it expires)";
    seatd_store_forget(seatd_store_attempt(op->app->store, op->pair_key, 0, 0, 0,
                                           seatd_store_forgotten, (void *)what),
                       what);
    seatd_store_forget(seatd_store_attempt(op->app->store, op->acct_key, 0, 0, 0,
                                           seatd_store_forgotten, (void *)what),
                       what);
    int rc = seatd_account_new_family_id(op->family);
    if (rc == 0)
        rc = accounts__new_token(op);
    if (rc == 0)
        rc = seatd_store_session_start(op->app->store, op->user_id, op->family, op->token_hash,
                                       op->app->cfg->refresh_ttl_ms, on_session_started, op);
    accounts__step_started(op, rc);
}

static void verify(acct_op_t *op)
{
    accounts__step_started(op, seatd_passwd_verify(op->app->loop, op->hash, op->password,
                                                   op->password_len, on_verified, op));
}

static void on_user_for_login(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    seatd__step_end(&op->r);
    if (op->r == NULL) {
        accounts__op_free(op);
        return;
    }
    if (res->err && res->err != SEATD_ENOTFOUND) {
        seatd__reply_store_error(op->r, res);
        accounts__op_free(op);
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
    if (accounts__step_gone_or_failed(op, res))
        return;
    snprintf(op->user_id, sizeof(op->user_id), "%s", res->account.user_id);
    if (!op->user_id[0] || !seatd_keys_valid_sub(op->user_id)) {
        op->user_id[0] = '\0';
        verify(op); /* unknown: the dummy hash, same cost */
        return;
    }
    accounts__step_started(
        op, seatd_store_user_get(op->app->store, op->user_id, on_user_for_login, op));
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
    if (accounts__step_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) { /* the counters taken before stay taken: it was an attempt */
        answer_throttled(op, res, refused[op->gate]);
        return;
    }
    if (++op->gate < GATES)
        accounts__step_started(op, count_login(op));
    else
        accounts__step_started(
            op, seatd_store_email_get(op->app->store, op->email, on_email_for_login, op));
}

int seatd_handle_auth_login(seatd_req_t *r)
{
    acct_op_t *op = accounts__op_new(r);
    if (read_credentials_or_reply(op, 0, 0) < 0) {
        accounts__op_free(op);
        return 0;
    }
    char addr[ADDR_MAX], h[SEATD_ACCOUNT_SHA256_HEX];
    client_addr(r, addr);
    snprintf(op->addr_key, sizeof(op->addr_key), "seatd:login:addr:%s", addr);
    seatd_account_sha256_hex(op->email, strlen(op->email), h);
    snprintf(op->acct_key, sizeof(op->acct_key), "seatd:login:acct:%.32s", h);
    snprintf(op->pair_key, sizeof(op->pair_key), "seatd:login:acct:%.32s:%s", h, addr);
    op->gate = GATE_ADDR;
    accounts__step_started(op, count_login(op));
    return 0;
}
