/*
 * bench_util.h - what several benchmark clients of bench/ need alike: a process's resident
 * memory, and the request that opens a WebSocket (the key is the RFC 6455 sample: these
 * clients check the 101, not its accept value).
 */
#ifndef SEATD_BENCH_UTIL_H
#define SEATD_BENCH_UTIL_H

#include <stddef.h>

/* VmRSS of process 'pid' in kB, or -1 when it cannot be read (the process is gone). */
long bench_rss_kb(int pid);

/* Writes into 'buf' ('size' bytes) a GET of 'path' that asks to upgrade to a WebSocket,
 * offering permessage-deflate as browsers do when 'deflate'. Returns its length, or -1 when it
 * does not fit. */
int bench_ws_upgrade_request(char *buf, size_t size, const char *path, int deflate);

#endif
