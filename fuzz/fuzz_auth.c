/*
 * fuzz_auth.c - libFuzzer harness for HS256 bearer JWT verification (auth.h).
 *
 * The secret is fixed (FUZZ_SECRET, the one the seed tokens in corpus/auth/ are signed with)
 * and so is the clock (FUZZ_NOW, 2026-01-01T00:00:00Z). Byte 0 picks a mode:
 *   0  raw: the rest of the input is the token (and "Bearer <token>" the header);
 *   1  structure-aware: the rest is split into a header JSON and a claims JSON which are
 *      base64url-encoded and correctly signed here, so the claim checks behind the
 *      signature are reachable; byte 1 gives the split and shifts the clock;
 *   2  sign: seatd_auth_sign() for the rest as sub; a minted token must verify.
 * Invariants: an accepted token has a sub passing seatd_keys_valid_sub() that equals its
 * "sub" claim, a numeric "exp" not yet past (with leeway), and stops being accepted if any
 * one character of it is changed (a flipped signature byte above all).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "http/auth.h"
#include "base/buf.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "fuzz_check.h"

#define FUZZ_SECRET "seatd-fuzz-secret-0123456789abcdef" /* 34 bytes */
#define FUZZ_NOW 1767225600LL                            /* 2026-01-01T00:00:00Z */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static seatd_auth_t *auth;

static int64_t fixed_clock(void *data)
{
    return FUZZ_NOW;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    seatd_mem_init();
    if (seatd_auth_new(FUZZ_SECRET, strlen(FUZZ_SECRET), &auth) != 0)
        abort();
    seatd_auth_set_clock(auth, fixed_clock, NULL);
    return 0;
}

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64url_encode(seatd_buf_t *b, const unsigned char *in, size_t len)
{
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        char q[4] = {b64url[v >> 18], b64url[(v >> 12) & 63], b64url[(v >> 6) & 63],
                     b64url[v & 63]};
        seatd_buf_append(b, q, 4);
    }
    unsigned v = 0;
    if (len - i == 1) {
        v = (unsigned)in[i] << 16;
        char q[2] = {b64url[v >> 18], b64url[(v >> 12) & 63]};
        seatd_buf_append(b, q, 2);
    } else if (len - i == 2) {
        v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        char q[3] = {b64url[v >> 18], b64url[(v >> 12) & 63], b64url[(v >> 6) & 63]};
        seatd_buf_append(b, q, 3);
    }
}

/* What verification promised about an accepted token, checked independently. */
static void check_accepted(const char *token, int64_t now, const seatd_principal_t *pr)
{
    CHECK(seatd_keys_valid_sub(pr->sub));
    CHECK(pr->admin == 0 || pr->admin == 1);
    /* Decode the claims segment with OpenSSL (padding re-added) and look at them. */
    const char *d1 = strchr(token, '.');
    CHECK(d1 != NULL);
    const char *d2 = strchr(d1 + 1, '.');
    CHECK(d2 != NULL && strchr(d2 + 1, '.') == NULL);
    size_t n = (size_t)(d2 - d1 - 1);
    char *b64 = malloc(n + 4);
    for (size_t i = 0; i < n; i++)
        b64[i] = d1[1 + i] == '-' ? '+' : d1[1 + i] == '_' ? '/' : d1[1 + i];
    while (n % 4)
        b64[n++] = '=';
    unsigned char *raw = malloc(n / 4 * 3 + 1);
    int m = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)n);
    CHECK(m >= 0);
    while (m > 0 && n >= 1 && b64[n - 1] == '=' && raw[m - 1] == 0)
        m--, n--; /* EVP_DecodeBlock keeps the padding's zero bytes */
    raw[m] = '\0';
    cJSON *c = cJSON_Parse((const char *)raw);
    CHECK(cJSON_IsObject(c));
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(c, "sub");
    CHECK(cJSON_IsString(sub) && strcmp(sub->valuestring, pr->sub) == 0);
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(c, "exp");
    CHECK(cJSON_IsNumber(exp) && isfinite(exp->valuedouble));
    CHECK((double)now < exp->valuedouble + SEATD_AUTH_LEEWAY_S);
    cJSON_Delete(c);
    free(raw);
    free(b64);
}

/* Changing any one character of an accepted token must make it unacceptable. */
static void check_tamper(const char *token, int64_t now, size_t where, unsigned delta)
{
    size_t len = strlen(token);
    char *t = malloc(len + 1);
    seatd_principal_t pr;
    /* A flipped byte in the signature (the part after the last dot). */
    const char *sig = strrchr(token, '.') + 1;
    size_t sig_len = len - (size_t)(sig - token);
    if (sig_len) {
        memcpy(t, token, len + 1);
        size_t i = (size_t)(sig - token) + where % sig_len;
        t[i] = (char)(t[i] ^ (1u << (delta % 8)));
        if (seatd_auth_verify_at(auth, t, now, &pr) == 0) {
            fprintf(stderr, "accepted with a flipped signature byte: %s\n", t);
            abort();
        }
    }
    /* Another base64url character anywhere in the signed part. */
    size_t signed_len = (size_t)(sig - token) - 1;
    memcpy(t, token, len + 1);
    size_t i = where % signed_len;
    if (t[i] != '.') {
        const char *pos = strchr(b64url, t[i]);
        size_t k = pos ? (size_t)(pos - b64url) : 0;
        t[i] = b64url[(k + 1 + delta % 63) % 64];
        if (seatd_auth_verify_at(auth, t, now, &pr) == 0) {
            fprintf(stderr, "accepted with a changed signed part: %s\n", t);
            abort();
        }
    }
    free(t);
}

