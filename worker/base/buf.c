/* buf.c - growable byte buffer; see buf.h. */
#include "base/buf.h"

#include "base/fmt.h"
#include "base/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void seatd_buf_reserve(seatd_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = seatd_realloc(b->data, cap);
    b->cap = cap;
}

void seatd_buf_vprintf(seatd_buf_t *b, const char *fmt, va_list ap)
{
    /* One pass when the text fits the room left (the usual case: buffers are recycled), a
     * second only after growing: formatting is a visible share of a request's CPU. */
    size_t room = b->cap > b->len ? b->cap - b->len : 0;
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, cp);
    va_end(cp);
    if (n < 0) {
        if (room)
            b->data[b->len] = '\0';
        return;
    }
    if ((size_t)n >= room) {
        seatd_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
}

void seatd_buf_printf(seatd_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    seatd_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void seatd_buf_put_uint(seatd_buf_t *b, unsigned long long v)
{
    char digits[SEATD_FMT_INT_MAX];
    seatd_buf_append(b, digits, seatd_fmt_uint(digits, v));
}

void seatd_buf_json_escape(seatd_buf_t *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    seatd_buf_reserve(b, len);
    for (size_t i = 0; i < len; i++) {
        size_t run = i; /* bytes that stand as they are go in one copy */
        while (run < len && seatd_json_plain_byte((unsigned char)s[run]))
            run++;
        if (run > i) {
            seatd_buf_append(b, s + i, run - i);
            i = run - 1;
            continue;
        }
        unsigned char ch = (unsigned char)s[i];
        /* The bytes with a two-character escape, and the letter after the backslash. */
        static const char shorts[] = "\"\\\n\r\t", letters[] = "\"\\nrt";
        const char *sh = ch != '\0' ? strchr(shorts, ch) : NULL;
        if (sh != NULL) {
            char esc[2] = {'\\', letters[sh - shorts]};
            seatd_buf_append(b, esc, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
            seatd_buf_append(b, esc, 6);
        } else {
            seatd_buf_append(b, &s[i], 1);
        }
    }
}

void seatd_buf_consume(seatd_buf_t *b, size_t n)
{
    if (n >= b->len) {
        seatd_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void seatd_buf_reset(seatd_buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *seatd_buf_steal(seatd_buf_t *b, size_t *len)
{
    if (b->data == NULL)
        seatd_buf_reserve(b, 0), b->data[0] = '\0';
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void seatd_buf_free(seatd_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void seatd_buf_json_member(seatd_buf_t *b, const char *name, const char *value)
{
    seatd_buf_puts(b, ",\"");
    seatd_buf_puts(b, name);
    seatd_buf_puts(b, "\":\"");
    seatd_buf_json_escape(b, value, strlen(value));
    seatd_buf_puts(b, "\"");
}
