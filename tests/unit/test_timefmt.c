/* Unit tests for timefmt.c: RFC 3339 timestamps at the API edge. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <time.h>

#include "base/timefmt.h"

Test(timefmt, parses_utc_timestamps_to_epoch_ms)
{
    int64_t ms = 0;
    cr_assert_eq(seatd_time_parse("1970-01-01T00:00:00Z", &ms), 0);
    cr_assert_eq(ms, 0);
    cr_assert_eq(seatd_time_parse("2026-12-02T20:00:00Z", &ms), 0);
    cr_assert_eq(ms, 1796241600000LL);
    cr_assert_eq(seatd_time_parse("2026-12-02T20:00:00.25Z", &ms), 0);
    cr_assert_eq(ms, 1796241600250LL);
    cr_assert_eq(seatd_time_parse("2024-02-29T00:00:00Z", &ms), 0);
}

Test(timefmt, rejects_malformed_or_impossible_timestamps)
{
    static const char *bad[] = {"",
                                "2026-12-02",
                                "2026-12-02T20:00:00",
                                "2026-12-02T20:00:00+01:00",
                                "2026-13-02T20:00:00Z",
                                "2025-02-29T00:00:00Z",
                                "2026-12-02T24:00:00Z",
                                "2026-12-02T20:00:00.Z",
                                "2026-12-02T20:00:00Zjunk",
                                "20x6-12-02T20:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = 0;
        cr_assert_eq(seatd_time_parse(bad[i], &ms), SEATD_EINVAL, "accepted %s", bad[i]);
    }
}

Test(timefmt, formats_round_trip)
{
    char s[SEATD_TIME_STR_MAX];
    seatd_time_format(1796241600250LL, s);
    cr_assert_str_eq(s, "2026-12-02T20:00:00.250Z");
    int64_t ms = 0;
    cr_assert_eq(seatd_time_parse(s, &ms), 0);
    cr_assert_eq(ms, 1796241600250LL);
}

/* The digit-by-digit writer gives what the printf format it replaced gave, from the epoch to
 * the last millisecond of 9999. */
Test(timefmt, formats_as_the_printf_format_did)
{
    unsigned long long seed = 42;
    for (int i = 0; i < 20000; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t ms = (int64_t)((seed >> 11) % 253402300800000ULL);
        if (i < 3)
            ms = i == 0 ? 0 : i == 1 ? 253402300799999LL : 951782400999LL;
        time_t secs = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char want[64], got[SEATD_TIME_STR_MAX];
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
        seatd_time_format(ms, got);
        cr_assert_str_eq(got, want, "ms %lld", (long long)ms);
    }
}
