/* fmt.c - decimal numbers and strings into fixed buffers; see fmt.h. */
#include "base/fmt.h"

#include <stdarg.h>
#include <string.h>

size_t seatd_fmt_uint(char *out, unsigned long long v)
{
    char digits[SEATD_FMT_INT_MAX];
    size_t n = 0;
    do {
        digits[sizeof(digits) - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(out, digits + sizeof(digits) - n, n);
    out[n] = '\0';
    return n;
}

size_t seatd_fmt_int(char *out, long long v)
{
    if (v >= 0)
        return seatd_fmt_uint(out, (unsigned long long)v);
    out[0] = '-';
    /* -(v + 1) + 1: no overflow for LLONG_MIN */
    return 1 + seatd_fmt_uint(out + 1, (unsigned long long)(-(v + 1)) + 1);
}

size_t seatd_fmt_copy(char *out, size_t cap, const char *s)
{
    size_t len = strlen(s), n = len < cap ? len : cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return len;
}

int seatd_fmt_cat_list(char *out, size_t cap, ...)
{
    va_list ap;
    size_t n = 0;
    int fits = cap > 0;
    va_start(ap, cap);
    for (const char *s = va_arg(ap, const char *); s != NULL && fits;
         s = va_arg(ap, const char *)) {
        size_t len = strlen(s);
        if (len >= cap - n)
            fits = 0;
        else {
            memcpy(out + n, s, len);
            n += len;
        }
    }
    va_end(ap);
    if (!fits) {
        if (cap > 0)
            out[0] = '\0';
        return -1;
    }
    out[n] = '\0';
    return (int)n;
}
