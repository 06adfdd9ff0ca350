/* Unit tests for auth.c: HS256 verification with the algorithm pinned, claims, signing. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/auth.h"

#define SECRET "0123456789abcdef0123456789abcdef" /* 32 bytes */
#define NOW 1800000000LL

static seatd_auth_t *auth;

static void setup(void)
{
    cr_assert_eq(seatd_auth_new(SECRET, strlen(SECRET), &auth), 0);
}

static void teardown(void)
{
    seatd_auth_free(auth);
}

TestSuite(auth, .init = setup, .fini = teardown, .timeout = 10);

/* Base64url without padding, appended to 'out'. */
static void b64url(char *out, const unsigned char *in, size_t len)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = strlen(out);
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < len)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < len)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

/* Builds header.claims.signature, signed with 'key' (HS256) — or unsigned if 'key' NULL. */
static char *make_token(const char *header, const char *claims, const char *key)
{
    char *t = calloc(1, 4096);
    b64url(t, (const unsigned char *)header, strlen(header));
    strcat(t, ".");
    b64url(t, (const unsigned char *)claims, strlen(claims));
    if (key) {
        unsigned char mac[32];
        unsigned int len = 0;
        HMAC(EVP_sha256(), key, (int)strlen(key), (unsigned char *)t, strlen(t), mac, &len);
        strcat(t, ".");
        b64url(t, mac, len);
    } else {
        strcat(t, ".");
    }
    return t;
}

static const char *HS = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

static int verify(const char *header, const char *claims, const char *key, seatd_principal_t *who)
{
    char *t = make_token(header, claims, key);
    int rc = seatd_auth_verify_at(auth, t, NOW, who);
    free(t);
    return rc;
}

Test(auth, accepts_a_good_token)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice@example.com\",\"exp\":%lld,\"iat\":%lld}",
             NOW + 60, NOW);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    cr_assert_str_eq(who.sub, "alice@example.com");
    cr_assert_eq(who.admin, 0);
}

/* The usual header is recognised by its bytes, any other spelling of it is decoded and judged:
 * both verify alike, and both are refused with a wrong key or a bad claim. */
Test(auth, the_usual_header_and_its_other_spellings_verify_alike)
{
    seatd_principal_t who;
    char good[256], late[256];
    snprintf(good, sizeof(good), "{\"sub\":\"bob\",\"exp\":%lld}", NOW + 60);
    snprintf(late, sizeof(late), "{\"sub\":\"bob\",\"exp\":%lld}", NOW - 3600);
    const char *headers[] = {HS, "{\"typ\":\"JWT\",\"alg\":\"HS256\"}",
                             "{ \"alg\": \"HS256\", \"typ\": \"JWT\" }"};
    char *t = make_token(HS, good, SECRET);
    cr_assert(strncmp(t, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.", 37) == 0, "the usual bytes");
    free(t);
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
        cr_assert_eq(verify(headers[i], good, SECRET, &who), 0, "header %zu", i);
        cr_assert_str_eq(who.sub, "bob");
        cr_assert_eq(verify(headers[i], good, "another-secret-of-32-bytes-or-more!!", &who),
                     SEATD_EUNAUTH, "header %zu, wrong key", i);
        cr_assert_eq(verify(headers[i], late, SECRET, &who), SEATD_EUNAUTH, "header %zu, expired",
                     i);
    }
}

Test(auth, grants_admin_from_role_or_roles)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"root\",\"exp\":%lld,\"role\":\"admin\"}",
             NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    cr_assert_eq(who.admin, 1);
    snprintf(claims, sizeof(claims), "{\"sub\":\"root\",\"exp\":%lld,\"roles\":[\"x\",\"admin\"]}",
             NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    cr_assert_eq(who.admin, 1);
    snprintf(claims, sizeof(claims), "{\"sub\":\"root\",\"exp\":%lld,\"role\":\"Admin\"}",
             NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    cr_assert_eq(who.admin, 0);
}

Test(auth, rejects_an_expired_token_beyond_the_leeway)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW - 31);
    cr_assert_eq(verify(HS, claims, SECRET, &who), SEATD_EUNAUTH);
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW - 29);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0, "within 30 s of leeway");
}

