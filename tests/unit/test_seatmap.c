/* test_seatmap.c - the per-worker seat-status cache: freshness, minVersion, the floor a
 * worker's own change sets, and the availability and status renderings. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../support/http_client.h"
#include "domain/layout.h"
#include "domain/seatmap.h"

static void fini(void)
{
    seatd_seatmap_clear();
}

TestSuite(seatmap, .fini = fini);

static const unsigned char HELD[] = {0x80, 0x01}; /* seats 0 and 15 */

Test(seatmap, serves_a_fresh_read_at_or_above_the_asked_version)
{
    int64_t now = seatd_seatmap_now_ms();
    seatd_seatmap_put("7", 5, 16, HELD, sizeof(HELD), NULL, 0, now, now);
    seatd_seatmap_t *m = seatd_seatmap_get("7", 0);
    cr_assert_not_null(m);
    cr_assert_eq(m->version, 5);
    cr_assert_not_null(seatd_seatmap_get("7", 5));
    cr_assert_null(seatd_seatmap_get("7", 6), "a client that asks for version 6 reads Redis");
    cr_assert_null(seatd_seatmap_get("8", 0));
    seatd_seatmap_put("9", 1, 16, NULL, 0, NULL, 0, now - SEATD_SEATMAP_FRESH_MS,
                      now - SEATD_SEATMAP_FRESH_MS);
    cr_assert_null(seatd_seatmap_get("9", 0), "older than the freshness window");
}

Test(seatmap, a_read_started_before_this_workers_change_is_never_served_after_it)
{
    int64_t now = seatd_seatmap_now_ms();
    seatd_seatmap_put("7", 5, 16, HELD, sizeof(HELD), NULL, 0, now, now);
    seatd_seatmap_invalidate("7", 7); /* this worker's hold answered version 7 */
    cr_assert_null(seatd_seatmap_get("7", 0));
    /* A read that was in flight lands with version 6: it answers its own request ... */
    seatd_seatmap_t *m = seatd_seatmap_put("7", 6, 16, HELD, sizeof(HELD), NULL, 0, now, now);
    cr_assert_eq(m->version, 6);
    /* ... but is not served to the next one. */
    cr_assert_null(seatd_seatmap_get("7", 0));
    seatd_seatmap_put("7", 7, 16, HELD, sizeof(HELD), NULL, 0, now, now);
    cr_assert_not_null(seatd_seatmap_get("7", 0));
    /* A show this worker never read still gets the floor. */
    seatd_seatmap_invalidate("11", 3);
    seatd_seatmap_put("11", 2, 16, NULL, 0, NULL, 0, now, now);
    cr_assert_null(seatd_seatmap_get("11", 0));
}

/* Redis lost writes (a restart that replayed an AOF missing its last second, a failover to a
 * replica behind): a read sent after this worker knew a newer version answers an older one.
 * That is Redis's word now and replaces the entry, floor and all (the lost state was kept,
 * and every read answered from it, until Redis passed the lost version); the version this
 * worker knew is reported, so that the show's version can be moved past it. Two reads that
 * crossed (the older sent before the newer was answered) still keep the newer. */
