/* admission.c - signed admissions to a waiting room; see admission.h. */
#include "admission.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define MAC_TEXT 44 /* base64url of 32 bytes (43) + NUL */

void seatd_admission_key(const char *secret, size_t len, unsigned char key[SEATD_ADMISSION_KEY_LEN])
{
    unsigned int n = 0;
    HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)"admission", 9, key, &n);
}

static void mac_text(const unsigned char key[SEATD_ADMISSION_KEY_LEN], const char *msg, size_t len,
                     char out[MAC_TEXT])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    unsigned char mac[32];
    unsigned int n = 0;
    HMAC(EVP_sha256(), key, SEATD_ADMISSION_KEY_LEN, (const unsigned char *)msg, len, mac, &n);
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

char *seatd_admission_sign(const unsigned char key[SEATD_ADMISSION_KEY_LEN], const char *show_id,
                           const char *sub, int64_t expires_at_ms)
{
    if (!seatd_keys_valid_show_id(show_id) || !seatd_keys_valid_sub(sub) || expires_at_ms <= 0)
        return NULL;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "A1.%s.%" PRId64 ".%s", show_id, expires_at_ms, sub);
    char mac[MAC_TEXT];
    mac_text(key, b.data, b.len, mac);
    seatd_buf_printf(&b, ".%s", mac);
    return seatd_buf_steal(&b, NULL);
}

int seatd_admission_verify(const unsigned char key[SEATD_ADMISSION_KEY_LEN], const char *token,
                           const char *show_id, const char *sub, int64_t now_ms)
{
    size_t len = token ? strlen(token) : 0;
    if (len < 8 || len >= SEATD_ADMISSION_MAX || strncmp(token, "A1.", 3) != 0 || show_id == NULL ||
        sub == NULL)
        return SEATD_EQUEUEREQUIRED;
    const char *last = strrchr(token, '.');
    if (last == NULL || strlen(last + 1) != MAC_TEXT - 1)
        return SEATD_EQUEUEREQUIRED;
    char mac[MAC_TEXT];
    mac_text(key, token, (size_t)(last - token), mac);
    if (CRYPTO_memcmp(mac, last + 1, MAC_TEXT - 1) != 0)
        return SEATD_EQUEUEREQUIRED;
    /* Signed by us: now the fields, "<show>.<exp>.<sub>" between "A1." and the mac. */
    const char *p = token + 3;
    size_t slen = strlen(show_id);
    if (strncmp(p, show_id, slen) != 0 || p[slen] != '.')
        return SEATD_EQUEUEREQUIRED;
    p += slen + 1;
    char *end = NULL;
    long long exp = strtoll(p, &end, 10);
    if (end == p || *end != '.' || exp <= now_ms)
        return SEATD_EQUEUEREQUIRED;
    p = end + 1;
    size_t ulen = strlen(sub);
    if ((size_t)(last - p) != ulen || strncmp(p, sub, ulen) != 0)
        return SEATD_EQUEUEREQUIRED;
    return 0;
}
