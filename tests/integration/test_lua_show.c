/* Integration tests for lua/create_show.lua and the read-only functions of lua/read.lua. */
#include <criterion/criterion.h>

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
    char v[16];
    cr_assert_eq(th_str(c, v, sizeof(v), "HGET {s:1}:idx B3"), 1);
    cr_assert_str_eq(v, "2", "seat i has bit i");
    cr_assert_eq(th_int(c, "STRLEN {s:1}:held"), 1);
    cr_assert_eq(th_int(c, "STRLEN {s:1}:booked"), 1);
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
    cr_assert_eq(th_create_show(&t, "1", seats3, 90000), 0);
    const char *b2[] = {"B2", NULL};
    cr_assert_eq(th_hold(&t, &r, "1", "alice", b2, 0, 0, NULL), 0);
    th_res_clear(&r);
    cr_assert_eq(th_finish(&t, &r, seatd_store_seatmap(t.store, "1", th_on_result, &r)), 0);
    cr_assert_str_eq(th_get(&r, "version"), "1");
    cr_assert_str_eq(th_get(&r, "seatCount"), "3");
    size_t i;
    for (i = 0; i < r.nfields && strcmp(r.names[i], "held") != 0; i++)
        ;
    cr_assert_eq(r.lens[i], 1);
    cr_assert_eq((unsigned char)r.values[i][0], 0x40, "bit 1 (MSB first) is B2");
    cr_assert_str_eq(th_get(&r, "booked"), "", "an all-zero byte");
    cr_assert_eq(r.lens[i + 1], 1, "binary-safe: the zero byte is there");
    th_res_clear(&r);
    cr_assert_eq(th_close(&t), 0);
}