Test(auth, rejects_a_token_without_exp)
{
    seatd_principal_t who;
    cr_assert_eq(verify(HS, "{\"sub\":\"u\"}", SECRET, &who), SEATD_EUNAUTH);
    cr_assert_eq(verify(HS, "{\"sub\":\"u\",\"exp\":\"soon\"}", SECRET, &who), SEATD_EUNAUTH);
    cr_assert_eq(verify(HS, "{\"sub\":\"u\",\"exp\":1800000060.5}", SECRET, &who), SEATD_EUNAUTH,
                 "exp must be whole seconds");
    cr_assert_eq(verify(HS, "{\"sub\":\"u\",\"exp\":1.80000006e9}", SECRET, &who), 0,
                 "any JSON spelling of a whole number is fine");
}

Test(auth, rejects_nbf_and_iat_in_the_future)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld,\"nbf\":%lld}", NOW + 600,
             NOW + 31);
    cr_assert_eq(verify(HS, claims, SECRET, &who), SEATD_EUNAUTH);
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld,\"nbf\":%lld}", NOW + 600,
             NOW + 29);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld,\"iat\":%lld}", NOW + 600,
             NOW + 3600);
    cr_assert_eq(verify(HS, claims, SECRET, &who), SEATD_EUNAUTH);
}

Test(auth, rejects_a_wrong_signature)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW + 60);
    cr_assert_eq(verify(HS, claims, "another-secret-of-32-bytes-length!", &who), SEATD_EUNAUTH);
    /* One flipped signature character. */
    char *t = make_token(HS, claims, SECRET);
    char *last = t + strlen(t) - 2;
    *last = *last == 'A' ? 'B' : 'A';
    cr_assert_eq(seatd_auth_verify_at(auth, t, NOW, &who), SEATD_EUNAUTH);
    free(t);
    /* Claims swapped under a valid signature. */
    t = make_token(HS, claims, SECRET);
    char forged[4096] = "";
    char *dot1 = strchr(t, '.'), *dot2 = strrchr(t, '.');
    memcpy(forged, t, (size_t)(dot1 - t + 1));
    const char *evil = "{\"sub\":\"admin\",\"exp\":9999999999,\"role\":\"admin\"}";
    b64url(forged, (const unsigned char *)evil, strlen(evil));
    strcat(forged, dot2);
    cr_assert_eq(seatd_auth_verify_at(auth, forged, NOW, &who), SEATD_EUNAUTH);
    free(t);
}

Test(auth, rejects_alg_none)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW + 60);
    cr_assert_eq(verify("{\"alg\":\"none\"}", claims, NULL, &who), SEATD_EUNAUTH);
    /* Even with a valid HMAC over the same bytes. */
    cr_assert_eq(verify("{\"alg\":\"none\"}", claims, SECRET, &who), SEATD_EUNAUTH);
}

Test(auth, rejects_other_or_missing_algorithms)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW + 60);
    const char *headers[] = {
        "{\"alg\":\"RS256\",\"typ\":\"JWT\"}",
        "{\"alg\":\"HS512\"}",
        "{\"alg\":\"hs256\"}",
        "{\"typ\":\"JWT\"}",
        "{\"alg\":null}",
        "[\"HS256\"]",
        "{\"alg\":\"HS256\",\"typ\":\"JWE\"}",
        "{\"alg\":\"HS256\",\"crit\":[\"exp\"]}",
    };
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++)
        cr_assert_eq(verify(headers[i], claims, SECRET, &who), SEATD_EUNAUTH, "header %s",
                     headers[i]);
    cr_assert_eq(verify("{\"alg\":\"HS256\"}", claims, SECRET, &who), 0, "typ is optional");
}

