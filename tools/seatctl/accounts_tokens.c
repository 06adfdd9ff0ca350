/*
 * accounts_tokens.c - seatctl's commands for who may call the API: a bearer token signed with
 * the JWT secret (token) and an account created over the API as admin (user create).
 */
#include "http.h"
#include "seatctl.h"
#include "http/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------
 * token
 * --------------------------------------------------------------------------------------- */

int seatctl_cmd_token(seatctl_opts_t *o)
{
    long long ttl = 3600;
    if (o->ttl) {
        char *end = NULL;
        errno = 0;
        ttl = strtoll(o->ttl, &end, 10);
        if (*o->ttl == '\0' || *end != '\0' || errno || ttl <= 0 || ttl > 366LL * 86400)
            return seatctl_usage_error("--ttl must be 1..31622400 seconds");
    }
    if (o->sub == NULL)
        return seatctl_usage_error("token needs --sub USER");
    if (o->role != NULL && strcmp(o->role, "admin") != 0)
        return seatctl_usage_error("the only role is 'admin'");
    char secret[SECRET_FILE_MAX], why[512];
    if (seatctl_jwt_secret(1, secret, sizeof secret, why, sizeof why) < 0)
        return seatctl_fail(
            o,
            "no JWT secret (%s): set SEATD_JWT_SECRET (at least %d bytes), or SEATD_PORT "
            "/ SEATD_RUN_DIR for the stack whose runtime folder holds jwt_secret",
            why, SEATD_AUTH_MIN_SECRET);
    if (seatctl_stack.run_used) { /* say whose secret signed it */
        char target[64];
        snprintf(target, sizeof target, "127.0.0.1:%d", seatctl_stack.port);
        seatctl_announce(target, NULL);
    }
    seatd_auth_t *auth = NULL;
    int bad = seatd_auth_new(secret, strlen(secret), &auth) < 0;
    memset(secret, 0, sizeof secret);
    if (bad)
        return seatctl_fail(o, "bad secret");
    char *token = NULL;
    int rc = seatd_auth_sign_channels(auth, o->sub, o->role != NULL, o->channels, ttl, &token);
    seatd_auth_free(auth);
    if (rc < 0)
        return seatctl_usage_error("'%s' is not a valid user id (^[A-Za-z0-9_.@:|-]{1,64}$), or "
                                   "--channels is not up to 8 names of [a-z0-9_-]{1,32}",
                                   o->sub);
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "token", token);
        seatctl_print_json(j);
    } else {
        printf("%s\n", token);
    }
    free(token);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * user create
 * --------------------------------------------------------------------------------------- */

int seatctl_cmd_user_create(seatctl_opts_t *o)
{
    if (o->email == NULL)
        return seatctl_usage_error("user create needs --email EMAIL");
    if (!(o->given & O_PASSWORD_STDIN))
        return seatctl_usage_error(
            "user create needs --password-stdin (the password on standard input)");
    char pw[1024];
    if (fgets(pw, sizeof pw, stdin) == NULL)
        return seatctl_fail(o, "no password on standard input");
    size_t len = strlen(pw);
    if (len > 0 && pw[len - 1] != '\n' && !feof(stdin))
        return seatctl_fail(o, "the password is too long");
    while (len > 0 && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
        pw[--len] = '\0';
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "email", o->email);
    cJSON_AddStringToObject(body, "password", pw);
    memset(pw, 0, sizeof pw);
    if (o->name)
        cJSON_AddStringToObject(body, "name", o->name);
    cJSON_AddBoolToObject(body, "admin", (o->given & O_ADMIN) != 0);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    seatctl_http_res_t res;
    int rc = seatctl_http_admin(o, "POST", "/v1/admin/users", text, &res);
    memset(text, 0, strlen(text));
    free(text);
    if (rc >= 0)
        return rc;
    if (o->json)
        return seatctl_print_answer(o, &res);
    printf("%s\n", seatctl_jstr(res.json, "userId"));
    seatctl_http_res_free(&res);
    return EXIT_OK;
}
