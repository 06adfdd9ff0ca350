/*
 * racer.c - forked racers released together from a barrier; see racer.h.
 *
 * Three kinds of pipe: one "ready" pipe shared by every child (each writes one byte when it
 * is ready), one "go" pipe (children block reading it; the parent closes its write end after
 * it has read 'n' ready bytes, and every child sees EOF at once), and one report pipe per
 * child. Children leave through _exit() so that nothing of Criterion's runs twice (after
 * LeakSanitizer's check in a sanitizer build: child_exit.h).
 */
#define _GNU_SOURCE
#include "racer.h"
#include "child_exit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT_MAX 4096

/* Child-side state: valid in a racer child only. */
static int child_ready_fd = -1;  /* write end of the ready pipe; -1 once used */
static int child_go_fd = -1;     /* read end of the go pipe */
static int child_report_fd = -1; /* write end of this child's report pipe */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void signal_ready(void)
{
    if (child_ready_fd < 0)
        return;
    write_all(child_ready_fd, "r", 1);
    close(child_ready_fd);
    child_ready_fd = -1;
}

void seatd_test_racer_ready_and_wait(void)
{
    signal_ready();
    if (child_go_fd < 0)
        return;
    char b;
    for (;;) {
        ssize_t r = read(child_go_fd, &b, 1);
        if (r < 0 && errno == EINTR)
            continue;
        break; /* EOF: the barrier is open */
    }
    close(child_go_fd);
    child_go_fd = -1;
}

void seatd_test_racer_report(const char *text)
{
    if (child_report_fd < 0 || !text)
        return;
    size_t n = strlen(text);
    if (n > REPORT_MAX)
        n = REPORT_MAX;
    write_all(child_report_fd, text, n);
    close(child_report_fd);
    child_report_fd = -1;
}

/* Reads the 'n' ready bytes, or fails at 'deadline' or when every child closed its end. */
static int read_ready(int fd, int n, long long deadline)
{
    int got = 0;
    while (got < n) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        char buf[64];
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (int)r;
    }
    return 0;
}

static char *read_report(int fd)
{
    char *buf = malloc(REPORT_MAX + 1);
    if (!buf)
        abort();
    size_t len = 0;
    while (len < REPORT_MAX) {
        ssize_t r = read(fd, buf + len, REPORT_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    if (len == 0) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

int seatd_test_race(int n, seatd_test_racer_fn fn, void *arg, int *status, char **reports,
                    int timeout_ms)
{
    int ready[2] = {-1, -1}, go[2] = {-1, -1};
    int *report_r = calloc((size_t)n, sizeof(int));
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    int *done = calloc((size_t)n, sizeof(int));
    int rc = -1, forked = 0;
    if (!report_r || !pids || !done)
        abort();
    for (int i = 0; i < n; i++) {
        report_r[i] = -1;
        status[i] = -1;
        if (reports)
            reports[i] = NULL;
    }
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0)
        goto fail;

    long long deadline = now_ms() + timeout_ms;
    for (int i = 0; i < n; i++) {
        int rep[2];
        if (pipe2(rep, O_CLOEXEC) != 0)
            goto fail;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            close(rep[0]);
            close(rep[1]);
            goto fail;
        }
        if (pid == 0) {
            /* Child: keep only its own ends. */
            close(ready[0]);
            close(go[1]);
            close(rep[0]);
            for (int j = 0; j < i; j++)
                close(report_r[j]);
            /* The parent's bookkeeping is not the child's: free it, so that LeakSanitizer's
             * check at the child's exit never finds it (it may live only in a register). */
            free(report_r);
            free(pids);
            free(done);
            child_ready_fd = ready[1];
            child_go_fd = go[0];
            child_report_fd = rep[1];
            int ret = fn(i, arg);
            /* A child that never waited still counts as ready, so the barrier can open. */
            signal_ready();
            if (child_report_fd >= 0)
                close(child_report_fd);
            seatd_test_child_exit(ret & 0xff); /* LeakSanitizer checks the child */
        }
        close(rep[1]);
        report_r[i] = rep[0];
        pids[i] = pid;
        forked++;
    }
    close(ready[1]);
    ready[1] = -1;
    close(go[0]);
    go[0] = -1;

    int barrier_ok = read_ready(ready[0], n, deadline) == 0;
    close(go[1]); /* opens the barrier */
    go[1] = -1;

    int remaining = forked;
    while (remaining > 0 && now_ms() < deadline) {
        for (int i = 0; i < forked; i++) {
            if (done[i])
                continue;
            int st;
            pid_t r = waitpid(pids[i], &st, WNOHANG);
            if (r == pids[i]) {
                done[i] = 1;
                remaining--;
                status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            } else if (r < 0 && errno != EINTR) {
                done[i] = 1;
                remaining--;
            }
        }
        if (remaining > 0) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    if (remaining > 0) {
        for (int i = 0; i < forked; i++) {
            if (!done[i]) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
                status[i] = -1;
            }
        }
        fprintf(stderr, "racer: %d of %d children did not finish within %d ms\n", remaining, n,
                timeout_ms);
    }
    if (reports)
        for (int i = 0; i < forked; i++)
            reports[i] = read_report(report_r[i]);
    rc = (remaining == 0 && barrier_ok && forked == n) ? 0 : -1;
    if (!barrier_ok)
        fprintf(stderr, "racer: not every child reached the barrier\n");

fail:
    if (rc != 0 && forked < n) {
        /* Forking failed part-way: release and reap whatever started. */
        if (go[1] >= 0) {
            close(go[1]);
            go[1] = -1;
        }
        for (int i = 0; i < forked; i++) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    }
    for (int i = 0; i < n; i++)
        if (report_r[i] >= 0)
            close(report_r[i]);
    if (ready[0] >= 0)
        close(ready[0]);
    if (ready[1] >= 0)
        close(ready[1]);
    if (go[0] >= 0)
        close(go[0]);
    if (go[1] >= 0)
        close(go[1]);
    free(report_r);
    free(pids);
    free(done);
    return rc;
}
