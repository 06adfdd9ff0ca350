/*
 * principal.h - who a verified bearer token speaks for: what auth.c (which verifies tokens)
 * and token_cache.c (which remembers the verified ones) both hold, in a header of its own so
 * that neither includes the other's.
 */
#ifndef SEATD_PRINCIPAL_H
#define SEATD_PRINCIPAL_H

#include <stdint.h>

#define SEATD_PRINCIPAL_CHANNELS_MAX 8

typedef struct seatd_principal_s {
    char sub[65]; /* the "sub" claim: the user id, valid per seatd_keys_valid_sub() */
    int admin;    /* 1 if the token carries role "admin" */
    /* The "channels" claim (issue 30): the sales channels whose kept seats and places the
     * bearer may hold, comma-joined ("boxoffice,house"), "" for none. At most
     * SEATD_PRINCIPAL_CHANNELS_MAX names of [a-z0-9_-]{1,32}. */
    char channels[SEATD_PRINCIPAL_CHANNELS_MAX * 33];
    int64_t valid_from, valid_until; /* the token is valid for valid_from <= now < valid_until
                                      * (epoch s, leeway applied: nbf/iat and exp) */
} seatd_principal_t;

#endif
