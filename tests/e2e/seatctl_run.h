/*
 * seatctl_run.h - build/seatctl run as a process for the seatctl suite (test_seatctl.c,
 * test_seatctl_discovery.c): its exit status, stdout (parsed when it is JSON) and stderr, and
 * the holds and bookings its commands act on, made through the API. Header-only (static inline).
 */
#ifndef SEATD_E2E_SEATCTL_RUN_H
#define SEATD_E2E_SEATCTL_RUN_H

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
typedef struct run_s {
    int status;      /* exit status */
    char out[65536]; /* stdout */
    char err[8192];  /* stderr */
    cJSON *json;     /* stdout parsed, or NULL */
} run_t;

/* Runs seatctl with the arguments in 'ap' (NULL-terminated) in folder 'cwd' (NULL: this one)
 * with environment 'env' (NULL: this process's); stdout into 'r->out', stderr into 'r->err'. */
static inline void seatctl_v(run_t *r, const char *cwd, char *const *env, va_list ap)
{
    const char *argv[32];
    char bin[512];
    snprintf(bin, sizeof bin, "%s/seatctl", getenv("SEATD_BUILD_DIR"));
    if (bin[0] != '/') { /* a relative build folder: from here, not from 'cwd' */
        char here[400];
        cr_assert_not_null(getcwd(here, sizeof here));
        snprintf(bin, sizeof bin, "%s/%s/seatctl", here, getenv("SEATD_BUILD_DIR"));
    }
    int n = 0;
    argv[n++] = bin;
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 31)
        argv[n++] = a;
    argv[n] = NULL;
    char errpath[] = "/tmp/seatctl-stderr.XXXXXX";
    int errfd = mkstemp(errpath);
    cr_assert(errfd >= 0);
    unlink(errpath);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(errfd, 2);
        close(fds[0]);
        close(fds[1]);
        close(errfd);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        if (env)
            execve(bin, (char *const *)argv, env);
        else
            execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(fds[0], r->out + len, sizeof r->out - 1 - len)) > 0)
        len += (size_t)got;
    close(fds[0]);
    r->out[len] = '\0';
    int st = 0;
    waitpid(pid, &st, 0);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->json = cJSON_Parse(r->out);
    got = pread(errfd, r->err, sizeof r->err - 1, 0);
    r->err[got > 0 ? got : 0] = '\0';
    close(errfd);
}

/* Runs seatctl with the NULL-terminated arguments, here, in this process's environment. */
static inline void seatctl(run_t *r, ...)
{
    va_list ap;
    va_start(ap, r);
    seatctl_v(r, NULL, NULL, ap);
    va_end(ap);
}

/* Runs seatctl in folder 'cwd' with nothing but 'env' (NULL-terminated "NAME=value"s). */
static inline void seatctl_in(run_t *r, const char *cwd, char *const *env, ...)
{
    va_list ap;
    va_start(ap, env);
    seatctl_v(r, cwd, env, ap);
    va_end(ap);
}

static inline void run_free(run_t *r)
{
    cJSON_Delete(r->json);
    r->json = NULL;
}

static inline const char *jstr(const cJSON *o, const char *name)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return s ? s : "";
}

static inline double jnum(const cJSON *o, const char *name)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* Holds 'seats' (a JSON array text) of 'show' as 'sub'; the hold id into 'hold' (48 bytes). */
static inline void hold(const char *show, const char *sub, const char *seats, char *hold_id)
{
    e2e_hold(show, sub, seats, hold_id, 48);
}

/* Books hold 'hold_id' as 'sub' with tok_ok; the booking id into 'booking' (48 bytes). */
static inline void book(const char *sub, const char *hold_id, char *booking)
{
    char body[256];
    snprintf(body, sizeof body, "{\"holdId\":\"%s\",\"paymentMethod\":\"tok_ok\"}", hold_id);
    e2e_res_t res;
    cr_assert_eq(e2e_call("POST", "/v1/bookings", sub, body, NULL, &res), 0);
    cr_assert_eq(res.http.status, 201, "booking: %d", res.http.status);
    cr_assert_str_eq(e2e_str(&res, "status"), "CONFIRMED");
    snprintf(booking, 48, "%s", e2e_str(&res, "bookingId"));
    e2e_res_free(&res);
}

#endif /* SEATD_E2E_SEATCTL_RUN_H */
