/*
 * loop.h - running a libuv loop in a test, with a watchdog.
 *
 * seatd_test_loop_new() returns a fresh loop; seatd_test_loop_run_until() runs it until
 * '*done' becomes non-zero or 'timeout_ms' passes (returns -1 then: the watchdog fired);
 * seatd_test_loop_poll_until() runs it until 'cond(data)' holds, asked every 'period_ms' on a
 * timer of its own (closed before it returns), with the same watchdog and result;
 * seatd_test_loop_free() closes every remaining handle, runs the loop to completion and
 * returns uv_loop_close()'s result (0 means nothing leaked).
 */
#ifndef SEATD_TEST_LOOP_H
#define SEATD_TEST_LOOP_H

struct uv_loop_s;

struct uv_loop_s *seatd_test_loop_new(void);
int seatd_test_loop_run_until(struct uv_loop_s *loop, const int *done, int timeout_ms);
int seatd_test_loop_poll_until(struct uv_loop_s *loop, int (*cond)(void *data), void *data,
                               int period_ms, int timeout_ms);
int seatd_test_loop_free(struct uv_loop_s *loop);

#endif