Test(seatmap, a_read_sent_after_a_newer_one_was_known_is_redis_word_even_if_older)
{
    int64_t t = seatd_seatmap_now_ms();
    cr_assert_eq(
        seatd_seatmap_put("7", 9, 16, HELD, sizeof(HELD), NULL, 0, t - 5, t - 4)->lost_from, -1);
    cr_assert_eq(seatd_seatmap_put("7", 8, 16, NULL, 0, NULL, 0, t - 6, t - 3)->version, 9,
                 "crossed: sent before version 9 was answered");
    seatd_seatmap_t *m = seatd_seatmap_put("7", 7, 16, NULL, 0, NULL, 0, t - 2, t - 1);
    cr_assert_eq(m->version, 7, "sent after version 9 was known: redis lost 8 and 9");
    cr_assert_eq(m->lost_from, 9);
    cr_assert_eq(seatd_seatmap_seat_state(m, 0), 0, "its own bitmaps");
    cr_assert_not_null(seatd_seatmap_get("7", 0), "and served");

    /* this worker's own change, lost: its floor goes with it */
    seatd_seatmap_invalidate("7", 8);
    m = seatd_seatmap_put("7", 7, 16, NULL, 0, NULL, 0, t - 10, t);
    cr_assert_eq(m->version, 7);
    cr_assert_eq(m->lost_from, -1, "sent before the change: no loss (the read crossed it)");
    cr_assert_null(seatd_seatmap_get("7", 0), "sent before the change: not served");
    int64_t later = seatd_seatmap_now_ms() + 1;
    m = seatd_seatmap_put("7", 7, 16, NULL, 0, NULL, 0, later, later);
    cr_assert_eq(m->floor, 7, "sent after the change was acknowledged: the change was lost");
    cr_assert_eq(m->lost_from, 8);
    cr_assert_not_null(seatd_seatmap_get("7", 0));
}

Test(seatmap, renders_the_bitmaps_as_redis_stores_them)
{
    seatd_seatmap_t *m =
        seatd_seatmap_put("7", 42, 16, HELD, sizeof(HELD), NULL, 0, 0, seatd_seatmap_now_ms());
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

/* The gzip of 'm''s status document, inflated; asserts a whole gzip stream. */
static char *inflate_status_gzip(seatd_seatmap_t *m, const seatd_layout_t *l, size_t *n)
{
    size_t gz_len;
    const char *gz = seatd_seatmap_status_gzip(m, l, &gz_len);
    cr_assert_not_null(gz);
    cr_assert(gz_len > 18 && (unsigned char)gz[0] == 0x1f && (unsigned char)gz[1] == 0x8b,
              "a gzip member");
    char *out = seatd_test_gunzip(gz, gz_len, n);
    cr_assert_not_null(out, "a whole gzip member");
    return out;
}

Test(seatmap, the_status_gzip_is_the_status_document_of_its_own_version)
{
    char json[4096];
    size_t off = (size_t)snprintf(json, sizeof(json), "[");
    for (int k = 1; k <= 16; k++)
        off += (size_t)snprintf(json + off, sizeof(json) - off,
                                "%s{\"id\":\"A%d\",\"row\":\"A\",\"number\":%d,\"x\":%d,\"y\":0}",
                                k > 1 ? "," : "", k, k, k);
    snprintf(json + off, sizeof(json) - off, "]");
    cJSON *arr = cJSON_Parse(json);
    seatd_layout_t *l = NULL;
    cr_assert_eq(seatd_layout_from_json(arr, NULL, &l, NULL, 0), 0);
    cJSON_Delete(arr);

    int64_t now = seatd_seatmap_now_ms();
    seatd_seatmap_t *m = seatd_seatmap_put("7", 5, 16, HELD, sizeof(HELD), NULL, 0, now, now);
    size_t plain_len, n;
    const char *plain = seatd_seatmap_status(m, l, &plain_len);
    char *inflated = inflate_status_gzip(m, l, &n);
    cr_assert_eq(n, plain_len);
    cr_assert(memcmp(inflated, plain, n) == 0);
    cr_assert(strstr(inflated, "\"A1\":\"held\"") && strstr(inflated, "\"version\":5"));
    free(inflated);

    /* A newer read: its own renderings, never the last version's gzip. */
    static const unsigned char BOOKED[] = {0x40, 0x00}; /* seat 1 */
    m = seatd_seatmap_put("7", 6, 16, NULL, 0, BOOKED, sizeof(BOOKED), now, now);
    inflated = inflate_status_gzip(m, l, &n);
    cr_assert(strstr(inflated, "\"version\":6") && strstr(inflated, "\"A1\":\"available\"") &&
              strstr(inflated, "\"A2\":\"booked\""));
    free(inflated);
    seatd_layout_free(l);
}
