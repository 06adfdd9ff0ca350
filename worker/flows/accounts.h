/*
 * accounts.h - a buyer's account, written once: sign-up, login and a session's refresh, the
 * steps behind POST /v1/auth/register, POST /v1/admin/users, POST /v1/auth/login and
 * POST /v1/auth/refresh (issue 14). The handlers validate, call one of these and render the
 * typed result (issue 29); rendering HTTP is theirs, the steps are here.
 *
 *   sign-up  per-address count (not for a user an admin creates) -> hash the password (libuv's
 *            thread pool, clients/passwd.h) -> claim the email -> write the user. A claim
 *            whose user could not be written is given back; once the email is claimed the
 *            user is written whether or not anybody still waits (the claim is a decision
 *            made).
 *   login    per-address count -> the email's failed logins from this address, then from
 *            every address -> the email's user -> verify the password (pool) -> the email's
 *            counts given back -> a new refresh-token family. No enumeration: an unknown
 *            email is verified against a dummy hash of the same cost and ends like a wrong
 *            password (SEATD_ACCOUNTS_CREDENTIALS), and both count as failed logins.
 *   refresh  a fresh refresh token replaces the presented one in its family (store.h: a
 *            replayed token revokes the family).
 *
 * Login and refresh mint the refresh token here, the one place that does; it is stored by
 * its SHA-256 only. Every flow but the sign-up past its claim stops at the first step that
 * finds nobody waiting any more ('still_waiting'), with SEATD_ACCOUNTS_GONE.
 *
 * Loop and threads: the worker's loop; 'app' (its store, loop and configuration) must
 * outlive every flow. Callback contract (STYLE rule 18): a call that returns 0 runs 'cb'
 * exactly once, on a later loop turn; a call that returns < 0 never runs it.
 */
#ifndef SEATD_FLOWS_ACCOUNTS_H
#define SEATD_FLOWS_ACCOUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "store/store.h"

struct seatd_app_s;

/* How a flow ended. */
typedef enum {
    SEATD_ACCOUNTS_DONE = 0,    /* signed up, logged in or refreshed: 'user' (and the token) */
    SEATD_ACCOUNTS_GONE,        /* nobody waits any more: stopped, nothing to answer */
    SEATD_ACCOUNTS_THROTTLED,   /* a counter is full: 'limit', 'retry_after_ms' */
    SEATD_ACCOUNTS_CREDENTIALS, /* login: an unknown email or a wrong password, alike */
    SEATD_ACCOUNTS_FAILED,      /* 'store' refused or failed, else 'err' and 'detail' */
} seatd_accounts_outcome_t;

/* The counter a THROTTLED flow found full (the order a login takes them in). */
typedef enum {
    SEATD_ACCOUNTS_LIMIT_REGISTER_ADDR, /* registrations from the client address */
    SEATD_ACCOUNTS_LIMIT_LOGIN_ADDR,    /* login attempts from the client address */
    SEATD_ACCOUNTS_LIMIT_LOGIN_PAIR,    /* failed logins of the email from this address */
    SEATD_ACCOUNTS_LIMIT_LOGIN_ACCOUNT, /* failed logins of the email from every address */
} seatd_accounts_limit_t;

/* A flow's end. Every pointer is borrowed for the duration of the callback. */
typedef struct seatd_accounts_result_s {
    seatd_accounts_outcome_t outcome;   /* how it ended */
    const seatd_account_result_t *user; /* DONE: the user written (sign-up: userId, email, name,
                                           admin), or the session's (login, refresh: userId,
                                           admin, expiresAt) */
    const char *refresh_token;          /* DONE, login and refresh: the new refresh token */
    const seatd_store_result_t *store;  /* FAILED: the store's failed result, or NULL */
    int err;                            /* FAILED: SEATD_E* (the store's, when 'store') */
    const char *detail;                 /* FAILED without 'store': what failed, or NULL */
    seatd_accounts_limit_t limit;       /* THROTTLED: the counter that is full */
    int64_t retry_after_ms;             /* THROTTLED: until it lets one more attempt through */
} seatd_accounts_result_t;

typedef void (*seatd_accounts_cb)(const seatd_accounts_result_t *res, void *data);
/* 1 while somebody waits for the flow's end, called with the flow's 'data'. */
typedef int (*seatd_accounts_waiting_cb)(void *data);

/* What a sign-up or a login starts from: validated by the caller, borrowed for the call
 * (copied). */
typedef struct seatd_accounts_input_s {
    const char *email;    /* normalised (domain/account.h) */
    const char *password; /* 'password_len' bytes, within the policy for a sign-up */
    size_t password_len;  /* bytes of 'password' */
    const char *name;     /* sign-up: the display name, NULL or "" for none */
    const char *addr;     /* the client address (login: NULL counts as "local"); sign-up: NULL
                             for no per-address count */
    int admin;            /* sign-up: the user is an admin */
    seatd_accounts_waiting_cb still_waiting; /* NULL: somebody always waits */
} seatd_accounts_input_t;

/* Signs up the user 'in' describes. DONE with the user written; THROTTLED
 * (REGISTER_ADDR); FAILED with the store's EMAILTAKEN, ..., or SEATD_EINTERNAL when the
 * password could not be hashed. Returns 0 ('cb' runs once, later) or < 0 ('cb' never runs). */
SEATD_MUSTCHECK int seatd_accounts_signup(struct seatd_app_s *app, const seatd_accounts_input_t *in,
                                          seatd_accounts_cb cb, void *data);

/* Logs in with the email and password of 'in' ('name' and 'admin' unused): DONE with the
 * session's user and its refresh token; THROTTLED (LOGIN_*); CREDENTIALS; FAILED. Returns 0
 * ('cb' runs once, later) or < 0 ('cb' never runs). */
SEATD_MUSTCHECK int seatd_accounts_login(struct seatd_app_s *app, const seatd_accounts_input_t *in,
                                         seatd_accounts_cb cb, void *data);

/* Rotates the session of user 'user_id' whose presented refresh token has SHA-256 hex
 * 'old_hash' (both borrowed: copied): DONE with the session's user and the new refresh
 * token; FAILED (the store's TOKEN for a dead or replayed token). Returns 0 ('cb' runs once,
 * later) or < 0 ('cb' never runs). */
SEATD_MUSTCHECK int seatd_accounts_refresh(struct seatd_app_s *app, const char *user_id,
                                           const char *old_hash, seatd_accounts_cb cb, void *data);

#endif
