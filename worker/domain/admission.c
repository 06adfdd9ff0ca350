/* admission.c - signed admissions to a waiting room; see admission.h. */
#include "domain/admission.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "domain/signing.h"

#define MAC_TEXT SEATD_SIGNING_MAC_TEXT
_Static_assert(SEATD_ADMISSION_KEY_LEN == SEATD_SIGNING_KEY_LEN, "one key length");

void seatd_admission_key(const char *secret, size_t len, unsigned char key[SEATD_ADMISSION_KEY_LEN])
{
    seatd_signing_key(secret, len, "admission", key);
}

char *seatd_admission_sign(const unsigned char key[SEATD_ADMISSION_KEY_LEN], const char *show_id,
                           const char *sub, int64_t expires_at_ms)
{
    if (!seatd_keys_valid_show_id(show_id) || !seatd_keys_valid_sub(sub) || expires_at_ms <= 0)
        return NULL;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "A1.%s.%" PRId64 ".%s", show_id, expires_at_ms, sub);
    char mac[MAC_TEXT];
    seatd_signing_mac_text(key, b.data, b.len, mac);
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
    seatd_signing_mac_text(key, token, (size_t)(last - token), mac);
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
