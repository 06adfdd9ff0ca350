/*
 * accounts_internal.h - what the account handlers share: the heap context a sign-up, a login,
 * a refresh or a logout carries through its steps (acct_op_t), and the helpers one file calls
 * in another. Not an interface: include it only from accounts.c (sign-up, login) and
 * accounts_session.c (token pairs, refresh, logout); the routes are declared in handlers.h.
 */
#ifndef SEATD_ACCOUNTS_INTERNAL_H
#define SEATD_ACCOUNTS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "app.h"
#include "domain/account.h"
#include "domain/keys.h"
#include "http/http_request.h"
#include "store/store.h"

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

/* ---------------------------------------------------------------- accounts.c */

acct_op_t *accounts__op_new(seatd_req_t *r);
void accounts__op_free(acct_op_t *op);
void accounts__answer_problem(acct_op_t *op, int err, const char *detail);
void accounts__step_started(acct_op_t *op, int rc);
int accounts__step_gone_or_failed(acct_op_t *op, const seatd_store_result_t *res);

/* ---------------------------------------------------------------- accounts_session.c */

void accounts__answer_pair(acct_op_t *op, const seatd_store_result_t *res);
int accounts__new_token(acct_op_t *op);

#endif
