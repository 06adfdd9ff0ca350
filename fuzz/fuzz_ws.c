/*
 * fuzz_ws.c - libFuzzer harness for what a WebSocket client sends the worker (ws_codec.h):
 * the Sec-WebSocket-Extensions offer, and frames into a server codec with permessage-deflate
 * negotiated (compressed messages are inflated with the codec's bound).
 *
 * The first byte picks the part: 0 - the rest, NUL-terminated, is an extensions offer: taken
 * or not, never a crash, and a taken one names permessage-deflate; 1 - the rest is fed, in
 * two pieces, to a server codec (max message 4096) that negotiated deflate: every message its
 * callback sees is at most 4096 bytes; 2 - the rest is inflated with a bound of 4096: success
 * means at most 4096 bytes, and any input compressed by seatd_ws_deflate() inflates back to
 * itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "fuzz_check.h"
#include "http/ws_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MSG 4096

static void on_msg(seatd_ws_t *ws, int opcode, const uint8_t *msg, size_t len, unsigned status,
                   void *user)
{
    (void)ws;
    (void)opcode;
    (void)msg;
    (void)status;
    (void)user;
    CHECK(len <= MAX_MSG);
}

static int names_deflate(const char *s)
{
    for (const char *p = s; *p; p++)
        if (strncasecmp(p, "permessage-deflate", 18) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int part = data[0] % 3;
    data++;
    size--;
    if (part == 0) {
        char *s = malloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        if (seatd_ws_deflate_offered(s))
            CHECK(names_deflate(s));
        free(s);
    } else if (part == 1) {
        seatd_ws_t *ws = seatd_ws_new(0, MAX_MSG, on_msg, NULL);
        seatd_ws_set_deflate(ws);
        size_t half = size / 2;
        if (seatd_ws_feed(ws, (const char *)data, half) == 0)
            (void)seatd_ws_feed(ws, (const char *)data + half, size - half);
        seatd_buf_t out = SEATD_BUF_INIT;
        seatd_ws_output(ws, &out);
        seatd_buf_free(&out);
        seatd_ws_free(ws);
    } else {
        seatd_buf_t out = SEATD_BUF_INIT;
        if (seatd_ws_inflate((const char *)data, size, MAX_MSG, &out) == 0)
            CHECK(out.len <= MAX_MSG);
        seatd_buf_reset(&out);
        seatd_buf_t back = SEATD_BUF_INIT;
        CHECK(seatd_ws_deflate((const char *)data, size, &out) == 0);
        CHECK(seatd_ws_inflate(out.data, out.len, size, &back) == 0);
        CHECK(back.len == size && (size == 0 || memcmp(back.data, data, size) == 0));
        seatd_buf_free(&out);
        seatd_buf_free(&back);
    }
    return 0;
}
