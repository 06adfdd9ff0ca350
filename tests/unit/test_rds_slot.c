/* test_rds_slot.c - the cluster hash slot function against known vectors (rds_slot.h). The
 * comparison with a real server's CLUSTER KEYSLOT is in integration/test_cluster.c. */
#include <criterion/criterion.h>
#include <string.h>

#include "domain/rds_slot.h"

static unsigned slot(const char *k)
{
    return seatd_rds_keyslot(k, strlen(k));
}

Test(rds_slot, crc16_matches_the_xmodem_check_value)
{
    cr_assert_eq(seatd_rds_crc16("123456789", 9), 0x31C3);
    cr_assert_eq(seatd_rds_crc16("", 0), 0);
}

Test(rds_slot, plain_keys_match_the_values_redis_documents)
{
    cr_assert_eq(slot("foo"), 12182);
    cr_assert_eq(slot("somekey"), 11058);
    cr_assert_eq(slot("foo{hash_tag}"), 2515);
    cr_assert_eq(slot("123456789"), 0x31C3 & 16383);
}

Test(rds_slot, keys_with_the_same_tag_share_a_slot)
{
    cr_assert_eq(slot("{user1000}.following"), slot("{user1000}.followers"));
    cr_assert_eq(slot("{s:42}:meta"), slot("{s:42}:seat:C7"));
    cr_assert_eq(slot("{s:42}:ch"), slot("s:42"));
}

Test(rds_slot, brace_edge_cases_follow_the_redis_rule)
{
    cr_assert_eq(slot("{}"), seatd_rds_crc16("{}", 2) & 16383, "empty tag hashes the whole key");
    cr_assert_eq(slot("{}x"), seatd_rds_crc16("{}x", 3) & 16383);
    cr_assert_eq(slot("{{a}}"), slot("{a"), "the tag runs from the first { to the next }");
    cr_assert_eq(slot("a{b"), seatd_rds_crc16("a{b", 3) & 16383, "no closing brace");
    cr_assert_eq(slot("}{"), seatd_rds_crc16("}{", 2) & 16383, "} before {");
    cr_assert_eq(slot("{a}{b}"), slot("a"), "only the first tag counts");
    cr_assert_eq(slot("x{a}y"), slot("a"));
}

Test(rds_slot, keys_are_binary_safe)
{
    const char k[] = {'{', 'a', '\0', 'b', '}', 'z'};
    cr_assert_eq(seatd_rds_keyslot(k, sizeof(k)), seatd_rds_crc16("a\0b", 3) & 16383);
    cr_assert_lt(seatd_rds_keyslot(k, sizeof(k)), 16384u);
}

Test(rds_slot, scripts_are_told_from_plain_commands_in_any_case)
{
    const char *const scripts[] = {"FCALL", "fcall_ro", "EVAL", "Eval_RO", "EVALSHA", "evalsha_ro"};
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
        cr_assert(seatd_rds_is_script(scripts[i], strlen(scripts[i])), "%s", scripts[i]);
    const char *const plain[] = {"GET", "SET", "FUNCTION", "EVALS", "FCAL", "FCALLX", "", "ASKING"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        cr_assert_not(seatd_rds_is_script(plain[i], strlen(plain[i])), "%s", plain[i]);
    cr_assert(seatd_rds_is_script("FCALLx", 5), "the length given counts, not a NUL");
}
