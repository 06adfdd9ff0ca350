/* ws_codec.c - WebSocket handshake digest and a sans-IO wrapper of wslay; see ws_codec.h. */
#include "http/ws_codec.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <wslay/wslay.h>
#include <zlib.h>

#include "base/log.h"
#include "base/mem.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN 24 /* base64 of 16 bytes */

/* ---------------------------------------------------------------------------------------
 * Handshake
 * --------------------------------------------------------------------------------------- */

static int valid_key(const char *key)
{
    if (key == NULL || strlen(key) != WS_KEY_LEN || strcmp(key + 22, "==") != 0)
        return 0;
    unsigned char raw[20];
    /* EVP_DecodeBlock counts the padding as zero bytes: 16 + 2 = 18. */
    return EVP_DecodeBlock(raw, (const unsigned char *)key, WS_KEY_LEN) == 18;
}

int seatd_ws_accept_key(const char *client_key, char *out)
{
    if (!valid_key(client_key))
        return SEATD_EINVAL;
    char in[WS_KEY_LEN + sizeof(WS_GUID)];
    memcpy(in, client_key, WS_KEY_LEN);
    memcpy(in + WS_KEY_LEN, WS_GUID, sizeof(WS_GUID));
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)in, WS_KEY_LEN + sizeof(WS_GUID) - 1, digest);
    int n = EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH);
    return n == SEATD_WS_ACCEPT_LEN ? 0 : SEATD_EINVAL;
}

/* [s, e) without the spaces and tabs around it. */
static void trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

/* Whether [s, e) is 'name' (case-insensitive). */
static int is_name(const char *s, const char *e, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(e - s) == n && strncasecmp(s, name, n) == 0;
}

