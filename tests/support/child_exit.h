/*
 * child_exit.h - how a forked test child ends: seatd_test_child_exit(code).
 *
 * A forked child must not return into Criterion (its runner would run twice), so it leaves
 * through _exit(), which skips LeakSanitizer's end-of-process check. In a sanitizer build
 * this runs that check first: leaks are reported on stderr and the child exits with
 * LeakSanitizer's exit code (or aborts, with abort_on_error=1) instead of 'code', so the
 * parent sees a failed child. Elsewhere it is _exit(code). Header-only.
 */
#ifndef SEATD_TEST_CHILD_EXIT_H
#define SEATD_TEST_CHILD_EXIT_H

#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SEATD_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define SEATD_TEST_LSAN 1
#endif
#endif

#ifdef SEATD_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* Never returns. */
__attribute__((noreturn)) static inline void seatd_test_child_exit(int code)
{
#ifdef SEATD_TEST_LSAN
    /* Dies (non-zero) when something leaked, like the check at a normal exit would. */
    __lsan_do_leak_check();
#endif
    _exit(code);
}

#endif
