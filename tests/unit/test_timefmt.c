/* Unit tests for timefmt.c: RFC 3339 timestamps at the API edge. */
#include <criterion/criterion.h>

#include "timefmt.h"

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
