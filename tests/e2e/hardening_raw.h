/*
 * hardening_raw.h - raw HTTP from a chosen loopback address, for the hardening suites
 * (test_api_hardening.c, test_api_hardening_defaults.c): nginx's limits are per address, so
 * each request is sent from its own 127.0.x.y and its answer read unparsed (status, head and
 * body as nginx wrote them). Header-only (static inline).
 */
#ifndef SEATD_E2E_HARDENING_RAW_H
#define SEATD_E2E_HARDENING_RAW_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A TCP connection from 'src' (a loopback address) to 127.0.0.1:'port'; fd or -1. */
static inline int connect_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (src) {
        inet_pton(AF_INET, src, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&d, sizeof(d)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef struct {
    int status;
    char head[8192]; /* status line and headers */
    char body[8192];
} raw_res_t;

/* The value of header 'name' in 'r' (copied into a static buffer), or NULL. */
static inline const char *raw_header(const raw_res_t *r, const char *name)
{
    static char v[1024];
    size_t n = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *s = line + n + 1;
            while (*s == ' ')
                s++;
            size_t len = strcspn(s, "\r\n");
            snprintf(v, sizeof(v), "%.*s", (int)(len < sizeof(v) - 1 ? len : sizeof(v) - 1), s);
            return v;
        }
    }
    return NULL;
}

/* Reads one response head (and up to Content-Length bytes of body) from 'fd'; 0 or -1. */
static inline int read_response(int fd, raw_res_t *r)
{
    memset(r, 0, sizeof(*r));
    char buf[16384];
    size_t got = 0;
    char *end = NULL;
    while (got < sizeof(buf) - 1) {
        ssize_t k = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (end) {
            size_t hlen = (size_t)(end - buf);
            snprintf(r->head, sizeof(r->head), "%.*s", (int)hlen, buf);
            const char *cl = raw_header(r, "content-length");
            size_t want = cl ? (size_t)atol(cl) : 0;
            if (got - hlen - 4 >= want || strncmp(buf + 9, "101", 3) == 0)
                break;
        }
    }
    if (!end)
        return -1;
    size_t hlen = (size_t)(end - buf);
    snprintf(r->head, sizeof(r->head), "%.*s", (int)hlen, buf);
    snprintf(r->body, sizeof(r->body), "%s", end + 4);
    r->status = atoi(buf + 9);
    return r->status > 0 ? 0 : -1;
}

/* Sends 'req' from 'src' and reads the answer; 0 or -1. */
static inline int raw_from(const char *src, int port, const char *req, size_t len, raw_res_t *r)
{
    int fd = connect_from(src, port);
    if (fd < 0)
        return -1;
    int rc = send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len ? read_response(fd, r) : -1;
    close(fd);
    return rc;
}

/* 'r' is RFC 9457 problem+json whose "status" is its HTTP status. */
static inline void assert_problem(const raw_res_t *r, const char *what)
{
    const char *ct = raw_header(r, "content-type");
    cr_assert(ct && strncmp(ct, "application/problem+json", 24) == 0,
              "%s: %d answered with Content-Type %s: %.200s", what, r->status, ct ? ct : "(none)",
              r->body);
    cJSON *j = cJSON_Parse(r->body);
    cr_assert_not_null(j, "%s: body is not JSON: %.200s", what, r->body);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(j, "status");
    cr_assert(cJSON_IsString(type) &&
                  strncmp(type->valuestring, "https://seatd.dev/problems/", 27) == 0,
              "%s: no problem type: %s", what, r->body);
    cr_assert(cJSON_IsNumber(status) && status->valueint == r->status,
              "%s: body status differs from %d: %s", what, r->status, r->body);
    cJSON_Delete(j);
}

/* 'r''s problem has a "detail" that contains 'want' (which limit a 429 met). */
static inline void assert_detail(const raw_res_t *r, const char *what, const char *want)
{
    cJSON *j = cJSON_Parse(r->body);
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "detail"));
    cr_assert(d && strstr(d, want), "%s: the detail does not say '%s': %s", what, want, r->body);
    cJSON_Delete(j);
}

#endif /* SEATD_E2E_HARDENING_RAW_H */
