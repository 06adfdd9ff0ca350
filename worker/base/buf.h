/*
 * buf.h - a growable byte buffer, used for HTTP output, WebSocket frames and JSON text.
 *
 * Callers embed or stack-allocate seatd_buf_t (so its layout is public) and release it with
 * seatd_buf_free(). The data is always NUL-terminated for convenience; 'len' excludes the NUL.
 * Pure: no I/O.
 */
#ifndef SEATD_BUF_H
#define SEATD_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct seatd_buf_s {
    char *data; /* owned; NULL until the first append */
    size_t len; /* bytes used, excluding the trailing NUL */
    size_t cap; /* bytes allocated */
} seatd_buf_t;

#define SEATD_BUF_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Makes room for 'extra' more bytes (plus the NUL). */
void seatd_buf_reserve(seatd_buf_t *b, size_t extra);
/* Appends 'len' bytes of 'p' (borrowed). Inline: responses, RESP commands and log lines are
 * built from many small pieces, and the call was a visible share of a request's CPU. */
static inline void seatd_buf_append(seatd_buf_t *b, const void *p, size_t len)
{
    if (b->len + len + 1 > b->cap)
        seatd_buf_reserve(b, len);
    if (len)
        memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
}
/* Appends the NUL-terminated 's' (borrowed). */
static inline void seatd_buf_puts(seatd_buf_t *b, const char *s)
{
    seatd_buf_append(b, s, strlen(s));
}
/* Appends printf-formatted text. */
void seatd_buf_printf(seatd_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void seatd_buf_vprintf(seatd_buf_t *b, const char *fmt, va_list ap);
/* Appends the decimal digits of 'v' (no printf: for numbers written per request). */
void seatd_buf_put_uint(seatd_buf_t *b, unsigned long long v);
/* 1 when the byte stands in a JSON string as it is (no quote, backslash or control byte). */
static inline int seatd_json_plain_byte(unsigned char ch)
{
    return ch != '"' && ch != '\\' && ch >= 0x20 && ch != 0x7f;
}
/* Appends 's' (len bytes) as a JSON string body, escaped, without the surrounding quotes. */
void seatd_buf_json_escape(seatd_buf_t *b, const char *s, size_t len);
/* Appends ,"<name>":"<value, escaped>" ('name' needs no escaping): one member of an object
 * written piece by piece. */
void seatd_buf_json_member(seatd_buf_t *b, const char *name, const char *value);
/* Drops the first 'n' bytes. */
void seatd_buf_consume(seatd_buf_t *b, size_t n);
/* Empties the buffer, keeping its allocation. */
void seatd_buf_reset(seatd_buf_t *b);
/* Returns the owned data and leaves 'b' empty; the caller frees it with free(). */
char *seatd_buf_steal(seatd_buf_t *b, size_t *len);
/* Frees the data; 'b' is empty and reusable afterwards. */
void seatd_buf_free(seatd_buf_t *b);

#endif
