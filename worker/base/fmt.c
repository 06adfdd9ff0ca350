/* fmt.c - decimal numbers and strings into fixed buffers, percent-decoding; see fmt.h. */
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

int seatd_fmt_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int seatd_fmt_pct_decode(const char *in, size_t len, int plus, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)in[i];
        if (c == '%') {
            if (i + 2 >= len)
                return -1;
            int hi = seatd_fmt_hex_digit((unsigned char)in[i + 1]);
            int lo = seatd_fmt_hex_digit((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        } else if (c == '+' && plus) {
            c = ' ';
        }
        if (c == 0 || o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    if (cap == 0)
        return -1;
    out[o] = '\0';
    return (int)o;
}
