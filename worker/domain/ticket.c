/* ticket.c - signed ticket tokens and QR codes; see ticket.h. */
#include "domain/ticket.h"

#include <openssl/crypto.h>
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "domain/seats.h"
#include "domain/signing.h"

/* Every hold's seats fit a ticket: the most seats, each the longest id, and a comma. */
_Static_assert(3 + SEATD_ID_MAX + 1 + SEATD_SEATS_MAX_PER_HOLD * 17 + 1 + 44 < SEATD_TICKET_MAX,
               "a ticket of the largest hold must fit SEATD_TICKET_MAX");

#define MAC_TEXT SEATD_SIGNING_MAC_TEXT
_Static_assert(SEATD_TICKET_KEY_LEN == SEATD_SIGNING_KEY_LEN, "one key length");

void seatd_ticket_key(const char *secret, size_t len, unsigned char key[SEATD_TICKET_KEY_LEN])
{
    seatd_signing_key(secret, len, "ticket", key);
}

void seatd_ticket_items(const char *seats_csv, const char *areas, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", seats_csv, seats_csv[0] && areas && areas[0] ? "," : "",
             areas ? areas : "");
}

/* A ticket item: a seat id, or "<area id>:<count>" with a count of 1-9 digits. */
static int valid_item(char *id)
{
    char *colon = strchr(id, ':');
    if (colon) {
        size_t digits = strlen(colon + 1);
        *colon = '\0';
        if (digits < 1 || digits > 9 || strspn(colon + 1, "0123456789") != digits)
            return 0;
    }
    return seatd_keys_valid_seat_id(id);
}

static int valid_seats(const char *s)
{
    if (*s == '\0' || s[strlen(s) - 1] == ',')
        return 0;
    for (const char *p = s; *p; p++) {
        char id[32];
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= sizeof(id))
            return 0;
        memcpy(id, p, len);
        id[len] = '\0';
        if (!valid_item(id))
            return 0;
        p += len;
        if (*p == '\0')
            break;
    }
    return 1;
}

char *seatd_ticket_sign(const unsigned char key[SEATD_TICKET_KEY_LEN], const char *booking_id,
                        const char *seats_csv)
{
    char show[SEATD_ID_MAX];
    if (booking_id == NULL || seats_csv == NULL || seatd_keys_parse_id(booking_id, 'b', show) < 0 ||
        !valid_seats(seats_csv))
        return NULL;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "T1.%s.%s", booking_id, seats_csv);
    char mac[MAC_TEXT];
    seatd_signing_mac_text(key, b.data, b.len, mac);
    seatd_buf_printf(&b, ".%s", mac);
    if (b.len >= SEATD_TICKET_MAX) {
        seatd_buf_free(&b);
        return NULL;
    }
    return seatd_buf_steal(&b, NULL);
}

int seatd_ticket_verify(const unsigned char key[SEATD_TICKET_KEY_LEN], const char *token,
                        seatd_ticket_t *out)
{
    memset(out, 0, sizeof(*out));
    size_t len = token ? strlen(token) : 0;
    if (len < 4 || len >= SEATD_TICKET_MAX || strncmp(token, "T1.", 3) != 0)
        return SEATD_EINVAL;
    const char *last = strrchr(token, '.');
    const char *bid = token + 3;
    const char *dot = strchr(bid, '.');
    if (dot == NULL || dot == last || (size_t)(dot - bid) >= sizeof(out->booking_id) ||
        strlen(last + 1) != MAC_TEXT - 1)
        return SEATD_EINVAL;
    char mac[MAC_TEXT];
    seatd_signing_mac_text(key, token, (size_t)(last - token), mac);
    if (CRYPTO_memcmp(mac, last + 1, MAC_TEXT - 1) != 0)
        return SEATD_EINVAL;
    memcpy(out->booking_id, bid, (size_t)(dot - bid));
    size_t slen = (size_t)(last - dot - 1);
    memcpy(out->seats, dot + 1, slen);
    out->seats[slen] = '\0';
    if (seatd_keys_parse_id(out->booking_id, 'b', out->show_id) < 0 || !valid_seats(out->seats)) {
        memset(out, 0, sizeof(*out));
        return SEATD_EINVAL;
    }
    return 0;
}

char *seatd_ticket_qr_svg(const char *text)
{
    QRcode *qr = text ? QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) : NULL;
    if (qr == NULL)
        return NULL;
    const int quiet = 4, w = qr->width, size = w + 2 * quiet;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
                     "shape-rendering=\"crispEdges\"><rect width=\"%d\" height=\"%d\" "
                     "fill=\"#fff\"/><path fill=\"#000\" d=\"",
                     size, size, size, size);
    /* One rectangle per horizontal run of dark modules (not one per module): a shorter
     * path, and numbers written by hand: every confirmed booking's answer carries this. */
    for (int y = 0; y < w; y++) {
        for (int x = 0; x < w;) {
            if (!(qr->data[y * w + x] & 1)) {
                x++;
                continue;
            }
            int run = 1;
            while (x + run < w && (qr->data[y * w + x + run] & 1))
                run++;
            seatd_buf_puts(&b, "M");
            seatd_buf_put_uint(&b, (unsigned)(x + quiet));
            seatd_buf_puts(&b, " ");
            seatd_buf_put_uint(&b, (unsigned)(y + quiet));
            seatd_buf_puts(&b, "h");
            seatd_buf_put_uint(&b, (unsigned)run);
            seatd_buf_puts(&b, "v1h-");
            seatd_buf_put_uint(&b, (unsigned)run);
            seatd_buf_puts(&b, "z");
            x += run;
        }
    }
    seatd_buf_puts(&b, "\"/></svg>");
    QRcode_free(qr);
    return seatd_buf_steal(&b, NULL);
}
