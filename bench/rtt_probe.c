/*
 * rtt_probe.c - the machine's own round trip between two processes: a same-moment anchor for
 * the latencies bench/run measures.
 *
 *   seatd_rtt_probe [--interval-us N] [--duration S]
 *
 * A parent and a forked child share a unix stream socket pair. Every N microseconds (1000)
 * the parent writes one byte; the child, blocked in read(), writes it back; the parent,
 * blocked in read(), records the time from its write to the echo. Two processes of the
 * stack's own class (SCHED_OTHER, nice 0), each woken once per round trip, doing no work:
 * what every hop of a request (load generator to nginx, nginx to a worker, a worker to Redis,
 * and back) pays at least at that moment on that machine. On a shared VM a waking process can
 * wait for the host to run its vCPU, and the figure shows it.
 *
 * Prints one line, the percentiles in milliseconds:
 *   rtt_probe round_trips=… p50_ms=… p90_ms=… p99_ms=… max_ms=…
 * Exit status 0, or 2 when it could not run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The child: echoes every byte until the parent closes its end. */
static void echo(int fd)
{
    char b;
    for (;;) {
        ssize_t n = read(fd, &b, 1);
        if (n == 1 && write(fd, &b, 1) == 1)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        _exit(0);
    }
}

static int usage(void)
{
    fprintf(stderr,
            "usage: seatd_rtt_probe [--interval-us N (1..1000000)] [--duration S (1..3600)]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long interval_us = 1000, duration_s = 10;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (i + 1 >= argc)
            return usage();
        long v = strtol(argv[i + 1], &end, 10);
        if (end == argv[i + 1] || *end != '\0')
            return usage();
        if (strcmp(argv[i], "--interval-us") == 0 && v >= 1 && v <= 1000000)
            interval_us = v;
        else if (strcmp(argv[i], "--duration") == 0 && v >= 1 && v <= 3600)
            duration_s = v;
        else
            return usage();
        i++;
    }

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        perror("rtt_probe: socketpair");
        return 2;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("rtt_probe: fork");
        return 2;
    }
    if (child == 0) {
        close(sv[0]);
        echo(sv[1]);
    }
    close(sv[1]);

    static seatd_hist_t h;
    const struct timespec pause = {interval_us / 1000000, (interval_us % 1000000) * 1000};
    uint64_t end = now_ns() + (uint64_t)duration_s * 1000000000u;
    int failed = 0;
    while (now_ns() < end) {
        nanosleep(&pause, NULL);
        char b = 'x';
        uint64_t t0 = now_ns();
        if (write(sv[0], &b, 1) != 1) {
            failed = 1;
            break;
        }
        ssize_t n;
        do
            n = read(sv[0], &b, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) {
            failed = 1;
            break;
        }
        seatd_hist_add(&h, (now_ns() - t0 + 500) / 1000);
    }
    close(sv[0]);
    waitpid(child, NULL, 0);
    if (failed || h.count == 0) {
        fprintf(stderr, "rtt_probe: the echo stopped\n");
        return 2;
    }
    printf("rtt_probe round_trips=%llu p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           (unsigned long long)h.count, seatd_hist_quantile(&h, 0.50) / 1000.0,
           seatd_hist_quantile(&h, 0.90) / 1000.0, seatd_hist_quantile(&h, 0.99) / 1000.0,
           h.max_us / 1000.0);
    return 0;
}
