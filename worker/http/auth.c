/* auth.c - HS256 bearer JWT verification and signing; see auth.h. */
#include "http/auth.h"
#include "base/buf.h"
#include "http/json.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "http/token_cache.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct seatd_auth_s {
    unsigned char *secret;         /* owned; wiped on free */
    size_t secret_len;             /* bytes in 'secret' */
    seatd_auth_clock_fn clock;     /* NULL: time(NULL) */
    void *clock_data;              /* passed to 'clock' */
    seatd_token_cache_t *verified; /* owned: tokens that verified, for their lifetime */
    EVP_MAC *mac_alg;              /* owned: HMAC, fetched once */
    EVP_MAC_CTX *mac;              /* owned: HMAC-SHA256 keyed with 'secret' once */
};

/* Distinct live tokens remembered per process. Direct-mapped, so the table is several times
 * the buyers one worker serves at once: 4,096 slots for a blockbuster's 10,000 buyers made
 * most of them collide (each miss an HMAC and two JSON parses). ~130 bytes a slot plus the
 * token's copy when filled: at most ~20 MB per worker. */
#define VERIFIED_SLOTS 65536

#define SHA256_LEN 32

/* ----------------------------------------------------------------------------------------
 * Base64url (RFC 4648 section 5), strict: no padding, no whitespace, zero trailing bits.
 * ---------------------------------------------------------------------------------------- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The value of 'c' in the alphabet above, or -1. */
static int b64val(int c)
{
    const char *p = c != '\0' ? strchr(b64url, c) : NULL;
    return p ? (int)(p - b64url) : -1;
}

/* Decodes 'len' chars of 'in' into an owned buffer (NUL-terminated, '*out_len' bytes).
 * Returns NULL on any deviation from the strict alphabet and padding rules. */
static unsigned char *b64url_decode(const char *in, size_t len, size_t *out_len)
{
    if (len % 4 == 1)
        return NULL;
    unsigned char *out = seatd_malloc(len * 3 / 4 + 1);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64val((unsigned char)in[i]);
        if (v < 0)
            goto fail;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)((acc >> bits) & 0xff);
        }
    }
    /* Leftover bits (2 or 4) must be zero, or two encodings would name the same bytes. */
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        goto fail;
    out[o] = '\0';
    *out_len = o;
    return out;
fail:
    free(out);
    return NULL;
}

static void b64url_encode(seatd_buf_t *b, const unsigned char *in, size_t len)
{
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        char q[4] = {b64url[v >> 18], b64url[(v >> 12) & 63], b64url[(v >> 6) & 63],
                     b64url[v & 63]};
        seatd_buf_append(b, q, 4);
    }
    if (len - i == 1) {
        unsigned v = (unsigned)in[i] << 16;
        char q[2] = {b64url[v >> 18], b64url[(v >> 12) & 63]};
        seatd_buf_append(b, q, 2);
    } else if (len - i == 2) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
        char q[3] = {b64url[v >> 18], b64url[(v >> 12) & 63], b64url[(v >> 6) & 63]};
        seatd_buf_append(b, q, 3);
    }
}

/* ----------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------- */

/* The user-id grammar is the key schema's (keys.h): a sub becomes part of Redis key names. */
static int valid_sub(const char *s)
{
    return seatd_keys_valid_sub(s);
}

static int64_t now_s(const seatd_auth_t *auth)
{
    if (auth->clock)
        return auth->clock(auth->clock_data);
    return (int64_t)time(NULL);
}

static int hmac(const seatd_auth_t *auth, const char *data, size_t len,
                unsigned char mac[SHA256_LEN])
{
    /* The context was keyed once (seatd_auth_new): initialising it again without a key starts
     * a new MAC under the same key, a fifth of the one-shot HMAC()'s cost (which fetches the
     * digest and derives the key's pads on every call; one per request whose token a worker
     * has not seen yet). */
    size_t mac_len = 0;
    if (EVP_MAC_init(auth->mac, NULL, 0, NULL) != 1 ||
        EVP_MAC_update(auth->mac, (const unsigned char *)data, len) != 1 ||
        EVP_MAC_final(auth->mac, mac, &mac_len, SHA256_LEN) != 1 || mac_len != SHA256_LEN)
        return SEATD_EINTERNAL;
    return 0;
}

/* Reads numeric claim 'name' as whole seconds. Returns 1 if present and valid, 0 if absent,
 * -1 if present but not an integral number in range. */
