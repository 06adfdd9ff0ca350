/* Unit tests for fmt.c: numbers and strings into fixed buffers without printf. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/fmt.h"

Test(fmt, writes_integers_as_printf_does)
{
    static const long long values[] = {0,
                                       1,
                                       -1,
                                       9,
                                       10,
                                       99,
                                       100,
                                       12345,
                                       -98765,
                                       LLONG_MAX,
                                       LLONG_MIN,
                                       LLONG_MIN + 1,
                                       1796241600250LL};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char got[SEATD_FMT_INT_MAX], want[32];
        int n = snprintf(want, sizeof(want), "%lld", values[i]);
        cr_assert_eq(seatd_fmt_int(got, values[i]), (size_t)n);
        cr_assert_str_eq(got, want);
    }
    char got[SEATD_FMT_INT_MAX];
    cr_assert_eq(seatd_fmt_uint(got, ULLONG_MAX), 20);
    cr_assert_str_eq(got, "18446744073709551615");
}

Test(fmt, concatenates_what_fits_and_refuses_what_does_not)
{
    char out[8];
    cr_assert_eq(seatd_fmt_cat(out, sizeof(out), "{s:", "42", "}"), 6);
    cr_assert_str_eq(out, "{s:42}");
    cr_assert_eq(seatd_fmt_cat(out, sizeof(out), "1234", "567"), 7); /* 7 + NUL: fits */
    cr_assert_str_eq(out, "1234567");
    cr_assert_eq(seatd_fmt_cat(out, sizeof(out), "1234", "5678"), -1); /* one too many */
    cr_assert_str_eq(out, "");
    cr_assert_eq(seatd_fmt_cat(out, sizeof(out), ""), 0);
    cr_assert_str_eq(out, "");
    cr_assert_eq(seatd_fmt_cat(out, 0, "x"), -1);
}