/* 1 if the comma-separated header value 'list' contains 'token' (case-insensitive). */
static int has_token(const char *list, const char *token)
{
    if (list == NULL)
        return 0;
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        const char *start = p, *end = comma ? comma : p + strlen(p);
        trim(&start, &end);
        if (is_name(start, end, token))
            return 1;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

int seatd_ws_check_upgrade(const char *upgrade, const char *connection, const char *version,
                           const char *key)
{
    if (!has_token(upgrade, "websocket") || !has_token(connection, "upgrade"))
        return SEATD_EINVAL;
    if (version == NULL || strcmp(version, "13") != 0 || !valid_key(key))
        return SEATD_EINVAL;
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * Framing (wslay event API, fed from memory, writing to memory)
 * --------------------------------------------------------------------------------------- */

/*
 * A watcher of the live map is idle almost all of its life: a frame from its client every
 * ping period (a pong), none from the codec but pings (the map's own frames are written
 * around it, live_watcher.c). wslay's context carries two 4 KB buffers, so a codec at rest
 * holds none: the context is made when bytes arrive or a frame is queued, and freed again
 * once it is at rest -- every byte fed belongs to a frame it finished, no fragmented message
 * is open, nothing is queued, no close has begun. Counting the bytes of finished frames needs
 * each frame's header length, which RFC 6455 5.2 fixes from the payload length (wslay refuses
 * a length not in its shortest form) and the mask (clients mask, servers do not).
 */
struct seatd_ws_s {
    wslay_event_context_ptr ctx; /* owned; NULL while at rest */
    seatd_ws_msg_cb cb;          /* may be NULL */
    void *user;                  /* for 'cb' */
    const char *in;              /* bytes being fed (borrowed during seatd_ws_feed) */
    size_t in_len;               /* bytes left in 'in' */
    seatd_buf_t *out;            /* target of seatd_ws_output (borrowed during the call) */
    int client;                  /* client mode: masks what it sends, reads unmasked frames */
    int close_queued;            /* seatd_ws_close() was called */
    int deflate;                 /* permessage-deflate negotiated (seatd_ws_set_deflate) */
    int frame_error;             /* wslay failed the connection on a malformed frame header */
    int busy;                    /* inside seatd_ws_feed: the context must stay */
    int in_msg;                  /* a fragmented data message is open */
    uint64_t fed;                /* bytes the context read since it was made */
    uint64_t framed;             /* ... of them, in frames it finished */
    uint64_t frame_len;          /* header + payload of the frame being received */
    size_t max_msg;              /* a received message, inflated, is at most this long */
};

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    seatd_ws_t *ws = user;
    if (ws->in_len == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    size_t n = len < ws->in_len ? len : ws->in_len;
    memcpy(buf, ws->in, n);
    ws->fed += n;
    ws->in += n;
    ws->in_len -= n;
    return (ssize_t)n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *user)
{
    seatd_ws_t *ws = user;
    if (ws->out == NULL) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (ws->frame_error && len == 2 && data[0] == 0x88 && data[1] == 0x00) {
        /* The close wslay queues when its frame layer refuses a header (a control frame over
         * 125 bytes or fragmented, a length not in its shortest form) carries no status; RFC
         * 6455 7.1.7 asks for one: the same close frame, saying 1002 (protocol error). */
        static const uint8_t protocol_error[] = {0x88, 0x02, SEATD_WS_CLOSE_PROTOCOL >> 8,
                                                 SEATD_WS_CLOSE_PROTOCOL & 0xff};
        seatd_buf_append(ws->out, protocol_error, sizeof(protocol_error));
        ws->frame_error = 0;
        return (ssize_t)len;
    }
    seatd_buf_append(ws->out, data, len);
    return (ssize_t)len;
}

static void on_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
    seatd_ws_t *ws = user;
    (void)ctx;
    uint64_t n = arg->payload_length;
    ws->frame_len = 2 + (n < 126 ? 0 : n < 65536 ? 2 : 8) + (ws->client ? 0 : 4) + n;
    if (!(arg->opcode & 0x8)) /* a data frame: text, binary or continuation */
        ws->in_msg = !arg->fin;
}

static void on_frame_end(wslay_event_context_ptr ctx, void *user)
{
    seatd_ws_t *ws = user;
    (void)ctx;
    ws->framed += ws->frame_len;
    ws->frame_len = 0;
}

static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    if (RAND_bytes(buf, (int)len) != 1) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return 0;
}

/* The peer broke the protocol inside a message: close with 'status', read no more. */
static void fail_msg(seatd_ws_t *ws, uint16_t status, const char *reason)
{
    if (!ws->close_queued &&
        wslay_event_queue_close(ws->ctx, status, (const uint8_t *)reason, strlen(reason)) == 0)
        ws->close_queued = 1;
    wslay_event_shutdown_read(ws->ctx);
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
    seatd_ws_t *ws = user;
    (void)ctx;
    if (wslay_get_rsv1(arg->rsv)) { /* only when negotiated: wslay refuses RSV1 otherwise */
        seatd_buf_t plain = SEATD_BUF_INIT;
        int rc = seatd_ws_inflate((const char *)arg->msg, arg->msg_length, ws->max_msg, &plain);
        if (rc == 0 && ws->cb)
            ws->cb(ws, arg->opcode, (const uint8_t *)plain.data, plain.len, 0, ws->user);
        seatd_buf_free(&plain);
        if (rc == SEATD_ETOOLARGE)
            fail_msg(ws, SEATD_WS_CLOSE_TOO_BIG, "message too big");
        else if (rc < 0)
            fail_msg(ws, SEATD_WS_CLOSE_INVALID, "bad compressed message");
        return;
    }
    if (ws->cb)
        ws->cb(ws, arg->opcode, arg->msg, arg->msg_length, arg->status_code, ws->user);
}

