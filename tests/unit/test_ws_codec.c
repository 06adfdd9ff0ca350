/* Unit tests for ws_codec.c: the handshake digest (RFC 6455 section 1.3), upgrade header
 * checks, and framing through wslay between a client and a server codec. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "http/ws_codec.h"

Test(ws_codec, computes_the_accept_key_of_the_rfc_example)
{
    char out[SEATD_WS_ACCEPT_LEN + 1];
    cr_assert_eq(seatd_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
    cr_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

typedef struct {
    const char *key; /* candidate Sec-WebSocket-Key */
    int ok;          /* expected validity */
} key_case_t;

static const key_case_t key_cases[] = {
    {"dGhlIHNhbXBsZSBub25jZQ==", 1},
    {"AAAAAAAAAAAAAAAAAAAAAA==", 1},
    {"dGhlIHNhbXBsZSBub25jZQ", 0},    /* no padding */
    {"dGhlIHNhbXBsZSBub25jZQ=", 0},   /* 23 characters */
    {"dGhlIHNhbXBsZSBub25jZQ===", 0}, /* 25 characters */
    {"dGhl!HNhbXBsZSBub25jZQ==", 0},  /* not base64 */
    {"", 0},
};

Test(ws_codec, accepts_only_base64_keys_of_sixteen_bytes)
{
    for (size_t i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
        char out[SEATD_WS_ACCEPT_LEN + 1];
        int rc = seatd_ws_accept_key(key_cases[i].key, out);
        cr_assert_eq(rc == 0, key_cases[i].ok, "key '%s'", key_cases[i].key);
    }
    char out[SEATD_WS_ACCEPT_LEN + 1];
    cr_assert_eq(seatd_ws_accept_key(NULL, out), SEATD_EINVAL);
}

typedef struct {
    const char *upgrade, *connection, *version, *key;
    int ok;
} upgrade_case_t;

static const upgrade_case_t upgrade_cases[] = {
    {"websocket", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", 1},
    {"WebSocket", "keep-alive, Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", 1},
    {"h2c, websocket", "upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", 1},
    {NULL, "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", 0},
    {"websocket", "keep-alive", "13", "dGhlIHNhbXBsZSBub25jZQ==", 0},
    {"websocket", "Upgrade", "8", "dGhlIHNhbXBsZSBub25jZQ==", 0},
    {"websocket", "Upgrade", NULL, "dGhlIHNhbXBsZSBub25jZQ==", 0},
    {"websocket", "Upgrade", "13", "short", 0},
    {"websockets", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==", 0},
};

Test(ws_codec, checks_the_upgrade_headers_from_a_table)
{
    for (size_t i = 0; i < sizeof(upgrade_cases) / sizeof(upgrade_cases[0]); i++) {
        const upgrade_case_t *c = &upgrade_cases[i];
        int rc = seatd_ws_check_upgrade(c->upgrade, c->connection, c->version, c->key);
        cr_assert_eq(rc == 0, c->ok, "case %zu", i);
    }
}

/* Messages seen by a codec's callback. */
typedef struct {
    int n;
    int opcode[8];
    char text[8][256];
    size_t len[8];
    unsigned status[8];
} seen_t;

static void on_msg(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len, unsigned status,
                   void *user)
{
    seen_t *s = user;
    if (s->n >= 8)
        return;
    s->opcode[s->n] = opcode;
    s->len[s->n] = len;
    if (len > 0) /* an empty payload may come as NULL */
        memcpy(s->text[s->n], data, len < 255 ? len : 255);
    s->status[s->n] = status;
    s->n++;
}

Test(ws_codec, server_frames_are_unmasked_and_decode_in_a_client)
{
    seen_t seen = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 0, NULL, NULL);
    seatd_ws_t *cli = seatd_ws_new(1, 0, on_msg, &seen);
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_TEXT, "{\"type\":\"snapshot\"}", 19), 0);
    seatd_buf_t out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_output(srv, &out), 21);
    cr_assert_eq((unsigned char)out.data[0], 0x81, "FIN + text");
    cr_assert_eq((unsigned char)out.data[1], 19, "unmasked, 19 bytes");
    /* Fed one byte at a time: partial frames are kept. */
    for (size_t i = 0; i < out.len; i++)
        cr_assert_eq(seatd_ws_feed(cli, out.data + i, 1), 0);
    cr_assert_eq(seen.n, 1);
    cr_assert_eq(seen.opcode[0], SEATD_WS_TEXT);
    cr_assert_str_eq(seen.text[0], "{\"type\":\"snapshot\"}");
    seatd_buf_free(&out);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

