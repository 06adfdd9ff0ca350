/*
 * ws_codec.h - WebSocket (RFC 6455): the opening-handshake digest and a sans-IO frame codec.
 *
 * The handshake: seatd_ws_accept_key() turns a client's Sec-WebSocket-Key into the
 * Sec-WebSocket-Accept value (base64 of SHA-1 of key + the RFC's GUID; OpenSSL underneath),
 * and seatd_ws_check_upgrade() validates the request headers of an upgrade.
 *
 * Framing is libwslay's event API (only this module includes <wslay/wslay.h>), wrapped so
 * that no socket is involved: the owner feeds the bytes it read with seatd_ws_feed(), which
 * reports each complete message (text, binary, ping, pong, close) through the message
 * callback; it queues messages with seatd_ws_send() / seatd_ws_close(), and moves the encoded
 * frames out with seatd_ws_output() to write them wherever it likes. Pings are answered with
 * pongs and a received close is answered with a close, as wslay does. A server codec expects
 * masked frames and sends unmasked ones; a client codec (tests, benchmarks) masks.
 *
 * Lifecycle: seatd_ws_new() -> feed / send / output ... -> seatd_ws_free().
 * Pure apart from OpenSSL's SHA-1 and random bytes; no uv.h. Single-threaded.
 */
#ifndef SEATD_WS_CODEC_H
#define SEATD_WS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "errors.h"

#define SEATD_WS_ACCEPT_LEN 28 /* base64 of a 20-byte SHA-1, NUL excluded */

enum seatd_ws_opcode_e {
    SEATD_WS_TEXT = 0x1,
    SEATD_WS_BINARY = 0x2,
    SEATD_WS_CLOSE = 0x8,
    SEATD_WS_PING = 0x9,
    SEATD_WS_PONG = 0xa,
};

/* Close status codes used by seatd. */
enum seatd_ws_status_e {
    SEATD_WS_CLOSE_NORMAL = 1000,
    SEATD_WS_CLOSE_GOING_AWAY = 1001,
    SEATD_WS_CLOSE_PROTOCOL = 1002,
    SEATD_WS_CLOSE_POLICY = 1008,
    SEATD_WS_CLOSE_TOO_BIG = 1009,
    SEATD_WS_CLOSE_INTERNAL = 1011,
    SEATD_WS_CLOSE_TRY_LATER = 1013,
};

/*
 * Writes the Sec-WebSocket-Accept value for 'client_key' (borrowed; the request's
 * Sec-WebSocket-Key, which must be the base64 of 16 bytes, i.e. 24 characters) into 'out'
 * (SEATD_WS_ACCEPT_LEN + 1 bytes). Returns 0, or SEATD_EINVAL for a malformed key.
 */
SEATD_MUSTCHECK int seatd_ws_accept_key(const char *client_key, char *out);

/*
 * Checks the headers of an upgrade request: 'upgrade' must contain the token "websocket",
 * 'connection' the token "upgrade" (both case-insensitive, comma-separated lists), 'version'
 * must be "13" and 'key' a valid key. All borrowed, any may be NULL (then the check fails).
 * Returns 0 or SEATD_EINVAL.
 */
SEATD_MUSTCHECK int seatd_ws_check_upgrade(const char *upgrade, const char *connection,
                                           const char *version, const char *key);

typedef struct seatd_ws_s seatd_ws_t;

/*
 * Called once per complete message received: 'opcode' (SEATD_WS_*), the payload ('data',
 * 'len', borrowed for the call) and, for a close, its status code (0 if none). Pings are
 * reported after their pong was queued; a close after the answering close was queued.
 */
typedef void (*seatd_ws_msg_cb)(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len,
                                unsigned status, void *user);

/*
 * Returns an owned codec (seatd_ws_free). 'client' selects client mode (masks its frames);
 * 'max_msg' bounds a received message (larger: the codec closes with 1009); 'cb' (may be
 * NULL) and 'user' receive messages.
 */
seatd_ws_t *seatd_ws_new(int client, size_t max_msg, seatd_ws_msg_cb cb, void *user);
/* Frees 'ws' and any queued frames. NULL is a no-op. */
void seatd_ws_free(seatd_ws_t *ws);

/*
 * Decodes 'len' bytes of 'data' (borrowed; all are consumed, partial frames are kept) and
 * reports complete messages through the callback. Returns 0, or SEATD_EINVAL when the peer
 * broke the protocol or the codec can no longer read (the connection should be closed once
 * the output, which may hold a close frame, is written).
 */
SEATD_MUSTCHECK int seatd_ws_feed(seatd_ws_t *ws, const char *data, size_t len);

/* Queues one message of 'opcode' with payload 'data' ('len' bytes, borrowed: copied).
 * Returns 0, or SEATD_ESHUTDOWN once a close was queued or sent, SEATD_EINVAL otherwise. */
SEATD_MUSTCHECK int seatd_ws_send(seatd_ws_t *ws, int opcode, const char *data, size_t len);

/* Queues a close frame with 'status' and 'reason' (borrowed, may be NULL). Returns 0 or
 * SEATD_ESHUTDOWN if a close was already queued. */
SEATD_MUSTCHECK int seatd_ws_close(seatd_ws_t *ws, unsigned status, const char *reason);

/* Appends every queued frame, encoded, to 'out'. Returns the number of bytes appended. */
size_t seatd_ws_output(seatd_ws_t *ws, seatd_buf_t *out);

/* 1 when a close frame has been output (nothing more will be sent). */
int seatd_ws_close_sent(const seatd_ws_t *ws);
/* 1 when the peer's close frame has been received. */
int seatd_ws_close_received(const seatd_ws_t *ws);
/* The status code of the peer's close frame (0 if none or not received). */
unsigned seatd_ws_close_status(const seatd_ws_t *ws);

#endif
