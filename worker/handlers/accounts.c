/*
 * accounts.c - POST /v1/auth/register, POST /v1/admin/users and POST /v1/auth/login
 * (issue 14), and the answer to a flow's end that login and refresh share
 * (accounts_internal.h); token pairs,
 * refresh and logout are in accounts_session.c, GET /v1/me/holds and /v1/me/bookings in
 * accounts_me.c.
 *
 * An HTTP adapter over the accounts flow (flows/accounts.h): each route validates the body,
 * calls one flow function with the request as its context (held from the call to the flow's
 * end through common.h's seatd__step_begin() / seatd__step_end(); the flow asks whether the
 * client still waits, and stops at the first step that finds it gone, except a registration
 * past its email's claim) and renders the flow's end. The steps (counters, hashing on the
 * thread pool, the store calls, the session) are the flow's.
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
#include <stdio.h>
#include <string.h>

#include "domain/account.h"
#include "common.h"
#include "handlers.h"
#include "http/http_request.h"
#include "http/json_reply.h"
#include "flows/accounts.h"

#define EMAIL_RAW_MAX 320 /* bytes of the email field before normalising */
#define ADDR_MAX 64

/* A sign-up's or a login's body, read and checked. */
typedef struct {
    cJSON *body;                               /* owned; 'password' points into it */
    const char *password;                      /* NULL when missing */
    size_t password_len;                       /* bytes of 'password' */
    char email[SEATD_ACCOUNT_EMAIL_MAX + 1];   /* normalised */
    char name[4 * SEATD_ACCOUNT_NAME_MAX + 1]; /* "" when none */
    char addr[ADDR_MAX];                       /* the client's address (client_addr) */
} credentials_t;

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

/* 429 with Retry-After from a flow stopped by a full counter. */
static void answer_throttled(seatd_req_t *r, const seatd_accounts_result_t *res)
{
    static const char *const what[] = {
        [SEATD_ACCOUNTS_LIMIT_REGISTER_ADDR] = "registrations from this address",
        [SEATD_ACCOUNTS_LIMIT_LOGIN_ADDR] = "login attempts from this address",
        [SEATD_ACCOUNTS_LIMIT_LOGIN_PAIR] = "failed logins for this account from this address",
        [SEATD_ACCOUNTS_LIMIT_LOGIN_ACCOUNT] = "failed logins for this account",
    };
    long long secs = (res->retry_after_ms + 999) / 1000;
    char ra[24], msg[128];
    snprintf(ra, sizeof(ra), "%lld", secs > 0 ? secs : 1);
    snprintf(msg, sizeof(msg), "too many %s; try again in %s s", what[res->limit], ra);
    seatd_req_add_header(r, "Retry-After", ra);
    seatd_req_finish_problem(r, SEATD_ERATELIMIT, msg, NULL);
}

int accounts__answered_unless_done(seatd_req_t *r, const seatd_accounts_result_t *res)
{
    switch (res->outcome) {
    case SEATD_ACCOUNTS_DONE:
        return 0;
    case SEATD_ACCOUNTS_THROTTLED:
        answer_throttled(r, res);
        break;
    case SEATD_ACCOUNTS_CREDENTIALS:
        seatd_req_finish_problem(r, SEATD_ECREDENTIALS, "the email or password is wrong", NULL);
        break;
    case SEATD_ACCOUNTS_FAILED:
        if (res->store)
            seatd__reply_store_error(r, res->store);
        else
            seatd_req_finish_problem(r, res->err, res->detail, NULL);
        break;
    case SEATD_ACCOUNTS_GONE: /* seatd__step_end() said so first: nothing to answer */
        break;
    }
    return 1;
}

/* The flow's question: does the client of request 'data' still wait? */
static int still_waiting(void *data)
{
    return !seatd_req_is_detached(data);
}

/* Reads the body of 'r' into 'c': its "email" (normalised), its "password" (checked against
 * the policy when 'policy') and, when 'want_name', its "name"; and the client's address. Answers
 * 400 and returns < 0 on a bad field (every bad field named), with c->body freed; else c->body is
 * the caller's. */
