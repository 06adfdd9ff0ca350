/*
 * admission.h - signed admissions to a show's waiting room (issue 15).
 *
 * An admission is text: "A1.<showId>.<expiresAtMs>.<sub>.<mac>", where mac is the base64url
 * (no padding) HMAC-SHA256 of everything before the last '.', under the admission key
 * HMAC-SHA256(SEATD_JWT_SECRET, "admission"): derived, so no new secret, and an admission can
 * never pass as a JWT signed by the secret itself, nor as a ticket token (ticket.h). It binds
 * one user to one show until one instant (the admission's deadline on Redis's clock, as
 * lua/queue.lua set it). A hold on a queued show carries it in the header Seatd-Admission;
 * the worker checks it here (forged, altered, another user's or show's, or expired: 403
 * queue-required) and the hold function checks that the admission is still live in Redis.
 *
 * Pure apart from OpenSSL. Thread-safe (no state).
 */
#ifndef SEATD_ADMISSION_H
#define SEATD_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "domain/keys.h"

#define SEATD_ADMISSION_KEY_LEN 32
#define SEATD_ADMISSION_MAX 256 /* longest admission accepted, NUL included */

/* Derives the admission key from 'secret' ('len' bytes, borrowed) into 'key'. */
void seatd_admission_key(const char *secret, size_t len,
                         unsigned char key[SEATD_ADMISSION_KEY_LEN]);

/* Returns an owned admission (free()) of 'sub' to show 'show_id' until 'expires_at_ms', or
 * NULL when an id is malformed. */
char *seatd_admission_sign(const unsigned char key[SEATD_ADMISSION_KEY_LEN], const char *show_id,
                           const char *sub, int64_t expires_at_ms);

/* Checks 'token' (borrowed) for 'sub' on show 'show_id' at 'now_ms': 0 when its signature
 * matches and it names that show and user and expires after 'now_ms'; SEATD_EQUEUEREQUIRED
 * otherwise (malformed, forged, altered, another's, expired). Constant-time on the MAC. */
SEATD_MUSTCHECK int seatd_admission_verify(const unsigned char key[SEATD_ADMISSION_KEY_LEN],
                                           const char *token, const char *show_id, const char *sub,
                                           int64_t now_ms);

#endif