Test(auth, rejects_malformed_base64_and_structure)
{
    seatd_principal_t who;
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%lld}", NOW + 60);
    char *good = make_token(HS, claims, SECRET);
    cr_assert_eq(seatd_auth_verify_at(auth, good, NOW, &who), 0);

    char buf[4096];
    /* Padding, a foreign character, a missing part, an extra part, empty. */
    snprintf(buf, sizeof(buf), "%s=", good);
    cr_assert_eq(seatd_auth_verify_at(auth, buf, NOW, &who), SEATD_EUNAUTH);
    snprintf(buf, sizeof(buf), "%s", good);
    buf[3] = '+';
    cr_assert_eq(seatd_auth_verify_at(auth, buf, NOW, &who), SEATD_EUNAUTH);
    snprintf(buf, sizeof(buf), "%s", good);
    *strrchr(buf, '.') = '\0';
    cr_assert_eq(seatd_auth_verify_at(auth, buf, NOW, &who), SEATD_EUNAUTH);
    snprintf(buf, sizeof(buf), "%s.x", good);
    cr_assert_eq(seatd_auth_verify_at(auth, buf, NOW, &who), SEATD_EUNAUTH);
    cr_assert_eq(seatd_auth_verify_at(auth, "", NOW, &who), SEATD_EUNAUTH);
    cr_assert_eq(seatd_auth_verify_at(auth, "..", NOW, &who), SEATD_EUNAUTH);
    cr_assert_eq(seatd_auth_verify_at(auth, "a.b.c", NOW, &who), SEATD_EUNAUTH);
    /* A signature with non-zero trailing bits names the same bytes: refused. The last
     * character of a 43-char signature carries 4 data bits and 2 padding bits. */
    snprintf(buf, sizeof(buf), "%s", good);
    char *sig = strrchr(buf, '.') + 1;
    cr_assert_eq(strlen(sig), 43);
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    int v = (int)(strchr(a, sig[42]) - a);
    sig[42] = a[v | 1];
    cr_assert_eq(seatd_auth_verify_at(auth, buf, NOW, &who), SEATD_EUNAUTH);
    /* Too long. */
    char *huge = malloc(SEATD_AUTH_MAX_TOKEN + 10);
    memset(huge, 'a', SEATD_AUTH_MAX_TOKEN + 9);
    huge[SEATD_AUTH_MAX_TOKEN + 9] = '\0';
    cr_assert_eq(seatd_auth_verify_at(auth, huge, NOW, &who), SEATD_EUNAUTH);
    free(huge);
    free(good);
}

Test(auth, rejects_a_missing_or_invalid_sub)
{
    seatd_principal_t who;
    const char *subs[] = {
        NULL,        "\"\"",
        "42",        "\"a b\"",
        "\"{s:1}\"", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
    };
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char claims[256];
        if (subs[i])
            snprintf(claims, sizeof(claims), "{\"sub\":%s,\"exp\":%lld}", subs[i], NOW + 60);
        else
            snprintf(claims, sizeof(claims), "{\"exp\":%lld}", NOW + 60);
        cr_assert_eq(verify(HS, claims, SECRET, &who), SEATD_EUNAUTH, "claims %s", claims);
    }
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"%s\",\"exp\":%lld}",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0, "64 characters fit");
    cr_assert_eq(strlen(who.sub), 64);
}

/* A "\u0000" escape inside a signed string would be cut there by cJSON: "alice\u0000evil"
 * read as alice's token, "admin\u0000x" as the admin role. Such tokens are invalid. */
Test(auth, rejects_an_escaped_nul_in_any_claim_or_header_string)
{
    seatd_principal_t who;
    /* exp 1800000060 = NOW + 60 */
    const char *cases[] = {
        "{\"sub\":\"alice\\u0000evil\",\"exp\":1800000060}",
        "{\"sub\":\"mallory\",\"exp\":1800000060,\"role\":\"admin\\u0000x\"}",
        "{\"sub\":\"mallory\",\"exp\":1800000060,\"roles\":[\"admin\\u0000x\"]}",
        "{\"sub\":\"mallory\",\"exp\":1800000060,\"note\":\"\\u0000\"}",
        "{\"sub\\u0000x\":\"mallory\",\"sub\":\"alice\",\"exp\":1800000060}",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(&who, 0, sizeof(who));
        cr_assert_eq(verify(HS, cases[i], SECRET, &who), SEATD_EUNAUTH, "claims %s", cases[i]);
        cr_assert_eq(who.admin, 0);
        cr_assert_str_eq(who.sub, "", "nothing written on failure");
    }
    char claims[256];
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice\",\"exp\":%lld}", NOW + 60);
    cr_assert_eq(verify("{\"alg\":\"HS256\\u0000x\"}", claims, SECRET, &who), SEATD_EUNAUTH);
    cr_assert_eq(verify("{\"alg\":\"HS256\",\"typ\":\"JWT\\u0000\"}", claims, SECRET, &who),
                 SEATD_EUNAUTH);
    /* Bytes after the claims object are not ignored either. */
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice\",\"exp\":%lld}x", NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), SEATD_EUNAUTH);
    /* The same claims without the escape are fine. */
    snprintf(claims, sizeof(claims), "{\"sub\":\"alice\",\"exp\":%lld,\"role\":\"admin\"}",
             NOW + 60);
    cr_assert_eq(verify(HS, claims, SECRET, &who), 0);
    cr_assert_eq(who.admin, 1);
}

