/*
 * account.c - the pure rules of accounts; see account.h.
 */
#include "domain/account.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "domain/keys.h"

/* Among the most common passwords of the public breach corpora (the lists behind "top 100"
 * rankings); passwords shorter than the minimum are refused by length already, so the list
 * keeps only those of 8 characters or more, plus their usual variants. Compared
 * case-insensitively. */
static const char *const common_passwords[] = {
    "12345678",   "123456789", "1234567890", "password",      "password1",  "password123",
    "password12", "passw0rd",  "p@ssw0rd",   "p@ssword",      "qwertyuiop", "qwerty123",
    "qwerty12",   "qwertyui",  "1q2w3e4r",   "1q2w3e4r5t",    "1qaz2wsx",   "zaq12wsx",
    "11111111",   "00000000",  "88888888",   "87654321",      "12341234",   "11223344",
    "123123123",  "987654321", "12344321",   "1234qwer",      "qwer1234",   "asdfghjkl",
    "asdf1234",   "iloveyou",  "iloveyou1",  "sunshine",      "princess",   "football",
    "baseball",   "welcome1",  "welcome123", "letmein1",      "trustno1",   "superman",
    "starwars",   "whatever",  "computer",   "michelle",      "jennifer",   "corvette",
    "mercedes",   "mustang1",  "maverick",   "internet",      "samantha",   "jonathan",
    "chocolate",  "butterfly", "passport",   "midnight",      "basketball", "liverpool",
    "pokemon1",   "alexander", "cocacola",   "dragon123",     "monkey123",  "abc12345",
    "abcd1234",   "abcdefgh",  "abc123456",  "aa123456",      "a1234567",   "q1w2e3r4",
    "q1w2e3r4t5", "qazwsxedc", "1qazxsw2",   "zxcvbnm1",      "zxcvbnm123", "changeme",
    "changeme1",  "secret123", "admin123",   "administrator", "adminadmin", "root1234",
    "test1234",   "testtest",  "guest123",   "default1",      "master12",   "hello123",
    "helloworld", "lovely123", "shadow123",  "killer12",      "flower12",   "charlie1",
    "daniel12",   "michael1",  "jordan23",   "123qweasd",
};

