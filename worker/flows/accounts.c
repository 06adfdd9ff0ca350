/* accounts.c - sign-up, login and refresh as flows; see accounts.h. */
#include "flows/accounts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/passwd.h"
#include "domain/account.h"
#include "domain/config.h"
#include "domain/keys.h"

#define USER_ID_MAX 65 /* bytes of a user id, NUL included (keys.h's sub grammar) */

/* A login's counters, taken in this order before the password is checked: attempts from the
 * client address, then the email's failures twice: from this address (a few: the guesser's
 * own address is stopped) and from all addresses (many more: a guesser spread over addresses
 * is stopped too). A single count per email let anyone lock its owner out with five wrong
 * passwords; now that takes --login-fails-per-account-total of them, from at least that over
 * --login-fails-per-account addresses, while the owner's own address is not counted. */
enum { GATE_ADDR, GATE_PAIR, GATE_ACCOUNT, GATES };

/* One flow's context, from its call to its callback. */
typedef struct accounts_op_s {
    seatd_app_t *app;                          /* borrowed */
    seatd_accounts_cb cb;                      /* the flow's end */
    void *data;                                /* for 'cb' and 'still_waiting' */
    seatd_accounts_waiting_cb still_waiting;   /* NULL: always */
    char *password;                            /* owned copy, 'password_len' bytes */
    size_t password_len;                       /* bytes of 'password' */
    char email[SEATD_ACCOUNT_EMAIL_MAX + 1];   /* normalised */
    char name[4 * SEATD_ACCOUNT_NAME_MAX + 1]; /* sign-up: the display name, "" for none */
    char user_id[USER_ID_MAX];                 /* the new user's, the email's, or refresh's */
    char addr_key[SEATD_KEY_MAX]; /* attempts (login) or registrations from the address */
    char acct_key[SEATD_KEY_MAX]; /* failed logins of the email, from every address */
    char pair_key[SEATD_KEY_MAX]; /* failed logins of the email from this address */
    char *hash;                   /* owned: the encoded hash (sign-up) or the stored one (login) */
    int admin;                    /* sign-up: the user is an admin */
    int gate;                     /* login: the counter being taken (GATE_*) */
    char token[SEATD_ACCOUNT_TOKEN_MAX];       /* the new refresh token */
    char token_hash[SEATD_ACCOUNT_SHA256_HEX]; /* its SHA-256 */
    char old_hash[SEATD_ACCOUNT_SHA256_HEX];   /* refresh: the presented token's */
    char family[SEATD_ACCOUNT_FAMILY_ID_MAX];  /* login: the new family */
} accounts_op_t;

/* ---------------------------------------------------------------------------------------
 * The steps every flow shares
 * --------------------------------------------------------------------------------------- */

static accounts_op_t *op_new(seatd_app_t *app, seatd_accounts_cb cb, void *data)
{
    accounts_op_t *op = seatd_calloc(1, sizeof(*op));
    op->app = app;
    op->cb = cb;
    op->data = data;
    return op;
}

/* Copies what sign-up and login share from 'in'. */
static accounts_op_t *op_from_input(seatd_app_t *app, const seatd_accounts_input_t *in,
                                    seatd_accounts_cb cb, void *data)
{
    accounts_op_t *op = op_new(app, cb, data);
    op->still_waiting = in->still_waiting;
    op->password = seatd_strndup(in->password, in->password_len);
    op->password_len = in->password_len;
    snprintf(op->email, sizeof(op->email), "%s", in->email);
    snprintf(op->name, sizeof(op->name), "%s", in->name ? in->name : "");
    return op;
}

static void op_free(accounts_op_t *op)
{
    free(op->password);
    free(op->hash);
    free(op);
}

/* Ends the flow with 'res' and frees 'op'. */
static void end(accounts_op_t *op, const seatd_accounts_result_t *res)
{
    op->cb(res, op->data);
    op_free(op);
}

static void end_as(accounts_op_t *op, seatd_accounts_outcome_t outcome)
{
    seatd_accounts_result_t res = {.outcome = outcome};
    end(op, &res);
}

/* FAILED with the store's failed result 'sr' (or, without one, 'err' and 'detail'). */
static void end_failed(accounts_op_t *op, int err, const char *detail,
                       const seatd_store_result_t *sr)
{
    seatd_accounts_result_t res = {
        .outcome = SEATD_ACCOUNTS_FAILED, .err = sr ? sr->err : err, .detail = detail, .store = sr};
    end(op, &res);
}