Test(ws_codec, encodes_long_payloads_with_extended_lengths)
{
    seen_t seen = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 0, NULL, NULL);
    seatd_ws_t *cli = seatd_ws_new(1, 1 << 20, on_msg, &seen);
    static char big[70000];
    memset(big, 'x', sizeof(big));
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_TEXT, big, sizeof(big)), 0);
    seatd_buf_t out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_output(srv, &out), sizeof(big) + 10, "64-bit length form");
    cr_assert_eq((unsigned char)out.data[1], 127);
    cr_assert_eq(seatd_ws_feed(cli, out.data, out.len), 0);
    cr_assert_eq(seen.n, 1);
    cr_assert_eq(seen.len[0], sizeof(big));
    seatd_buf_free(&out);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

Test(ws_codec, client_frames_are_masked_and_a_ping_gets_a_pong)
{
    seen_t at_srv = {0}, at_cli = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 0, on_msg, &at_srv);
    seatd_ws_t *cli = seatd_ws_new(1, 0, on_msg, &at_cli);
    cr_assert_eq(seatd_ws_send(cli, SEATD_WS_TEXT, "{\"type\":\"resync\"}", 17), 0);
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_PING, "p", 1), 0);
    seatd_buf_t c2s = SEATD_BUF_INIT, s2c = SEATD_BUF_INIT;
    seatd_ws_output(cli, &c2s);
    cr_assert_eq((unsigned char)c2s.data[1] & 0x80, 0x80, "the mask bit is set");
    cr_assert_eq(seatd_ws_feed(srv, c2s.data, c2s.len), 0);
    cr_assert_eq(at_srv.n, 1);
    cr_assert_str_eq(at_srv.text[0], "{\"type\":\"resync\"}");
    seatd_ws_output(srv, &s2c);
    cr_assert_eq(seatd_ws_feed(cli, s2c.data, s2c.len), 0);
    cr_assert_eq(at_cli.n, 1);
    cr_assert_eq(at_cli.opcode[0], SEATD_WS_PING);
    seatd_buf_reset(&c2s);
    seatd_ws_output(cli, &c2s); /* the automatic pong */
    cr_assert_eq(seatd_ws_feed(srv, c2s.data, c2s.len), 0);
    cr_assert_eq(at_srv.n, 2);
    cr_assert_eq(at_srv.opcode[1], SEATD_WS_PONG);
    cr_assert_str_eq(at_srv.text[1], "p");
    seatd_buf_free(&c2s);
    seatd_buf_free(&s2c);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

Test(ws_codec, a_close_is_answered_and_ends_sending)
{
    seen_t at_srv = {0}, at_cli = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 0, on_msg, &at_srv);
    seatd_ws_t *cli = seatd_ws_new(1, 0, on_msg, &at_cli);
    cr_assert_eq(seatd_ws_close(srv, SEATD_WS_CLOSE_POLICY, "too slow"), 0);
    cr_assert_eq(seatd_ws_close(srv, SEATD_WS_CLOSE_NORMAL, NULL), SEATD_ESHUTDOWN);
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_TEXT, "x", 1), SEATD_ESHUTDOWN);
    seatd_buf_t s2c = SEATD_BUF_INIT, c2s = SEATD_BUF_INIT;
    seatd_ws_output(srv, &s2c);
    cr_assert(seatd_ws_close_sent(srv));
    cr_assert_eq(seatd_ws_feed(cli, s2c.data, s2c.len), 0);
    cr_assert(seatd_ws_close_received(cli));
    cr_assert_eq(seatd_ws_close_status(cli), 1008);
    seatd_ws_output(cli, &c2s); /* the answering close */
    cr_assert(seatd_ws_close_sent(cli));
    cr_assert_eq(seatd_ws_feed(srv, c2s.data, c2s.len), 0);
    cr_assert(seatd_ws_close_received(srv));
    seatd_buf_free(&s2c);
    seatd_buf_free(&c2s);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

