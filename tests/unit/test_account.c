/* Unit tests for worker/domain/account.c: email normalisation, the password policy (NIST SP
 * 800-63B), refresh-token and id shapes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "domain/account.h"

static int norm(const char *in, char *out)
{
    return seatd_account_email_normalise(in, out);
}

Test(account, an_email_is_trimmed_and_lower_cased)
{
    char out[SEATD_ACCOUNT_EMAIL_MAX + 1];
    cr_assert_eq(norm("  Ann.Lee+tix@Example.COM \t", out), 0);
    cr_assert_str_eq(out, "ann.lee+tix@example.com");
    cr_assert_eq(norm("a@b.co", out), 0);
    cr_assert_str_eq(out, "a@b.co");
}

Test(account, a_malformed_email_is_refused)
{
    char out[SEATD_ACCOUNT_EMAIL_MAX + 1];
    const char *bad[] = {"",
                         "   ",
                         "ann",
                         "ann@",
                         "@example.com",
                         "ann@example",
                         "ann@@example.com",
                         "a@b@example.com",
                         "ann lee@example.com",
                         "ann@exa mple.com",
                         "ann@-example.com",
                         "ann@example-.com",
                         "ann@example..com",
                         ".ann@example.com",
                         "ann.@example.com",
                         "a..b@example.com",
                         "{u:x}@example.com",
                         "ann\"@example.com",
                         "ann@exa_mple.com",
                         "ann@example.com.",
                         "ann\x01@example.com",
                         "ann\xc3\xa9@example.com",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(norm(bad[i], out), SEATD_EINVAL, "accepted '%s'", bad[i]);
        cr_assert_str_eq(out, "");
    }
    char local[80];
    memset(local, 'a', 65);
    strcpy(local + 65, "@example.com");
    cr_assert_eq(norm(local, out), SEATD_EINVAL, "a 65-byte local part");
    char longd[300];
    strcpy(longd, "ann@");
    for (int i = 0; i < 25; i++)
        strcat(longd, "abcdefghi.");
    strcat(longd, "com");
    cr_assert_eq(norm(longd, out), SEATD_EINVAL, "over %d bytes", SEATD_ACCOUNT_EMAIL_MAX);
}

static int pw(const char *s)
{
    return seatd_account_password_check(s, strlen(s), NULL);
}

Test(account, passwords_need_eight_to_128_characters_and_nothing_else)
{
    cr_assert_eq(pw("correct horse battery staple"), 0);
    cr_assert_eq(pw("abcdefgX"), 0); /* no composition rules */
    cr_assert_eq(pw("        x"), 0);
    cr_assert_eq(pw("short"), SEATD_EINVAL);
    cr_assert_eq(pw("1234567"), SEATD_EINVAL);
    /* characters, not bytes: 8 two-byte letters pass, 7 fail although 14 bytes */
    cr_assert_eq(pw("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), 0);
    cr_assert_eq(pw("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"), SEATD_EINVAL);
    char p[600];
    memset(p, 'x', 128);
    p[128] = '\0';
    cr_assert_eq(pw(p), 0);
    p[128] = 'x';
    p[129] = '\0';
    cr_assert_eq(pw(p), SEATD_EINVAL);
    /* 128 four-byte characters (512 bytes) still count as 128 */
    for (int i = 0; i < 128; i++)
        memcpy(p + 4 * i, "\xf0\x9f\x8e\xab", 4);
    p[512] = '\0';
    cr_assert_eq(pw(p), 0);
}

Test(account, invalid_utf8_and_nul_are_refused)
{
    const char *why = NULL;
    cr_assert_eq(seatd_account_password_check("abcdefgh\xff", 9, &why), SEATD_EINVAL);
    cr_assert(strstr(why, "UTF-8"));
    cr_assert_eq(seatd_account_password_check("abcd\0efgh", 9, NULL), SEATD_EINVAL);
    cr_assert_eq(seatd_account_password_check("abcdefg\xc0\xaf", 9, NULL), SEATD_EINVAL);
    cr_assert_eq(seatd_account_password_check("abcdefg\xed\xa0\x80", 10, NULL), SEATD_EINVAL);
}

Test(account, the_most_common_passwords_are_refused_in_any_case)
{
    const char *why = NULL;
    cr_assert_eq(seatd_account_password_check("password", 8, &why), SEATD_EWEAKPASSWORD);
    cr_assert(strstr(why, "common"));
    cr_assert_eq(pw("PassWord1"), SEATD_EWEAKPASSWORD);
    cr_assert_eq(pw("12345678"), SEATD_EWEAKPASSWORD);
    cr_assert_eq(pw("qwertyuiop"), SEATD_EWEAKPASSWORD);
    cr_assert_eq(pw("iloveyou"), SEATD_EWEAKPASSWORD);
    cr_assert_eq(pw("password!x"), 0);
}

Test(account, a_refresh_token_names_its_user_and_only_the_exact_shape_parses)
{
    char tok[SEATD_ACCOUNT_TOKEN_MAX], tok2[SEATD_ACCOUNT_TOKEN_MAX], user[65];
    cr_assert_eq(seatd_account_new_refresh_token("u00112233445566778899", tok), 0);
    cr_assert_eq(strlen(tok), 21 + 1 + 43);
    cr_assert_eq(seatd_account_parse_refresh_token(tok, user), 0);
    cr_assert_str_eq(user, "u00112233445566778899");
    cr_assert_eq(seatd_account_new_refresh_token("u00112233445566778899", tok2), 0);
    cr_assert_str_neq(tok, tok2);
    char bad[SEATD_ACCOUNT_TOKEN_MAX];
    snprintf(bad, sizeof(bad), "%s", tok);
    bad[strlen(bad) - 1] = '\0';
    cr_assert_eq(seatd_account_parse_refresh_token(bad, user), SEATD_EINVAL);
    snprintf(bad, sizeof(bad), "%s", tok);
    bad[30] = '+';
    cr_assert_eq(seatd_account_parse_refresh_token(bad, user), SEATD_EINVAL);
    cr_assert_eq(seatd_account_parse_refresh_token("nodot", user), SEATD_EINVAL);
    cr_assert_eq(seatd_account_parse_refresh_token(
                     "{u:x}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", user),
                 SEATD_EINVAL);
    cr_assert_eq(seatd_account_new_refresh_token("a.b", tok), SEATD_EBADID);
}

Test(account, ids_are_fresh_and_fit_the_key_grammar)
{
    char a[SEATD_ACCOUNT_USER_ID_MAX], b[SEATD_ACCOUNT_USER_ID_MAX];
    char f[SEATD_ACCOUNT_FAMILY_ID_MAX];
    cr_assert_eq(seatd_account_new_user_id(a), 0);
    cr_assert_eq(seatd_account_new_user_id(b), 0);
    cr_assert_eq(strlen(a), 21);
    cr_assert_eq(a[0], 'u');
    cr_assert_str_neq(a, b);
    cr_assert_eq(seatd_account_new_family_id(f), 0);
    cr_assert_eq(strlen(f), 16);
}

Test(account, sha256_hex_is_the_known_digest)
{
    char h[SEATD_ACCOUNT_SHA256_HEX];
    seatd_account_sha256_hex("abc", 3, h);
    cr_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
