/*
 * jwt.c - HS256 token minting; see jwt.h.
 */
#include "jwt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Base64url without padding; returns the length written (NUL-terminated), or 0 if 'cap' is
 * too small. */
static size_t b64url(const unsigned char *in, size_t n, char *out, size_t cap)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        size_t chars = i + 2 < n ? 4 : i + 1 < n ? 3 : 2;
        if (o + chars + 1 > cap)
            return 0;
        for (size_t k = 0; k < chars; k++)
            out[o++] = tab[(v >> (18 - 6 * k)) & 63];
    }
    out[o] = '\0';
    return o;
}

int seatd_bench_jwt(const char *secret, const char *sub, int admin, long ttl_s, char *out,
                    size_t cap)
{
    char claims[256];
    long now = (long)time(NULL);
    int cl = snprintf(claims, sizeof claims, "{\"sub\":\"%s\",\"iat\":%ld,\"exp\":%ld%s}", sub, now,
                      now + ttl_s, admin ? ",\"role\":\"admin\"" : "");
    if (cl < 0 || (size_t)cl >= sizeof claims)
        return -1;
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    size_t o = b64url((const unsigned char *)header, sizeof header - 1, out, cap);
    if (o == 0 || o + 2 > cap)
        return -1;
    out[o++] = '.';
    size_t n = b64url((const unsigned char *)claims, (size_t)cl, out + o, cap - o);
    if (n == 0)
        return -1;
    o += n;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (!HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)out, o, mac,
              &maclen))
        return -1;
    if (o + 2 > cap)
        return -1;
    out[o++] = '.';
    n = b64url(mac, maclen, out + o, cap - o);
    return n == 0 ? -1 : 0;
}
