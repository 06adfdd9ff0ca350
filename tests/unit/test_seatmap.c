/* test_seatmap.c - the per-worker seat-status cache: freshness, minVersion, the floor a
 * worker's own change sets, and the availability rendering. */
#include <criterion/criterion.h>
#include <string.h>

#include "seatmap.h"

static void fini(void)
{
    seatd_seatmap_clear();
}

TestSuite(seatmap, .fini = fini);

static const unsigned char HELD[] = {0x80, 0x01}; /* seats 0 and 15 */

Test(seatmap, serves_a_fresh_read_at_or_above_the_asked_version)
{
    int64_t now = seatd_seatmap_now_ms();
    seatd_seatmap_put("7", 5, 16, HELD, sizeof(HELD), NULL, 0, now);
    seatd_seatmap_t *m = seatd_seatmap_get("7", 0);
    cr_assert_not_null(m);
    cr_assert_eq(m->version, 5);
    cr_assert_not_null(seatd_seatmap_get("7", 5));
    cr_assert_null(seatd_seatmap_get("7", 6), "a client that asks for version 6 reads Redis");
    cr_assert_null(seatd_seatmap_get("8", 0));
    seatd_seatmap_put("9", 1, 16, NULL, 0, NULL, 0, now - SEATD_SEATMAP_FRESH_MS);
    cr_assert_null(seatd_seatmap_get("9", 0), "older than the freshness window");
}

Test(seatmap, a_read_started_before_this_workers_change_is_never_served_after_it)
{
    int64_t now = seatd_seatmap_now_ms();
    seatd_seatmap_put("7", 5, 16, HELD, sizeof(HELD), NULL, 0, now);
    seatd_seatmap_invalidate("7", 7); /* this worker's hold answered version 7 */
    cr_assert_null(seatd_seatmap_get("7", 0));
    /* A read that was in flight lands with version 6: it answers its own request ... */
    seatd_seatmap_t *m = seatd_seatmap_put("7", 6, 16, HELD, sizeof(HELD), NULL, 0, now);
    cr_assert_eq(m->version, 6);
    /* ... but is not served to the next one. */
    cr_assert_null(seatd_seatmap_get("7", 0));
    seatd_seatmap_put("7", 7, 16, HELD, sizeof(HELD), NULL, 0, now);
    cr_assert_not_null(seatd_seatmap_get("7", 0));
    /* A show this worker never read still gets the floor. */
    seatd_seatmap_invalidate("11", 3);
    seatd_seatmap_put("11", 2, 16, NULL, 0, NULL, 0, now);
    cr_assert_null(seatd_seatmap_get("11", 0));
}

Test(seatmap, renders_the_bitmaps_as_redis_stores_them)
{
    seatd_seatmap_t *m =
        seatd_seatmap_put("7", 42, 16, HELD, sizeof(HELD), NULL, 0, seatd_seatmap_now_ms());
    size_t len;
    const char *doc = seatd_seatmap_availability(m, &len);
    cr_assert_str_eq(doc, "{\"showId\":\"7\",\"version\":42,\"seatCount\":16,\"held\":\"gAE=\","
                          "\"booked\":\"\"}");
    cr_assert_eq(len, strlen(doc));
    cr_assert_eq(seatd_seatmap_seat_state(m, 0), 1);
    cr_assert_eq(seatd_seatmap_seat_state(m, 1), 0);
    cr_assert_eq(seatd_seatmap_seat_state(m, 15), 1);
    cr_assert_eq(seatd_seatmap_seat_state(m, 200), 0, "past the stored bytes: available");
}
