/* Unit tests for ticket.c: signed ticket tokens and QR codes. */
#include <criterion/criterion.h>
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/ticket.h"

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
    cr_assert_not_null(strstr(svg, "</svg>"));
    free(svg);
}

/* The path's rectangles (one per run of dark modules in a row) cover exactly the dark modules
 * of the QR code, each once, shifted by the 4-module quiet zone. */
Test(ticket, the_svg_paints_exactly_the_dark_modules)
{
    const char *text = "T1.42-b0123456789abcdef0123.C7,C8.abcdefghijklmnopqrstuvwxyz0123456789";
    QRcode *qr = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    cr_assert_not_null(qr);
    const int w = qr->width, size = w + 8;
    char *svg = seatd_ticket_qr_svg(text);
    cr_assert_not_null(svg);
    char view[64];
    snprintf(view, sizeof(view), "viewBox=\"0 0 %d %d\"", size, size);
    cr_assert_not_null(strstr(svg, view), "%s", view);
    unsigned char *painted = calloc((size_t)(size * size), 1);
    const char *p = strstr(svg, " d=\"");
    cr_assert_not_null(p);
    p += 4;
    int x, y, run, back, used;
    while (sscanf(p, "M%d %dh%dv1h-%dz%n", &x, &y, &run, &back, &used) == 4) {
        cr_assert_eq(run, back);
        cr_assert(x >= 4 && y >= 4 && run >= 1 && x + run <= size - 4 && y < size - 4);
        for (int i = 0; i < run; i++)
            painted[y * size + x + i]++;
        p += used;
    }
    cr_assert_str_eq(p, "\"/></svg>", "the path is only rectangles");
    for (int j = 0; j < w; j++)
        for (int i = 0; i < w; i++)
            cr_assert_eq(painted[(j + 4) * size + i + 4], qr->data[j * w + i] & 1, "(%d,%d)", i, j);
    free(painted);
    free(svg);
    QRcode_free(qr);
}

/* The largest hold a stack may allow (100 seats, ids of 16 characters) gets its ticket and
 * its QR code: past 56 such seats the token passed the old 1,024-byte cap, and a paid booking
 * answered CONFIRMED without a ticket. */
Test(ticket, the_largest_hold_gets_a_ticket_and_a_qr_code)
{
    char seats[100 * 17 + 1] = "";
    for (int i = 0; i < 100; i++) {
        char id[18];
        snprintf(id, sizeof(id), "%sSEATROWXX%07d", i ? "," : "", i + 1);
        strcat(seats, id);
    }
    char *t = seatd_ticket_sign(key, "42-b0123456789abcdef0123", seats);
    cr_assert_not_null(t, "a token for 100 seats of 16 characters");
    seatd_ticket_t out;
    cr_assert_eq(seatd_ticket_verify(key, t, &out), 0);
    cr_assert_str_eq(out.seats, seats);
    char *svg = seatd_ticket_qr_svg(t);
    cr_assert_not_null(svg, "its QR code");
    free(svg);
    free(t);
}
