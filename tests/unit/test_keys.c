/* Unit tests for keys.c: the id grammar and the key schema. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "domain/keys.h"
#include "domain/rds_slot.h"

typedef struct {
    const char *text;          /* candidate id */
    int show, seat, sub, idem; /* expected validity under each grammar */
} id_case_t;

static const id_case_t cases[] = {
    {"42", 1, 1, 1, 1},
    {"0", 0, 1, 1, 1},
    {"042", 0, 1, 1, 1},
    {"123456789012345678", 1, 0, 1, 1},
    {"1234567890123456789", 0, 0, 1, 1},
    {"C7", 0, 1, 1, 1},
    {"row_1-A", 0, 1, 1, 1},
    {"ABCDEFGHIJKLMNOP", 0, 1, 1, 1},
    {"ABCDEFGHIJKLMNOPQ", 0, 0, 1, 1},
    {"", 0, 0, 0, 0},
    {"C 7", 0, 0, 0, 0},
    {"{s:1}", 0, 0, 0, 0},
    {"a}b", 0, 0, 0, 0},
    {"user@example.com", 0, 0, 1, 0},
    {"auth0|abc", 0, 0, 1, 0},
    {"k:1.2-3_x", 0, 0, 1, 0},
    {"k1.2-3_x", 0, 0, 1, 1},
    {"caf\xc3\xa9", 0, 0, 0, 0},
    {"tab\there", 0, 0, 0, 0},
};

Test(keys, validates_every_id_grammar_from_a_table)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const id_case_t *c = &cases[i];
        cr_expect_eq(seatd_keys_valid_show_id(c->text), c->show, "show id \"%s\"", c->text);
        cr_expect_eq(seatd_keys_valid_seat_id(c->text), c->seat, "seat id \"%s\"", c->text);
        cr_expect_eq(seatd_keys_valid_sub(c->text), c->sub, "sub \"%s\"", c->text);
        cr_expect_eq(seatd_keys_valid_idem_key(c->text), c->idem, "idem key \"%s\"", c->text);
    }
    cr_assert_eq(seatd_keys_valid_seat_id(NULL), 0);
    cr_assert_eq(seatd_keys_valid_show_id(NULL), 0);
}

Test(keys, bounds_sub_and_idempotency_key_lengths)
{
    char s[200];
    memset(s, 'a', sizeof(s));
    s[64] = '\0';
    cr_assert(seatd_keys_valid_sub(s));
    s[64] = 'a';
    s[65] = '\0';
    cr_assert_not(seatd_keys_valid_sub(s));
    s[65] = 'a';
    s[128] = '\0';
    cr_assert(seatd_keys_valid_idem_key(s));
    s[128] = 'a';
    s[129] = '\0';
    cr_assert_not(seatd_keys_valid_idem_key(s));
}

Test(keys, builds_show_keys_with_the_hash_tag)
{
    char k[SEATD_KEY_MAX];
    cr_assert_eq(seatd_keys_show(k, "42", "meta"), 0);
    cr_assert_str_eq(k, "{s:42}:meta");
    cr_assert_eq(seatd_keys_show(k, "42", "seat:C7"), 0);
    cr_assert_str_eq(k, "{s:42}:seat:C7");
    cr_assert_eq(seatd_keys_show(k, "4x", "meta"), SEATD_EBADID);
    cr_assert_eq(seatd_keys_show(k, "", "meta"), SEATD_EBADID);
}

Test(keys, rejects_a_key_that_would_not_fit)
{
    char k[SEATD_KEY_MAX], suffix[SEATD_KEY_MAX];
    memset(suffix, 'x', sizeof(suffix) - 1);
    suffix[sizeof(suffix) - 1] = '\0';
    cr_assert_eq(seatd_keys_show(k, "42", suffix), SEATD_EBADID);
}