Test(ws_codec, rejects_unmasked_client_frames_and_oversized_messages)
{
    seatd_ws_t *srv = seatd_ws_new(0, 16, NULL, NULL);
    const char unmasked[] = {(char)0x81, 0x02, 'h', 'i'};
    cr_assert_eq(seatd_ws_feed(srv, unmasked, sizeof(unmasked)), SEATD_EINVAL);
    seatd_buf_t out = SEATD_BUF_INIT;
    seatd_ws_output(srv, &out);
    cr_assert_eq((unsigned char)out.data[0], 0x88, "a close frame");
    cr_assert_eq(((unsigned char)out.data[2] << 8) | (unsigned char)out.data[3], 1002);
    seatd_buf_free(&out);
    seatd_ws_free(srv);

    srv = seatd_ws_new(0, 16, NULL, NULL);
    seatd_ws_t *cli = seatd_ws_new(1, 0, NULL, NULL);
    cr_assert_eq(seatd_ws_send(cli, SEATD_WS_TEXT, "0123456789abcdefXYZ", 19), 0);
    seatd_ws_output(cli, &out);
    cr_assert_eq(seatd_ws_feed(srv, out.data, out.len), SEATD_EINVAL, "too big");
    seatd_buf_reset(&out);
    seatd_ws_output(srv, &out);
    cr_assert_eq((unsigned char)out.data[0], 0x88);
    cr_assert_eq(((unsigned char)out.data[2] << 8) | (unsigned char)out.data[3], 1009);
    seatd_buf_free(&out);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

/* ------------------------------------------------------------- permessage-deflate (RFC 7692) */

typedef struct {
    const char *offers;
    int taken;
} deflate_case_t;

static const deflate_case_t deflate_cases[] = {
    {"permessage-deflate; client_max_window_bits", 1}, /* Chromium */
    {"permessage-deflate", 1},
    {"PerMessage-Deflate ;  server_no_context_takeover ; client_no_context_takeover", 1},
    {"permessage-deflate; client_max_window_bits=10; server_max_window_bits=15", 1},
    {"permessage-deflate; client_max_window_bits=\"12\"", 1},
    {"permessage-deflate; server_max_window_bits=10", 0},                     /* we always use 15 */
    {"permessage-deflate; server_max_window_bits=10, permessage-deflate", 1}, /* the fallback */
    {"permessage-deflate; client_max_window_bits=16", 0},
    {"permessage-deflate; client_max_window_bits=7", 0},
    {"permessage-deflate; server_no_context_takeover=1", 0},
    {"permessage-deflate; client_no_context_takeover; client_no_context_takeover", 0},
    {"permessage-deflate; x-unknown", 0},
    {"x-webkit-deflate-frame", 0},
    {"permessage-deflate-x", 0},
    {"", 0},
    {NULL, 0},
};

Test(ws_codec, takes_only_permessage_deflate_offers_it_can_honour)
{
    for (size_t i = 0; i < sizeof(deflate_cases) / sizeof(deflate_cases[0]); i++) {
        const deflate_case_t *c = &deflate_cases[i];
        cr_expect_eq(seatd_ws_deflate_offered(c->offers), c->taken, "offer '%s'",
                     c->offers ? c->offers : "(none)");
    }
    static char huge[SEATD_WS_MAX_EXTENSIONS + 2];
    memset(huge, ' ', sizeof(huge) - 1);
    memcpy(huge, "permessage-deflate", 18);
    cr_expect_eq(seatd_ws_deflate_offered(huge), 0, "an overlong header is not read");
}

Test(ws_codec, deflate_and_inflate_round_trip_without_the_sync_tail)
{
    seatd_buf_t in = SEATD_BUF_INIT, z = SEATD_BUF_INIT, back = SEATD_BUF_INIT;
    seatd_buf_puts(&in, "{\"type\":\"snapshot\",\"version\":7,\"seats\":{");
    for (int i = 0; i < 2000; i++)
        seatd_buf_printf(&in, "%s\"A%d\":\"available\"", i ? "," : "", i);
    seatd_buf_puts(&in, "}}");
    cr_assert_eq(seatd_ws_deflate(in.data, in.len, &z), 0);
    cr_assert_lt(z.len * 5, in.len, "%zu bytes compressed to %zu", in.len, z.len);
    cr_assert(z.len < 4 || memcmp(z.data + z.len - 4, "\x00\x00\xff\xff", 4) != 0,
              "the empty stored block is left out");
    cr_assert_eq(seatd_ws_inflate(z.data, z.len, in.len, &back), 0);
    cr_assert_eq(back.len, in.len);
    cr_assert_eq(memcmp(back.data, in.data, in.len), 0);

    seatd_buf_reset(&back);
    cr_assert_eq(seatd_ws_inflate(z.data, z.len, in.len - 1, &back), SEATD_ETOOLARGE,
                 "one byte past the bound");
    seatd_buf_reset(&back);
    cr_assert_eq(seatd_ws_inflate("\xff\xfe\xfd\xfc", 4, 4096, &back), SEATD_EINVAL, "corrupt");
    seatd_buf_free(&in);
    seatd_buf_free(&z);
    seatd_buf_free(&back);
}

Test(ws_codec, compressed_messages_cross_both_ways_once_negotiated)
{
    seen_t at_cli = {0}, at_srv = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 4096, on_msg, &at_srv);
    seatd_ws_t *cli = seatd_ws_new(1, 0, on_msg, &at_cli);
    seatd_ws_set_deflate(srv);
    seatd_ws_set_deflate(cli);
    const char *text = "{\"type\":\"delta\",\"fromVersion\":3,\"version\":3,\"changes\":[]}";
    seatd_buf_t z = SEATD_BUF_INIT, out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_deflate(text, strlen(text), &z), 0);
    cr_assert_eq(seatd_ws_send_deflated(srv, SEATD_WS_TEXT, z.data, z.len), 0);
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_TEXT, "plain", 5), 0, "uncompressed still allowed");
    seatd_ws_output(srv, &out);
    cr_assert_eq((unsigned char)out.data[0], 0xc1, "FIN + RSV1 + text");
    cr_assert_eq(seatd_ws_feed(cli, out.data, out.len), 0);
    cr_assert_eq(at_cli.n, 2);
    cr_assert_str_eq(at_cli.text[0], text);
    cr_assert_str_eq(at_cli.text[1], "plain");

    /* The client's compressed command, and then a bomb past the server's 4 KB bound. */
    seatd_buf_reset(&out);
    cr_assert_eq(seatd_ws_send_deflated(cli, SEATD_WS_TEXT, z.data, z.len), 0);
    seatd_ws_output(cli, &out);
    cr_assert_eq(seatd_ws_feed(srv, out.data, out.len), 0);
    cr_assert_eq(at_srv.n, 1);
    cr_assert_str_eq(at_srv.text[0], text);
    static char zeros[65536];
    seatd_buf_reset(&z);
    cr_assert_eq(seatd_ws_deflate(zeros, sizeof(zeros), &z), 0);
    cr_assert_lt(z.len, 1024);
    seatd_buf_reset(&out);
    cr_assert_eq(seatd_ws_send_deflated(cli, SEATD_WS_TEXT, z.data, z.len), 0);
    seatd_ws_output(cli, &out);
    cr_assert_eq(seatd_ws_feed(srv, out.data, out.len), SEATD_EINVAL);
    cr_assert_eq(at_srv.n, 1, "the bomb reached nobody");
    seatd_buf_reset(&out);
    seatd_ws_output(srv, &out);
    cr_assert_eq((unsigned char)out.data[0], 0x88, "a close frame");
    cr_assert_eq(((unsigned char)out.data[2] << 8) | (unsigned char)out.data[3], 1009);
    seatd_buf_free(&z);
    seatd_buf_free(&out);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
}