Test(auth, refuses_a_short_secret)
{
    seatd_auth_t *a = (seatd_auth_t *)1;
    cr_assert_eq(seatd_auth_new("short", 5, &a), SEATD_EINVAL);
    cr_assert_null(a);
    cr_assert_eq(seatd_auth_new(SECRET, 31, &a), SEATD_EINVAL);
    cr_assert_eq(seatd_auth_new(NULL, 40, &a), SEATD_EINVAL);
    seatd_auth_free(NULL);
}

static int64_t fixed_clock(void *data)
{
    return *(int64_t *)data;
}

Test(auth, signs_tokens_it_then_verifies)
{
    int64_t now = NOW;
    seatd_auth_set_clock(auth, fixed_clock, &now);
    char *t = NULL;
    cr_assert_eq(seatd_auth_sign(auth, "bob", 1, 60, &t), 0);
    seatd_principal_t who;
    cr_assert_eq(seatd_auth_verify(auth, t, &who), 0);
    cr_assert_str_eq(who.sub, "bob");
    cr_assert_eq(who.admin, 1);
    now = NOW + 60 + 31;
    cr_assert_eq(seatd_auth_verify(auth, t, &who), SEATD_EUNAUTH, "expired by the clock");
    free(t);
    cr_assert_eq(seatd_auth_sign(auth, "bad sub", 0, 60, &t), SEATD_EINVAL);
    cr_assert_null(t);
    cr_assert_eq(seatd_auth_sign(auth, "bob", 0, 0, &t), SEATD_EINVAL);
}

/* The seat page tells a refreshed access token from a stale one by comparing them: two tokens
 * minted for one user in the same second must differ (they did not before "jti"). */
Test(auth, two_tokens_minted_in_the_same_second_differ)
{
    int64_t now = NOW;
    seatd_auth_set_clock(auth, fixed_clock, &now);
    char *a = NULL, *b = NULL;
    cr_assert_eq(seatd_auth_sign(auth, "bob", 0, 60, &a), 0);
    cr_assert_eq(seatd_auth_sign(auth, "bob", 0, 60, &b), 0);
    cr_assert_str_neq(a, b);
    seatd_principal_t who;
    cr_assert_eq(seatd_auth_verify(auth, a, &who), 0);
    cr_assert_eq(seatd_auth_verify(auth, b, &who), 0);
    cr_assert_str_eq(who.sub, "bob");
    free(a);
    free(b);
}

Test(auth, verifies_bearer_headers)
{
    char *t = NULL;
    cr_assert_eq(seatd_auth_sign(auth, "carol", 0, 60, &t), 0);
    char hdr[4200];
    seatd_principal_t who;
    snprintf(hdr, sizeof(hdr), "Bearer %s", t);
    cr_assert_eq(seatd_auth_verify_bearer(auth, hdr, &who), 0);
    cr_assert_str_eq(who.sub, "carol");
    snprintf(hdr, sizeof(hdr), "bearer %s", t);
    cr_assert_eq(seatd_auth_verify_bearer(auth, hdr, &who), 0);
    snprintf(hdr, sizeof(hdr), "Basic %s", t);
    cr_assert_eq(seatd_auth_verify_bearer(auth, hdr, &who), SEATD_EUNAUTH);
    cr_assert_eq(seatd_auth_verify_bearer(auth, NULL, &who), SEATD_EUNAUTH);
    cr_assert_eq(seatd_auth_verify_bearer(auth, "Bearer", &who), SEATD_EUNAUTH);
    free(t);
}

Test(auth, a_remembered_token_is_still_refused_outside_its_window)
{
    int64_t now = NOW;
    seatd_auth_set_clock(auth, fixed_clock, &now);
    char claims[160];
    snprintf(claims, sizeof(claims), "{\"sub\":\"dora\",\"nbf\":%lld,\"exp\":%lld}", NOW - 10,
             NOW + 100);
    char *t = make_token(HS, claims, SECRET);
    seatd_principal_t who;
    for (int i = 0; i < 3; i++) /* verified once, then answered from the cache */
        cr_assert_eq(seatd_auth_verify(auth, t, &who), 0);
    cr_assert_str_eq(who.sub, "dora");
    cr_assert_eq(who.valid_from, NOW - 10 - SEATD_AUTH_LEEWAY_S);
    cr_assert_eq(who.valid_until, NOW + 100 + SEATD_AUTH_LEEWAY_S);
    now = NOW - 10 - SEATD_AUTH_LEEWAY_S - 1;
    cr_assert_eq(seatd_auth_verify(auth, t, &who), SEATD_EUNAUTH, "before nbf (less leeway)");
    now = NOW + 100 + SEATD_AUTH_LEEWAY_S;
    cr_assert_eq(seatd_auth_verify(auth, t, &who), SEATD_EUNAUTH, "at exp (plus leeway)");
    now = NOW;
    cr_assert_eq(seatd_auth_verify(auth, t, &who), 0);
    t[strlen(t) - 2] ^= 1; /* one character of the signature changed: another token */
    cr_assert_eq(seatd_auth_verify(auth, t, &who), SEATD_EUNAUTH);
    free(t);
}