static int read_credentials_or_reply(seatd_req_t *r, credentials_t *c, int policy, int want_name)
{
    if (seatd_json_parse_body_or_reply(r, &c->body) < 0)
        return SEATD_EBADJSON;
    client_addr(r, c->addr);
    const char *email = NULL, *name = NULL;
    seatd_json_check_t v;
    seatd_json_check_init(&v);
    seatd_json_check_string(&v, c->body, "email", EMAIL_RAW_MAX, 1, &email);
    seatd_json_check_string(&v, c->body, "password", SEATD_ACCOUNT_PASSWORD_BYTES, 1, &c->password);
    if (want_name)
        seatd_json_check_text(&v, c->body, "name", SEATD_ACCOUNT_NAME_MAX,
                              4 * SEATD_ACCOUNT_NAME_MAX, 0, &name);
    if (email && seatd_account_email_normalise(email, c->email) < 0)
        seatd_json_check_fail(&v, SEATD_EINVAL, "email", "must be an email address", NULL);
    if (c->password) {
        c->password_len = strlen(c->password);
        const char *why = NULL;
        int rc = seatd_account_password_check(c->password, c->password_len, &why);
        if (rc == SEATD_EINVAL || (policy && rc < 0))
            seatd_json_check_fail(&v, rc, "password", why, NULL);
    }
    if (name) {
        long n = seatd_account_utf8_length(name, strlen(name));
        if (n < 0)
            seatd_json_check_fail(&v, SEATD_EINVAL, "name", "must be UTF-8 text", NULL);
        else
            snprintf(c->name, sizeof(c->name), "%s", name);
    }
    int rc = seatd_json_check_done_or_reply(&v, r);
    if (rc < 0) {
        cJSON_Delete(c->body);
        c->body = NULL;
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/register, POST /v1/admin/users: the sign-up flow (per-address count -> hash
 * -> claim the email -> write the user).
 * --------------------------------------------------------------------------------------- */

static void on_signed_up(const seatd_accounts_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__step_end(&r) || accounts__answered_unless_done(r, res))
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "userId", res->user->user_id);
    cJSON_AddStringToObject(o, "email", res->user->email);
    cJSON_AddStringToObject(o, "name", res->user->name);
    if (res->user->admin)
        cJSON_AddBoolToObject(o, "admin", 1);
    seatd_req_finish_json(r, 201, o);
}

/* Starts the sign-up of 'c' (its body freed: the flow copied what it needs); 'addr' NULL for
 * no per-address count. A flow not started is answered with its code. */
static int signup(seatd_req_t *r, credentials_t *c, const char *addr, int admin)
{
    seatd_accounts_input_t in = {.email = c->email,
                                 .password = c->password,
                                 .password_len = c->password_len,
                                 .name = c->name,
                                 .addr = addr,
                                 .admin = admin,
                                 .still_waiting = still_waiting};
    int rc = seatd_accounts_signup(seatd__app(r), &in, on_signed_up, r);
    cJSON_Delete(c->body);
    seatd__step_begin_or_answer(r, rc);
    return 0;
}

int seatd_handle_auth_register(seatd_req_t *r)
{
    credentials_t c = {0};
    if (read_credentials_or_reply(r, &c, 1, 1) < 0)
        return 0;
    return signup(r, &c, c.addr, 0);
}

/* POST /v1/admin/users (role admin; `seatctl user create`): the same as a registration, with
 * "admin": true allowed and no per-address limit. */
int seatd_handle_admin_users_create(seatd_req_t *r)
{
    credentials_t c = {0};
    if (read_credentials_or_reply(r, &c, 1, 1) < 0)
        return 0;
    const cJSON *admin = cJSON_GetObjectItemCaseSensitive(c.body, "admin");
    if (admin && !cJSON_IsBool(admin)) {
        seatd_json_check_t v;
        seatd_json_check_init(&v);
        seatd_json_check_fail(&v, SEATD_EINVAL, "admin", "must be true or false", NULL);
        int rc = seatd_json_check_done_or_reply(&v, r); /* answers 400 */
        cJSON_Delete(c.body);
        return rc;
    }
    return signup(r, &c, NULL, cJSON_IsTrue(admin));
}

/* ---------------------------------------------------------------------------------------
 * POST /v1/auth/login: the login flow (per-address count -> per-email counts -> email ->
 * user -> verify -> session).
 * --------------------------------------------------------------------------------------- */

int seatd_handle_auth_login(seatd_req_t *r)
{
    credentials_t c = {0};
    if (read_credentials_or_reply(r, &c, 0, 0) < 0)
        return 0;
    seatd_accounts_input_t in = {.email = c.email,
                                 .password = c.password,
                                 .password_len = c.password_len,
                                 .addr = c.addr,
                                 .still_waiting = still_waiting};
    int rc = seatd_accounts_login(seatd__app(r), &in, accounts__on_pair, r);
    cJSON_Delete(c.body);
    seatd__step_begin_or_answer(r, rc);
    return 0;
}
