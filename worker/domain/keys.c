/* keys.c - the Redis key schema and id grammar; see keys.h. */
#include "domain/keys.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/rand.h>

#include "base/fmt.h"
#include "domain/rds_slot.h"

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

/*
 * Random bytes for ids, drawn from OpenSSL's CSPRNG a block at a time: RAND_bytes() makes a
 * getpid() system call on every call (its fork check), one per hold on the hot path. The
 * block is per thread, and a forked child throws away what its parent had drawn (two
 * processes must never hand out the same bytes).
 */
#define RANDOM_BLOCK 1024
static _Thread_local unsigned char random_block[RANDOM_BLOCK];
static _Thread_local size_t random_left;
static pthread_once_t random_once = PTHREAD_ONCE_INIT;

static void random_forget(void)
{
    random_left = 0; /* in the child: the thread that forked is the only one left */
}

static void random_init(void)
{
    pthread_atfork(NULL, NULL, random_forget);
}

static int random_bytes(unsigned char *out, size_t n)
{
    if (n > RANDOM_BLOCK)
        return RAND_bytes(out, (int)n) == 1 ? 0 : -1;
    pthread_once(&random_once, random_init);
    if (random_left < n) {
        if (RAND_bytes(random_block, RANDOM_BLOCK) != 1)
            return -1;
        random_left = RANDOM_BLOCK;
    }
    unsigned char *p = random_block + RANDOM_BLOCK - random_left;
    memcpy(out, p, n);
    memset(p, 0, n); /* drawn bytes are not kept */
    random_left -= n;
    return 0;
}

int seatd_keys_new_id(char *out, const char *show_id, char kind)
{
    unsigned char rnd[ID_HEX / 2];
    if (!seatd_keys_valid_show_id(show_id) ||
        (kind != 'h' && kind != 'b' && kind != 'q' && kind != 'g' && kind != 'm'))
        return SEATD_EBADID;
    if (random_bytes(rnd, sizeof(rnd)) < 0)
        return SEATD_EINTERNAL;
    static const char hex[] = "0123456789abcdef";
    char tail[3] = {'-', kind, '\0'};
    int n = seatd_fmt_cat(out, SEATD_ID_MAX, show_id, tail);
    if (n < 0 || (size_t)n + ID_HEX >= SEATD_ID_MAX)
        return SEATD_EBADID;
    for (size_t i = 0; i < sizeof(rnd); i++) {
        out[n++] = hex[rnd[i] >> 4];
        out[n++] = hex[rnd[i] & 15];
    }
    out[n] = '\0';
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

/* "{<tag>:<id>}:<suffix>" into 'out', 'valid' the check of 'id': the keys of one show or one
 * user share the hash tag, so they live in one cluster slot. */
static int tagged_key(char *out, const char *tag, int valid, const char *id, const char *suffix)
{
    if (!valid || suffix == NULL)
        return SEATD_EBADID;
    if (seatd_fmt_cat(out, SEATD_KEY_MAX, tag, id, "}:", suffix) < 0)
        return SEATD_EBADID;
    return 0;
}

int seatd_keys_show(char *out, const char *show_id, const char *suffix)
{
    return tagged_key(out, "{s:", seatd_keys_valid_show_id(show_id), show_id, suffix);
}

unsigned seatd_keys_show_slot(const char *show_id)
{
    char tag[SEATD_ID_MAX + 4];
    int n = snprintf(tag, sizeof(tag), "s:%s", show_id);
    return seatd_rds_crc16(tag, (size_t)n) & (SEATD_RDS_SLOTS - 1);
}

long long seatd_keys_show_id_in_slot(long long from, unsigned slot)
{
    for (long long id = from > 1 ? from : 1;; id++) {
        char text[24];
        snprintf(text, sizeof(text), "%lld", id);
        if (seatd_keys_show_slot(text) == slot)
            return id;
    }
}

int seatd_keys_user(char *out, const char *sub, const char *suffix)
{
    return tagged_key(out, "{u:", seatd_keys_valid_sub(sub), sub, suffix);
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
    int n = seatd_fmt_cat(tag, sizeof(tag), "s:", show_id); /* the show's hash tag, {s:<id>} */
    return (int)(seatd_rds_keyslot(tag, (size_t)n) / (16384 / SEATD_HINT_BUCKETS));
}

int seatd_keys_hint(char *out, const char *base, int bucket)
{
    if (bucket < 0 || bucket >= SEATD_HINT_BUCKETS)
        return SEATD_EBADID;
    return seatd_fmt_cat(out, SEATD_KEY_MAX, base, ":{", hint_tags[bucket], "}") > 0 ? 0
                                                                                     : SEATD_EBADID;
}

int seatd_keys_show_hint(char *out, const char *base, const char *show_id)
{
    return seatd_keys_hint(out, base, seatd_keys_hint_bucket(show_id));
}
