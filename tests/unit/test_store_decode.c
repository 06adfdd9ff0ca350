/* Unit tests for the store's readers of the texts its scripts pack several records into
 * (store/decode.c): a group payment's show bookings and a group hold's show holds (issue 30). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"

Test(store_decode, a_payment_lists_each_show_booking_in_order)
{
    const char *members = "42|42-b1|CONFIRMED|2400|17|A1;A2|FLOOR:1,"
                          "43|43-b2|PENDING_PAYMENT|1200|0||FLOOR:1;BALC:2";
    seatd_payment_member_t m;
    size_t at = 0;
    cr_assert_eq(seatd_store_payment_member(members, &at, &m), 1);
    cr_assert_str_eq(m.show_id, "42");
    cr_assert_str_eq(m.booking_id, "42-b1");
    cr_assert_str_eq(m.status, "CONFIRMED");
    cr_assert_eq(m.amount, 2400);
    cr_assert_eq(m.version, 17);
    cr_assert_str_eq(m.seat_ids, "A1,A2", "';' becomes ','");
    cr_assert_str_eq(m.areas, "FLOOR:1");
    cr_assert_eq(seatd_store_payment_member(members, &at, &m), 1);
    cr_assert_str_eq(m.show_id, "43");
    cr_assert_str_eq(m.seat_ids, "", "places alone");
    cr_assert_str_eq(m.areas, "FLOOR:1,BALC:2");
    cr_assert_eq(seatd_store_payment_member(members, &at, &m), 0, "the end");
    at = 0;
    cr_assert_eq(seatd_store_payment_member("", &at, &m), 0, "a booking of one show: none");
    cr_assert_eq(seatd_store_payment_member(NULL, &at, &m), 0);
}

Test(store_decode, a_payment_entry_it_cannot_read_ends_the_list)
{
    seatd_payment_member_t m;
    const char *bad[] = {"42|42-b1|CONFIRMED|2400|17|A1",           /* a field short */
                         "42|42-b1|CONFIRMED|2400|17|A1|F:1|extra", /* a field more */
                         "|"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t at = 0;
        cr_assert_eq(seatd_store_payment_member(bad[i], &at, &m), 0, "%s", bad[i]);
        cr_assert_eq(at, 0, "not moved");
    }
    char long_show[200];
    memset(long_show, '7', sizeof(long_show) - 1);
    long_show[sizeof(long_show) - 1] = '\0';
    char text[400];
    snprintf(text, sizeof(text), "%s|b|CONFIRMED|1|1||", long_show);
    size_t at = 0;
    cr_assert_eq(seatd_store_payment_member(text, &at, &m), 0, "a field that does not fit");
}

Test(store_decode, a_group_hold_names_each_show_hold)
{
    seatd_group_show_hold_t h;
    cr_assert_eq(seatd_store_group_show_hold("42|42-h9|1700000000123|8|C1;C2|FLOOR:2,BALC:1", &h),
                 0);
    cr_assert_str_eq(h.show_id, "42");
    cr_assert_str_eq(h.hold_id, "42-h9");
    cr_assert_eq(h.expires_at_ms, 1700000000123LL);
    cr_assert_eq(h.version, 8);
    cr_assert_str_eq(h.seat_ids, "C1,C2");
    cr_assert_str_eq(h.areas, "FLOOR:2,BALC:1", "places keep their commas");
    cr_assert_eq(seatd_store_group_show_hold("43|43-h1|5|6||FLOOR:1", &h), 0);
    cr_assert_str_eq(h.seat_ids, "");
    cr_assert_eq(seatd_store_group_show_hold("43|43-h1|5|6|C1", &h), -1, "a field short");
    cr_assert_eq(seatd_store_group_show_hold("43|43-h1|5|6|C1||x", &h), -1, "a field more");
    cr_assert_eq(seatd_store_group_show_hold(NULL, &h), -1);
}

Test(store_decode, a_group_hold_of_a_hundred_long_seat_ids_fits)
{
    char text[4096] = "42|42-h9|5|6|";
    for (int i = 0; i < 100; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "%sSEAT%012d", i ? ";" : "", i);
    strcat(text, "|");
    seatd_group_show_hold_t h;
    cr_assert_eq(seatd_store_group_show_hold(text, &h), 0);
    cr_assert_eq(strlen(h.seat_ids), 100 * 16 + 99);
    cr_assert(strstr(h.seat_ids, "SEAT000000000099"));
}
