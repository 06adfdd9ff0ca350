/* http_client.c - tiny blocking HTTP/1.1 client for tests; see http_client.h. */
#include "http_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"

#define IO_TIMEOUT_MS 5000

static int io_timeout_ms = IO_TIMEOUT_MS;

void seatd_test_http_set_timeout(int ms)
{
    io_timeout_ms = ms > 0 ? ms : IO_TIMEOUT_MS;
}

/* A connected unix stream socket to 'path', or -1. */
static int connect_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int connect_to(const char *host, int port, int timeout_ms)
{
    if (strncmp(host, "unix:", 5) == 0) {
        int ufd = connect_unix(host + 5);
        if (ufd >= 0) {
            struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
            setsockopt(ufd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            setsockopt(ufd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        return ufd;
    }
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, portstr, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int send_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads until EOF, error or timeout into an owned buffer. */
static char *read_all(int fd, size_t *out_len)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    for (;;) {
        if (cap - len < 2048) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out_len = len;
    return buf;
}

char *seatd_test_http_raw(const char *host, int port, const char *data, size_t len, int timeout_ms,
                          size_t *out_len)
{
    int fd = connect_to(host, port, timeout_ms);
    if (fd < 0)
        return NULL;
    if (send_all(fd, data, len) < 0) {
        /* The server may have answered and closed early (e.g. 413): still read it. */
    }
    char *out = read_all(fd, out_len);
    close(fd);
    return out;
}

void seatd_test_http_response_free(seatd_test_http_response_t *res)
{
    for (size_t i = 0; i < res->nheaders; i++) {
        free(res->header_names[i]);
        free(res->header_values[i]);
    }
    free(res->body);
    memset(res, 0, sizeof(*res));
}

const char *seatd_test_http_header(const seatd_test_http_response_t *res, const char *name)
{
    for (size_t i = 0; i < res->nheaders; i++)
        if (strcasecmp(res->header_names[i], name) == 0)
            return res->header_values[i];
    return NULL;
}

/* Decodes a chunked body in place of 'p' ('len' bytes) into an owned buffer. */
static char *dechunk(const char *p, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    size_t o = 0;
    const char *end = p + len;
    if (out == NULL)
        return NULL;
    while (p < end) {
        char *q = NULL;
        unsigned long n = strtoul(p, &q, 16);
        const char *eol = strstr(p, "\r\n");
        if (q == p || eol == NULL || eol >= end)
            break;
        p = eol + 2;
        if (n == 0)
            break;
        if ((size_t)(end - p) < n)
            n = (unsigned long)(end - p);
        memcpy(out + o, p, n);
        o += n;
        p += n + 2;
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static int parse_response(const char *raw, size_t len, int head, seatd_test_http_response_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *hend = strstr(raw, "\r\n\r\n");
    if (hend == NULL || strncmp(raw, "HTTP/1.", 7) != 0)
        return -1;
    out->status = atoi(raw + 9);
    const char *line = strstr(raw, "\r\n") + 2;
    while (line < hend + 2) {
        const char *eol = strstr(line, "\r\n");
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon && out->nheaders < SEATD_TEST_HTTP_MAX_HEADERS) {
            size_t nlen = (size_t)(colon - line);
            char *name = strndup(line, nlen);
            for (char *c = name; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t vlen = (size_t)(eol - v);
            while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            out->header_names[out->nheaders] = name;
            out->header_values[out->nheaders] = strndup(v, vlen);
            out->nheaders++;
        }
        line = eol + 2;
    }
    const char *body = hend + 4;
    size_t avail = len - (size_t)(body - raw);
    const char *cl = seatd_test_http_header(out, "content-length");
    const char *te = seatd_test_http_header(out, "transfer-encoding");
    if (head || out->status == 204 || out->status == 304 || out->status < 200) {
        out->body = calloc(1, 1); /* no body, whatever the headers announce */
    } else if (te && strcasecmp(te, "chunked") == 0) {
        out->body = dechunk(body, avail, &out->body_len);
    } else {
        size_t n = avail;
        if (cl) {
            n = (size_t)strtoull(cl, NULL, 10);
            if (n > avail)
                return -1; /* truncated */
        }
        out->body = malloc(n + 1);
        memcpy(out->body, body, n);
        out->body[n] = '\0';
        out->body_len = n;
    }
    return out->body ? 0 : -1;
}

/* Appends one JSON line for the answer 'res' to 'method' 'path' on host:port, and the request's
 * body ('body_len' bytes; NULL: none) when it is text, to the file named by
 * SEATD_E2E_RESPONSE_LOG, if set (tests/e2e/validate_responses.py checks each answer against
 * api/openapi.json, and the body of each request answered 2xx against the operation's
 * requestBody). One write() to an O_APPEND file: lines of forked children do not mix. */
static void log_response(const char *host, int port, const char *method, const char *path,
                         const char *body, size_t body_len, const seatd_test_http_response_t *res)
{
    const char *file = getenv("SEATD_E2E_RESPONSE_LOG");
    if (file == NULL || file[0] == '\0')
        return;
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_puts(&b, "{\"host\":\"");
    seatd_buf_json_escape(&b, host, strlen(host));
    seatd_buf_printf(&b, "\",\"port\":%d,\"method\":\"", port);
    seatd_buf_json_escape(&b, method, strlen(method));
    seatd_buf_puts(&b, "\",\"path\":\"");
    seatd_buf_json_escape(&b, path, strlen(path));
    seatd_buf_printf(&b, "\",\"status\":%d,\"headers\":[", res->status);
    for (size_t i = 0; i < res->nheaders; i++) {
        seatd_buf_puts(&b, i ? ",[\"" : "[\"");
        seatd_buf_json_escape(&b, res->header_names[i], strlen(res->header_names[i]));
        seatd_buf_puts(&b, "\",\"");
        seatd_buf_json_escape(&b, res->header_values[i], strlen(res->header_values[i]));
        seatd_buf_puts(&b, "\"]");
    }
    seatd_buf_puts(&b, "]");
    if (body && body_len && memchr(body, '\0', body_len) == NULL) {
        seatd_buf_puts(&b, ",\"requestBody\":\"");
        seatd_buf_json_escape(&b, body, body_len);
        seatd_buf_puts(&b, "\"");
    }
    seatd_buf_puts(&b, ",\"body\":\"");
    /* a compressed body is binary (not text for the log); the validator checks its headers */
    if (res->body && seatd_test_http_header(res, "content-encoding") == NULL)
        seatd_buf_json_escape(&b, res->body, res->body_len);
    seatd_buf_puts(&b, "\"}\n");
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, b.data, b.len) != (ssize_t)b.len)
            fprintf(stderr, "http_client: short write to %s\n", file);
        close(fd);
    }
    seatd_buf_free(&b);
}

int seatd_test_http_request(const char *host, int port, const char *method, const char *path,
                            const char *headers, const char *body, size_t body_len,
                            seatd_test_http_response_t *out)
{
    memset(out, 0, sizeof(*out));
    int fd = connect_to(host, port, io_timeout_ms);
    if (fd < 0)
        return -1;
    size_t cap =
        strlen(method) + strlen(path) + strlen(host) + (headers ? strlen(headers) : 0) + 128;
    char *req = malloc(cap + body_len);
    if (req == NULL) {
        close(fd);
        return -1;
    }
    int unix_socket = strncmp(host, "unix:", 5) == 0;
    int n =
        snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n%s", method, path,
                 unix_socket ? "localhost" : host, unix_socket ? 80 : port, headers ? headers : "");
    if (body)
        n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (body && body_len)
        memcpy(req + n, body, body_len);
    int rc = send_all(fd, req, (size_t)n + (body ? body_len : 0));
    free(req);
    size_t len = 0;
    char *raw = read_all(fd, &len);
    close(fd);
    if (raw == NULL)
        return -1;
    if (parse_response(raw, len, strcmp(method, "HEAD") == 0, out) < 0) {
        seatd_test_http_response_free(out);
        free(raw);
        return -1;
    }
    free(raw);
    (void)rc; /* a failed send may still have produced an early answer (413) */
    log_response(host, port, method, path, body, body_len, out);
    return 0;
}

char *seatd_test_gunzip(const char *gz, size_t len, size_t *out_len)
{
    seatd_buf_t out = SEATD_BUF_INIT;
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* windowBits 15 + 16: a gzip wrapper only */
        return NULL;
    z.next_in = (Bytef *)(uintptr_t)gz;
    z.avail_in = (uInt)len;
    int rc = Z_OK;
    while (rc == Z_OK) {
        seatd_buf_reserve(&out, 64 * 1024);
        z.next_out = (Bytef *)out.data + out.len;
        z.avail_out = 64 * 1024;
        rc = inflate(&z, Z_NO_FLUSH);
        out.len = (size_t)((char *)z.next_out - out.data);
        if (rc == Z_OK && z.avail_in == 0 && z.avail_out > 0)
            break; /* input ended before the member did */
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || z.avail_in != 0) {
        seatd_buf_free(&out);
        return NULL;
    }
    seatd_buf_reserve(&out, 1);
    out.data[out.len] = '\0';
    *out_len = out.len;
    return out.data;
}