/* The context of 'ws', made when it is at rest. */
static wslay_event_context_ptr ws_ctx(seatd_ws_t *ws)
{
    if (ws->ctx)
        return ws->ctx;
    struct wslay_event_callbacks cbs = {
        .recv_callback = on_recv,
        .send_callback = on_send,
        .genmask_callback = ws->client ? on_genmask : NULL,
        .on_frame_recv_start_callback = on_frame_start,
        .on_frame_recv_end_callback = on_frame_end,
        .on_msg_recv_callback = on_msg,
    };
    int rc = ws->client ? wslay_event_context_client_init(&ws->ctx, &cbs, ws)
                        : wslay_event_context_server_init(&ws->ctx, &cbs, ws);
    if (rc != 0) {
        seatd_log(SEATD_LOG_ERROR, NULL, "out of memory", "\"where\":\"wslay\"");
        abort(); /* wslay fails only on allocation (STYLE rule 12) */
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, ws->max_msg);
    if (ws->deflate)
        wslay_event_config_set_allowed_rsv_bits(ws->ctx, WSLAY_RSV1_BIT);
    ws->fed = ws->framed = ws->frame_len = 0;
    return ws->ctx;
}

/* Frees the context of 'ws' when it holds nothing a later byte or frame needs (see above). */
static void ws_rest(seatd_ws_t *ws)
{
    wslay_event_context_ptr ctx = ws->ctx;
    if (ctx == NULL || ws->busy || ws->close_queued || ws->frame_error || ws->in_msg ||
        ws->fed != ws->framed || wslay_event_want_write(ctx) ||
        wslay_event_get_queued_msg_count(ctx) != 0 || !wslay_event_get_read_enabled(ctx) ||
        !wslay_event_get_write_enabled(ctx) || wslay_event_get_close_received(ctx) ||
        wslay_event_get_close_sent(ctx))
        return;
    wslay_event_context_free(ctx);
    ws->ctx = NULL;
}

seatd_ws_t *seatd_ws_new(int client, size_t max_msg, seatd_ws_msg_cb cb, void *user)
{
    seatd_ws_t *ws = seatd_calloc(1, sizeof(*ws));
    ws->cb = cb;
    ws->user = user;
    ws->client = client;
    ws->max_msg = max_msg ? max_msg : 65536;
    return ws;
}

void seatd_ws_free(seatd_ws_t *ws)
{
    if (ws == NULL)
        return;
    if (ws->ctx)
        wslay_event_context_free(ws->ctx);
    free(ws);
}

int seatd_ws_resting(const seatd_ws_t *ws)
{
    return ws->ctx == NULL;
}

int seatd_ws_feed(seatd_ws_t *ws, const char *data, size_t len)
{
    if (len == 0 && ws->ctx == NULL)
        return 0;
    wslay_event_context_ptr ctx = ws_ctx(ws);
    if (!wslay_event_get_read_enabled(ctx))
        return len ? SEATD_EINVAL : 0;
    ws->in = data;
    ws->in_len = len;
    ws->busy++; /* the message callback may send, output, or close */
    int rc = wslay_event_recv(ctx);
    ws->busy--;
    ws->in = NULL;
    ws->in_len = 0;
    if (rc == WSLAY_ERR_CALLBACK_FAILURE && !ws->close_queued)
        ws->frame_error = 1; /* on_recv never fails: the frame layer did (see on_send) */
    if (rc != 0)
        return SEATD_EINVAL;
    /* A protocol error makes wslay queue a close and stop reading. */
    if (!wslay_event_get_read_enabled(ctx) && !wslay_event_get_close_received(ctx))
        return SEATD_EINVAL;
    ws_rest(ws);
    return 0;
}

int seatd_ws_send(seatd_ws_t *ws, int opcode, const char *data, size_t len)
{
    if (ws->close_queued || seatd_ws_close_sent(ws))
        return SEATD_ESHUTDOWN;
    struct wslay_event_msg msg = {(uint8_t)opcode, (const uint8_t *)data, len};
    int rc = wslay_event_queue_msg(ws_ctx(ws), &msg);
    if (rc == WSLAY_ERR_NO_MORE_MSG)
        return SEATD_ESHUTDOWN;
    return rc == 0 ? 0 : SEATD_EINVAL;
}

