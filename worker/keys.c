/* keys.c - the Redis key schema and id grammar; see keys.h. */
#include "keys.h"

#include <stdio.h>
#include <string.h>

#include <openssl/rand.h>

#include "rds_slot.h"

/* 1 if every byte of 's' is in 'extra' or alphanumeric and its length is in [1, max]. */
static int valid_charset(const char *s, size_t max, const char *extra)
{
    if (s == NULL)
        return 0;
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        unsigned char c = (unsigned char)*p;
        if (n >= max)
            return 0;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 (c != '\0' && strchr(extra, c) != NULL);
        if (!ok)
            return 0;
    }
    return n >= 1;
}

int seatd_keys_valid_show_id(const char *s)
{
    if (s == NULL || s[0] == '0')
        return 0;
    size_t n = 0;
    for (const char *p = s; *p; p++, n++)
        if (*p < '0' || *p > '9' || n >= 18)
            return 0;
    return n >= 1;
}

int seatd_keys_valid_seat_id(const char *s)
{
    return valid_charset(s, 16, "_-");
}

int seatd_keys_valid_sub(const char *s)
{
    return valid_charset(s, 64, "_.@:|-");
}

int seatd_keys_valid_idem_key(const char *s)
{
    /* No ':' — the key follows the user id, which may contain ':', in
     * {s:<id>}:idem:<sub>:<key>; a colon-free key keeps that split unambiguous. */
    return valid_charset(s, 128, "_.-");
}

#define ID_HEX 20 /* hex digits after the kind letter */

int seatd_keys_new_id(char *out, const char *show_id, char kind)
{
    unsigned char rnd[ID_HEX / 2];
    if (!seatd_keys_valid_show_id(show_id) || (kind != 'h' && kind != 'b' && kind != 'q'))
        return SEATD_EBADID;
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return SEATD_EINTERNAL;
    int n = snprintf(out, SEATD_ID_MAX, "%s-%c", show_id, kind);
    for (size_t i = 0; i < sizeof(rnd); i++)
        n += snprintf(out + n, SEATD_ID_MAX - (size_t)n, "%02x", rnd[i]);
    return 0;
}

int seatd_keys_parse_id(const char *id, char kind, char *show_out)
{
    if (id == NULL)
        return SEATD_EBADID;
    const char *dash = strchr(id, '-');
    if (dash == NULL || dash == id || (size_t)(dash - id) > 18)
        return SEATD_EBADID;
    char show[20];
    memcpy(show, id, (size_t)(dash - id));
    show[dash - id] = '\0';
    if (!seatd_keys_valid_show_id(show) || dash[1] != kind)
        return SEATD_EBADID;
    const char *hex = dash + 2;
    size_t n = 0;
    for (; hex[n]; n++)
        if (!((hex[n] >= '0' && hex[n] <= '9') || (hex[n] >= 'a' && hex[n] <= 'f')))
            return SEATD_EBADID;
    if (n != ID_HEX)
        return SEATD_EBADID;
    if (show_out != NULL)
        memcpy(show_out, show, strlen(show) + 1);
    return 0;
}

int seatd_keys_show(char *out, const char *show_id, const char *suffix)
{
    if (!seatd_keys_valid_show_id(show_id) || suffix == NULL)
        return SEATD_EBADID;
    int n = snprintf(out, SEATD_KEY_MAX, "{s:%s}:%s", show_id, suffix);
    if (n < 0 || n >= SEATD_KEY_MAX)
        return SEATD_EBADID;
    return 0;
}

int seatd_keys_user(char *out, const char *sub, const char *suffix)
{
    if (!seatd_keys_valid_sub(sub) || suffix == NULL)
        return SEATD_EBADID;
    int n = snprintf(out, SEATD_KEY_MAX, "{u:%s}:%s", sub, suffix);
    if (n < 0 || n >= SEATD_KEY_MAX)
        return SEATD_EBADID;
    return 0;
}

int seatd_keys_email(char *out, const char *email)
{
    if (email == NULL || email[0] == '\0')
        return SEATD_EBADID;
    int n = snprintf(out, SEATD_KEY_MAX, "seatd:email:%s", email);
    if (n < 0 || n >= SEATD_KEY_MAX)
        return SEATD_EBADID;
    return 0;
}

/* One hash tag per bucket whose slot lies in the bucket's range (found by search: "h13" hashes
 * to slot 606, in bucket 0's [0, 1024), and so on); test_keys checks every one. */
static const char *const hint_tags[SEATD_HINT_BUCKETS] = {
    "h13", "h3", "h62", "h40", "h12", "h2", "h63", "h41",
    "h11", "h1", "h60", "h42", "h10", "h0", "h61", "h43",
};

int seatd_keys_hint_bucket(const char *show_id)
{
    char tag[SEATD_KEY_MAX];
    if (!seatd_keys_valid_show_id(show_id))
        return -1;
    int n = snprintf(tag, sizeof(tag), "s:%s", show_id); /* the show's hash tag, {s:<id>} */
    return (int)(seatd_rds_keyslot(tag, (size_t)n) / (16384 / SEATD_HINT_BUCKETS));
}

int seatd_keys_hint(char *out, const char *base, int bucket)
{
    if (bucket < 0 || bucket >= SEATD_HINT_BUCKETS)
        return SEATD_EBADID;
    int n = snprintf(out, SEATD_KEY_MAX, "%s:{%s}", base, hint_tags[bucket]);
    return n > 0 && n < SEATD_KEY_MAX ? 0 : SEATD_EBADID;
}

int seatd_keys_show_hint(char *out, const char *base, const char *show_id)
{
    return seatd_keys_hint(out, base, seatd_keys_hint_bucket(show_id));
}
