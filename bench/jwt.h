/*
 * jwt.h - mints HS256 bearer tokens for the load generator's virtual users.
 *
 * The same shape as seatd_auth_sign() (worker/http/auth.h): header {"alg":"HS256","typ":"JWT"},
 * claims sub, iat, exp and, for admins, "role":"admin". The load generator mints its own
 * tokens so it can speak as thousands of users without running seatctl thousands of times.
 *
 * Pure apart from the clock: no I/O.
 */
#ifndef SEATD_BENCH_JWT_H
#define SEATD_BENCH_JWT_H

#include <stddef.h>

#define SEATD_BENCH_JWT_MAX 512

/* Writes a token for 'sub' into 'out' ('cap' bytes), valid for 'ttl_s' seconds.
 * Returns 0, or -1 when it does not fit or the HMAC fails. */
int seatd_bench_jwt(const char *secret, const char *sub, int admin, long ttl_s, char *out,
                    size_t cap);

#endif