int seatd_ws_send_deflated(seatd_ws_t *ws, int opcode, const char *data, size_t len)
{
    if (!ws->deflate)
        return SEATD_EINVAL;
    if (ws->close_queued || seatd_ws_close_sent(ws))
        return SEATD_ESHUTDOWN;
    struct wslay_event_msg msg = {(uint8_t)opcode, (const uint8_t *)data, len};
    int rc = wslay_event_queue_msg_ex(ws_ctx(ws), &msg, WSLAY_RSV1_BIT);
    if (rc == WSLAY_ERR_NO_MORE_MSG)
        return SEATD_ESHUTDOWN;
    return rc == 0 ? 0 : SEATD_EINVAL;
}

int seatd_ws_close(seatd_ws_t *ws, unsigned status, const char *reason)
{
    if (ws->close_queued || seatd_ws_close_sent(ws))
        return SEATD_ESHUTDOWN;
    size_t rlen = reason ? strlen(reason) : 0;
    if (rlen > 123)
        rlen = 123; /* a control frame carries at most 125 bytes */
    int rc = wslay_event_queue_close(ws_ctx(ws), (uint16_t)status, (const uint8_t *)reason, rlen);
    if (rc != 0)
        return SEATD_ESHUTDOWN;
    ws->close_queued = 1;
    return 0;
}

size_t seatd_ws_output(seatd_ws_t *ws, seatd_buf_t *out)
{
    size_t before = out->len;
    if (ws->ctx == NULL)
        return 0;
    ws->out = out;
    while (wslay_event_want_write(ws->ctx)) {
        if (wslay_event_send(ws->ctx) != 0)
            break;
    }
    ws->out = NULL;
    ws_rest(ws);
    return out->len - before;
}

/* A codec at rest has neither sent nor received a close (ws_rest keeps a context that has). */
int seatd_ws_close_sent(const seatd_ws_t *ws)
{
    return ws->ctx && wslay_event_get_close_sent(ws->ctx);
}

int seatd_ws_close_received(const seatd_ws_t *ws)
{
    return ws->ctx && wslay_event_get_close_received(ws->ctx);
}

unsigned seatd_ws_close_status(const seatd_ws_t *ws)
{
    return seatd_ws_close_received(ws) ? wslay_event_get_status_code_received(ws->ctx) : 0;
}

/* ---------------------------------------------------------------------------------------
 * permessage-deflate (RFC 7692), without context takeover either way
 * --------------------------------------------------------------------------------------- */

void seatd_ws_set_deflate(seatd_ws_t *ws)
{
    ws->deflate = 1;
    if (ws->ctx)
        wslay_event_config_set_allowed_rsv_bits(ws->ctx, WSLAY_RSV1_BIT);
}