int seatd_account_email_normalise(const char *in, char *out)
{
    out[0] = '\0';
    if (in == NULL)
        return SEATD_EINVAL;
    const char *b = in, *e = in + strlen(in);
    while (b < e && (*b == ' ' || *b == '\t' || *b == '\r' || *b == '\n'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        e--;
    size_t n = (size_t)(e - b);
    if (n < 3 || n > SEATD_ACCOUNT_EMAIL_MAX)
        return SEATD_EINVAL;
    char tmp[SEATD_ACCOUNT_EMAIL_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)b[i];
        tmp[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    tmp[n] = '\0';
    const char *at = strchr(tmp, '@');
    if (at == NULL || strchr(at + 1, '@') != NULL)
        return SEATD_EINVAL;
    size_t local = (size_t)(at - tmp);
    if (local < 1 || local > 64)
        return SEATD_EINVAL;
    for (size_t i = 0; i < local; i++) {
        unsigned char c = (unsigned char)tmp[i];
        if (c <= 0x20 || c >= 0x7f || strchr("\"(),:;<>[\\]{}", c))
            return SEATD_EINVAL;
    }
    if (tmp[0] == '.' || tmp[local - 1] == '.' || strstr(tmp, ".."))
        return SEATD_EINVAL;
    /* The domain: labels of [a-z0-9-], 1..63 bytes, no leading/trailing '-', at least two. */
    const char *d = at + 1;
    int labels = 0;
    size_t len = 0;
    for (const char *p = d;; p++) {
        if (*p == '.' || *p == '\0') {
            if (len < 1 || len > 63 || p[-1] == '-' || p[-(long)len] == '-')
                return SEATD_EINVAL;
            labels++;
            len = 0;
            if (*p == '\0')
                break;
            continue;
        }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return SEATD_EINVAL;
        len++;
    }
    if (labels < 2)
        return SEATD_EINVAL;
    memcpy(out, tmp, n + 1);
    return 0;
}

long seatd_account_utf8_length(const char *pw, size_t len)
{
    const unsigned char *p = (const unsigned char *)pw, *end = p + len;
    long n = 0;
    while (p < end) {
        unsigned c = *p;
        size_t k;
        unsigned cp;
        if (c == 0)
            return -1;
        if (c < 0x80) {
            p++;
            n++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return -1;
        }
        if ((size_t)(end - p) < k + 1)
            return -1;
        for (size_t i = 1; i <= k; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return -1;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        /* overlong forms, surrogates and beyond U+10FFFF */
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return -1;
        p += k + 1;
        n++;
    }
    return n;
}

int seatd_account_password_check(const char *pw, size_t len, const char **why)
{
    const char *dummy;
    if (why == NULL)
        why = &dummy;
    if (pw == NULL || len > SEATD_ACCOUNT_PASSWORD_BYTES) {
        *why = "must be at most 128 characters";
        return SEATD_EINVAL;
    }
    long n = seatd_account_utf8_length(pw, len);
    if (n < 0) {
        *why = "must be valid UTF-8 text without NUL";
        return SEATD_EINVAL;
    }
    if (n < SEATD_ACCOUNT_PASSWORD_MIN) {
        *why = "must be at least 8 characters";
        return SEATD_EINVAL;
    }
    if (n > SEATD_ACCOUNT_PASSWORD_MAX) {
        *why = "must be at most 128 characters";
        return SEATD_EINVAL;
    }
    for (size_t i = 0; i < sizeof(common_passwords) / sizeof(common_passwords[0]); i++) {
        if (strlen(common_passwords[i]) == len && strncasecmp(common_passwords[i], pw, len) == 0) {
            *why = "is one of the most common passwords: choose another";
            return SEATD_EWEAKPASSWORD;
        }
    }
    *why = "";
    return 0;
}

static int random_hex(char *out, size_t nbytes)
{
    unsigned char b[32];
    if (nbytes > sizeof(b) || RAND_bytes(b, (int)nbytes) != 1)
        return SEATD_EINTERNAL;
    for (size_t i = 0; i < nbytes; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

int seatd_account_new_user_id(char *out)
{
    out[0] = 'u';
    return random_hex(out + 1, 10);
}

int seatd_account_new_family_id(char *out)
{
    return random_hex(out, 8);
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Base64url of a 32-byte secret without padding: 43 characters. */
#define SECRET_CHARS 43

int seatd_account_new_refresh_token(const char *user_id, char *out)
{
    if (!seatd_keys_valid_sub(user_id) || strchr(user_id, '.'))
        return SEATD_EBADID;
    unsigned char b[SEATD_ACCOUNT_SECRET_BYTES];
    if (RAND_bytes(b, sizeof(b)) != 1)
        return SEATD_EINTERNAL;
    size_t n = strlen(user_id);
    memcpy(out, user_id, n);
    char *p = out + n;
    *p++ = '.';
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < sizeof(b); i++) {
        acc = (acc << 8) | b[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            *p++ = b64url[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        *p++ = b64url[(acc << (6 - bits)) & 63];
    *p = '\0';
    return 0;
}

int seatd_account_parse_refresh_token(const char *token, char *user_out)
{
    user_out[0] = '\0';
    if (token == NULL)
        return SEATD_EINVAL;
    const char *dot = strchr(token, '.');
    if (dot == NULL || strchr(dot + 1, '.') != NULL)
        return SEATD_EINVAL;
    size_t ulen = (size_t)(dot - token);
    if (ulen < 1 || ulen > 64 || strlen(dot + 1) != SECRET_CHARS)
        return SEATD_EINVAL;
    for (const char *p = dot + 1; *p; p++) {
        if (strchr(b64url, *p) == NULL)
            return SEATD_EINVAL;
    }
    char user[65];
    memcpy(user, token, ulen);
    user[ulen] = '\0';
    if (!seatd_keys_valid_sub(user))
        return SEATD_EINVAL;
    memcpy(user_out, user, ulen + 1);
    return 0;
}

void seatd_account_sha256_hex(const void *p, size_t len, char *out)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}
