/*
 * fnv.h - 64-bit FNV-1a over a byte string: cheap and good enough to spread keys or to name a
 * version of a text; not for anything an adversary may choose to collide. Pure.
 */
#ifndef SEATD_FNV_H
#define SEATD_FNV_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t seatd_fnv1a(const char *p, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

#endif
