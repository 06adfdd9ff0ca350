/*
 * test_live_client.h - a tiny blocking WebSocket client for the live seat-map tests: a TCP
 * socket, the HTTP upgrade written by hand, and the framing through seatd_ws (ws_codec.h) in
 * client mode, so pings are answered and closes are seen. Header-only (static inline) so the
 * live and e2e suites share it without a build edit. Not for forked children that return.
 * With SEATD_E2E_RESPONSE_LOG set, the upgrade answer and every text frame received are
 * appended to that file as JSON lines (as tests/support/http_client.c does for HTTP), for
 * tests/e2e/validate_responses.py.
 */
#ifndef SEATD_TEST_LIVE_CLIENT_H
#define SEATD_TEST_LIVE_CLIENT_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "http/ws_codec.h"

#define WSC_MAX_QUEUE 1024

typedef struct wsc_s {
    int fd;                     /* the socket, -1 when closed */
    seatd_ws_t *ws;             /* client codec */
    char *queue[WSC_MAX_QUEUE]; /* text messages received, not yet taken */
    size_t qhead, qlen;
    int closed;            /* a close frame arrived or the socket ended */
    unsigned close_status; /* the server's close code */
    int port;              /* where it connected, for the response log */
    char path[256];
    int deflate;     /* the server took our permessage-deflate offer */
    size_t rx_bytes; /* bytes read from the socket after the upgrade answer */
} wsc_t;

/* Appends '{"host":"127.0.0.1","port":…,"path":…,' + 'rest' + '\n' to the response log. */
static inline void wsc_log(const wsc_t *c, const char *rest)
{
    const char *file = getenv("SEATD_E2E_RESPONSE_LOG");
    if (file == NULL || file[0] == '\0')
        return;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"host\":\"127.0.0.1\",\"port\":%d,\"path\":\"", c->port);
    seatd_buf_json_escape(&b, c->path, strlen(c->path));
    seatd_buf_printf(&b, "\",%s}\n", rest);
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, b.data, b.len) != (ssize_t)b.len)
            fprintf(stderr, "wsc: short write to %s\n", file);
        close(fd);
    }
    seatd_buf_free(&b);
}

static inline long long wsc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void wsc_on_msg(seatd_ws_t *ws, int opcode, const uint8_t *data, size_t len,
                              unsigned status, void *user)
{
    wsc_t *c = user;
    if (opcode == SEATD_WS_TEXT && c->qlen < WSC_MAX_QUEUE) {
        char *m = malloc(len + 1);
        memcpy(m, data, len);
        m[len] = '\0';
        if (getenv("SEATD_E2E_RESPONSE_LOG")) {
            seatd_buf_t f = SEATD_BUF_INIT;
            seatd_buf_puts(&f, "\"ws\":true,\"frame\":\"");
            seatd_buf_json_escape(&f, m, len);
            seatd_buf_puts(&f, "\"");
            wsc_log(c, f.data);
            seatd_buf_free(&f);
        }
        c->queue[(c->qhead + c->qlen++) % WSC_MAX_QUEUE] = m;
    } else if (opcode == SEATD_WS_CLOSE) {
        c->closed = 1;
        c->close_status = status;
    }
}

static inline int wsc_flush(wsc_t *c)
{
    seatd_buf_t out = SEATD_BUF_INIT;
    seatd_ws_output(c->ws, &out);
    size_t off = 0;
    while (off < out.len) {
        ssize_t n = write(c->fd, out.data + off, out.len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    seatd_buf_free(&out);
    return 0;
}

/* Feeds whatever arrives within 'timeout_ms'. Returns 0, or -1 when the socket ended. */
static inline int wsc_pump(wsc_t *c, int timeout_ms)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0)
        return 0;
    char buf[65536];
    ssize_t n = read(c->fd, buf, sizeof(buf));
    if (n <= 0) {
        c->closed = 1;
        return -1;
    }
    c->rx_bytes += (size_t)n;
    if (seatd_ws_feed(c->ws, buf, (size_t)n) < 0)
        c->closed = 1;
    wsc_flush(c);
    return 0;
}

/*
 * Connects to 127.0.0.1:'port', sends the upgrade for 'path' (with 'extensions' as its
 * Sec-WebSocket-Extensions offer, when not NULL) and reads the answer. Returns the HTTP status
 * (101 on success, then 'c' is open; c->deflate when the server took permessage-deflate), or
 * -1 when nothing answered.
 */
