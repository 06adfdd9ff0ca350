/*
 * accounts_session.c - a buyer's session: the token pair that login and refresh both answer
 * (a signed access token and a fresh refresh token, stored by its SHA-256 only), and
 * POST /v1/auth/refresh (rotates the pair; a replayed token revokes its family: store.h) and
 * POST /v1/auth/logout. See accounts_internal.h.
 */
#include "handlers/accounts_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/auth.h"
#include "http/json.h"

/* ---------------------------------------------------------------------------------------
 * Token pairs: login and refresh answer the same shape.
 * --------------------------------------------------------------------------------------- */

void accounts__answer_pair(acct_op_t *op, const seatd_store_result_t *res)
{
    const seatd_config_t *cfg = op->app->cfg;
    char *jwt = NULL;
    int rc = seatd_auth_sign(op->app->auth, res->account.user_id, res->account.admin,
                             cfg->access_token_ttl_s, &jwt);
    if (rc < 0) {
        accounts__answer_problem(op, SEATD_EINTERNAL, "the access token could not be signed");
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
    accounts__op_free(op);
}

/* A fresh refresh token for op->user_id into op->token / op->token_hash. */
int accounts__new_token(acct_op_t *op)
{
    int rc = seatd_account_new_refresh_token(op->user_id, op->token);
    if (rc == 0)
        seatd_account_sha256_hex(op->token, strlen(op->token), op->token_hash);
    return rc;
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
    if (accounts__step_gone_or_failed(op, res))
        return;
    accounts__answer_pair(op, res);
}

int seatd_handle_auth_refresh(seatd_req_t *r)
{
    acct_op_t *op = accounts__op_new(r);
    if (read_refresh_token_or_reply(op) < 0) {
        accounts__op_free(op);
        return 0;
    }
    int rc = accounts__new_token(op);
    if (rc == 0)
        rc = seatd_store_session_refresh(op->app->store, op->user_id, op->old_hash, op->token_hash,
                                         on_refreshed, op);
    accounts__step_started(op, rc);
    return 0;
}

static void on_revoked(const seatd_store_result_t *res, void *data)
{
    acct_op_t *op = data;
    if (accounts__step_gone_or_failed(op, res))
        return;
    seatd_req_finish_json(op->r, 204, NULL);
    accounts__op_free(op);
}

int seatd_handle_auth_logout(seatd_req_t *r)
{
    acct_op_t *op = accounts__op_new(r);
    if (read_refresh_token_or_reply(op) < 0) {
        accounts__op_free(op);
        return 0;
    }
    accounts__step_started(
        op, seatd_store_session_revoke(op->app->store, op->user_id, op->old_hash, on_revoked, op));
    return 0;
}
