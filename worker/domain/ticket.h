/*
 * ticket.h - signed ticket tokens a door scanner can verify offline, and their QR codes.
 *
 * A token is text: "T1.<bookingId>.<items comma-joined>.<mac>", where an item is a seat id or
 * places in a standing area, "<area id>:<count>" (issue 30; seatd_ticket_items), mac the
 * base64url (no padding) HMAC-SHA256 of everything before the last '.', under the ticket key.
 * The ticket key is HMAC-SHA256(SEATD_JWT_SECRET, "ticket"): derived, so no new secret, and
 * a token can never be confused with a JWT signed by the secret itself. A scanner holding the
 * key checks the signature without the network; whether the booking is still valid (not
 * cancelled) needs POST /v1/tickets/verify.
 *
 * Pure apart from OpenSSL and libqrencode. Thread-safe (no state).
 */
#ifndef SEATD_TICKET_H
#define SEATD_TICKET_H

#include <stddef.h>

#include "base/errors.h"
#include "domain/keys.h"

#define SEATD_TICKET_KEY_LEN 32
/* Longest token accepted, NUL included: "T1." + booking id + "." + up to 100 seat ids of 16
 * characters comma-joined + "." + the 43-character MAC is ~1,780 bytes (a hold of the most
 * seats a stack may allow had no ticket at 1,024), and a QR code at ECC level M holds 2,331. */
#define SEATD_TICKET_MAX 2048

typedef struct seatd_ticket_s {
    char booking_id[SEATD_ID_MAX];
    char show_id[SEATD_ID_MAX];
    char seats[SEATD_TICKET_MAX]; /* the items, comma-joined: seat ids, "<area>:<count>" */
} seatd_ticket_t;

/* A booking's ticket items: its seats ("" for none) and its places text (areas.h; "" or NULL
 * for none) comma-joined into 'out' ('cap' bytes; cut short, and then never a valid ticket,
 * when it does not fit). */
void seatd_ticket_items(const char *seats_csv, const char *areas, char *out, size_t cap);

/* Derives the ticket key from 'secret' ('len' bytes, borrowed) into 'key'. */
void seatd_ticket_key(const char *secret, size_t len, unsigned char key[SEATD_TICKET_KEY_LEN]);

/* Returns an owned token (free()) for the booking, or NULL if an id is malformed or the
 * token would exceed SEATD_TICKET_MAX. */
char *seatd_ticket_sign(const unsigned char key[SEATD_TICKET_KEY_LEN], const char *booking_id,
                        const char *seats_csv);

/* Checks 'token' (borrowed): 0 and '*out' filled, or SEATD_EINVAL when it is malformed or
 * its signature does not match (forged or altered). Constant-time on the MAC. */
SEATD_MUSTCHECK int seatd_ticket_verify(const unsigned char key[SEATD_TICKET_KEY_LEN],
                                        const char *token, seatd_ticket_t *out);

/* Returns an owned SVG document (free()) with the QR code of 'text', or NULL. */
char *seatd_ticket_qr_svg(const char *text);

#endif
