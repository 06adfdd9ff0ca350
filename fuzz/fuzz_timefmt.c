/*
 * fuzz_timefmt.c - libFuzzer harness for RFC 3339 <-> epoch ms (timefmt.h).
 *
 * The input, NUL-terminated, is given to seatd_time_parse(). Anything accepted must lie in
 * [1970-01-01, 9999-12-31], format to the canonical "YYYY-MM-DDTHH:MM:SS.fffZ" and parse
 * back to the same instant; the canonical form must also agree with the input's date and
 * time fields. Separately, the first 8 bytes taken as a millisecond count (folded into the
 * accepted range) must survive format -> parse unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timefmt.h"
#include "fuzz_check.h"

#define MAX_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_canonical(const char *s)
{
    CHECK(strlen(s) == 24);
    CHECK(s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' &&
          s[19] == '.' && s[23] == 'Z');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';

    int64_t ms = -1;
    if (seatd_time_parse(s, &ms) == 0) {
        CHECK(ms >= 0 && ms <= MAX_MS);
        char out[SEATD_TIME_STR_MAX];
        seatd_time_format(ms, out);
        check_canonical(out);
        int64_t back = -1;
        if (seatd_time_parse(out, &back) != 0 || back != ms) {
            fprintf(stderr, "round trip: '%s' -> %lld -> '%s' -> %lld\n", s, (long long)ms, out,
                    (long long)back);
            abort();
        }
        /* Same calendar fields (the separators' case may differ: 't'/'z'). */
        CHECK(memcmp(out, s, 10) == 0 && memcmp(out + 11, s + 11, 8) == 0);
    }

    if (size >= 8) {
        uint64_t u;
        memcpy(&u, data, 8);
        int64_t v = (int64_t)(u % (uint64_t)(MAX_MS + 1));
        char out[SEATD_TIME_STR_MAX];
        seatd_time_format(v, out);
        check_canonical(out);
        int64_t back = -1;
        if (seatd_time_parse(out, &back) != 0 || back != v) {
            fprintf(stderr, "format round trip: %lld -> '%s' -> %lld\n", (long long)v, out,
                    (long long)back);
            abort();
        }
    }
    free(s);
    return 0;
}
