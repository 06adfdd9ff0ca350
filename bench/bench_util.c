/* bench_util.c - see bench_util.h. */
#include "bench_util.h"

#include <stdio.h>

long bench_rss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

int bench_ws_upgrade_request(char *buf, size_t size, const char *path, int deflate)
{
    int n = snprintf(buf, size,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n%s\r\n",
                     path,
                     deflate ? "Sec-WebSocket-Extensions: permessage-deflate; "
                               "client_max_window_bits\r\n"
                             : "");
    return n > 0 && (size_t)n < size ? n : -1;
}
