/* seats.c - seat-set normalisation; see seats.h. */
#include "domain/seats.h"

#include <stdlib.h>
#include <string.h>

#include "domain/keys.h"
#include "domain/layout.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int seatd_seats_normalise(const char *const *ids, size_t n, size_t max_seats,
                          const struct seatd_layout_s *layout, const char **out, const char **bad)
{
    if (bad != NULL)
        *bad = NULL;
    if (n == 0)
        return SEATD_EEMPTY;
    if (max_seats > 0 && n > max_seats)
        return SEATD_ETOOMANY;
    for (size_t i = 0; i < n; i++) {
        if (!seatd_keys_valid_seat_id(ids[i])) {
            if (bad != NULL)
                *bad = ids[i];
            return SEATD_EBADSEAT;
        }
        out[i] = ids[i];
    }
    qsort(out, n, sizeof(*out), cmp_str);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(out[i - 1], out[i]) == 0) {
            if (bad != NULL)
                *bad = out[i];
            return SEATD_EDUPSEAT;
        }
    }
    if (layout != NULL) {
        for (size_t i = 0; i < n; i++) {
            if (seatd_layout_find(layout, out[i]) < 0) {
                if (bad != NULL)
                    *bad = out[i];
                return SEATD_EUNKNOWNSEAT;
            }
        }
    }
    return 0;
}
