/*
 * racer.h - forked racers released together from a barrier.
 *
 * seatd_test_race() forks 'n' children. Each runs 'fn(i, arg)'; the child does its set-up
 * (its own Redis connection, its own uv loop: never shared across fork), then calls
 * seatd_test_racer_ready_and_wait(), which blocks until every child is ready and the parent
 * opens the barrier by closing a pipe. The child's return value (0..255) becomes its exit
 * status via _exit(); children never return into Criterion and never call cr_assert.
 * Children may also write a result line (up to 4 KiB) with seatd_test_racer_report(), read
 * by the parent into 'reports[i]' (owned by the caller, free()).
 */
#ifndef SEATD_TEST_RACER_H
#define SEATD_TEST_RACER_H

typedef int (*seatd_test_racer_fn)(int i, void *arg);

/* Runs the race; fills 'status[i]' with each child's exit status (or -1 if it crashed) and,
 * when 'reports' is not NULL, 'reports[i]' with what the child reported (or NULL).
 * Returns 0, or -1 if forking failed or a child did not finish within 'timeout_ms'. */
int seatd_test_race(int n, seatd_test_racer_fn fn, void *arg, int *status, char **reports,
                    int timeout_ms);

/* In a child: signal readiness, then block until the barrier opens. */
void seatd_test_racer_ready_and_wait(void);
/* In a child: report a result string to the parent (call at most once, before returning). */
void seatd_test_racer_report(const char *text);

#endif
