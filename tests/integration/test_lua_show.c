/* Integration tests for lua/create_show.lua and the read-only functions of lua/read.lua. */
#include <criterion/criterion.h>

#include "domain/layout.h"
#include "store_harness.h"

static const char *const seats3[] = {"B1", "B2", "B3", NULL};

static void setup(void)
{
    seatd_test_redis_flushall();
}

TestSuite(lua_show, .init = setup, .timeout = 30);

Test(lua_show, creates_a_show_once_and_catalogues_it)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_finish(&t, &r, seatd_store_next_show_id(t.store, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "showId"), "1");
    cr_assert_eq(th_create_show(&t, "1", seats3, 90000), 0);
    cr_assert_eq(th_create_show(&t, "1", seats3, 90000), SEATD_EEXISTS);

    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_get(t.store, "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "title"), "Test show");
    cr_assert_str_eq(th_get(&r, "holdTtlMs"), "90000");
    cr_assert_str_eq(th_get(&r, "seatCount"), "3");
    cr_assert_str_eq(th_get(&r, "version"), "0");
    cr_assert_str_eq(th_get(&r, "priceTiers"), "{\"standard\":1200}");

    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_layout_get(t.store, "1", th_on_result, &r)), 0);
    cr_assert(strstr(th_get(&r, "layout"), "\"id\":\"B2\"") != NULL);

    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_list_shows(t.store, 0, 10, th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "total"), "1");
    cr_assert_str_eq(th_get(&r, "id"), "1");

    redisContext *c = seatd_test_redis_connect();
    char v[160];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:meta layoutHash"), 1);
    cr_assert_eq(strlen(v), 64, "the show names its shared layout by SHA-256 hex");
    cr_assert_eq(th_int(c, "EXISTS seatd:layout:%s", v), 1);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:layout {s:1}:idx"), 0, "no per-show layout or index");
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:meta seatCount"), 1);
    cr_assert_str_eq(v, "3");
    cr_assert_eq(th_int(c, "EXISTS {s:1}:held {s:1}:booked"), 0,
                 "no bitmap until a seat changes: missing reads as all zeros");
    cr_assert_eq(th_int(c, "PTTL {s:1}:meta"), -1, "show data never expires");
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_show, reads_of_a_missing_show_answer_noshow)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_finish(&t, &r, seatd_store_show_get(t.store, "5", th_on_result, &r)),
                 SEATD_ENOSHOW);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_layout_get(t.store, "5", th_on_result, &r)),
                 SEATD_ENOSHOW);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_seatmap(t.store, "5", th_on_result, &r)),
                 SEATD_ENOSHOW);
    th_res_clear(&r);
    cr_assert_eq(seatd_store_seatmap(t.store, "05", th_on_result, &r), SEATD_EBADID);
    cr_assert_eq(r.done, 0, "a synchronous error never runs the callback");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_show, the_seatmap_reads_version_and_both_bitmaps_at_once)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    static const char *const seats10[] = {"B1", "B2", "B3", "B4",  "B5", "B6",
                                          "B7", "B8", "B9", "B10", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats10, 90000), 0);
    const char *b10[] = {"B10", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b10, 0, 0, NULL), 0);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_seatmap(t.store, "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "version"), "1");
    cr_assert_str_eq(th_get(&r, "seatCount"), "10");
    size_t i;
    for (i = 0; i < r.nfields && strcmp(r.names[i], "held") != 0; i++)
        ;
    cr_assert_eq(r.lens[i], 2, "binary-safe: the leading zero byte is there");
    cr_assert_eq((unsigned char)r.values[i][0], 0);
    cr_assert_eq((unsigned char)r.values[i][1], 0x40, "bit 9 (MSB first) is B10");
    cr_assert_str_eq(th_get(&r, "booked"), "", "no booking yet: no bitmap");
    cr_assert_eq(r.lens[i + 1], 0);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_show, shows_with_one_layout_share_one_stored_copy_and_keep_their_own_document)
{
    static const char *const other[] = {"D1", "D2", NULL};
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats3, 90000), 0);
    cr_assert_eq(th_create_show(&t, "2", seats3, 90000), 0);
    cr_assert_eq(th_create_show(&t, "3", other, 90000), 0);
    redisContext *c = seatd_test_redis_connect();
    cr_assert_eq(seatd_test_redis_count_keys("seatd:layout:*"), 2,
                 "one stored layout per distinct layout");
    char h1[80], h2[80], h3[80];
    cr_assert_eq(th_str(c, h1, sizeof(h1), "HGET {s:1}:meta layoutHash"), 1);
    cr_assert_eq(th_str(c, h2, sizeof(h2), "HGET {s:2}:meta layoutHash"), 1);
    cr_assert_eq(th_str(c, h3, sizeof(h3), "HGET {s:3}:meta layoutHash"), 1);
    cr_assert_str_eq(h1, h2);
    cr_assert_str_neq(h1, h3);
    cr_assert_eq(th_int(c, "PTTL seatd:layout:%s", h1), -1, "layouts never expire");

    cr_assert_eq(th_finish(&t, &r, seatd_store_layout_get(t.store, "2", th_on_result, &r)), 0);
    const char *doc = th_get(&r, "layout");
    cr_assert(strncmp(doc, "{\"showId\":\"2\",\"seats\":[{\"id\":\"B1\",", 34) == 0, "%s", doc);
    cr_assert_str_eq(th_get(&r, "layoutHash"), h2);
    char stored[4096];
    cr_assert_eq(th_str(c, stored, sizeof(stored), "GET seatd:layout:%s", h1), 1);
    cr_assert_eq(strlen(doc), strlen("{\"showId\":\"2\",\"seats\":") + strlen(stored) + 1);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_show, a_shared_layout_that_does_not_match_its_hash_is_never_used)
{
    th_t t;
    th_res_t r = {0};
    redisContext *c;
    char h[80];
    cr_assert_eq(th_open_raw_show(&t, seats3, 90000, &c, h, sizeof(h)), 0);
    /* Someone rewrote the shared layout: B3 first. */
    redisReply *set = seatd_test_redis_command(
        c, "SET seatd:layout:%s %s", h,
        "[{\"id\":\"B3\",\"row\":\"B\",\"number\":0,\"tier\":\"standard\",\"x\":0,\"y\":0},"
        "{\"id\":\"B2\",\"row\":\"B\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":0},"
        "{\"id\":\"B1\",\"row\":\"B\",\"number\":2,\"tier\":\"standard\",\"x\":2,\"y\":0}]");
    freeReplyObject(set);
    seatd_layout_cache_clear();
    cr_assert_eq(th_finish(&t, &r, seatd_store_layout_get(t.store, "1", th_on_result, &r)),
                 SEATD_EINTERNAL);
    char *before = th_snapshot(c);
    const char *b3[] = {"B3", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b3, 0, 0, NULL), SEATD_EINTERNAL);
    cr_assert_eq(seatd_layout_cache_get("1"), NULL, "the bad layout is not cached");
    char *after = th_snapshot(c);
    cr_assert_str_eq(after, before);
    free(before);
    free(after);
    /* Creating a show with the genuine layout refuses to overwrite the damaged copy. */
    cr_assert_eq(th_create_show(&t, "2", seats3, 90000), SEATD_EINTERNAL);
    cr_assert_eq(th_int(c, "EXISTS {s:2}:meta"), 0);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