static void end_throttled(accounts_op_t *op, seatd_accounts_limit_t limit,
                          const seatd_store_result_t *sr)
{
    seatd_accounts_result_t res = {.outcome = SEATD_ACCOUNTS_THROTTLED,
                                   .limit = limit,
                                   .retry_after_ms = sr->attempt.retry_after_ms};
    end(op, &res);
}

/* DONE with 'user', and the new refresh token when 'with_token'. */
static void end_done(accounts_op_t *op, const seatd_account_result_t *user, int with_token)
{
    seatd_accounts_result_t res = {.outcome = SEATD_ACCOUNTS_DONE,
                                   .user = user,
                                   .refresh_token = with_token ? op->token : NULL};
    end(op, &res);
}

/* At a step's end: 1 (and the flow ended GONE) when nobody waits any more. */
static int ended_gone(accounts_op_t *op)
{
    if (op->still_waiting == NULL || op->still_waiting(op->data))
        return 0;
    end_as(op, SEATD_ACCOUNTS_GONE);
    return 1;
}

/* At a store step's end: 1 (and the flow ended) when nobody waits or the store failed. */
static int ended_gone_or_failed(accounts_op_t *op, const seatd_store_result_t *res)
{
    if (ended_gone(op))
        return 1;
    if (res->err) {
        end_failed(op, 0, NULL, res);
        return 1;
    }
    return 0;
}

/* The next step was started with 'rc' (mid-flow): on failure the flow ends FAILED. */
static void step(accounts_op_t *op, int rc)
{
    if (rc < 0)
        end_failed(op, rc, NULL, NULL);
}

