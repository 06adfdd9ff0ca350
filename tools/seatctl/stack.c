/*
 * stack.c - which seatd stack seatctl talks to, found as deploy/lib.sh finds it: SEATD_PORT
 * gives the API, Redis (PORT + 1000) and the runtime folder, whose secrets stand in for
 * SEATD_JWT_SECRET and REDISCLI_AUTH; anything given explicitly wins. One line on stderr says
 * which stack it is.
 */
#include "seatctl.h"
#include "http/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PORT 8080      /* deploy/lib.sh's SEATD_PORT */
#define REDIS_PORT_OFFSET 1000 /* deploy/lib.sh: SEATD_REDIS_PORT = SEATD_PORT + 1000 */

/* ---------------------------------------------------------------------------------------
 * The stack: found as deploy/lib.sh finds it, from SEATD_PORT
 * --------------------------------------------------------------------------------------- */

seatctl_stack_t seatctl_stack;

int seatctl_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads SEATD_PORT and finds the runtime folder: SEATD_RUN_DIR, else run/<port> in the current
 * folder, else run/<port> in the parent of this binary's folder (build/seatctl of a checkout).
 * Returns 0, or EXIT_USAGE for a SEATD_PORT that is no port. */
int seatctl_stack_init(void)
{
    const char *p = getenv("SEATD_PORT");
    seatctl_stack.port = DEFAULT_PORT;
    if (p && p[0]) {
        char *end = NULL;
        errno = 0;
        long n = strtol(p, &end, 10);
        if (*end != '\0' || errno || n < 1 || n > 65535)
            return seatctl_usage_error("SEATD_PORT must be a port number (1-65535), not '%s'", p);
        seatctl_stack.port = (int)n;
        seatctl_stack.port_given = 1;
    }
    const char *dir = getenv("SEATD_RUN_DIR");
    if (dir && dir[0]) {
        seatctl_stack.run_given = 1;
        snprintf(seatctl_stack.run, sizeof seatctl_stack.run, "%s", dir);
        snprintf(seatctl_stack.run_shown, sizeof seatctl_stack.run_shown, "%s", dir);
        return 0;
    }
    snprintf(seatctl_stack.run, sizeof seatctl_stack.run, "run/%d", seatctl_stack.port);
    snprintf(seatctl_stack.run_shown, sizeof seatctl_stack.run_shown, "run/%d", seatctl_stack.port);
    if (seatctl_is_dir(seatctl_stack.run))
        return 0;
    char exe[2048];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0'; /* the binary's folder */
    slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = '\0'; /* its parent: the checkout */
    char beside[4096];
    snprintf(beside, sizeof beside, "%s/run/%d", exe[0] ? exe : "", seatctl_stack.port);
    if (seatctl_is_dir(beside)) {
        snprintf(seatctl_stack.run, sizeof seatctl_stack.run, "%s", beside);
        snprintf(seatctl_stack.run_shown, sizeof seatctl_stack.run_shown, "%s", beside);
    }
    return 0;
}

/* Reads file 'name' of the runtime folder (a secret: its first line) into 'out' ('n' bytes).
 * Returns 0, or -1 with 'why' set. */
int seatctl_stack_secret(const char *name, char *out, size_t n, char *why, size_t whylen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", seatctl_stack.run, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "%.300s/%s: %s", seatctl_stack.run_shown, name, strerror(errno));
        return -1;
    }
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0]) {
        snprintf(why, whylen, "%.300s/%s is empty", seatctl_stack.run_shown, name);
        return -1;
    }
    seatctl_stack.run_used = 1;
    return 0;
}

/* The JWT secret: $SEATD_JWT_SECRET, else (when 'may_use_run') the runtime folder's
 * jwt_secret, into 'out' ('n' bytes). Returns 0, or -1 with 'why' set. */
int seatctl_jwt_secret(int may_use_run, char *out, size_t n, char *why, size_t whylen)
{
    const char *secret = getenv("SEATD_JWT_SECRET");
    if (secret && secret[0]) {
        snprintf(out, n, "%s", secret);
    } else if (!may_use_run) {
        snprintf(why, whylen, "SEATD_JWT_SECRET is not set");
        return -1;
    } else if (seatctl_stack_secret("jwt_secret", out, n, why, whylen) < 0) {
        return -1;
    }
    if (strlen(out) < SEATD_AUTH_MIN_SECRET) {
        snprintf(why, whylen, "the JWT secret (%s) is shorter than %d bytes",
                 secret && secret[0] ? "SEATD_JWT_SECRET" : "the runtime folder's jwt_secret",
                 SEATD_AUTH_MIN_SECRET);
        return -1;
    }
    return 0;
}

/* Says once, on stderr, which stack this run talks to: 'target' (the API's or Redis's
 * address, borrowed) and where it came from: 'explicit' (the option or variable that named
 * it, or NULL when it is SEATD_PORT's) and the runtime folder. */
void seatctl_announce(const char *target, const char *explicit)
{
    if (seatctl_stack.announced)
        return;
    seatctl_stack.announced = 1;
    if (explicit && seatctl_stack.run_used)
        fprintf(stderr, "seatctl: stack %s (%s; secrets from %s)\n", target, explicit,
                seatctl_stack.run_shown);
    else if (explicit)
        fprintf(stderr, "seatctl: stack %s (%s)\n", target, explicit);
    else if (seatctl_is_dir(seatctl_stack.run))
        fprintf(stderr, "seatctl: stack %s (%s)\n", target, seatctl_stack.run_shown);
    else
        fprintf(stderr, "seatctl: stack %s (%sno runtime folder %s)\n", target,
                seatctl_stack.port_given ? "" : "SEATD_PORT unset: 8080; ",
                seatctl_stack.run_shown);
}

/* The API's base URL (no trailing '/') into 'out' ('n' bytes): --url, $SEATD_URL, or the
 * stack's http://127.0.0.1:PORT. Returns the option or variable that named it, or NULL. */
const char *seatctl_api_url(const seatctl_opts_t *o, char *out, size_t n)
{
    const char *from = o->url ? "--url" : "SEATD_URL";
    const char *base = o->url ? o->url : getenv("SEATD_URL");
    if (base && base[0]) {
        size_t blen = strlen(base);
        while (blen > 0 && base[blen - 1] == '/')
            blen--;
        snprintf(out, n, "%.*s", (int)blen, base);
        return from;
    }
    snprintf(out, n, "http://127.0.0.1:%d", seatctl_stack.port);
    return NULL;
}

/* Redis's address into 'out' ('n' bytes): --redis, $SEATD_REDIS, or the stack's
 * 127.0.0.1:$SEATD_REDIS_PORT (SEATD_PORT + 1000). Returns the option or variable that named
 * it, or NULL. */
const char *seatctl_redis_addr(const seatctl_opts_t *o, char *out, size_t n)
{
    const char *from = o->redis ? "--redis" : "SEATD_REDIS";
    const char *addr = o->redis ? o->redis : getenv("SEATD_REDIS");
    if (addr && addr[0]) {
        snprintf(out, n, "%s", addr);
        return from;
    }
    const char *rp = getenv("SEATD_REDIS_PORT");
    long port = seatctl_stack.port + REDIS_PORT_OFFSET;
    if (rp && rp[0]) {
        char *end = NULL;
        long v = strtol(rp, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 65535)
            port = v;
    }
    snprintf(out, n, "127.0.0.1:%ld", port);
    return NULL;
}
