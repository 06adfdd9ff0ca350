/*
 * fuzz_check.h - the invariant check of every libFuzzer target: a failed CHECK prints where and
 * what, then aborts, which libFuzzer reports as a crash with its input.
 */
#ifndef SEATD_FUZZ_CHECK_H
#define SEATD_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