/* A fresh refresh token for op->user_id into op->token / op->token_hash. */
static int new_token(accounts_op_t *op)
{
    int rc = seatd_account_new_refresh_token(op->user_id, op->token);
    if (rc == 0)
        seatd_account_sha256_hex(op->token, strlen(op->token), op->token_hash);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Sign-up: per-address count -> hash (pool) -> claim the email -> write the user.
 * --------------------------------------------------------------------------------------- */

static void on_email_released(const seatd_store_result_t *res, void *data)
{
    (void)res;
    (void)data;
}

static void on_user_created(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (res->err) {
        /* The claim without its user would block the email for ever: give it back. */
        if (seatd_store_email_release(op->app->store, op->email, op->user_id, on_email_released,
                                      NULL) < 0)
            seatd_log(SEATD_LOG_WARN, NULL, "email claim not released", "\"userId\":\"%s\"",
                      op->user_id);
        end_failed(op, 0, NULL, res);
        return;
    }
    seatd_log(SEATD_LOG_INFO, NULL, "account registered", "\"userId\":\"%s\"", op->user_id);
    end_done(op, &res->account, 0);
}

static void on_email_claimed(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (res->err) {
        end_failed(op, 0, NULL, res);
        return;
    }
    /* Claimed: the user record is written even if nobody waits any more. */
    seatd_user_args_t a = {.user_id = op->user_id,
                           .email = op->email,
                           .name = op->name,
                           .hash = op->hash,
                           .admin = op->admin};
    step(op, seatd_store_user_create(op->app->store, &a, on_user_created, op));
}

static void on_hashed(int err, const char *encoded, void *data)
{
    accounts_op_t *op = data;
    if (ended_gone(op))
        return;
    if (err) {
        end_failed(op, SEATD_EINTERNAL, "the password could not be hashed", NULL);
        return;
    }
    op->hash = seatd_strdup(encoded);
    int rc = seatd_account_new_user_id(op->user_id);
    if (rc == 0)
        rc = seatd_store_email_claim(op->app->store, op->email, op->user_id, on_email_claimed, op);
    step(op, rc);
}

static int hash(accounts_op_t *op)
{
    return seatd_passwd_hash(op->app->loop, op->password, op->password_len, on_hashed, op);
}

static void on_register_counted(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (ended_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) {
        end_throttled(op, SEATD_ACCOUNTS_LIMIT_REGISTER_ADDR, res);
        return;
    }
    step(op, hash(op));
}

int seatd_accounts_signup(seatd_app_t *app, const seatd_accounts_input_t *in, seatd_accounts_cb cb,
                          void *data)
{
    accounts_op_t *op = op_from_input(app, in, cb, data);
    op->admin = in->admin;
    int rc;
    if (in->addr) {
        const seatd_config_t *cfg = app->cfg;
        snprintf(op->addr_key, sizeof(op->addr_key), "seatd:register:addr:%s", in->addr);
        rc = seatd_store_attempt(app->store, op->addr_key, 1, cfg->register_per_addr,
                                 cfg->login_addr_window_ms, on_register_counted, op);
    } else {
        rc = hash(op);
    }
    if (rc < 0)
        op_free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Login: per-address count -> per-email counts -> email -> user -> verify (pool; a dummy
 * hash for an unknown email) -> session.
 * --------------------------------------------------------------------------------------- */

static void on_session_started(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (ended_gone_or_failed(op, res))
        return;
    end_done(op, &res->account, 1);
}

static void on_verified(int ok, void *data)
{
    accounts_op_t *op = data;
    if (ended_gone(op))
        return;
    if (!ok) {
        seatd_log(SEATD_LOG_INFO, NULL, "login failed", "\"userId\":\"%s\"",
                  op->user_id[0] ? op->user_id : "-");
        end_as(op, SEATD_ACCOUNTS_CREDENTIALS);
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
        rc = new_token(op);
    if (rc == 0)
        rc = seatd_store_session_start(op->app->store, op->user_id, op->family, op->token_hash,
                                       op->app->cfg->refresh_ttl_ms, on_session_started, op);
    step(op, rc);
}

static void verify(accounts_op_t *op)
{
    step(op, seatd_passwd_verify(op->app->loop, op->hash, op->password, op->password_len,
                                 on_verified, op));
}

static void on_user_for_login(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (ended_gone(op))
        return;
    if (res->err && res->err != SEATD_ENOTFOUND) {
        end_failed(op, 0, NULL, res);
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
    accounts_op_t *op = data;
    if (ended_gone_or_failed(op, res))
        return;
    snprintf(op->user_id, sizeof(op->user_id), "%s", res->account.user_id);
    if (!op->user_id[0] || !seatd_keys_valid_sub(op->user_id)) {
        op->user_id[0] = '\0';
        verify(op); /* unknown: the dummy hash, same cost */
        return;
    }
    step(op, seatd_store_user_get(op->app->store, op->user_id, on_user_for_login, op));
}

static void on_login_counted(const seatd_store_result_t *res, void *data);

static int count_login(accounts_op_t *op)
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
    static const seatd_accounts_limit_t limit[GATES] = {
        [GATE_ADDR] = SEATD_ACCOUNTS_LIMIT_LOGIN_ADDR,
        [GATE_PAIR] = SEATD_ACCOUNTS_LIMIT_LOGIN_PAIR,
        [GATE_ACCOUNT] = SEATD_ACCOUNTS_LIMIT_LOGIN_ACCOUNT,
    };
    accounts_op_t *op = data;
    if (ended_gone_or_failed(op, res))
        return;
    if (!res->attempt.ok) { /* the counters taken before stay taken: it was an attempt */
        end_throttled(op, limit[op->gate], res);
        return;
    }
    if (++op->gate < GATES)
        step(op, count_login(op));
    else
        step(op, seatd_store_email_get(op->app->store, op->email, on_email_for_login, op));
}

int seatd_accounts_login(seatd_app_t *app, const seatd_accounts_input_t *in, seatd_accounts_cb cb,
                         void *data)
{
    accounts_op_t *op = op_from_input(app, in, cb, data);
    const char *addr = in->addr ? in->addr : "local";
    char h[SEATD_ACCOUNT_SHA256_HEX];
    snprintf(op->addr_key, sizeof(op->addr_key), "seatd:login:addr:%s", addr);
    seatd_account_sha256_hex(op->email, strlen(op->email), h);
    snprintf(op->acct_key, sizeof(op->acct_key), "seatd:login:acct:%.32s", h);
    snprintf(op->pair_key, sizeof(op->pair_key), "seatd:login:acct:%.32s:%s", h, addr);
    op->gate = GATE_ADDR;
    int rc = count_login(op);
    if (rc < 0)
        op_free(op);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Refresh: a new token in the presented one's family.
 * --------------------------------------------------------------------------------------- */

static void on_refreshed(const seatd_store_result_t *res, void *data)
{
    accounts_op_t *op = data;
    if (res->err) {
        end_failed(op, 0, NULL, res);
        return;
    }
    end_done(op, &res->account, 1);
}

int seatd_accounts_refresh(seatd_app_t *app, const char *user_id, const char *old_hash,
                           seatd_accounts_cb cb, void *data)
{
    accounts_op_t *op = op_new(app, cb, data);
    snprintf(op->user_id, sizeof(op->user_id), "%s", user_id);
    snprintf(op->old_hash, sizeof(op->old_hash), "%s", old_hash);
    int rc = new_token(op);
    if (rc == 0)
        rc = seatd_store_session_refresh(app->store, op->user_id, op->old_hash, op->token_hash,
                                         on_refreshed, op);
    if (rc < 0)
        op_free(op);
    return rc;
}