static int numeric_claim(const cJSON *claims, const char *name, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(claims, name);
    if (v == NULL)
        return 0;
    if (!cJSON_IsNumber(v))
        return -1;
    double d = v->valuedouble;
    if (!isfinite(d) || d < 0 || d > 253402300799.0 /* 9999-12-31 */ || floor(d) != d)
        return -1;
    *out = (int64_t)d;
    return 1;
}

/* Parses a decoded header or claims segment through the JSON layer (json.h): besides syntax
 * and depth it refuses "\u0000" inside a string, which cJSON would decode into a C string cut
 * at the NUL ("sub":"alice\u0000evil" read as "alice", "role":"admin\u0000x" as "admin"), and
 * bytes after the object. Returns an owned object or NULL. */
static cJSON *parse_segment(const char *json, size_t len)
{
    cJSON *doc = NULL;
    if (seatd_json_parse(json, len, &doc) < 0)
        return NULL;
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

/* Judges a decoded header: SEATD_AUTH_FAULT_NONE, MALFORMED (not a JSON object) or ALGORITHM. */
static seatd_auth_fault_t check_header(const char *json, size_t len)
{
    cJSON *h = parse_segment(json, len);
    seatd_auth_fault_t why = SEATD_AUTH_FAULT_ALGORITHM;
    if (h == NULL)
        return SEATD_AUTH_FAULT_MALFORMED;
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(h, "alg");
    if (!cJSON_IsString(alg) || strcmp(alg->valuestring, "HS256") != 0)
        goto out;
    const cJSON *typ = cJSON_GetObjectItemCaseSensitive(h, "typ");
    if (typ != NULL && (!cJSON_IsString(typ) || strcasecmp(typ->valuestring, "JWT") != 0))
        goto out;
    /* "crit" names extensions we would have to understand; we understand none. */
    if (cJSON_GetObjectItemCaseSensitive(h, "crit") != NULL)
        goto out;
    why = SEATD_AUTH_FAULT_NONE;
out:
    cJSON_Delete(h);
    return why;
}

/* Whether 's' is a channel name: [a-z0-9_-]{1,32}. */
static int valid_channel(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* The "channels" claim into 'out' (comma-joined): absent is none; anything but an array of
 * at most SEATD_PRINCIPAL_CHANNELS_MAX channel names makes the claims invalid (-1). */
static int channels_claim(const cJSON *claims, char *out, size_t cap)
{
    const cJSON *chans = cJSON_GetObjectItemCaseSensitive(claims, "channels"), *it;
    size_t at = 0;
    int n = 0;
    out[0] = '\0';
    if (chans == NULL)
        return 0;
    if (!cJSON_IsArray(chans) || cJSON_GetArraySize(chans) > SEATD_PRINCIPAL_CHANNELS_MAX)
        return -1;
    cJSON_ArrayForEach(it, chans)
    {
        if (!cJSON_IsString(it) || !valid_channel(it->valuestring))
            return -1;
        at += (size_t)snprintf(out + at, cap - at, "%s%s", n++ ? "," : "", it->valuestring);
    }
    return 0;
}

static int is_admin(const cJSON *claims)
{
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(claims, "role");
    if (cJSON_IsString(role) && strcmp(role->valuestring, "admin") == 0)
        return 1;
    const cJSON *roles = cJSON_GetObjectItemCaseSensitive(claims, "roles");
    const cJSON *it;
    if (cJSON_IsArray(roles))
        cJSON_ArrayForEach(it, roles) if (cJSON_IsString(it) &&
                                          strcmp(it->valuestring, "admin") == 0) return 1;
    return 0;
}

/* Judges the claims of a token whose signature verified; fills '*out' when they pass.
 * Returns SEATD_AUTH_FAULT_NONE, MALFORMED, CLAIMS, EXPIRED or NOT_YET_VALID. */
static seatd_auth_fault_t check_claims(const char *json, size_t len, int64_t now,
                                       seatd_principal_t *out)
{
    cJSON *c = parse_segment(json, len);
    seatd_auth_fault_t why = SEATD_AUTH_FAULT_CLAIMS;
    int64_t exp = 0, nbf = 0, iat = 0;
    if (c == NULL)
        return SEATD_AUTH_FAULT_MALFORMED;
    if (numeric_claim(c, "exp", &exp) != 1)
        goto out; /* exp is required */
    int has_nbf = numeric_claim(c, "nbf", &nbf), has_iat = numeric_claim(c, "iat", &iat);
    if (has_nbf < 0 || has_iat < 0)
        goto out;
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(c, "sub");
    if (!cJSON_IsString(sub) || !valid_sub(sub->valuestring))
        goto out;
    char channels[sizeof(out->channels)];
    if (channels_claim(c, channels, sizeof(channels)) < 0)
        goto out;
    why = SEATD_AUTH_FAULT_EXPIRED;
    if (now >= exp + SEATD_AUTH_LEEWAY_S)
        goto out;
    why = SEATD_AUTH_FAULT_NOT_YET_VALID;
    if ((has_nbf == 1 && now + SEATD_AUTH_LEEWAY_S < nbf) ||
        (has_iat == 1 && now + SEATD_AUTH_LEEWAY_S < iat))
        goto out;
    memset(out, 0, sizeof(*out));
    memcpy(out->sub, sub->valuestring, strlen(sub->valuestring) + 1);
    out->admin = is_admin(c);
    memcpy(out->channels, channels, sizeof(channels));
    out->valid_until = exp + SEATD_AUTH_LEEWAY_S;
    out->valid_from = INT64_MIN;
    if (nbf && nbf - SEATD_AUTH_LEEWAY_S > out->valid_from)
        out->valid_from = nbf - SEATD_AUTH_LEEWAY_S;
    if (iat && iat - SEATD_AUTH_LEEWAY_S > out->valid_from)
        out->valid_from = iat - SEATD_AUTH_LEEWAY_S;
    why = SEATD_AUTH_FAULT_NONE;
out:
    cJSON_Delete(c);
    return why;
}

/* What each fault says: the problem's detail and, for a token that was sent, the RFC 6750
 * error_description (which allows no '"' or '\\'). */
static const char *const fault_text[] = {
    [SEATD_AUTH_FAULT_NONE] = "the token is valid",
    [SEATD_AUTH_FAULT_MISSING] = "no bearer token: send Authorization: Bearer <token>",
    [SEATD_AUTH_FAULT_MALFORMED] = "the token is malformed (not a JWT)",
    [SEATD_AUTH_FAULT_ALGORITHM] = "the token is not signed with HS256",
    [SEATD_AUTH_FAULT_SIGNATURE] = "the token has a bad signature (not signed by this service)",
    [SEATD_AUTH_FAULT_EXPIRED] = "the token has expired",
    [SEATD_AUTH_FAULT_NOT_YET_VALID] = "the token is not valid yet (nbf or iat in the future)",
    [SEATD_AUTH_FAULT_CLAIMS] = "the token lacks a valid exp or sub claim",
};

/* ----------------------------------------------------------------------------------------
 * API
 * ---------------------------------------------------------------------------------------- */

int seatd_auth_new(const void *secret, size_t len, seatd_auth_t **out)
{
    *out = NULL;
    if (secret == NULL || len < SEATD_AUTH_MIN_SECRET)
        return SEATD_EINVAL;
    seatd_auth_t *auth = seatd_calloc(1, sizeof(*auth));
    auth->secret = seatd_malloc(len);
    memcpy(auth->secret, secret, len);
    auth->secret_len = len;
    auth->verified = seatd_token_cache_new(VERIFIED_SLOTS);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
                           OSSL_PARAM_construct_end()};
    auth->mac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    auth->mac = auth->mac_alg ? EVP_MAC_CTX_new(auth->mac_alg) : NULL;
    if (auth->mac == NULL || EVP_MAC_init(auth->mac, auth->secret, len, params) != 1) {
        seatd_auth_free(auth);
        return SEATD_EINTERNAL;
    }
    *out = auth;
    return 0;
}

void seatd_auth_free(seatd_auth_t *auth)
{
    if (auth == NULL)
        return;
    OPENSSL_cleanse(auth->secret, auth->secret_len);
    free(auth->secret);
    seatd_token_cache_free(auth->verified);
    EVP_MAC_CTX_free(auth->mac); /* frees its copy of the key cleansed */
    EVP_MAC_free(auth->mac_alg);
    free(auth);
}

void seatd_auth_set_clock(seatd_auth_t *auth, seatd_auth_clock_fn fn, void *data)
{
    auth->clock = fn;
    auth->clock_data = data;
}

void seatd_auth_cache_stats(const seatd_auth_t *auth, unsigned long long *hits,
                            unsigned long long *misses)
{
    *hits = *misses = 0;
    if (auth)
        seatd_token_cache_stats(auth->verified, hits, misses);
}

const char *seatd_auth_fault_text(seatd_auth_fault_t why)
{
    if ((unsigned)why >= sizeof(fault_text) / sizeof(fault_text[0]))
        why = SEATD_AUTH_FAULT_MALFORMED;
    return fault_text[why];
}

void seatd_auth_challenge(seatd_auth_fault_t why, char *out, size_t n)
{
    if (why == SEATD_AUTH_FAULT_MISSING || why == SEATD_AUTH_FAULT_NONE)
        snprintf(out, n, "Bearer");
    else
        snprintf(out, n, "Bearer error=\"invalid_token\", error_description=\"%s\"",
                 seatd_auth_fault_text(why));
}

/* The cached verification (see auth.h); '*why' set on failure. */
static int verify(const seatd_auth_t *auth, const char *token, seatd_principal_t *out,
                  seatd_auth_fault_t *why)
{
    if (auth == NULL || token == NULL) {
        *why = SEATD_AUTH_FAULT_MISSING;
        return SEATD_EUNAUTH;
    }
    int64_t now = now_s(auth);
    size_t len = strnlen(token, SEATD_AUTH_MAX_TOKEN + 1);
    if (len <= SEATD_AUTH_MAX_TOKEN && seatd_token_cache_get(auth->verified, token, len, now, out))
        return 0;
    int rc = seatd_auth_verify_at_why(auth, token, now, out, why);
    if (rc == 0)
        seatd_token_cache_put(auth->verified, token, len, out, out->valid_from, out->valid_until);
    return rc;
}

int seatd_auth_verify(const seatd_auth_t *auth, const char *token, seatd_principal_t *out)
{
    seatd_auth_fault_t why;
    return verify(auth, token, out, &why);
}

int seatd_auth_verify_at(const seatd_auth_t *auth, const char *token, int64_t now,
                         seatd_principal_t *out)
{
    return seatd_auth_verify_at_why(auth, token, now, out, NULL);
}

int seatd_auth_verify_at_why(const seatd_auth_t *auth, const char *token, int64_t now,
                             seatd_principal_t *out, seatd_auth_fault_t *why_out)
{
    unsigned char *header = NULL, *claims = NULL, *sig = NULL;
    size_t header_len = 0, claims_len = 0, sig_len = 0;
    seatd_auth_fault_t why = SEATD_AUTH_FAULT_MALFORMED;

    if (auth == NULL || token == NULL) {
        why = SEATD_AUTH_FAULT_MISSING;
        goto out;
    }
    size_t len = strnlen(token, SEATD_AUTH_MAX_TOKEN + 1);
    if (len == 0 || len > SEATD_AUTH_MAX_TOKEN)
        goto out;
    const char *dot1 = memchr(token, '.', len);
    if (dot1 == NULL)
        goto out;
    const char *dot2 = memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token));
    if (dot2 == NULL || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)) != NULL)
        goto out;

    /* The header this server signs with, {"alg":"HS256","typ":"JWT"}, is recognised by its
     * encoded bytes: no decode and no JSON parse for it. Any other header is decoded and
     * judged. */
    static const char usual[] = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";
    int usual_header =
        (size_t)(dot1 - token) == sizeof(usual) - 1 && memcmp(token, usual, sizeof(usual) - 1) == 0;
    if (!usual_header) {
        header = b64url_decode(token, (size_t)(dot1 - token), &header_len);
        /* A NUL inside the JSON would let cJSON see less than was signed. */
        if (header == NULL || header_len == 0 || strlen((char *)header) != header_len)
            goto out;
        /* Algorithm first: nothing else in the token is trusted before it says HS256. */
        if ((why = check_header((char *)header, header_len)) != SEATD_AUTH_FAULT_NONE)
            goto out;
        why = SEATD_AUTH_FAULT_MALFORMED;
    }
    claims = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &claims_len);
    sig = b64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - token), &sig_len);
    if (claims == NULL || sig == NULL || claims_len == 0 || strlen((char *)claims) != claims_len)
        goto out;
    unsigned char mac[SHA256_LEN];
    if (hmac(auth, token, (size_t)(dot2 - token), mac) < 0)
        goto out;
    why = SEATD_AUTH_FAULT_SIGNATURE;
    if (sig_len != SHA256_LEN || CRYPTO_memcmp(mac, sig, SHA256_LEN) != 0)
        goto out;
    why = check_claims((char *)claims, claims_len, now, out);
