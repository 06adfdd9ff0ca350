/*
 * token_cache.h - bearer tokens already verified, remembered for their lifetime.
 *
 * Verifying an HS256 token costs three base64url decodes, an HMAC-SHA256 and a JSON parse per
 * request; a buyer sends the same token hundreds of times. auth.c keeps the principal of every
 * token it verified here, keyed by the token's exact bytes (the whole token is stored and
 * compared, so a hash collision is a miss, never a wrong user), together with the window in
 * which the token is valid (nbf/iat .. exp, leeway applied). A hit outside that window is a
 * miss: the token is verified again and refused. Only tokens that verified are cached, so a
 * stranger's garbage can only evict entries, never add one.
 *
 * Direct-mapped, a fixed number of slots, no locks (one loop per process).
 */
#ifndef SEATD_TOKEN_CACHE_H
#define SEATD_TOKEN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "http/principal.h"

typedef struct seatd_token_cache_s seatd_token_cache_t;

/* An empty cache of 'slots' entries (rounded up to a power of two; at least 1). Owned. */
seatd_token_cache_t *seatd_token_cache_new(size_t slots);
void seatd_token_cache_free(seatd_token_cache_t *c);

/* 1 and '*out' when 'token' ('len' bytes) was verified before and 'now' (epoch s) is inside
 * its window; else 0. */
int seatd_token_cache_get(seatd_token_cache_t *c, const char *token, size_t len, int64_t now,
                          seatd_principal_t *out);

/* Remembers that 'token' verified to 'p', valid for valid_from <= now < valid_until. */
void seatd_token_cache_put(seatd_token_cache_t *c, const char *token, size_t len,
                           const seatd_principal_t *p, int64_t valid_from, int64_t valid_until);

/* Hits and misses since creation (metrics, tests). */
void seatd_token_cache_stats(const seatd_token_cache_t *c, unsigned long long *hits,
                             unsigned long long *misses);

#endif
