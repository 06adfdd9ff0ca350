/* Unit tests for buf.c: growth, NUL termination, formatting, escaping, consume, steal. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

Test(buf, appends_and_stays_nul_terminated)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_append(&b, "ab", 2);
    seatd_buf_puts(&b, "cd");
    cr_assert_eq(b.len, 4);
    cr_assert_str_eq(b.data, "abcd");
    cr_assert(b.cap > b.len);
    seatd_buf_free(&b);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
}

Test(buf, grows_across_many_appends)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    for (int i = 0; i < 10000; i++)
        seatd_buf_append(&b, "x", 1);
    cr_assert_eq(b.len, 10000);
    cr_assert_eq(b.data[10000], '\0');
    cr_assert_eq(strspn(b.data, "x"), 10000);
    seatd_buf_free(&b);
}

Test(buf, formats_with_printf)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "%d-%s", 42, "x");
    seatd_buf_printf(&b, "%0300d", 7);
    cr_assert_eq(b.len, 4 + 300);
    cr_assert_eq(strncmp(b.data, "42-x000", 7), 0);
    cr_assert_eq(b.data[b.len - 1], '7');
    seatd_buf_free(&b);
}

/* One pass when the text fits the room left, a second after growing: every length around
 * the room (fits, fills it but its NUL, one past) comes out whole. */
Test(buf, formats_into_the_room_left_and_past_it)
{
    for (size_t pre = 0; pre < 70; pre++) {
        for (int width = 1; width < 140; width++) {
            seatd_buf_t b = SEATD_BUF_INIT;
            for (size_t i = 0; i < pre; i++)
                seatd_buf_append(&b, "p", 1);
            seatd_buf_printf(&b, "%0*d|", width, 5);
            cr_assert_eq(b.len, pre + (size_t)width + 1);
            cr_assert_eq(b.data[b.len], '\0');
            cr_assert_eq(b.data[b.len - 1], '|');
            cr_assert_eq(b.data[b.len - 2], '5');
            cr_assert_eq(strspn(b.data, "p"), pre);
            seatd_buf_free(&b);
        }
    }
}

Test(buf, puts_unsigned_numbers_in_decimal)
{
    const unsigned long long v[] = {0, 7, 10, 409, 65535, 18446744073709551615ULL};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        seatd_buf_t b = SEATD_BUF_INIT;
        char want[32];
        snprintf(want, sizeof(want), "x%llu", v[i]);
        seatd_buf_puts(&b, "x");
        seatd_buf_put_uint(&b, v[i]);
        cr_assert_str_eq(b.data, want);
        seatd_buf_free(&b);
    }
}

Test(buf, escapes_runs_of_plain_bytes_between_specials)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_json_escape(&b, "\"", 1);
    seatd_buf_json_escape(&b, "abc", 3);
    seatd_buf_json_escape(&b, "x\"", 2);
    seatd_buf_json_escape(&b, "\ny", 2);
    seatd_buf_json_escape(&b, "", 0);
    seatd_buf_json_escape(&b, "q\0r", 3); /* 'len' bytes, a NUL among them */
    cr_assert_eq(b.len, strlen("\\\"abcx\\\"\\nyq\\u0000r"));
    cr_assert_str_eq(b.data, "\\\"abcx\\\"\\nyq\\u0000r");
    seatd_buf_free(&b);
}

Test(buf, escapes_json_strings)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    const char s[] = "a\"b\\c\n\r\t\x01\x7f/é";
    seatd_buf_json_escape(&b, s, sizeof(s) - 1);
    cr_assert_str_eq(b.data, "a\\\"b\\\\c\\n\\r\\t\\u0001\\u007f/é");
    seatd_buf_free(&b);
}

Test(buf, consumes_from_the_front)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "hello world");
    seatd_buf_consume(&b, 6);
    cr_assert_str_eq(b.data, "world");
    cr_assert_eq(b.len, 5);
    seatd_buf_consume(&b, 100);
    cr_assert_eq(b.len, 0);
    cr_assert_str_eq(b.data, "");
    seatd_buf_free(&b);
}

Test(buf, reset_keeps_the_allocation)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "abc");
    char *p = b.data;
    size_t cap = b.cap;
    seatd_buf_reset(&b);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.data, p);
    cr_assert_eq(b.cap, cap);
    cr_assert_str_eq(b.data, "");
    seatd_buf_free(&b);
}

Test(buf, steal_hands_over_the_data)
{
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "mine");
    size_t len = 0;
    char *p = seatd_buf_steal(&b, &len);
    cr_assert_str_eq(p, "mine");
    cr_assert_eq(len, 4);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    free(p);
    /* An empty buffer steals as an empty string, never NULL. */
    p = seatd_buf_steal(&b, &len);
    cr_assert_not_null(p);
    cr_assert_str_eq(p, "");
    cr_assert_eq(len, 0);
    free(p);
}