out:
    free(sig);
    free(claims);
    free(header);
    if (why_out)
        *why_out = why;
    return why == SEATD_AUTH_FAULT_NONE ? 0 : SEATD_EUNAUTH;
}

int seatd_auth_verify_bearer(const seatd_auth_t *auth, const char *header, seatd_principal_t *out)
{
    return seatd_auth_verify_bearer_why(auth, header, out, NULL);
}

int seatd_auth_verify_bearer_why(const seatd_auth_t *auth, const char *header,
                                 seatd_principal_t *out, seatd_auth_fault_t *why_out)
{
    seatd_auth_fault_t why = SEATD_AUTH_FAULT_MISSING;
    int rc = SEATD_EUNAUTH;
    if (header != NULL && strncasecmp(header, "Bearer ", 7) == 0) {
        const char *p = header + 7;
        while (*p == ' ')
            p++;
        rc = verify(auth, p, out, &why);
    }
    if (why_out)
        *why_out = rc == 0 ? SEATD_AUTH_FAULT_NONE : why;
    return rc;
}

int seatd_auth_sign(const seatd_auth_t *auth, const char *sub, int admin, int64_t ttl_s, char **out)
{
    return seatd_auth_sign_channels(auth, sub, admin, NULL, ttl_s, out);
}

int seatd_auth_sign_channels(const seatd_auth_t *auth, const char *sub, int admin,
                             const char *channels, int64_t ttl_s, char **out)
{
    *out = NULL;
    if (sub == NULL || !valid_sub(sub) || ttl_s <= 0)
        return SEATD_EINVAL;
    /* "boxoffice,house" -> ,"channels":["boxoffice","house"] (names need no escaping) */
    char chans[SEATD_PRINCIPAL_CHANNELS_MAX * 36 + 16] = "";
    if (channels != NULL && channels[0]) {
        char copy[SEATD_PRINCIPAL_CHANNELS_MAX * 33 + 1];
        size_t at = (size_t)snprintf(chans, sizeof(chans), ",\"channels\":[");
        int n = 0;
        if (strlen(channels) >= sizeof(copy))
            return SEATD_EINVAL;
        memcpy(copy, channels, strlen(channels) + 1);
        for (char *save = NULL, *c = strtok_r(copy, ",", &save); c;
             c = strtok_r(NULL, ",", &save)) {
            if (!valid_channel(c) || n == SEATD_PRINCIPAL_CHANNELS_MAX)
                return SEATD_EINVAL;
            at += (size_t)snprintf(chans + at, sizeof(chans) - at, "%s\"%s\"", n++ ? "," : "", c);
        }
        snprintf(chans + at, sizeof(chans) - at, "]");
    }
    int64_t now = now_s(auth);
    /* A random "jti": without it two tokens for one user minted in the same second are the
     * same bytes, and a client that tells a refreshed token from a stale one by comparing
     * them (the seat page does) sees no refresh at all. */
    unsigned char id[16];
    if (RAND_bytes(id, sizeof(id)) != 1)
        return SEATD_EINTERNAL;

    seatd_buf_t claims = SEATD_BUF_INIT, tok = SEATD_BUF_INIT;
    /* 'sub' is in a charset that needs no JSON escaping (valid_sub); so is base64url. */
    seatd_buf_printf(&claims, "{\"sub\":\"%s\",\"iat\":%lld,\"exp\":%lld%s%s,\"jti\":\"", sub,
                     (long long)now, (long long)(now + ttl_s), admin ? ",\"role\":\"admin\"" : "",
                     chans);
    b64url_encode(&claims, id, sizeof(id));
    seatd_buf_puts(&claims, "\"}");
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    b64url_encode(&tok, (const unsigned char *)header, sizeof(header) - 1);
    seatd_buf_puts(&tok, ".");
    b64url_encode(&tok, (const unsigned char *)claims.data, claims.len);
    unsigned char mac[SHA256_LEN];
    int rc = hmac(auth, tok.data, tok.len, mac);
    if (rc < 0) {
        seatd_buf_free(&claims);
        seatd_buf_free(&tok);
        return rc;
    }
    seatd_buf_puts(&tok, ".");
    b64url_encode(&tok, mac, sizeof(mac));
    seatd_buf_free(&claims);
    *out = seatd_buf_steal(&tok, NULL);
    return 0;
}
