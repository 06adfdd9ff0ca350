/* Unit tests for ticket.c: signed ticket tokens and QR codes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ticket.h"

static unsigned char key[SEATD_TICKET_KEY_LEN];

static void setup(void)
{
    const char *secret = "0123456789abcdef0123456789abcdef";
    seatd_ticket_key(secret, strlen(secret), key);
}

TestSuite(ticket, .init = setup);

Test(ticket, a_signed_token_verifies_and_names_the_booking_show_and_seats)
{
    char *t = seatd_ticket_sign(key, "42-b0123456789abcdef0123", "C7,C8");
    cr_assert_not_null(t);
    seatd_ticket_t out;
    cr_assert_eq(seatd_ticket_verify(key, t, &out), 0);
    cr_assert_str_eq(out.booking_id, "42-b0123456789abcdef0123");
    cr_assert_str_eq(out.show_id, "42");
    cr_assert_str_eq(out.seats, "C7,C8");
    free(t);
}

Test(ticket, any_altered_byte_is_refused)
{
    char *t = seatd_ticket_sign(key, "42-b0123456789abcdef0123", "C7,C8");
    size_t len = strlen(t);
    seatd_ticket_t out;
    for (size_t i = 0; i < len; i++) {
        char saved = t[i];
        t[i] = saved == 'A' ? 'B' : 'A';
        cr_assert_neq(seatd_ticket_verify(key, t, &out), 0, "byte %zu altered", i);
        t[i] = saved;
    }
    cr_assert_eq(seatd_ticket_verify(key, t, &out), 0);
    free(t);
}

Test(ticket, a_token_signed_with_another_key_or_malformed_is_refused)
{
    unsigned char other[SEATD_TICKET_KEY_LEN];
    seatd_ticket_key("another secret of thirty-two bytes!", 35, other);
    char *t = seatd_ticket_sign(other, "42-b0123456789abcdef0123", "C7");
    seatd_ticket_t out;
    cr_assert_neq(seatd_ticket_verify(key, t, &out), 0);
    free(t);
    cr_assert_neq(seatd_ticket_verify(key, "", &out), 0);
    cr_assert_neq(seatd_ticket_verify(key, "T1.", &out), 0);
    cr_assert_neq(seatd_ticket_verify(key, "T1.a.b.c", &out), 0);
    cr_assert_neq(seatd_ticket_verify(key, NULL, &out), 0);
}

Test(ticket, signing_refuses_malformed_ids)
{
    cr_assert_null(seatd_ticket_sign(key, "not-a-booking", "C7"));
    cr_assert_null(seatd_ticket_sign(key, "42-b0123456789abcdef0123", ""));
    cr_assert_null(seatd_ticket_sign(key, "42-b0123456789abcdef0123", "C7,"));
    cr_assert_null(seatd_ticket_sign(key, "42-b0123456789abcdef0123", "C7.x"));
}

Test(ticket, the_qr_code_is_an_svg_with_dark_modules)
{
    char *svg = seatd_ticket_qr_svg("T1.42-b0123456789abcdef0123.C7.abc");
    cr_assert_not_null(svg);
    cr_assert(strncmp(svg, "<svg", 4) == 0);
    cr_assert_not_null(strstr(svg, "h1v1h-1z"));
    cr_assert_not_null(strstr(svg, "</svg>"));
    free(svg);
}