Test(ws_codec, a_compressed_frame_without_negotiation_is_a_protocol_error)
{
    seatd_ws_t *srv = seatd_ws_new(0, 4096, NULL, NULL);
    seatd_ws_t *cli = seatd_ws_new(1, 0, NULL, NULL);
    seatd_ws_set_deflate(cli); /* only the client thinks it was negotiated */
    seatd_buf_t z = SEATD_BUF_INIT, out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_deflate("resync", 6, &z), 0);
    cr_assert_eq(seatd_ws_send_deflated(cli, SEATD_WS_TEXT, z.data, z.len), 0);
    seatd_ws_output(cli, &out);
    cr_assert_eq(seatd_ws_feed(srv, out.data, out.len), SEATD_EINVAL);
    seatd_ws_t *plain = seatd_ws_new(0, 0, NULL, NULL);
    cr_assert_eq(seatd_ws_send_deflated(plain, SEATD_WS_TEXT, z.data, z.len), SEATD_EINVAL,
                 "not negotiated: nothing compressed is sent");
    seatd_buf_free(&z);
    seatd_buf_free(&out);
    seatd_ws_free(srv);
    seatd_ws_free(cli);
    seatd_ws_free(plain);
}

/* A frame header wslay's frame layer refuses fails the connection with a close frame saying
 * 1002, as every other protocol error does (RFC 6455 7.1.7): a ping longer than a control
 * frame may be (126 bytes, 5.5), and a length not in its shortest form (5 in 16 bits, 5.2). */