/* A refusal says why (the 401's detail and its RFC 6750 challenge); claims are judged only
 * once the signature verified. */
Test(auth, a_refused_token_says_why)
{
    static const struct {
        const char *header, *claims, *key;
        seatd_auth_fault_t want;
    } cases[] = {
        {"{\"alg\":\"HS256\"}", "{\"sub\":\"a\",\"exp\":1800000100}", SECRET,
         SEATD_AUTH_FAULT_NONE},
        {"{\"alg\":\"HS256\"}", "{\"sub\":\"a\",\"exp\":1799999000}", SECRET,
         SEATD_AUTH_FAULT_EXPIRED},
        {"{\"alg\":\"HS256\"}", "{\"sub\":\"a\",\"exp\":1799999000}",
         "another secret of 32 bytes!!!!!", SEATD_AUTH_FAULT_SIGNATURE},
        {"{\"alg\":\"HS256\"}", "{\"sub\":\"a\",\"exp\":1800000100,\"nbf\":1800000500}", SECRET,
         SEATD_AUTH_FAULT_NOT_YET_VALID},
        {"{\"alg\":\"HS256\"}", "{\"exp\":1800000100}", SECRET, SEATD_AUTH_FAULT_CLAIMS},
        {"{\"alg\":\"none\"}", "{\"sub\":\"a\",\"exp\":1800000100}", NULL,
         SEATD_AUTH_FAULT_ALGORITHM},
        {"{\"alg\":\"HS256\"}", "not json", SECRET, SEATD_AUTH_FAULT_MALFORMED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *t = make_token(cases[i].header, cases[i].claims, cases[i].key);
        seatd_principal_t who;
        seatd_auth_fault_t why = (seatd_auth_fault_t)-1;
        int rc = seatd_auth_verify_at_why(auth, t, NOW, &who, &why);
        cr_assert_eq(why, cases[i].want, "case %zu: fault %d", i, (int)why);
        cr_assert_eq(rc, cases[i].want == SEATD_AUTH_FAULT_NONE ? 0 : SEATD_EUNAUTH);
        free(t);
    }
    seatd_principal_t who;
    seatd_auth_fault_t why;
    cr_assert_eq(seatd_auth_verify_bearer_why(auth, NULL, &who, &why), SEATD_EUNAUTH);
    cr_assert_eq(why, SEATD_AUTH_FAULT_MISSING);
    cr_assert_eq(seatd_auth_verify_bearer_why(auth, "Basic eA==", &who, &why), SEATD_EUNAUTH);
    cr_assert_eq(why, SEATD_AUTH_FAULT_MISSING);
    cr_assert_eq(seatd_auth_verify_bearer_why(auth, "Bearer a.b", &who, &why), SEATD_EUNAUTH);
    cr_assert_eq(why, SEATD_AUTH_FAULT_MALFORMED);

    char c[SEATD_AUTH_CHALLENGE_MAX];
    seatd_auth_challenge(SEATD_AUTH_FAULT_MISSING, c, sizeof(c));
    cr_assert_str_eq(c, "Bearer");
    seatd_auth_challenge(SEATD_AUTH_FAULT_EXPIRED, c, sizeof(c));
    cr_assert_str_eq(c,
                     "Bearer error=\"invalid_token\", error_description=\"the token has expired\"");
    cr_assert_str_eq(seatd_auth_fault_text(SEATD_AUTH_FAULT_SIGNATURE),
                     "the token has a bad signature (not signed by this service)");
    /* Every description fits the challenge and is legal in it (no '"', no '\\'). */
    for (int f = SEATD_AUTH_FAULT_MALFORMED; f <= SEATD_AUTH_FAULT_CLAIMS; f++) {
        const char *d = seatd_auth_fault_text((seatd_auth_fault_t)f);
        cr_assert(strpbrk(d, "\"\\") == NULL, "%s", d);
        seatd_auth_challenge((seatd_auth_fault_t)f, c, sizeof(c));
        cr_assert(strstr(c, d) != NULL && c[strlen(c) - 1] == '"', "%s", c);
    }
}
