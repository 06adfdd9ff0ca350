/* token_cache.c - verified bearer tokens by their exact bytes; see token_cache.h. */
#include "http/token_cache.h"

#include <stdlib.h>
#include <string.h>

#include "base/fnv.h"
#include "base/mem.h"

typedef struct {
    char *token; /* owned copy; NULL: free slot */
    size_t len;
    int64_t valid_from, valid_until;
    seatd_principal_t principal;
} entry_t;

struct seatd_token_cache_s {
    entry_t *slots;
    size_t mask;
    unsigned long long hits, misses;
};

seatd_token_cache_t *seatd_token_cache_new(size_t slots)
{
    size_t n = 1;
    while (n < slots)
        n <<= 1;
    seatd_token_cache_t *c = seatd_calloc(1, sizeof(*c));
    c->slots = seatd_calloc(n, sizeof(entry_t));
    c->mask = n - 1;
    return c;
}

void seatd_token_cache_free(seatd_token_cache_t *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i <= c->mask; i++)
        free(c->slots[i].token);
    free(c->slots);
    free(c);
}

/* A token's slot is its FNV-1a hash, masked; equality is checked on the bytes. */
int seatd_token_cache_get(seatd_token_cache_t *c, const char *token, size_t len, int64_t now,
                          seatd_principal_t *out)
{
    entry_t *e = &c->slots[seatd_fnv1a(token, len) & c->mask];
    if (e->token && e->len == len && memcmp(e->token, token, len) == 0 && now >= e->valid_from &&
        now < e->valid_until) {
        *out = e->principal;
        c->hits++;
        return 1;
    }
    c->misses++;
    return 0;
}

void seatd_token_cache_put(seatd_token_cache_t *c, const char *token, size_t len,
                           const seatd_principal_t *p, int64_t valid_from, int64_t valid_until)
{
    entry_t *e = &c->slots[seatd_fnv1a(token, len) & c->mask];
    free(e->token);
    e->token = seatd_strndup(token, len);
    e->len = len;
    e->valid_from = valid_from;
    e->valid_until = valid_until;
    e->principal = *p;
}

void seatd_token_cache_stats(const seatd_token_cache_t *c, unsigned long long *hits,
                             unsigned long long *misses)
{
    *hits = c->hits;
    *misses = c->misses;
}
