/*
 * seatctl.c - developer and operator tool.
 *
 *   seatctl token --sub U [--role admin] [--ttl SECONDS]
 *       prints a bearer JWT (HS256) signed with SEATD_JWT_SECRET.
 *   seatctl --help
 *
 * Exit status: 0 on success, 2 on a usage error, 1 on any other failure.
 */
#include "auth.h"
#include "mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fputs("Usage:\n"
          "  seatctl token --sub USER [--role admin] [--ttl SECONDS]\n"
          "      Print a bearer token for USER, signed with the secret in SEATD_JWT_SECRET\n"
          "      (at least 32 bytes). --ttl defaults to 3600 seconds; --role admin grants\n"
          "      the admin role (needed to create shows).\n"
          "  seatctl --help\n"
          "      Print this help.\n",
          out);
}

/* Reads the value of the option at argv[*i] ("--x v" or "--x=v"); NULL if missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static int cmd_token(int argc, char **argv)
{
    const char *sub = NULL, *role = NULL;
    long long ttl = 3600;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--sub")) != NULL) {
            sub = v;
        } else if ((v = opt_value(argc, argv, &i, "--role")) != NULL) {
            role = v;
        } else if ((v = opt_value(argc, argv, &i, "--ttl")) != NULL) {
            char *end = NULL;
            errno = 0;
            ttl = strtoll(v, &end, 10);
            if (*v == '\0' || *end != '\0' || errno || ttl <= 0 || ttl > 366LL * 86400) {
                fprintf(stderr, "seatctl: --ttl must be 1..31622400 seconds\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "seatctl: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (sub == NULL) {
        fprintf(stderr, "seatctl: token needs --sub USER\n");
        return 2;
    }
    if (role != NULL && strcmp(role, "admin") != 0) {
        fprintf(stderr, "seatctl: the only role is 'admin'\n");
        return 2;
    }
    const char *secret = getenv("SEATD_JWT_SECRET");
    if (secret == NULL || strlen(secret) < SEATD_AUTH_MIN_SECRET) {
        fprintf(stderr, "seatctl: SEATD_JWT_SECRET must be set to at least %d bytes\n",
                SEATD_AUTH_MIN_SECRET);
        return 1;
    }
    seatd_auth_t *auth = NULL;
    if (seatd_auth_new(secret, strlen(secret), &auth) < 0) {
        fprintf(stderr, "seatctl: bad secret\n");
        return 1;
    }
    char *token = NULL;
    int rc = seatd_auth_sign(auth, sub, role != NULL, ttl, &token);
    seatd_auth_free(auth);
    if (rc < 0) {
        fprintf(stderr, "seatctl: '%s' is not a valid user id (^[A-Za-z0-9_.@:|-]{1,64}$)\n", sub);
        return 2;
    }
    printf("%s\n", token);
    free(token);
    return 0;
}

int main(int argc, char **argv)
{
    seatd_mem_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "token") == 0)
        return cmd_token(argc, argv);
    fprintf(stderr, "seatctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
