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

#include "base/buf.h"
#include "base/errors.h"

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
    SEATD_WS_CLOSE_INVALID = 1007,
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
/* 1 while 'ws' holds no wslay context: every byte fed was a whole frame, no fragmented
 * message is open, nothing is queued, no close has begun. A watcher's codec rests between
 * its client's pongs, so an idle connection costs the worker ~100 bytes here, not ~8 KB. */
int seatd_ws_resting(const seatd_ws_t *ws);

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

/*
 * permessage-deflate (RFC 7692). seatd compresses each message on its own and asks the same
 * of the client, so that one compressed frame can go to every watcher as it is and an idle
 * connection holds no compression state:
 *
 * seatd_ws_deflate_offered() says whether a request's Sec-WebSocket-Extensions value (at most
 * SEATD_WS_MAX_EXTENSIONS bytes) offers the extension with parameters this codec honours; a
 * server that takes it answers SEATD_WS_DEFLATE_RESPONSE and calls seatd_ws_set_deflate().
 * From then on a received message with RSV1 is inflated before the callback sees it (at most
 * the codec's 'max_msg' bytes inflated, else a close with 1009; a corrupt one closes with
 * 1007), and seatd_ws_send_deflated() queues a message already compressed with
 * seatd_ws_deflate() (RSV1 set). Messages may still be sent uncompressed.
 */
#define SEATD_WS_DEFLATE_RESPONSE                                                                  \
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
#define SEATD_WS_MAX_EXTENSIONS 1024
int seatd_ws_deflate_offered(const char *offers);
void seatd_ws_set_deflate(seatd_ws_t *ws);
/* Appends to 'out' the payload of one compressed message of 'data' ('len' bytes). Returns 0,
 * or SEATD_EINVAL if zlib failed. */
SEATD_MUSTCHECK int seatd_ws_deflate(const char *data, size_t len, seatd_buf_t *out);
/* Appends to 'out' the inflated payload of one compressed message. Returns 0, SEATD_EINVAL
 * for a corrupt one, or SEATD_ETOOLARGE once it passes 'max' bytes ('out' then holds part). */
SEATD_MUSTCHECK int seatd_ws_inflate(const char *data, size_t len, size_t max, seatd_buf_t *out);
/* Queues one message whose payload is compressed already (seatd_ws_deflate). Returns as
 * seatd_ws_send(), and SEATD_EINVAL when deflate was not negotiated. */
SEATD_MUSTCHECK int seatd_ws_send_deflated(seatd_ws_t *ws, int opcode, const char *data,
                                           size_t len);

/* 1 when a close frame has been output (nothing more will be sent). */
int seatd_ws_close_sent(const seatd_ws_t *ws);
/* 1 when the peer's close frame has been received. */
int seatd_ws_close_received(const seatd_ws_t *ws);
/* The status code of the peer's close frame (0 if none or not received). */
unsigned seatd_ws_close_status(const seatd_ws_t *ws);

#endif
