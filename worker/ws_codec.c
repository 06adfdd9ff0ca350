/* ws_codec.c - WebSocket handshake digest and a sans-IO wrapper of wslay; see ws_codec.h. */
#include "ws_codec.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <wslay/wslay.h>

#include "log.h"
#include "mem.h"

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

/* 1 if the comma-separated header value 'list' contains 'token' (case-insensitive). */
static int has_token(const char *list, const char *token)
{
    if (list == NULL)
        return 0;
    size_t tlen = strlen(token);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if ((size_t)(end - start) == tlen && strncasecmp(start, token, tlen) == 0)
            return 1;
    }
    return 0;
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

struct seatd_ws_s {
    wslay_event_context_ptr ctx; /* owned */
    seatd_ws_msg_cb cb;          /* may be NULL */
    void *user;                  /* for 'cb' */
    const char *in;              /* bytes being fed (borrowed during seatd_ws_feed) */
    size_t in_len;               /* bytes left in 'in' */
    seatd_buf_t *out;            /* target of seatd_ws_output (borrowed during the call) */
    int close_queued;            /* seatd_ws_close() was called */
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
    seatd_buf_append(ws->out, data, len);
    return (ssize_t)len;
}

static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    if (RAND_bytes(buf, (int)len) != 1) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return 0;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
    seatd_ws_t *ws = user;
    if (ws->cb)
        ws->cb(ws, arg->opcode, arg->msg, arg->msg_length, arg->status_code, ws->user);
}

seatd_ws_t *seatd_ws_new(int client, size_t max_msg, seatd_ws_msg_cb cb, void *user)
{
    seatd_ws_t *ws = seatd_calloc(1, sizeof(*ws));
    ws->cb = cb;
    ws->user = user;
    struct wslay_event_callbacks cbs = {
        .recv_callback = on_recv,
        .send_callback = on_send,
        .genmask_callback = client ? on_genmask : NULL,
        .on_msg_recv_callback = on_msg,
    };
    int rc = client ? wslay_event_context_client_init(&ws->ctx, &cbs, ws)
                    : wslay_event_context_server_init(&ws->ctx, &cbs, ws);
    if (rc != 0) {
        seatd_log(SEATD_LOG_ERROR, NULL, "out of memory", "\"where\":\"wslay\"");
        abort(); /* wslay fails only on allocation (STYLE rule 12) */
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, max_msg ? max_msg : 65536);
    return ws;
}

void seatd_ws_free(seatd_ws_t *ws)
{
    if (ws == NULL)
        return;
    wslay_event_context_free(ws->ctx);
    free(ws);
}

int seatd_ws_feed(seatd_ws_t *ws, const char *data, size_t len)
{
    if (!wslay_event_get_read_enabled(ws->ctx))
        return len ? SEATD_EINVAL : 0;
    ws->in = data;
    ws->in_len = len;
    int rc = wslay_event_recv(ws->ctx);
    ws->in = NULL;
    ws->in_len = 0;
    if (rc != 0)
        return SEATD_EINVAL;
    /* A protocol error makes wslay queue a close and stop reading. */
    if (!wslay_event_get_read_enabled(ws->ctx) && !wslay_event_get_close_received(ws->ctx))
        return SEATD_EINVAL;
    return 0;
}

int seatd_ws_send(seatd_ws_t *ws, int opcode, const char *data, size_t len)
{
    if (ws->close_queued || wslay_event_get_close_sent(ws->ctx))
        return SEATD_ESHUTDOWN;
    struct wslay_event_msg msg = {(uint8_t)opcode, (const uint8_t *)data, len};
    int rc = wslay_event_queue_msg(ws->ctx, &msg);
    if (rc == WSLAY_ERR_NO_MORE_MSG)
        return SEATD_ESHUTDOWN;
    return rc == 0 ? 0 : SEATD_EINVAL;
}

int seatd_ws_close(seatd_ws_t *ws, unsigned status, const char *reason)
{
    if (ws->close_queued || wslay_event_get_close_sent(ws->ctx))
        return SEATD_ESHUTDOWN;
    size_t rlen = reason ? strlen(reason) : 0;
    if (rlen > 123)
        rlen = 123; /* a control frame carries at most 125 bytes */
    int rc = wslay_event_queue_close(ws->ctx, (uint16_t)status, (const uint8_t *)reason, rlen);
    if (rc != 0)
        return SEATD_ESHUTDOWN;
    ws->close_queued = 1;
    return 0;
}

size_t seatd_ws_output(seatd_ws_t *ws, seatd_buf_t *out)
{
    size_t before = out->len;
    ws->out = out;
    while (wslay_event_want_write(ws->ctx)) {
        if (wslay_event_send(ws->ctx) != 0)
            break;
    }
    ws->out = NULL;
    return out->len - before;
}

int seatd_ws_close_sent(const seatd_ws_t *ws)
{
    return wslay_event_get_close_sent(ws->ctx);
}

int seatd_ws_close_received(const seatd_ws_t *ws)
{
    return wslay_event_get_close_received(ws->ctx);
}

unsigned seatd_ws_close_status(const seatd_ws_t *ws)
{
    return wslay_event_get_close_received(ws->ctx) ? wslay_event_get_status_code_received(ws->ctx)
                                                   : 0;
}