Test(ws_codec, a_malformed_frame_header_is_closed_with_1002)
{
    static const unsigned char heads[][4] = {{0x89, 0x80 | 126, 0x00, 126},
                                             {0x81, 0x80 | 126, 0x00, 5}};
    for (size_t c = 0; c < 2; c++) {
        seatd_ws_t *srv = seatd_ws_new(0, 4096, NULL, NULL);
        unsigned char frame[4 + 4 + 126] = {0};
        memcpy(frame, heads[c], 4);
        size_t len = (size_t)heads[c][3];
        for (size_t i = 0; i < 4; i++)
            frame[4 + i] = (unsigned char)(i + 1); /* the mask */
        for (size_t i = 0; i < len; i++)
            frame[8 + i] = (unsigned char)('p' ^ frame[4 + i % 4]);
        cr_assert_eq(seatd_ws_feed(srv, (const char *)frame, 8 + len), SEATD_EINVAL, "case %zu", c);
        seatd_buf_t out = SEATD_BUF_INIT;
        seatd_ws_output(srv, &out);
        cr_assert_eq(out.len, 4, "case %zu: a close frame with a status, not an empty one", c);
        cr_assert_eq((unsigned char)out.data[0], 0x88, "case %zu: a close frame", c);
        cr_assert_eq(((unsigned char)out.data[2] << 8) | (unsigned char)out.data[3], 1002);
        seatd_buf_free(&out);
        seatd_ws_free(srv);
    }
}

/* One client frame of 'len' bytes of 'c', encoded by a client codec, into 'out'. */
static void client_frame(int opcode, char c, size_t len, seatd_buf_t *out)
{
    static char payload[70000];
    cr_assert_leq(len, sizeof(payload));
    memset(payload, c, len);
    seatd_ws_t *cli = seatd_ws_new(1, 0, NULL, NULL);
    cr_assert_eq(seatd_ws_send(cli, opcode, payload, len), 0);
    seatd_buf_reset(out);
    seatd_ws_output(cli, out);
    seatd_ws_free(cli);
}

