/*
 * auth.h - bearer JWT verification and signing (HS256 only).
 *
 * A seatd_auth_t holds the shared HMAC secret (at least SEATD_AUTH_MIN_SECRET bytes). Tokens
 * are verified with the algorithm pinned: the header must say {"alg":"HS256"} (a "typ" of
 * "JWT" is allowed, nothing else is trusted); "none", RS256 and missing "alg" are rejected.
 * Base64url is decoded strictly (no padding, no foreign characters, no non-zero trailing bits).
 * Claims: "exp" is required, "nbf" and "iat" are optional, all checked with
 * SEATD_AUTH_LEEWAY_S seconds of leeway; "sub" is required and must be a valid user id
 * (keys.h grammar, ^[A-Za-z0-9_.@:|-]{1,64}$); "role": "admin" (or "roles": [..., "admin"])
 * grants the admin role. The signature is compared in constant time (CRYPTO_memcmp).
 * Header and claims are parsed by json.h's seatd_json_parse(): a "\u0000" inside any string
 * (which would cut "alice\u0000evil" to "alice") or bytes after the object make the token
 * invalid (401).
 *
 * Lifecycle: seatd_auth_new() / seatd_auth_free(). The clock is injectable for tests.
 * Pure apart from the clock: no I/O. Single-threaded use.
 */
#ifndef SEATD_AUTH_H
#define SEATD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "http/principal.h"

#define SEATD_AUTH_MIN_SECRET 32  /* bytes */
#define SEATD_AUTH_LEEWAY_S 30    /* clock skew tolerated on exp / nbf / iat */
#define SEATD_AUTH_MAX_TOKEN 4096 /* longer tokens are rejected before any decoding */

typedef struct seatd_auth_s seatd_auth_t;

/* Returns the current time in seconds since the epoch; 'data' is the pointer given with it. */
typedef int64_t (*seatd_auth_clock_fn)(void *data);

/*
 * Creates a verifier/signer for 'secret' ('len' bytes, borrowed: copied).
 * Returns 0 and an owned '*out' (freed with seatd_auth_free()), SEATD_EINVAL when the
 * secret is shorter than SEATD_AUTH_MIN_SECRET bytes, or SEATD_EINTERNAL when OpenSSL has no
 * HMAC-SHA256 (then '*out' is NULL). One thread at a time uses it (the worker's loop): signing
 * and verifying share one keyed MAC context.
 */
SEATD_MUSTCHECK int seatd_auth_new(const void *secret, size_t len, seatd_auth_t **out);

/* Frees 'auth' and wipes its secret. NULL is a no-op. */
void seatd_auth_free(seatd_auth_t *auth);

/* Replaces the clock (time(NULL) by default). NULL restores the default. */
void seatd_auth_set_clock(seatd_auth_t *auth, seatd_auth_clock_fn fn, void *data);

/* How many seatd_auth_verify() calls were answered from the cache of verified tokens, and how
 * many had to verify (0 and 0 for NULL). */
void seatd_auth_cache_stats(const seatd_auth_t *auth, unsigned long long *hits,
                            unsigned long long *misses);

/*
 * Verifies the compact JWT 'token' (borrowed, NUL-terminated) at the current clock and fills
 * '*out'. A token verified before is answered from a cache of verified tokens (token_cache.h)
 * while the clock is inside its validity window: no HMAC, no parsing. Returns 0 or SEATD_EUNAUTH
 * (malformed, wrong algorithm, bad signature, expired, not yet valid, missing or invalid sub).
 * Nothing is written to '*out' on failure.
 */
SEATD_MUSTCHECK int seatd_auth_verify(const seatd_auth_t *auth, const char *token,
                                      seatd_principal_t *out);

/* As seatd_auth_verify(), with 'now' (epoch seconds) instead of the clock. */
SEATD_MUSTCHECK int seatd_auth_verify_at(const seatd_auth_t *auth, const char *token, int64_t now,
                                         seatd_principal_t *out);

/*
 * Verifies an Authorization header value ('header' borrowed, may be NULL): it must be
 * "Bearer <token>" (scheme case-insensitive). Returns 0 or SEATD_EUNAUTH.
 */