static void verify_raw(const uint8_t *data, size_t size)
{
    char *tok = malloc(size + 1);
    memcpy(tok, data, size);
    tok[size] = '\0';
    seatd_principal_t pr;
    memset(&pr, 0xA5, sizeof(pr));
    seatd_principal_t untouched = pr;
    if (seatd_auth_verify_at(auth, tok, FUZZ_NOW, &pr) == 0) {
        check_accepted(tok, FUZZ_NOW, &pr);
        check_tamper(tok, FUZZ_NOW, size > 0 ? data[size - 1] : 0, size);
    } else {
        CHECK(memcmp(&pr, &untouched, sizeof(pr)) == 0); /* nothing written on failure */
    }
    /* The header form, with the scheme in varying case. */
    seatd_buf_t h = SEATD_BUF_INIT;
    seatd_buf_puts(&h, size & 1 ? "bEaReR " : "Bearer ");
    seatd_buf_append(&h, tok, strlen(tok));
    seatd_principal_t pb;
    int a = seatd_auth_verify_at(auth, tok, FUZZ_NOW, &pr);
    int b = seatd_auth_verify_bearer(auth, h.data, &pb);
    /* Same verdict unless the token began with spaces (the header form skips them). */
    if (tok[0] != ' ')
        CHECK((a == 0) == (b == 0));
    seatd_buf_free(&h);
    free(tok);
}

static void verify_signed(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint8_t split = data[0], shift = data[1];
    data += 2;
    size -= 2;
    int64_t now = FUZZ_NOW + ((int64_t)shift - 128) * 60;
    seatd_buf_t tok = SEATD_BUF_INIT;
    if (split == 0xff) {
        /* The usual header, so all the input is claims. */
        static const char hdr[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
        b64url_encode(&tok, (const unsigned char *)hdr, sizeof(hdr) - 1);
        split = 0;
    } else {
        if (split > size)
            split = (uint8_t)size;
        b64url_encode(&tok, data, split);
    }
    seatd_buf_puts(&tok, ".");
    b64url_encode(&tok, data + split, size - split);
    unsigned char mac[32];
    unsigned mac_len = 0;
    CHECK(HMAC(EVP_sha256(), FUZZ_SECRET, (int)strlen(FUZZ_SECRET), (const unsigned char *)tok.data,
               tok.len, mac, &mac_len) != NULL);
    seatd_buf_puts(&tok, ".");
    b64url_encode(&tok, mac, mac_len);

    seatd_principal_t pr;
    if (seatd_auth_verify_at(auth, tok.data, now, &pr) == 0) {
        check_accepted(tok.data, now, &pr);
        check_tamper(tok.data, now, shift, split);
    }
    seatd_buf_free(&tok);
}

static void sign_and_verify(const uint8_t *data, size_t size)
{
    if (size < 1)
        return;
    int admin = data[0] & 1;
    int64_t ttl = (int64_t)(data[0] >> 1) * 997 - 3;
    char *sub = malloc(size);
    memcpy(sub, data + 1, size - 1);
    sub[size - 1] = '\0';
    char *tok = NULL;
    int rc = seatd_auth_sign(auth, sub, admin, ttl, &tok);
    if (rc == 0) {
        CHECK(seatd_keys_valid_sub(sub) && ttl > 0);
        seatd_principal_t pr;
        CHECK(seatd_auth_verify(auth, tok, &pr) == 0);
        CHECK(strcmp(pr.sub, sub) == 0 && pr.admin == admin);
        check_accepted(tok, FUZZ_NOW, &pr);
        /* Expired once exp + leeway is reached. */
        CHECK(seatd_auth_verify_at(auth, tok, FUZZ_NOW + ttl + SEATD_AUTH_LEEWAY_S, &pr) != 0);
        check_tamper(tok, FUZZ_NOW, size, data[0]);
        free(tok);
    } else {
        CHECK(rc == SEATD_EINVAL && tok == NULL);
        CHECK(!seatd_keys_valid_sub(sub) || ttl <= 0);
    }
    free(sub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > SEATD_AUTH_MAX_TOKEN + 64)
        return 0;
    switch (data[0] % 3) {
    case 0:
        verify_raw(data + 1, size - 1);
        break;
    case 1:
        verify_signed(data + 1, size - 1);
        break;
    default:
        sign_and_verify(data + 1, size - 1);
        break;
    }
    return 0;
}