Test(ws_codec, an_idle_codec_rests_between_whole_frames_of_every_length_form)
{
    seen_t seen = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 1 << 17, on_msg, &seen);
    seatd_buf_t f = SEATD_BUF_INIT, out = SEATD_BUF_INIT;
    cr_assert(seatd_ws_resting(srv), "a new codec holds no wslay context");
    /* 7-bit, 16-bit and 64-bit payload lengths, each fed in two parts: cut in the header,
     * then in the payload. In between the codec keeps its context; after, it rests. */
    const size_t lens[] = {5, 125, 126, 300, 65535, 65536, 70000};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        client_frame(SEATD_WS_TEXT, (char)('a' + i), lens[i], &f);
        seen.n = 0;
        size_t cuts[] = {1, f.len / 2};
        for (size_t k = 0; k < 2; k++) {
            cr_assert_eq(seatd_ws_feed(srv, f.data, cuts[k]), 0);
            cr_assert_not(seatd_ws_resting(srv), "len %zu cut %zu", lens[i], cuts[k]);
            cr_assert_eq(seatd_ws_feed(srv, f.data + cuts[k], f.len - cuts[k]), 0);
            cr_assert(seatd_ws_resting(srv), "len %zu: rests after the whole frame", lens[i]);
        }
        cr_assert_eq(seen.n, 2, "len %zu: both copies arrived", lens[i]);
        cr_assert_eq(seen.len[0], lens[i]);
        cr_assert_eq(seen.len[1], lens[i]);
    }
    /* A ping: the pong waits in the context until it is output. */
    client_frame(SEATD_WS_PING, 'p', 1, &f);
    cr_assert_eq(seatd_ws_feed(srv, f.data, f.len), 0);
    cr_assert_not(seatd_ws_resting(srv), "the pong is queued");
    cr_assert_eq(seatd_ws_output(srv, &out), 3);
    cr_assert_eq((unsigned char)out.data[0], 0x8a, "FIN + pong");
    cr_assert(seatd_ws_resting(srv));
    /* A frame queued by the server: the context lives until the frame is out. */
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_PING, "", 0), 0);
    cr_assert_not(seatd_ws_resting(srv));
    seatd_buf_reset(&out);
    cr_assert_eq(seatd_ws_output(srv, &out), 2);
    cr_assert(seatd_ws_resting(srv));
    seatd_buf_free(&f);
    seatd_buf_free(&out);
    seatd_ws_free(srv);
}

Test(ws_codec, a_fragmented_message_keeps_the_context_until_its_last_frame)
{
    seen_t seen = {0};
    seatd_ws_t *srv = seatd_ws_new(0, 0, on_msg, &seen);
    /* Masked with a zero key: text "he" without FIN, a ping between, continuation "llo". */
    static const uint8_t first[] = {0x01, 0x82, 0, 0, 0, 0, 'h', 'e'};
    static const uint8_t ping[] = {0x89, 0x80, 0, 0, 0, 0};
    static const uint8_t last[] = {0x80, 0x83, 0, 0, 0, 0, 'l', 'l', 'o'};
    seatd_buf_t out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_feed(srv, (const char *)first, sizeof(first)), 0);
    cr_assert_not(seatd_ws_resting(srv), "a message is open");
    cr_assert_eq(seatd_ws_feed(srv, (const char *)ping, sizeof(ping)), 0);
    seatd_ws_output(srv, &out);
    cr_assert_not(seatd_ws_resting(srv), "still open after the ping between its frames");
    cr_assert_eq(seatd_ws_feed(srv, (const char *)last, sizeof(last)), 0);
    cr_assert(seatd_ws_resting(srv));
    cr_assert_eq(seen.n, 2);
    cr_assert_eq(seen.opcode[0], SEATD_WS_PING);
    cr_assert_str_eq(seen.text[1], "hello");
    seatd_buf_free(&out);
    seatd_ws_free(srv);
}

Test(ws_codec, a_codec_that_began_closing_never_rests)
{
    seatd_ws_t *srv = seatd_ws_new(0, 0, NULL, NULL);
    seatd_buf_t out = SEATD_BUF_INIT;
    cr_assert_eq(seatd_ws_close(srv, SEATD_WS_CLOSE_POLICY, "too slow"), 0);
    seatd_ws_output(srv, &out);
    cr_assert(seatd_ws_close_sent(srv));
    cr_assert_not(seatd_ws_resting(srv));
    cr_assert_eq(seatd_ws_send(srv, SEATD_WS_TEXT, "x", 1), SEATD_ESHUTDOWN);
    seatd_buf_free(&out);
    seatd_ws_free(srv);
}
