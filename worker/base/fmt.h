/*
 * fmt.h - decimal numbers and concatenated strings written into fixed buffers without printf,
 * and percent-encoded text (URL paths and queries) decoded into one.
 *
 * For the per-request paths (Redis keys, FCALL arguments, timestamps): snprintf parses its
 * format on every call and was about a twentieth of a worker's instructions per hold. Pure.
 */
#ifndef SEATD_FMT_H
#define SEATD_FMT_H

#include <stddef.h>

/* Room for any long long in decimal, its sign and the NUL. */
#define SEATD_FMT_INT_MAX 21

/* Writes the decimal digits of 'v' and a NUL at 'out' (SEATD_FMT_INT_MAX bytes at least);
 * returns the number of digits. */
size_t seatd_fmt_uint(char *out, unsigned long long v);
/* The same for a signed 'v' (a leading '-' when negative). */
size_t seatd_fmt_int(char *out, long long v);

/* Copies 's' into 'out' ('cap' > 0 bytes), cut to cap - 1 bytes and NUL-terminated, as
 * snprintf(out, cap, "%s", s) does; returns strlen(s). */
size_t seatd_fmt_copy(char *out, size_t cap, const char *s);

/* Writes the NULL-terminated list of strings one after another and a NUL at 'out' ('cap'
 * bytes); returns the length written, or -1 when it does not fit ('out' then holds "" when
 * cap > 0). Use through seatd_fmt_cat(out, cap, "a", b, ...). */
int seatd_fmt_cat_list(char *out, size_t cap, ...);
#define seatd_fmt_cat(out, cap, ...) seatd_fmt_cat_list((out), (cap), __VA_ARGS__, (const char *)0)

/* The value of the hexadecimal digit 'c' (either case), or -1 when it is not one. */
int seatd_fmt_hex_digit(int c);

/* Percent-decodes 'len' bytes of 'in' into 'out' ('cap' bytes, the NUL included); '+' becomes
 * a space when 'plus' (as in a query), else it is kept. Returns the decoded length, or -1 on a
 * malformed escape, a decoded NUL byte or overflow. */
int seatd_fmt_pct_decode(const char *in, size_t len, int plus, char *out, size_t cap);

#endif
