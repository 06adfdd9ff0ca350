/*
 * signing.h - the HMAC-SHA256 signatures of seatd's own signed texts (ticket tokens,
 * ticket.h; waiting-room admissions, admission.h): one purpose key per kind of text, derived
 * from the JWT secret, and the MAC written as base64url text.
 *
 * Each purpose key is HMAC-SHA256(secret, label): a text signed for one purpose never passes
 * for another, nor for a JWT signed by the secret itself. Pure apart from OpenSSL; no state.
 */
#ifndef SEATD_SIGNING_H
#define SEATD_SIGNING_H

#include <stddef.h>

#define SEATD_SIGNING_KEY_LEN 32
#define SEATD_SIGNING_MAC_TEXT 44 /* base64url of 32 bytes (43, no padding) + NUL */

/* Derives the purpose key of 'label' (e.g. "ticket") from 'secret' ('len' bytes) into 'key'. */
void seatd_signing_key(const char *secret, size_t len, const char *label,
                       unsigned char key[SEATD_SIGNING_KEY_LEN]);

/* Writes the base64url (no padding) HMAC-SHA256 of 'len' bytes of 'msg' under 'key' into
 * 'out', NUL-terminated. Compare it as text with CRYPTO_memcmp (constant time). */
void seatd_signing_mac_text(const unsigned char key[SEATD_SIGNING_KEY_LEN], const char *msg,
                            size_t len, char out[SEATD_SIGNING_MAC_TEXT]);

#endif
