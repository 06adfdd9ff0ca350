/*
 * net.c - seatd_fanout's network: a TCP connection from one of the loopback source addresses,
 * and the keep-alive HTTP/1.1 client of the publishers and the show's creation.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "fanout.h"
#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

long long fanout_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A TCP connection to 127.0.0.1:port from 127.0.0.<2 + src> (src < 0: the default address). */
int fanout_tcp_connect(int src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (src >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        struct sockaddr_in l = {0};
        l.sin_family = AF_INET;
        l.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)src);
        if (bind(fd, (struct sockaddr *)&l, sizeof(l)) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)fanout_shared->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Sends one request on 'h' (reconnecting once if the kept connection was closed) and reads
 * the answer; the body (NUL-terminated) is left in '*body' (owned by 'h', valid until the next
 * call). Returns the status or -1. */
int fanout_http_req(http_conn_t *h, const char *method, const char *path, const char *token,
                    const char *body, const char **out)
{
    seatd_buf_t req = SEATD_BUF_INIT;
    seatd_buf_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path);
    if (token)
        seatd_buf_printf(&req, "Authorization: Bearer %s\r\n", token);
    if (body)
        seatd_buf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                         strlen(body));
    seatd_buf_printf(&req, "\r\n%s", body ? body : "");
    int status = -1;
    for (int attempt = 0; attempt < 2 && status < 0; attempt++) {
        if (h->fd < 0 && (h->fd = fanout_tcp_connect(-1)) < 0)
            break;
        size_t off = 0;
        while (off < req.len) {
            ssize_t n = write(h->fd, req.data + off, req.len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        seatd_buf_reset(&h->in);
        size_t need = 0, head = 0;
        int chunked = 0, ok = off == req.len;
        while (ok) {
            if (head == 0) {
                char *e = h->in.data ? memmem(h->in.data, h->in.len, "\r\n\r\n", 4) : NULL;
                if (e) {
                    head = (size_t)(e - h->in.data) + 4;
                    char *cl = memmem(h->in.data, head, "Content-Length:", 15);
                    if (!cl)
                        cl = memmem(h->in.data, head, "content-length:", 15);
                    chunked = memmem(h->in.data, head, "chunked", 7) != NULL;
                    need = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
                }
            }
            if (head && !chunked && h->in.len >= head + need)
                break;
            if (head && chunked && memmem(h->in.data + head, h->in.len - head, "0\r\n\r\n", 5))
                break;
            char buf[16384];
            ssize_t n = read(h->fd, buf, sizeof(buf));
            if (n <= 0) {
                ok = 0;
                break;
            }
            seatd_buf_append(&h->in, buf, (size_t)n);
        }
        if (!ok) {
            close(h->fd);
            h->fd = -1;
            continue;
        }
        seatd_buf_append(&h->in, "", 1); /* NUL */
        sscanf(h->in.data, "HTTP/1.1 %d", &status);
        if (out)
            *out = h->in.data + head;
        if (memmem(h->in.data, head, "Connection: close", 17)) {
            close(h->fd);
            h->fd = -1;
        }
    }
    seatd_buf_free(&req);
    return status;
}

long long fanout_json_ll(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}
