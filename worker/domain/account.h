/*
 * account.h - the pure rules of accounts: email normalisation, the password policy, account
 * and refresh-token identifiers.
 *
 * Emails are trimmed (ASCII white space) and lower-cased, then checked: 3..240 bytes, one '@'
 * with 1..64 bytes before it, a domain of dot-separated labels (letters, digits, '-', not
 * starting or ending with '-', at least one dot), and a local part of printable ASCII without
 * white space, '"', '(', ')', ',', ':', ';', '<', '>', '[', '\', ']', '{', '}' (so that an
 * email never carries a hash tag or a key separator into a Redis key name).
 *
 * Passwords follow NIST SP 800-63B §5.1.1.2: SEATD_ACCOUNT_PASSWORD_MIN..MAX characters counted
 * as Unicode code points (the bytes must be valid UTF-8 without NUL), no composition rules, and
 * none of the most common passwords of a small built-in list (compared case-insensitively).
 *
 * Refresh tokens are "<userId>.<secret>", the secret being SEATD_ACCOUNT_SECRET_BYTES random
 * bytes in base64url without padding: the user id routes the token to its user's hash slot;
 * Redis stores only the SHA-256 of the whole token.
 *
 * Pure apart from OpenSSL's RAND_bytes and SHA-256: no I/O, no loop; any thread.
 */
#ifndef SEATD_ACCOUNT_H
#define SEATD_ACCOUNT_H

#include <stddef.h>

#include "base/errors.h"

#define SEATD_ACCOUNT_EMAIL_MAX 240  /* bytes of a normalised email (its key fits SEATD_KEY_MAX) */
#define SEATD_ACCOUNT_NAME_MAX 100   /* characters of a display name (4 x in bytes) */
#define SEATD_ACCOUNT_PASSWORD_MIN 8 /* code points */
#define SEATD_ACCOUNT_PASSWORD_MAX 128   /* code points */
#define SEATD_ACCOUNT_PASSWORD_BYTES 512 /* bytes accepted before counting (4 x MAX) */
#define SEATD_ACCOUNT_SECRET_BYTES 32    /* random bytes of a refresh token */
#define SEATD_ACCOUNT_TOKEN_MAX 128      /* bytes of a refresh token, NUL included */
#define SEATD_ACCOUNT_USER_ID_MAX 24     /* "u" + 20 hex + NUL, rounded */
#define SEATD_ACCOUNT_FAMILY_ID_MAX 24   /* 16 hex + NUL, rounded */
#define SEATD_ACCOUNT_SHA256_HEX 65      /* 64 hex + NUL */

/*
 * Normalises 'in' (borrowed, NUL-terminated) into 'out' (SEATD_ACCOUNT_EMAIL_MAX + 1 bytes):
 * trimmed, lower-cased, validated as above. Returns 0, or SEATD_EINVAL ('out' then holds "").
 */
SEATD_MUSTCHECK int seatd_account_email_normalise(const char *in, char *out);

/*
 * Checks 'pw' ('len' bytes, borrowed) against the policy. Returns 0, SEATD_EINVAL (not UTF-8,
 * a NUL, too short or too long; '*why' says which) or SEATD_EWEAKPASSWORD (a common password).
 * '*why' (may be NULL) gets a static reason for the answer's detail.
 */
SEATD_MUSTCHECK int seatd_account_password_check(const char *pw, size_t len, const char **why);

/* Code points in 'pw' ('len' bytes), or -1 when it is not valid UTF-8 or holds a NUL. */
long seatd_account_utf8_length(const char *pw, size_t len);

/* A fresh user id "u<20 hex>" into 'out' (SEATD_ACCOUNT_USER_ID_MAX bytes). 0 or SEATD_EINTERNAL.
 */
SEATD_MUSTCHECK int seatd_account_new_user_id(char *out);
/* A fresh refresh-token family id (16 hex) into 'out' (SEATD_ACCOUNT_FAMILY_ID_MAX bytes). */
SEATD_MUSTCHECK int seatd_account_new_family_id(char *out);

/* A fresh refresh token for 'user_id' (borrowed) into 'out' (SEATD_ACCOUNT_TOKEN_MAX bytes).
 * 0, SEATD_EBADID (user id invalid) or SEATD_EINTERNAL (no randomness). */
SEATD_MUSTCHECK int seatd_account_new_refresh_token(const char *user_id, char *out);

/* Checks the shape of refresh token 'token' (borrowed) and copies its user id into 'user_out'
 * (65 bytes: any valid user id).
 * Returns 0 or SEATD_EINVAL. */
SEATD_MUSTCHECK int seatd_account_parse_refresh_token(const char *token, char *user_out);

/* The SHA-256 of 'len' bytes at 'p', as lower-case hex into 'out' (SEATD_ACCOUNT_SHA256_HEX). */
void seatd_account_sha256_hex(const void *p, size_t len, char *out);

#endif
