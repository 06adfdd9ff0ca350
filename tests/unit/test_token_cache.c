/* test_token_cache.c - verified tokens remembered by their exact bytes, for their window. */
#include <criterion/criterion.h>
#include <string.h>

#include "http/token_cache.h"

static seatd_principal_t principal(const char *sub, int admin)
{
    seatd_principal_t p;
    memset(&p, 0, sizeof(p));
    strcpy(p.sub, sub);
    p.admin = admin;
    return p;
}

Test(token_cache, a_token_is_found_only_inside_its_window_and_only_by_its_exact_bytes)
{
    seatd_token_cache_t *c = seatd_token_cache_new(8);
    seatd_principal_t p = principal("alice", 0), out;
    const char *tok = "aaa.bbb.ccc";
    seatd_token_cache_put(c, tok, strlen(tok), &p, 100, 200);
    cr_assert_eq(seatd_token_cache_get(c, tok, strlen(tok), 150, &out), 1);
    cr_assert_str_eq(out.sub, "alice");
    cr_assert_eq(seatd_token_cache_get(c, tok, strlen(tok), 99, &out), 0, "not yet valid");
    cr_assert_eq(seatd_token_cache_get(c, tok, strlen(tok), 200, &out), 0, "expired");
    cr_assert_eq(seatd_token_cache_get(c, "aaa.bbb.ccd", 11, 150, &out), 0, "another token");
    cr_assert_eq(seatd_token_cache_get(c, tok, strlen(tok) - 1, 150, &out), 0, "a prefix");
    unsigned long long hits, misses;
    seatd_token_cache_stats(c, &hits, &misses);
    cr_assert_eq(hits, 1);
    cr_assert_eq(misses, 4);
    seatd_token_cache_free(c);
}

Test(token_cache, a_colliding_token_evicts_and_never_answers_for_another)
{
    seatd_token_cache_t *c = seatd_token_cache_new(1); /* one slot: every token collides */
    seatd_principal_t a = principal("alice", 0), b = principal("bob", 1), out;
    seatd_token_cache_put(c, "tok-a", 5, &a, 0, 1000);
    seatd_token_cache_put(c, "tok-b", 5, &b, 0, 1000);
    cr_assert_eq(seatd_token_cache_get(c, "tok-a", 5, 10, &out), 0);
    cr_assert_eq(seatd_token_cache_get(c, "tok-b", 5, 10, &out), 1);
    cr_assert_str_eq(out.sub, "bob");
    cr_assert_eq(out.admin, 1);
    seatd_token_cache_free(c);
}
