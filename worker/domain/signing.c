/* signing.c - purpose keys and MAC texts of seatd's signed texts; see signing.h. */
#include "domain/signing.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

void seatd_signing_key(const char *secret, size_t len, const char *label,
                       unsigned char key[SEATD_SIGNING_KEY_LEN])
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)label, strlen(label), key, &n);
}

void seatd_signing_mac_text(const unsigned char key[SEATD_SIGNING_KEY_LEN], const char *msg,
                            size_t len, char out[SEATD_SIGNING_MAC_TEXT])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char mac[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), key, SEATD_SIGNING_KEY_LEN, (const unsigned char *)msg, len, mac, &n);
    size_t o = 0, i = 0;
    for (; i + 3 <= 32; i += 3) {
        unsigned v = (unsigned)mac[i] << 16 | (unsigned)mac[i + 1] << 8 | mac[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    unsigned v = (unsigned)mac[30] << 16 | (unsigned)mac[31] << 8; /* the last 2 bytes */
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
    out[o] = '\0';
}
