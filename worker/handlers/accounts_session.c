/*
 * accounts_session.c - a buyer's session: the token pair that login and refresh both answer
 * (a signed access token and the fresh refresh token the accounts flow minted, stored by its
 * SHA-256 only: flows/accounts.h), and
 * POST /v1/auth/refresh (rotates the pair; a replayed token revokes its family: store.h) and
 * POST /v1/auth/logout. See accounts_internal.h.
 */
#include "handlers/accounts_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "domain/account.h"
#include "domain/config.h"
#include "handlers.h"
#include "http/auth.h"
#include "http/json_reply.h"

/* ---------------------------------------------------------------------------------------
 * Token pairs: login and refresh answer the same shape.
 * --------------------------------------------------------------------------------------- */

void accounts__on_pair(const seatd_accounts_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__step_end(&r) || accounts__answered_unless_done(r, res))
        return;
    seatd_app_t *app = seatd__app(r);
    const seatd_config_t *cfg = app->cfg;
    char *jwt = NULL;
    int rc = seatd_auth_sign(app->auth, res->user->user_id, res->user->admin,
                             cfg->access_token_ttl_s, &jwt);
    if (rc < 0) {
        seatd_req_finish_problem(r, SEATD_EINTERNAL, "the access token could not be signed", NULL);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "accessToken", jwt);
    cJSON_AddStringToObject(o, "refreshToken", res->refresh_token);
    cJSON_AddNumberToObject(o, "expiresIn", (double)cfg->access_token_ttl_s);
    cJSON_AddStringToObject(o, "tokenType", "Bearer");
    cJSON_AddStringToObject(o, "userId", res->user->user_id);
    seatd__json_add_time(o, "refreshExpiresAt", res->user->expires_at_ms);
    free(jwt);
    seatd_req_add_header(r, "Cache-Control", "no-store");
    seatd_req_finish_json(r, 200, o);
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/refresh (the accounts flow rotates the token), POST /v1/auth/logout (one
 * store call). The request is each one's context.
 * --------------------------------------------------------------------------------------- */

/* Reads "refreshToken" of the body of 'r': its user into 'user_id' (65 bytes) and its
 * SHA-256 into 'old_hash'. Answers 400 and returns < 0 on a bad body. */
static int read_refresh_token_or_reply(seatd_req_t *r, char *user_id, char *old_hash)
{
    cJSON *body = NULL;
    if (seatd_json_parse_body_or_reply(r, &body) < 0)
        return SEATD_EBADJSON;
    const char *token = NULL;
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, body, "refreshToken", SEATD_ACCOUNT_TOKEN_MAX, 1, &token);
    if (token && seatd_account_parse_refresh_token(token, user_id) < 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "refreshToken", "is not a seatd refresh token",
                              NULL);
    if (token)
        seatd_account_sha256_hex(token, strlen(token), old_hash);
    int rc = seatd_json_check_done_or_reply(&v, r);
    cJSON_Delete(body);
    return rc;
}

int seatd_handle_auth_refresh(seatd_req_t *r)
{
    char user_id[65] = "", old_hash[SEATD_ACCOUNT_SHA256_HEX] = "";
    if (read_refresh_token_or_reply(r, user_id, old_hash) < 0)
        return 0;
    int rc = seatd_accounts_refresh(seatd__app(r), user_id, old_hash, accounts__on_pair, r);
    seatd__step_begin_or_answer(r, rc);
    return 0;
}

static void on_revoked(const seatd_store_result_t *res, void *data)
{
    seatd__answer_result(data, res, 204, NULL);
}

int seatd_handle_auth_logout(seatd_req_t *r)
{
    char user_id[65] = "", old_hash[SEATD_ACCOUNT_SHA256_HEX] = "";
    if (read_refresh_token_or_reply(r, user_id, old_hash) < 0)
        return 0;
    int rc = seatd_store_session_revoke(seatd__app(r)->store, user_id, old_hash, on_revoked, r);
    seatd__step_begin_or_answer(r, rc);
    return 0;
}