/* A window-bits value ("8".."15", optionally quoted) in [s, e): the number, or -1. */
static int window_bits(const char *s, const char *e)
{
    if (e - s >= 2 && *s == '"' && e[-1] == '"') {
        s++;
        e--;
    }
    if (e - s < 1 || e - s > 2)
        return -1;
    int v = 0;
    for (const char *p = s; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 8 && v <= 15 ? v : -1;
}

/*
 * One offer, [s, e): "permessage-deflate" and its parameters. This codec never keeps a
 * context and always uses a 32 KB window to compress, so it takes an offer whose parameters
 * are among: server_no_context_takeover, client_no_context_takeover,
 * client_max_window_bits[=8..15] (the client may use a smaller window: inflating with the
 * largest reads it), server_max_window_bits=15. Each at most once (RFC 7692, 7.1).
 */
static int offer_ok(const char *s, const char *e)
{
    const char *semi = memchr(s, ';', (size_t)(e - s));
    const char *name_end = semi ? semi : e;
    const char *ns = s;
    trim(&ns, &name_end);
    if (!is_name(ns, name_end, "permessage-deflate"))
        return 0;
    unsigned seen = 0;
    const char *p = semi;
    while (p && p < e) {
        const char *ps = p + 1;
        const char *pe = memchr(ps, ';', (size_t)(e - ps));
        p = pe;
        if (pe == NULL)
            pe = e;
        const char *eq = memchr(ps, '=', (size_t)(pe - ps));
        const char *ks = ps, *ke = eq ? eq : pe;
        trim(&ks, &ke);
        const char *vs = eq ? eq + 1 : pe, *ve = pe;
        trim(&vs, &ve);
        unsigned bit;
        if (is_name(ks, ke, "server_no_context_takeover") && !eq)
            bit = 1;
        else if (is_name(ks, ke, "client_no_context_takeover") && !eq)
            bit = 2;
        else if (is_name(ks, ke, "client_max_window_bits") && (!eq || window_bits(vs, ve) > 0))
            bit = 4;
        else if (is_name(ks, ke, "server_max_window_bits") && eq && window_bits(vs, ve) == 15)
            bit = 8;
        else
            return 0;
        if (seen & bit)
            return 0;
        seen |= bit;
    }
    return 1;
}

int seatd_ws_deflate_offered(const char *offers)
{
    if (offers == NULL || strlen(offers) > SEATD_WS_MAX_EXTENSIONS)
        return 0;
    const char *p = offers;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        if (offer_ok(p, e))
            return 1;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

int seatd_ws_deflate(const char *data, size_t len, seatd_buf_t *out)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return SEATD_EINVAL;
    size_t start = out->len;
    seatd_buf_reserve(out, deflateBound(&z, (uLong)len) + 16);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out->data + start;
    z.avail_out = (uInt)(out->cap - start);
    int rc = deflate(&z, Z_SYNC_FLUSH);
    size_t n = (size_t)(z.next_out - (Bytef *)out->data) - start;
    deflateEnd(&z);
    /* A sync flush ends with the empty stored block 00 00 ff ff, which the message leaves
     * out (RFC 7692, 7.2.1); all the input must have gone in. */
    if (rc != Z_OK || z.avail_in != 0 || n < 4 ||
        memcmp(out->data + start + n - 4, "\x00\x00\xff\xff", 4) != 0)
        return SEATD_EINVAL;
    out->len = start + n - 4;
    return 0;
}

int seatd_ws_inflate(const char *data, size_t len, size_t max, seatd_buf_t *out)
{
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK)
        return SEATD_EINVAL;
    /* The message is the stream without its last empty stored block (RFC 7692, 7.2.2). */
    static const unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
    const unsigned char *parts[2] = {(const unsigned char *)data, tail};
    size_t lens[2] = {len, sizeof(tail)};
    size_t start = out->len;
    int rc = Z_OK;
    for (int i = 0; i < 2 && rc == Z_OK; i++) {
        z.next_in = (Bytef *)parts[i];
        z.avail_in = (uInt)lens[i];
        while (z.avail_in > 0 && rc == Z_OK) {
            size_t room = 4096;
            seatd_buf_reserve(out, room);
            z.next_out = (Bytef *)out->data + out->len;
            z.avail_out = (uInt)room;
            uInt in_before = z.avail_in;
            rc = inflate(&z, Z_SYNC_FLUSH);
            out->len += room - z.avail_out;
            if (out->len - start > max) {
                inflateEnd(&z);
                return SEATD_ETOOLARGE;
            }
            if (rc == Z_BUF_ERROR && z.avail_in < in_before)
                rc = Z_OK; /* progress; whatever is left needs the next part */
        }
    }
    inflateEnd(&z);
    return rc == Z_OK || rc == Z_STREAM_END ? 0 : SEATD_EINVAL;
}
