/*
 * timefmt.h - RFC 3339 timestamps <-> epoch milliseconds (UTC only).
 *
 * The API speaks "2026-12-02T20:00:00Z" (optionally with .mmm); Redis stores epoch ms.
 * Pure: no I/O.
 */
#ifndef SEATD_TIMEFMT_H
#define SEATD_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"

#define SEATD_TIME_STR_MAX 32 /* "2026-12-02T20:00:00.000Z" + NUL, with room */

/* Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" into '*ms'. Returns 0 or SEATD_EINVAL. */
SEATD_MUSTCHECK int seatd_time_parse(const char *s, int64_t *ms);
/* Writes 'ms' as "YYYY-MM-DDTHH:MM:SS.fffZ" into 'out' (SEATD_TIME_STR_MAX bytes). */
void seatd_time_format(int64_t ms, char *out);
/* Wall-clock now in epoch ms (the worker's clock: for display and logs, never for holds). */
int64_t seatd_time_now_ms(void);

#endif