Test(keys, new_ids_name_their_show_and_parse_back)
{
    char id[SEATD_ID_MAX], other[SEATD_ID_MAX], show[SEATD_ID_MAX];
    cr_assert_eq(seatd_keys_new_id(id, "42", 'h'), 0);
    cr_assert_eq(strncmp(id, "42-h", 4), 0);
    cr_assert_eq(strlen(id), 4 + 20);
    cr_assert_eq(seatd_keys_parse_id(id, 'h', show), 0);
    cr_assert_str_eq(show, "42");
    cr_assert_eq(seatd_keys_parse_id(id, 'b', show), SEATD_EBADID);
    cr_assert_eq(seatd_keys_new_id(other, "42", 'h'), 0);
    cr_assert_str_neq(id, other);
    cr_assert_eq(seatd_keys_new_id(id, "123456789012345678", 'b'), 0);
    cr_assert(strlen(id) < SEATD_ID_MAX);
    cr_assert_eq(seatd_keys_parse_id(id, 'b', show), 0);
    cr_assert_str_eq(show, "123456789012345678");
    cr_assert_eq(seatd_keys_new_id(id, "x", 'h'), SEATD_EBADID);
    cr_assert_eq(seatd_keys_new_id(id, "42", 'x'), SEATD_EBADID);
    /* Waiting-room tickets (issue 15) name their show the same way. */
    cr_assert_eq(seatd_keys_new_id(id, "42", 'q'), 0);
    cr_assert_eq(seatd_keys_parse_id(id, 'q', show), 0);
    cr_assert_str_eq(show, "42");
    cr_assert_eq(seatd_keys_parse_id(id, 'h', show), SEATD_EBADID);
}

Test(keys, rejects_malformed_hold_and_booking_ids)
{
    static const char *bad[] = {
        "",
        "42",
        "42-h",
        "-h0123456789abcdef0123",
        "042-h0123456789abcdef0123",
        "42-x0123456789abcdef0123",
        "42-h0123456789abcdef012",
        "42-h0123456789abcdef01234",
        "42-h0123456789ABCDEF0123",
        "42-h0123456789abcdef012}",
        "4 2-h0123456789abcdef0123",
    };
    char show[SEATD_ID_MAX];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(seatd_keys_parse_id(bad[i], 'h', show), SEATD_EBADID, "\"%s\"", bad[i]);
    cr_assert_eq(seatd_keys_parse_id(NULL, 'h', show), SEATD_EBADID);
    cr_assert_eq(seatd_keys_parse_id("42-h0123456789abcdef0123", 'h', NULL), 0);
}

Test(keys, files_hints_in_the_bucket_of_the_shows_own_slot_range)
{
    char key[SEATD_KEY_MAX], show[SEATD_KEY_MAX];
    for (int b = 0; b < SEATD_HINT_BUCKETS; b++) {
        cr_assert_eq(seatd_keys_hint(key, SEATD_KEY_DUE, b), 0);
        unsigned slot = seatd_rds_keyslot(key, strlen(key));
        cr_assert_eq(slot / (16384 / SEATD_HINT_BUCKETS), (unsigned)b,
                     "%s (slot %u) must fall in bucket %d's slot range", key, slot, b);
    }
    for (int id = 1; id < 2000; id++) {
        char sid[24];
        snprintf(sid, sizeof(sid), "%d", id);
        cr_assert_eq(seatd_keys_show_hint(key, SEATD_KEY_PENDING_SHOWS, sid), 0);
        cr_assert_eq(seatd_keys_show(show, sid, "meta"), 0);
        cr_assert_eq(seatd_rds_keyslot(key, strlen(key)) / 1024,
                     seatd_rds_keyslot(show, strlen(show)) / 1024,
                     "show %s's hint is in its own slot range", sid);
    }
    cr_assert_eq(seatd_keys_hint(key, SEATD_KEY_DUE, SEATD_HINT_BUCKETS), SEATD_EBADID);
    cr_assert_eq(seatd_keys_show_hint(key, SEATD_KEY_DUE, "01"), SEATD_EBADID);
}
