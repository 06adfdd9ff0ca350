/* timefmt.c - RFC 3339 <-> epoch ms; see timefmt.h. */
#include "base/timefmt.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days from 1970-01-01 to the given civil date (proleptic Gregorian). */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int seatd_time_parse(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac = 0;
    size_t len = strlen(s);
    if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':')
        return SEATD_EINVAL;
    if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
        digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &sec))
        return SEATD_EINVAL;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        int n = 0, scale = 100;
        while (*p >= '0' && *p <= '9' && n < 9) {
            if (n < 3)
                frac += (*p - '0') * scale, scale /= 10;
            p++, n++;
        }
        if (n == 0)
            return SEATD_EINVAL;
    }
    if ((*p != 'Z' && *p != 'z') || p[1] != '\0')
        return SEATD_EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
        mi > 59 || sec > 59)
        return SEATD_EINVAL;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return SEATD_EINVAL;
    *ms = ((days_from_civil(y, mo, d) * 86400) + h * 3600 + mi * 60 + sec) * 1000 + frac;
    return 0;
}

void seatd_time_format(int64_t ms, char *out)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    /* The fields are range-checked by gmtime_r; the year stays four digits until 9999. Written
     * digit by digit: a timestamp is in most answers, and snprintf parsed its format each time. */
    const int fields[7] = {(tm.tm_year + 1900) % 10000,
                           (tm.tm_mon + 1) % 100,
                           tm.tm_mday % 100,
                           tm.tm_hour % 100,
                           tm.tm_min % 100,
                           tm.tm_sec % 100,
                           (int)(ms % 1000)};
    static const char after[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
    static const int width[7] = {4, 2, 2, 2, 2, 2, 3};
    char *p = out;
    for (int f = 0; f < 7; f++) {
        int v = fields[f] < 0 ? -fields[f] : fields[f];
        for (int d = width[f]; d-- > 0; v /= 10)
            p[d] = (char)('0' + v % 10);
        p += width[f];
        *p++ = after[f];
    }
    *p = '\0';
}

int64_t seatd_time_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}