SEATD_MUSTCHECK int seatd_auth_verify_bearer(const seatd_auth_t *auth, const char *header,
                                             seatd_principal_t *out);

/*
 * Why a token was refused, for the 401's problem detail and its RFC 6750 challenge
 * (seatd_auth_fault_text(), seatd_auth_challenge()). Only a token whose signature verified is
 * judged EXPIRED, NOT_YET_VALID or CLAIMS: nobody learns anything about the claims of a token
 * this stack did not sign.
 */
typedef enum seatd_auth_fault_e {
    SEATD_AUTH_FAULT_NONE = 0,      /* verified */
    SEATD_AUTH_FAULT_MISSING,       /* no Authorization header, or another scheme than Bearer */
    SEATD_AUTH_FAULT_MALFORMED,     /* not a compact JWS: three base64url parts, JSON, size */
    SEATD_AUTH_FAULT_ALGORITHM,     /* a header other than HS256 ("none", RS256, "crit", ...) */
    SEATD_AUTH_FAULT_SIGNATURE,     /* the signature does not verify under this secret */
    SEATD_AUTH_FAULT_EXPIRED,       /* now >= "exp" + leeway */
    SEATD_AUTH_FAULT_NOT_YET_VALID, /* now < "nbf" or "iat" - leeway */
    SEATD_AUTH_FAULT_CLAIMS,        /* no integral "exp", or no valid "sub" */
} seatd_auth_fault_t;

#define SEATD_AUTH_CHALLENGE_MAX 160 /* bytes, NUL included, of seatd_auth_challenge() */

/*
 * As seatd_auth_verify_bearer(), and on failure '*why' (may be NULL) says why. Returns 0
 * (then '*why' is SEATD_AUTH_FAULT_NONE) or SEATD_EUNAUTH.
 */
SEATD_MUSTCHECK int seatd_auth_verify_bearer_why(const seatd_auth_t *auth, const char *header,
                                                 seatd_principal_t *out, seatd_auth_fault_t *why);

/* As seatd_auth_verify_at(), and on failure '*why' (may be NULL) says why. */
SEATD_MUSTCHECK int seatd_auth_verify_at_why(const seatd_auth_t *auth, const char *token,
                                             int64_t now, seatd_principal_t *out,
                                             seatd_auth_fault_t *why);

/* A sentence for the 401's problem detail: "the token has expired", "the token is
 * malformed", "the token has a bad signature", ... Returns a static string. */
const char *seatd_auth_fault_text(seatd_auth_fault_t why);

/*
 * The WWW-Authenticate value for a 401 refused for 'why' (RFC 6750 section 3), into 'out'
 * ('n' bytes, at most SEATD_AUTH_CHALLENGE_MAX needed): "Bearer" when no bearer token was
 * sent (no error code, as section 3.1 asks), else
 * Bearer error="invalid_token", error_description="<seatd_auth_fault_text()>".
 */
void seatd_auth_challenge(seatd_auth_fault_t why, char *out, size_t n);

/*
 * Mints an HS256 token for 'sub' (borrowed; must be a valid user id) with role "admin" when
 * 'admin' is non-zero, "iat" = now and "exp" = now + 'ttl_s' (> 0), now being the clock, and
 * a random "jti", so that no two tokens are alike. Returns 0 and an owned NUL-terminated
 * '*out' (free() it), SEATD_EINVAL, or SEATD_EINTERNAL (no randomness).
 */
SEATD_MUSTCHECK int seatd_auth_sign(const seatd_auth_t *auth, const char *sub, int admin,
                                    int64_t ttl_s, char **out);
/* As seatd_auth_sign, with the claim "channels" (issue 30) listing 'channels' (comma-joined
 * names of [a-z0-9_-]{1,32}, at most SEATD_PRINCIPAL_CHANNELS_MAX; NULL or "": none). */
SEATD_MUSTCHECK int seatd_auth_sign_channels(const seatd_auth_t *auth, const char *sub, int admin,
                                             const char *channels, int64_t ttl_s, char **out);

#endif
