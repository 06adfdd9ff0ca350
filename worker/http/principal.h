/*
 * principal.h - who a verified bearer token speaks for: what auth.c (which verifies tokens)
 * and token_cache.c (which remembers the verified ones) both hold, in a header of its own so
 * that neither includes the other's.
 */
#ifndef SEATD_PRINCIPAL_H
#define SEATD_PRINCIPAL_H

#include <stdint.h>

typedef struct seatd_principal_s {
    char sub[65]; /* the "sub" claim: the user id, valid per seatd_keys_valid_sub() */
    int admin;    /* 1 if the token carries role "admin" */
    int64_t valid_from, valid_until; /* the token is valid for valid_from <= now < valid_until
                                      * (epoch s, leeway applied: nbf/iat and exp) */
} seatd_principal_t;

#endif