Test(lua_show, a_show_with_no_live_hold_and_no_booking_keeps_no_bitmap)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    cr_assert_eq(th_create_show(&t, "1", seats3, 90000), 0);
    redisContext *c = seatd_test_redis_connect();
    const char *b3[] = {"B3", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b3, 0, 0, NULL), 0);
    char hold_id[SEATD_ID_MAX];
    snprintf(hold_id, sizeof(hold_id), "%s", th_get(&r, "holdId"));
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 2"), 1);
    cr_assert_eq(th_release(&t, &r, hold_id, "alice"), 0);
    cr_assert_eq(th_int(c, "EXISTS {s:1}:held"), 0, "an all-zero bitmap is dropped");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_seatmap(t.store, "1", th_on_result, &r)), 0);
    cr_assert_eq(th_get_ll(&r, "version"), 2);
    cr_assert_str_eq(th_get(&r, "held"), "", "a missing bitmap reads as no seat held");
    cr_assert_eq(th_hold(&t, &r, "1", "bob", b3, 0, 0, NULL), 0, "and the seat is available");
    cr_assert_eq(th_int(c, "GETBIT {s:1}:held 2"), 1);
    redisFree(c);
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}

/* seatd_version_floor: a version a worker saw and Redis lost is never used again. The show
 * moves to seen + 2 with an empty delta there (every feed sees a gap and reads a snapshot); a
 * show already past it is left alone. */
Test(lua_show, the_version_floor_moves_a_show_past_a_lost_version_once)
{
    th_t t;
    th_res_t r = {0};
    cr_assert_eq(th_open(&t), 0);
    static const char *const seats2[] = {"A1", "A2", NULL};
    cr_assert_eq(th_create_show(&t, "1", seats2, 90000), 0);
    redisContext *sub = seatd_test_redis_connect();
    redisReply *x = seatd_test_redis_command(sub, "SUBSCRIBE {s:1}:ch");
    freeReplyObject(x);
    cr_assert_eq(th_finish(&t, &r, seatd_store_version_floor(t.store, "1", 5, th_on_result, &r)),
                 0);
    cr_assert_str_eq(th_get(&r, "version"), "7");
    cr_assert_str_eq(th_get(&r, "bumped"), "1");
    cr_assert_eq(redisGetReply(sub, (void **)&x), REDIS_OK);
    cr_assert_str_eq(x->element[2]->str, "{\"v\":7,\"c\":[]}");
    freeReplyObject(x);
    redisFree(sub);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_version_floor(t.store, "1", 7, th_on_result, &r)),
                 0);
    cr_assert_str_eq(th_get(&r, "version"), "9", "the same number may be another history's");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_version_floor(t.store, "1", 3, th_on_result, &r)),
                 0);
    cr_assert_str_eq(th_get(&r, "version"), "9");
    cr_assert_str_eq(th_get(&r, "bumped"), "0");
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_version_floor(t.store, "2", 3, th_on_result, &r)),
                 SEATD_ENOSHOW);
    th_res_clear(&r);
    cr_assert_eq(seatd_store_version_floor(t.store, "1", -1, th_on_result, &r), SEATD_EINVAL);
    cr_assert_eq(th_close(&t), 0);
}
