/*
 * http_client.h - a tiny blocking HTTP/1.1 client for tests.
 *
 * seatd_test_http_request() opens a TCP connection to host:port (or, for a host
 * "unix:/path", that unix socket; the port is ignored), sends one request with
 * "Connection: close" (plus Host and, when a body is given, Content-Length), reads the
 * response (Content-Length, chunked or read-to-EOF bodies), parses it into 'out' and closes.
 * seatd_test_http_raw() sends arbitrary bytes (pipelining, malformed input) and returns
 * everything the server sent until it closed or 'timeout_ms' passed.
 * With SEATD_E2E_RESPONSE_LOG set, every response seatd_test_http_request() parses is appended
 * to that file as one JSON line (host, port, method, path, status, headers, body): the e2e run
 * validates each against api/openapi.json (tests/e2e/validate_responses.py).
 * Blocking sockets with a receive timeout; no uv loop: call it from a forked child or from a
 * thread other than the server loop's, or against a server running in another process.
 */
#ifndef SEATD_TEST_HTTP_CLIENT_H
#define SEATD_TEST_HTTP_CLIENT_H

#include <stddef.h>

#define SEATD_TEST_HTTP_MAX_HEADERS 64

typedef struct seatd_test_http_response_s {
    int status;                                       /* e.g. 200; 0 if none was parsed */
    size_t nheaders;                                  /* used entries below */
    char *header_names[SEATD_TEST_HTTP_MAX_HEADERS];  /* owned, lower-cased */
    char *header_values[SEATD_TEST_HTTP_MAX_HEADERS]; /* owned, trimmed */
    char *body;                                       /* owned, NUL-terminated (may hold NULs) */
    size_t body_len;                                  /* bytes in 'body' */
} seatd_test_http_response_t;

/*
 * Sends 'method' 'path' to 'host':'port'. 'headers' (may be NULL) is extra header text, each
 * line ending in "\r\n", e.g. "Authorization: Bearer x\r\nContent-Type: application/json\r\n".
 * 'body' ('body_len' bytes, may be NULL). All borrowed. Fills 'out' (free with
 * seatd_test_http_response_free()). Returns 0, or -1 on connect/IO/parse failure or after
 * 5 s without a complete response.
 */
int seatd_test_http_request(const char *host, int port, const char *method, const char *path,
                            const char *headers, const char *body, size_t body_len,
                            seatd_test_http_response_t *out);

/* Sets how long seatd_test_http_request() waits without progress (ms; <= 0: the default,
 * 5 s), for requests that legitimately take longer (a 6 MB layout under AddressSanitizer). */
void seatd_test_http_set_timeout(int ms);

/* The first value of response header 'name' (case-insensitive), or NULL. Borrowed. */
const char *seatd_test_http_header(const seatd_test_http_response_t *res, const char *name);

/* Frees what 'res' owns and zeroes it. */
void seatd_test_http_response_free(seatd_test_http_response_t *res);

/* The 'len' bytes of 'gz' inflated when they are one whole gzip member (Content-Encoding:
 * gzip), as an owned NUL-terminated string (free()), '*out_len' its length; NULL otherwise. */
char *seatd_test_gunzip(const char *gz, size_t len, size_t *out_len);

/*
 * Sends 'len' raw bytes of 'data' to 'host':'port' and reads until the server closes the
 * connection or 'timeout_ms' passes with nothing read. Returns the bytes received as an owned
 * NUL-terminated string (free()), '*out_len' its length; NULL if the connection failed.
 */
char *seatd_test_http_raw(const char *host, int port, const char *data, size_t len, int timeout_ms,
                          size_t *out_len);

#endif