static inline int wsc_connect_ext(wsc_t *c, int port, const char *path, const char *extensions)
{
    memset(c, 0, sizeof(*c));
    c->port = port;
    snprintf(c->path, sizeof(c->path), "%s", path);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char req[1024];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                     path, extensions ? "Sec-WebSocket-Extensions: " : "",
                     extensions ? extensions : "", extensions ? "\r\n" : "");
    if (write(c->fd, req, (size_t)n) != n)
        return -1;
    char head[8192];
    size_t len = 0;
    char *end = NULL;
    while (end == NULL && len < sizeof(head) - 1) {
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0)
            break;
        ssize_t r = read(c->fd, head + len, sizeof(head) - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        head[len] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    int status = -1;
    if (len >= 12 && sscanf(head, "HTTP/1.1 %d", &status) != 1)
        status = -1;
    if (status != 101 || end == NULL ||
        strstr(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == NULL) {
        close(c->fd);
        c->fd = -1;
        return status == 101 ? -1 : status;
    }
    if (getenv("SEATD_E2E_RESPONSE_LOG")) { /* the 101 and its headers, one per line */
        seatd_buf_t h = SEATD_BUF_INIT;
        seatd_buf_puts(&h, "\"method\":\"GET\",\"status\":101,\"body\":\"\",\"headers\":[");
        const char *line = strstr(head, "\r\n");
        for (int first = 1; line && line + 2 < end + 2; first = 0) {
            line += 2;
            const char *eol = strstr(line, "\r\n");
            const char *colon = memchr(line, ':', (size_t)(eol - line));
            if (eol == line || colon == NULL)
                break;
            const char *v = colon + 1;
            while (*v == ' ')
                v++;
            char name[64];
            size_t nl = (size_t)(colon - line) < sizeof(name) ? (size_t)(colon - line) : 0;
            for (size_t i = 0; i < nl; i++)
                name[i] = (char)(line[i] >= 'A' && line[i] <= 'Z' ? line[i] + 32 : line[i]);
            seatd_buf_puts(&h, first ? "[\"" : ",[\"");
            seatd_buf_json_escape(&h, name, nl);
            seatd_buf_puts(&h, "\",\"");
            seatd_buf_json_escape(&h, v, (size_t)(eol - v));
            seatd_buf_puts(&h, "\"]");
            line = eol;
        }
        seatd_buf_puts(&h, "]");
        wsc_log(c, h.data);
        seatd_buf_free(&h);
    }
    c->ws = seatd_ws_new(1, 16 << 20, wsc_on_msg, c);
    *end = '\0';                                                     /* the headers alone */
    const char *ext = strstr(head, "\r\nSec-WebSocket-Extensions:"); /* as seatd writes it */
    if (ext && strstr(ext, "permessage-deflate")) {
        seatd_ws_set_deflate(c->ws);
        c->deflate = 1;
    }
    size_t rest = len - (size_t)(end + 4 - head);
    c->rx_bytes = rest; /* frames that came in the same read as the 101 */
    if (rest > 0 && seatd_ws_feed(c->ws, end + 4, rest) < 0)
        c->closed = 1;
    return 101;
}

static inline int wsc_connect(wsc_t *c, int port, const char *path)
{
    return wsc_connect_ext(c, port, path, NULL);
}

/* The next text message as JSON (owned: cJSON_Delete), or NULL after 'timeout_ms' or when
 * the connection closed. */
static inline cJSON *wsc_next(wsc_t *c, int timeout_ms)
{
    long long deadline = wsc_now_ms() + timeout_ms;
    for (;;) {
        if (c->qlen > 0) {
            char *m = c->queue[c->qhead];
            c->qhead = (c->qhead + 1) % WSC_MAX_QUEUE;
            c->qlen--;
            cJSON *j = cJSON_Parse(m);
            free(m);
            return j;
        }
        long long left = deadline - wsc_now_ms();
        if (c->closed || left <= 0)
            return NULL;
        if (wsc_pump(c, (int)left) < 0 && c->qlen == 0)
            return NULL;
    }
}

/* Sends a text message. */
static inline void wsc_send(wsc_t *c, const char *text)
{
    if (seatd_ws_send(c->ws, SEATD_WS_TEXT, text, strlen(text)) == 0)
        wsc_flush(c);
}

static inline void wsc_close(wsc_t *c)
{
    if (c->fd >= 0) {
        if (c->ws && seatd_ws_close(c->ws, SEATD_WS_CLOSE_NORMAL, NULL) == 0)
            wsc_flush(c);
        close(c->fd);
    }
    c->fd = -1;
    seatd_ws_free(c->ws);
    c->ws = NULL;
    while (c->qlen > 0) {
        free(c->queue[c->qhead]);
        c->qhead = (c->qhead + 1) % WSC_MAX_QUEUE;
        c->qlen--;
    }
}

/* Helpers on frames. */
static inline const char *wsc_type(const cJSON *j)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

static inline long long wsc_int(const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

/* The status of 'seat' in a snapshot frame, or NULL. */
static inline const char *wsc_snapshot_seat(const cJSON *j, const char *seat)
{
    const cJSON *s =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "seats"), seat);
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* The status of 'seat' in a delta frame's changes, or NULL. */
static inline const char *wsc_delta_seat(const cJSON *j, const char *seat)
{
    const cJSON *ch = NULL;
    cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(j, "changes"))
    {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(ch, "seat");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(ch, "status");
        if (cJSON_IsString(s) && cJSON_IsString(st) && strcmp(s->valuestring, seat) == 0)
            return st->valuestring;
    }
    return NULL;
}

#endif
