/*
 * seatctl.c - the operator's tool (docs/operations.md, "seatctl").
 *
 * Writes go through the HTTP API with an admin token (minted from SEATD_JWT_SECRET, or given
 * with --token / SEATD_TOKEN), so every change is a seatd Function run by a worker, exactly as
 * for a buyer; public reads (show list, show get) send no token. Redis is read directly,
 * read-only, for inspection only (`seat who`, `audit`): plain reads and EVAL_RO probes, never
 * a write.
 *
 * The stack is found as deploy/lib.sh finds it: SEATD_PORT (8080) gives the API
 * (http://127.0.0.1:PORT), Redis (127.0.0.1:SEATD_REDIS_PORT, PORT + 1000) and the runtime
 * folder (SEATD_RUN_DIR, else run/PORT in the current folder or beside the binary's build
 * folder), whose jwt_secret and redis-admin.pass stand in for SEATD_JWT_SECRET and
 * REDISCLI_AUTH. Anything given explicitly (--url, SEATD_URL, --redis, SEATD_REDIS, --token,
 * SEATD_TOKEN, SEATD_JWT_SECRET, --redis-pass, REDISCLI_AUTH) wins. One line on stderr says
 * which stack a command talks to.
 *
 * Every command prints a human-readable answer, or with --json one JSON document on stdout
 * (on failure too: the API's problem+json, or {"error":…}). Exit status: 0 ok, 1 not found
 * or a failed check (or the API/Redis refused or failed), 2 usage error.
 */
#include "http/auth.h"
#include "domain/keys.h"
#include "base/mem.h"
#include "redis_sync.h"
#include "show_audit.h"
#include "base/timefmt.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

#define DEFAULT_PORT 8080      /* deploy/lib.sh's SEATD_PORT */
#define REDIS_PORT_OFFSET 1000 /* deploy/lib.sh: SEATD_REDIS_PORT = SEATD_PORT + 1000 */
#define SECRET_FILE_MAX 4096
#define ADMIN_TOKEN_TTL_S 300
#define MAX_PRICES 16
#define MAX_ARGS 4
#define AUDIT_ATTEMPTS 5 /* reruns while the show changed under a failing audit */

/* ---------------------------------------------------------------------------------------
 * Options and commands: two tables, walked by the parser and the help.
 * --------------------------------------------------------------------------------------- */

enum {
    O_URL = 1 << 0,
    O_TOKEN = 1 << 1,
    O_REDIS = 1 << 2,
    O_REDIS_USER = 1 << 3,
    O_REDIS_PASS = 1 << 4,
    O_JSON = 1 << 5,
    O_HELP = 1 << 6,
    O_LAYOUT = 1 << 7,
    O_BODY = 1 << 8,
    O_TITLE = 1 << 9,
    O_STARTS = 1 << 10,
    O_HOLD_TTL = 1 << 11,
    O_PRICE = 1 << 12,
    O_CLOSE = 1 << 13,
    O_PAGE = 1 << 14,
    O_SIZE = 1 << 15,
    O_SUB = 1 << 16,
    O_ROLE = 1 << 17,
    O_TTL = 1 << 18,
    O_EMAIL = 1 << 19,
    O_PASSWORD_STDIN = 1 << 20,
    O_ADMIN = 1 << 21,
    O_NAME = 1 << 22,
    O_CHANNELS = 1 << 23,
};
#define O_HTTP (O_URL | O_TOKEN)
#define O_RDS (O_REDIS | O_REDIS_USER | O_REDIS_PASS)
#define O_ALWAYS (O_JSON | O_HELP)

typedef struct opts_s {
    unsigned given; /* O_* seen */
    const char *url, *token, *redis, *redis_user, *redis_pass;
    const char *layout, *body, *title, *starts_at, *hold_ttl, *sales_close_at;
    const char *page, *size, *sub, *role, *ttl, *email, *name, *channels;
    const char *prices[MAX_PRICES];
    int nprices;
    int json;
    const char *args[MAX_ARGS]; /* the command's positional arguments */
    int nargs;
} opts_t;

/* Each option with a value sets the opts_t field at 'offset' (a const char *), except
 * --price (repeatable: 'prices'); --json and --help only set their flag. */
#define NO_FIELD ((size_t)-1)
static const struct {
    const char *name;
    unsigned flag;
    int has_value;
    size_t offset; /* of the field it sets, or NO_FIELD */
} options[] = {
    {"--url", O_URL, 1, offsetof(opts_t, url)},
    {"--token", O_TOKEN, 1, offsetof(opts_t, token)},
    {"--redis", O_REDIS, 1, offsetof(opts_t, redis)},
    {"--redis-user", O_REDIS_USER, 1, offsetof(opts_t, redis_user)},
    {"--redis-pass", O_REDIS_PASS, 1, offsetof(opts_t, redis_pass)},
    {"--json", O_JSON, 0, NO_FIELD},
    {"--help", O_HELP, 0, NO_FIELD},
    {"--layout", O_LAYOUT, 1, offsetof(opts_t, layout)},
    {"--body", O_BODY, 1, offsetof(opts_t, body)},
    {"--title", O_TITLE, 1, offsetof(opts_t, title)},
    {"--starts-at", O_STARTS, 1, offsetof(opts_t, starts_at)},
    {"--hold-ttl", O_HOLD_TTL, 1, offsetof(opts_t, hold_ttl)},
    {"--price", O_PRICE, 1, NO_FIELD},
    {"--sales-close-at", O_CLOSE, 1, offsetof(opts_t, sales_close_at)},
    {"--page", O_PAGE, 1, offsetof(opts_t, page)},
    {"--size", O_SIZE, 1, offsetof(opts_t, size)},
    {"--sub", O_SUB, 1, offsetof(opts_t, sub)},
    {"--role", O_ROLE, 1, offsetof(opts_t, role)},
    {"--ttl", O_TTL, 1, offsetof(opts_t, ttl)},
    {"--email", O_EMAIL, 1, offsetof(opts_t, email)},
    {"--password-stdin", O_PASSWORD_STDIN, 0, NO_FIELD},
    {"--admin", O_ADMIN, 0, NO_FIELD},
    {"--name", O_NAME, 1, offsetof(opts_t, name)},
    {"--channels", O_CHANNELS, 1, offsetof(opts_t, channels)},
};

typedef int (*cmd_fn)(opts_t *o);

static int cmd_token(opts_t *o);
static int cmd_show_create(opts_t *o);
static int cmd_show_list(opts_t *o);
static int cmd_show_get(opts_t *o);
static int cmd_seat_who(opts_t *o);
static int cmd_hold_show(opts_t *o);
static int cmd_hold_release(opts_t *o);
static int cmd_booking_show(opts_t *o);
static int cmd_booking_cancel(opts_t *o);
static int cmd_audit(opts_t *o);
static int cmd_reap(opts_t *o);
static int cmd_user_create(opts_t *o);
static int cmd_channel_set(opts_t *o);
static int cmd_channel_release(opts_t *o);

static const struct command_s {
    const char *group; /* first word */
    const char *verb;  /* second word, or NULL */
    cmd_fn fn;
    unsigned allowed; /* O_* besides O_ALWAYS */
    int nargs;
    const char *synopsis;
    const char *help;
} commands[] = {
    {"show", "create", cmd_show_create,
     O_HTTP | O_LAYOUT | O_BODY | O_TITLE | O_STARTS | O_HOLD_TTL | O_PRICE | O_CLOSE, 0,
     "show create --layout FILE --title T --starts-at ISO --price TIER=AMOUNT... "
     "[--hold-ttl S] [--sales-close-at ISO]\n"
     "       show create --body FILE [--title T] [...]",
     "Creates a show (POST /v1/shows). --layout FILE is a JSON seats array\n"
     "  ([{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},...])\n"
     "  or an object with \"seats\"; --body FILE a whole request body. The options set or\n"
     "  override title, startsAt, holdTtlSeconds, priceTiers (one --price per tier, amounts\n"
     "  in minor units) and salesCloseAt. Prints the new show's id.\n"},
    {"show", "list", cmd_show_list, O_HTTP | O_PAGE | O_SIZE, 0, "show list [--page N] [--size N]",
     "Lists the upcoming shows (GET /v1/shows), every page unless --page is given.\n"
     "  A public read: no token is sent, none is needed.\n"},
    {"show", "get", cmd_show_get, O_HTTP, 1, "show get SHOW",
     "Prints show SHOW (GET /v1/shows/{id}): title, times, hold TTL, prices, seat count.\n"
     "  A public read: no token is sent, none is needed.\n"},
    {"seat", "who", cmd_seat_who, O_RDS, 2, "seat who SHOW SEAT",
     "Who holds or booked seat SEAT of show SHOW, and for how long: reads Redis (the\n"
     "  seat key, its hold record, the bitmaps, Redis's clock) in one read-only step.\n"
     "  Prints the status (available, held, booked), the holder, the hold id and status,\n"
     "  the time left and the deadline; for a booked seat the booking and its owner.\n"},
    {"hold", "show", cmd_hold_show, O_HTTP, 1, "hold show HOLDID",
     "Prints any user's hold (GET /v1/admin/holds/{id}) with the time left.\n"},
    {"hold", "release", cmd_hold_release, O_HTTP, 1, "hold release HOLDID",
     "Releases any user's HELD hold (DELETE /v1/admin/holds/{id}); its seats become\n"
     "  available. A hold being paid or booked is refused (409).\n"},
    {"booking", "show", cmd_booking_show, O_HTTP, 1, "booking show BOOKINGID",
     "Prints any user's booking (GET /v1/admin/bookings/{id}).\n"},
    {"booking", "cancel", cmd_booking_cancel, O_HTTP, 1, "booking cancel BOOKINGID",
     "Cancels any user's CONFIRMED booking by the show's refund policy\n"
     "  (DELETE /v1/admin/bookings/{id}); the seats go back on sale, the refund is made by\n"
     "  reconciliation (refundStatus \"pending\" until the gateway confirms).\n"},
    {"audit", NULL, cmd_audit, O_RDS, 1, "audit SHOW",
     "Checks show SHOW's seat invariant straight in Redis, read-only (tools/show_audit.h):\n"
     "  no seat in two bookings or both held and booked, bitmaps = seat keys and bookings,\n"
     "  hold records = the expiry set and the owners' counts, pending bookings = the\n"
     "  pending set, the outbox. Exit 0: consistent; 1: violations (each printed).\n"},
    {"reap", NULL, cmd_reap, O_HTTP, 1, "reap SHOW",
     "Reaps show SHOW's expired holds now (POST /v1/admin/shows/{id}/reap: the Function\n"
     "  the sweeper runs). Prints how many were reaped and how many are still due.\n"},
    {"user", "create", cmd_user_create, O_HTTP | O_EMAIL | O_PASSWORD_STDIN | O_ADMIN | O_NAME, 0,
     "user create --email EMAIL --password-stdin [--admin] [--name NAME]",
     "Creates an account (POST /v1/admin/users): the password is read from the first line\n"
     "  of standard input (never from the command line), checked and hashed by the worker\n"
     "  (argon2id) as at registration; --admin grants the admin role, so the account's\n"
     "  access tokens (POST /v1/auth/login) carry role \"admin\". Prints the user id.\n"},
    {"channel", "set", cmd_channel_set, O_HTTP | O_BODY, 2, "channel set SHOW NAME --body FILE",
     "Sets what sales channel NAME keeps on show SHOW, replacing what it kept\n"
     "  (PUT /v1/admin/shows/{id}/channels/{name}): FILE is {\"seatIds\":[...],\n"
     "  \"areas\":{\"FLOOR\":100},\"releaseAt\":ISO}, each member optional. Only tokens whose\n"
     "  \"channels\" claim names NAME may hold them (seatctl token --channels NAME).\n"},
    {"channel", "release", cmd_channel_release, O_HTTP, 2, "channel release SHOW NAME",
     "Releases sales channel NAME of show SHOW to everyone now\n"
     "  (DELETE /v1/admin/shows/{id}/channels/{name}): its seats and places go on sale to\n"
     "  every buyer in one step, with a new version of the seat map.\n"},
    {"token", NULL, cmd_token, O_SUB | O_ROLE | O_TTL | O_CHANNELS, 0,
     "token --sub USER [--role admin] [--ttl SECONDS] [--channels NAME,...]",
     "Prints a bearer token for USER signed with SEATD_JWT_SECRET (at least 32 bytes),\n"
     "  else with the stack's secret (the runtime folder's jwt_secret); --ttl defaults to\n"
     "  3600 seconds, --role admin grants the admin role, --channels lists the sales\n"
     "  channels whose kept seats and places its bearer may hold (claim \"channels\").\n"},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fputs("Usage: seatctl [OPTIONS] COMMAND [ARGS]\n\nCommands:\n", out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %s\n", commands[i].synopsis);
    fputs("\nOptions:\n"
          "  --url URL          the API (nginx), default $SEATD_URL, else the stack's:\n"
          "                     http://127.0.0.1:$SEATD_PORT\n"
          "  --token JWT        an admin token, default $SEATD_TOKEN, else one is minted\n"
          "                     (sub \"seatctl\", 5 minutes) from $SEATD_JWT_SECRET, else from\n"
          "                     the runtime folder's jwt_secret; public reads (show list,\n"
          "                     show get) send none\n"
          "  --redis ADDR       host:port or a unix socket path (seat who, audit), default\n"
          "                     $SEATD_REDIS, else the stack's: 127.0.0.1:$SEATD_REDIS_PORT\n"
          "                     (SEATD_PORT + 1000; on a Redis Cluster: any node)\n"
          "  --redis-user USER  Redis ACL user (default: the default user)\n"
          "  --redis-pass PASS  Redis password, default $REDISCLI_AUTH, else the runtime\n"
          "                     folder's redis-admin.pass\n"
          "  --json             one JSON document on stdout\n"
          "  --help             this help, or a command's (seatctl seat who --help)\n"
          "\nThe stack (as deploy/up and deploy/lib.sh find it):\n"
          "  SEATD_PORT         its port (default 8080): the API, Redis (+1000), the folder\n"
          "  SEATD_RUN_DIR      its runtime folder (default run/$SEATD_PORT, in the current\n"
          "                     folder or beside the build folder of this binary)\n"
          "  Explicit options and variables win. One line on stderr names the stack.\n"
          "\nExit status: 0 ok, 1 not found or a failed check, 2 usage error.\n",
          out);
}

static void command_help(FILE *out, const struct command_s *c)
{
    fprintf(out, "Usage: seatctl %s\n\n  %s", c->synopsis, c->help);
    if (c->allowed & O_HTTP)
        fputs("\nOptions: --url URL, --token JWT, --json (see seatctl --help).\n", out);
    else if (c->allowed & O_RDS)
        fputs("\nOptions: --redis ADDR, --redis-user USER, --redis-pass PASS, --json (see "
              "seatctl --help).\n",
              out);
}

/* ---------------------------------------------------------------------------------------
 * Output helpers
 * --------------------------------------------------------------------------------------- */

/* Prints 'j' (taken) as one line of JSON. */
static void print_json(cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    printf("%s\n", s ? s : "null");
    free(s);
    cJSON_Delete(j);
}

/* A failure: text on stderr, and {"error":text} on stdout with --json. Returns EXIT_FAIL. */
__attribute__((format(printf, 2, 3))) static int fail(const opts_t *o, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seatctl: %s\n", msg);
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "error", msg);
        print_json(j);
    }
    return EXIT_FAIL;
}

static int json_usage; /* --json given: a usage error is a JSON document on stdout too */

/* A usage error: text on stderr, and {"error":text,"usage":true} on stdout with --json.
 * Returns EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "seatctl: %s (seatctl --help)\n", msg);
    if (json_usage) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "error", msg);
        cJSON_AddBoolToObject(j, "usage", 1);
        print_json(j);
    }
    return EXIT_USAGE;
}

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* "3m 12.4s" for 'ms' >= 0. */
static void format_left(int64_t ms, char *out, size_t n)
{
    if (ms >= 60000)
        snprintf(out, n, "%lldm %lld.%llds", (long long)(ms / 60000),
                 (long long)(ms % 60000 / 1000), (long long)(ms % 1000 / 100));
    else
        snprintf(out, n, "%lld.%03llds", (long long)(ms / 1000), (long long)(ms % 1000));
}

static const char *jstr(const cJSON *o, const char *name)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return s ? s : "";
}

/* jstr() made safe for a terminal: control characters (C0, DEL, C1) become '?', so a text
 * from the API cannot move the cursor, clear the screen or start a line of its own. The
 * result lives until the fourth call after this one. */
static const char *tstr(const cJSON *o, const char *name)
{
    static char ring[4][1024];
    static int next;
    char *out = ring[next++ % 4];
    const unsigned char *s = (const unsigned char *)jstr(o, name);
    size_t n = 0;
    for (; *s && n + 1 < sizeof ring[0]; s++) {
        if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
            out[n++] = '?';
            s++;
        } else {
            out[n++] = *s < 0x20 || *s == 0x7f ? '?' : (char)*s;
        }
    }
    out[n] = '\0';
    return out;
}

/* ---------------------------------------------------------------------------------------
 * The stack: found as deploy/lib.sh finds it, from SEATD_PORT
 * --------------------------------------------------------------------------------------- */

static struct {
    int port;             /* SEATD_PORT, or DEFAULT_PORT */
    int port_given;       /* SEATD_PORT was set */
    char run[4096];       /* the runtime folder: SEATD_RUN_DIR or run/<port> (may not exist) */
    char run_shown[4096]; /* 'run' as printed */
    int run_given;        /* SEATD_RUN_DIR was set */
    int run_used;         /* a secret was read from it */
    int announced;        /* the stack line was printed */
} stack;

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads SEATD_PORT and finds the runtime folder: SEATD_RUN_DIR, else run/<port> in the current
 * folder, else run/<port> in the parent of this binary's folder (build/seatctl of a checkout).
 * Returns 0, or EXIT_USAGE for a SEATD_PORT that is no port. */
static int stack_init(void)
{
    const char *p = getenv("SEATD_PORT");
    stack.port = DEFAULT_PORT;
    if (p && p[0]) {
        char *end = NULL;
        errno = 0;
        long n = strtol(p, &end, 10);
        if (*end != '\0' || errno || n < 1 || n > 65535)
            return usage_error("SEATD_PORT must be a port number (1-65535), not '%s'", p);
        stack.port = (int)n;
        stack.port_given = 1;
    }
    const char *dir = getenv("SEATD_RUN_DIR");
    if (dir && dir[0]) {
        stack.run_given = 1;
        snprintf(stack.run, sizeof stack.run, "%s", dir);
        snprintf(stack.run_shown, sizeof stack.run_shown, "%s", dir);
        return 0;
    }
    snprintf(stack.run, sizeof stack.run, "run/%d", stack.port);
    snprintf(stack.run_shown, sizeof stack.run_shown, "run/%d", stack.port);
    if (is_dir(stack.run))
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
    snprintf(beside, sizeof beside, "%s/run/%d", exe[0] ? exe : "", stack.port);
    if (is_dir(beside)) {
        snprintf(stack.run, sizeof stack.run, "%s", beside);
        snprintf(stack.run_shown, sizeof stack.run_shown, "%s", beside);
    }
    return 0;
}

/* Reads file 'name' of the runtime folder (a secret: its first line) into 'out' ('n' bytes).
 * Returns 0, or -1 with 'why' set. */
static int stack_secret(const char *name, char *out, size_t n, char *why, size_t whylen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", stack.run, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, whylen, "%.300s/%s: %s", stack.run_shown, name, strerror(errno));
        return -1;
    }
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0]) {
        snprintf(why, whylen, "%.300s/%s is empty", stack.run_shown, name);
        return -1;
    }
    stack.run_used = 1;
    return 0;
}

/* The JWT secret: $SEATD_JWT_SECRET, else (when 'may_use_run') the runtime folder's
 * jwt_secret, into 'out' ('n' bytes). Returns 0, or -1 with 'why' set. */
static int jwt_secret(int may_use_run, char *out, size_t n, char *why, size_t whylen)
{
    const char *secret = getenv("SEATD_JWT_SECRET");
    if (secret && secret[0]) {
        snprintf(out, n, "%s", secret);
    } else if (!may_use_run) {
        snprintf(why, whylen, "SEATD_JWT_SECRET is not set");
        return -1;
    } else if (stack_secret("jwt_secret", out, n, why, whylen) < 0) {
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
static void announce(const char *target, const char *explicit)
{
    if (stack.announced)
        return;
    stack.announced = 1;
    if (explicit && stack.run_used)
        fprintf(stderr, "seatctl: stack %s (%s; secrets from %s)\n", target, explicit,
                stack.run_shown);
    else if (explicit)
        fprintf(stderr, "seatctl: stack %s (%s)\n", target, explicit);
    else if (is_dir(stack.run))
        fprintf(stderr, "seatctl: stack %s (%s)\n", target, stack.run_shown);
    else
        fprintf(stderr, "seatctl: stack %s (%sno runtime folder %s)\n", target,
                stack.port_given ? "" : "SEATD_PORT unset: 8080; ", stack.run_shown);
}

/* The API's base URL (no trailing '/') into 'out' ('n' bytes): --url, $SEATD_URL, or the
 * stack's http://127.0.0.1:PORT. Returns the option or variable that named it, or NULL. */
static const char *api_url(const opts_t *o, char *out, size_t n)
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
    snprintf(out, n, "http://127.0.0.1:%d", stack.port);
    return NULL;
}

/* Redis's address into 'out' ('n' bytes): --redis, $SEATD_REDIS, or the stack's
 * 127.0.0.1:$SEATD_REDIS_PORT (SEATD_PORT + 1000). Returns the option or variable that named
 * it, or NULL. */
static const char *redis_addr(const opts_t *o, char *out, size_t n)
{
    const char *from = o->redis ? "--redis" : "SEATD_REDIS";
    const char *addr = o->redis ? o->redis : getenv("SEATD_REDIS");
    if (addr && addr[0]) {
        snprintf(out, n, "%s", addr);
        return from;
    }
    const char *rp = getenv("SEATD_REDIS_PORT");
    long port = stack.port + REDIS_PORT_OFFSET;
    if (rp && rp[0]) {
        char *end = NULL;
        long v = strtol(rp, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 65535)
            port = v;
    }
    snprintf(out, n, "127.0.0.1:%ld", port);
    return NULL;
}

/* ---------------------------------------------------------------------------------------
 * HTTP (libcurl)
 * --------------------------------------------------------------------------------------- */

typedef struct http_res_s {
    long status; /* 0: no answer */
    char *body;  /* owned, NUL-terminated */
    size_t len;
    cJSON *json; /* the body parsed, or NULL; owned */
    char err[CURL_ERROR_SIZE];
} http_res_t;

static size_t on_body(char *p, size_t size, size_t n, void *data)
{
    http_res_t *res = data;
    size_t add = size * n;
    char *b = realloc(res->body, res->len + add + 1);
    if (!b)
        return 0;
    memcpy(b + res->len, p, add);
    res->len += add;
    b[res->len] = '\0';
    res->body = b;
    return add;
}

static void http_res_free(http_res_t *res)
{
    free(res->body);
    cJSON_Delete(res->json);
}

/* The admin token: --token, $SEATD_TOKEN, or minted from the JWT secret (jwt_secret());
 * the runtime folder's only when 'may_use_run'. Owned, or NULL with 'why' set. */
static char *admin_token(const opts_t *o, int may_use_run, char *why, size_t whylen)
{
    const char *t = o->token ? o->token : getenv("SEATD_TOKEN");
    if (t && t[0])
        return strdup(t);
    char secret[SECRET_FILE_MAX], err[512];
    if (jwt_secret(may_use_run, secret, sizeof secret, err, sizeof err) < 0) {
        snprintf(why, whylen,
                 "no admin token (%.120s): give --token, or set SEATD_TOKEN, SEATD_JWT_SECRET, "
                 "or the stack's SEATD_PORT / SEATD_RUN_DIR",
                 err);
        return NULL;
    }
    seatd_auth_t *auth = NULL;
    char *token = NULL;
    if (seatd_auth_new(secret, strlen(secret), &auth) < 0 ||
        seatd_auth_sign(auth, "seatctl", 1, ADMIN_TOKEN_TTL_S, &token) < 0)
        snprintf(why, whylen, "cannot mint an admin token from the JWT secret");
    memset(secret, 0, sizeof secret);
    seatd_auth_free(auth);
    return token;
}

/* 'method' 'path' with 'body' (JSON, may be NULL): as admin, or with no token at all for a
 * public read ('public_read'). Returns 0 when an answer came (any status), -1 otherwise
 * ('res->err' says why). */
static int http_call(const opts_t *o, const char *method, const char *path, const char *body,
                     int public_read, http_res_t *res)
{
    memset(res, 0, sizeof *res);
    char base[2048];
    const char *explicit = api_url(o, base, sizeof base);
    char *token = NULL;
    if (!public_read)
        token = admin_token(o, !explicit || stack.run_given, res->err, sizeof res->err);
    announce(strncmp(base, "http://", 7) == 0 ? base + 7 : base, explicit);
    if (!public_read && !token)
        return -1;
    char url[4096], auth[4096];
    snprintf(url, sizeof url, "%s%s", base, path);
    if (token)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    free(token);
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(res->err, sizeof res->err, "libcurl failed to start");
        return -1;
    }
    struct curl_slist *h = public_read ? NULL : curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Accept: application/json");
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, res);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, res->err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body || strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
    else if (!res->err[0])
        snprintf(res->err, sizeof res->err, "%s", curl_easy_strerror(cc));
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK)
        return -1;
    if (res->body)
        res->json = cJSON_ParseWithLength(res->body, res->len);
    return 0;
}

/*
 * Runs one call (as admin, or a public read without a token) and settles the failures: no
 * answer, or a non-2xx status (the problem's title and detail on stderr; with --json the
 * problem itself on stdout). Returns -1 when the call succeeded ('res' holds the answer, to
 * be freed), else the exit status.
 */
static int http_generic(const opts_t *o, const char *method, const char *path, const char *body,
                        int public_read, http_res_t *res)
{
    if (http_call(o, method, path, body, public_read, res) < 0) {
        int rc = fail(o, "%s %s: %s", method, path, res->err);
        http_res_free(res);
        return rc;
    }
    if (res->status >= 200 && res->status < 300)
        return -1;
    const char *title = tstr(res->json, "title"), *detail = tstr(res->json, "detail");
    fprintf(stderr, "seatctl: %s %s: %ld %s%s%s\n", method, path, res->status,
            title[0] ? title : "failed", detail[0] ? ": " : "", detail);
    if (!public_read && (res->status == 401 || res->status == 403))
        fprintf(stderr, "seatctl: the token is not an admin token of this stack\n");
    if (o->json) {
        if (res->json) {
            print_json(res->json);
            res->json = NULL;
        } else {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "status", (double)res->status);
            cJSON_AddStringToObject(j, "error", "no JSON answer");
            print_json(j);
        }
    }
    http_res_free(res);
    return EXIT_FAIL;
}

static int http_admin(const opts_t *o, const char *method, const char *path, const char *body,
                      http_res_t *res)
{
    return http_generic(o, method, path, body, 0, res);
}

/* A public read (GET, no token). */
static int http_public(const opts_t *o, const char *path, http_res_t *res)
{
    return http_generic(o, "GET", path, NULL, 1, res);
}

/* Prints an answer's members as "name: value" lines (arrays comma-joined). */
static void print_record(const cJSON *o)
{
    const cJSON *m = NULL;
    cJSON_ArrayForEach(m, o)
    {
        if (cJSON_IsString(m)) {
            printf("%-14s %s\n", m->string, m->valuestring);
        } else if (cJSON_IsNumber(m)) {
            printf("%-14s %.0f\n", m->string, m->valuedouble);
        } else if (cJSON_IsArray(m)) {
            printf("%-14s ", m->string);
            const cJSON *e = NULL;
            int first = 1;
            cJSON_ArrayForEach(e, m)
            {
                const char *s = cJSON_GetStringValue(e);
                printf("%s%s", first ? "" : ",", s ? s : "?");
                first = 0;
            }
            printf("\n");
        } else if (cJSON_IsBool(m)) {
            printf("%-14s %s\n", m->string, cJSON_IsTrue(m) ? "true" : "false");
        } else if (cJSON_IsObject(m)) { /* {"standard":1200,"vip":2500}: standard=1200,vip=2500 */
            printf("%-14s ", m->string);
            const cJSON *e = NULL;
            int first = 1;
            cJSON_ArrayForEach(e, m)
            {
                if (cJSON_IsNumber(e))
                    printf("%s%s=%.0f", first ? "" : ",", e->string, e->valuedouble);
                else
                    printf("%s%s=%s", first ? "" : ",", e->string,
                           cJSON_IsString(e) ? e->valuestring : "...");
                first = 0;
            }
            printf("\n");
        }
    }
}

/* Prints a successful answer: its JSON with --json, else the record. */
static int print_answer(const opts_t *o, http_res_t *res)
{
    if (o->json) {
        print_json(res->json ? res->json : cJSON_CreateObject());
        res->json = NULL;
    } else {
        print_record(res->json);
    }
    http_res_free(res);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * Ids
 * --------------------------------------------------------------------------------------- */

static int check_id(const char *id, char kind)
{
    char show[SEATD_ID_MAX];
    if (seatd_keys_parse_id(id, kind, show) == 0)
        return 0;
    return usage_error("'%s' is not a %s id (<show>-%c<20 hex>)", id,
                       kind == 'h' ? "hold" : "booking", kind);
}

static int check_show_id(const char *id)
{
    if (seatd_keys_valid_show_id(id))
        return 0;
    return usage_error("'%s' is not a show id (1-18 digits)", id);
}

/* ---------------------------------------------------------------------------------------
 * Commands over the API
 * --------------------------------------------------------------------------------------- */

/* A show body or layout file, at most: the API takes a body of 16 MiB at most anyway, and
 * /dev/zero or a wrong file must not eat the machine's memory. */
#define SEATCTL_FILE_MAX (32 << 20)

static cJSON *read_json_file(const char *path, char *why, size_t whylen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *b = realloc(buf, cap);
            if (!b)
                abort();
            buf = b;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0 && len <= SEATCTL_FILE_MAX);
    if (f != stdin)
        fclose(f);
    cJSON *j = len > SEATCTL_FILE_MAX ? NULL : cJSON_ParseWithLength(buf ? buf : "", len);
    free(buf);
    if (!j && len > SEATCTL_FILE_MAX)
        snprintf(why, whylen, "%s is larger than %d MiB", path, SEATCTL_FILE_MAX >> 20);
    else if (!j)
        snprintf(why, whylen, "%s is not JSON", path);
    return j;
}

static void set_member(cJSON *obj, const char *name, cJSON *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(obj, name);
    cJSON_AddItemToObject(obj, name, value);
}

static int cmd_show_create(opts_t *o)
{
    char why[512];
    if (!o->layout && !o->body)
        return usage_error("show create needs --layout FILE or --body FILE");
    cJSON *body = NULL;
    if (o->body) {
        body = read_json_file(o->body, why, sizeof why);
        if (!body || !cJSON_IsObject(body)) {
            cJSON_Delete(body);
            return usage_error("--body: %s", body ? "not a JSON object" : why);
        }
    } else {
        body = cJSON_CreateObject();
    }
    if (o->layout) {
        cJSON *l = read_json_file(o->layout, why, sizeof why);
        cJSON *seats = cJSON_IsArray(l) ? l : cJSON_DetachItemFromObjectCaseSensitive(l, "seats");
        if (!cJSON_IsArray(seats)) {
            if (seats != l)
                cJSON_Delete(seats);
            cJSON_Delete(l);
            cJSON_Delete(body);
            return usage_error("--layout: %s", l ? "no seats array" : why);
        }
        set_member(body, "seats", seats);
        if (seats != l)
            cJSON_Delete(l);
    }
    if (o->title)
        set_member(body, "title", cJSON_CreateString(o->title));
    if (o->starts_at)
        set_member(body, "startsAt", cJSON_CreateString(o->starts_at));
    if (o->sales_close_at)
        set_member(body, "salesCloseAt", cJSON_CreateString(o->sales_close_at));
    if (o->hold_ttl) {
        char *end = NULL;
        long ttl = strtol(o->hold_ttl, &end, 10);
        if (*end != '\0' || ttl <= 0) {
            cJSON_Delete(body);
            return usage_error("--hold-ttl takes seconds (a positive integer)");
        }
        set_member(body, "holdTtlSeconds", cJSON_CreateNumber((double)ttl));
    }
    if (o->nprices) {
        cJSON *tiers = cJSON_CreateObject();
        for (int i = 0; i < o->nprices; i++) {
            const char *eq = strchr(o->prices[i], '=');
            char *end = NULL;
            long long amount = eq ? strtoll(eq + 1, &end, 10) : -1;
            if (!eq || eq == o->prices[i] || !end || *end != '\0' || eq[1] == '\0' || amount < 0) {
                cJSON_Delete(tiers);
                cJSON_Delete(body);
                return usage_error("--price takes TIER=AMOUNT (minor units), not '%s'",
                                   o->prices[i]);
            }
            char tier[64];
            snprintf(tier, sizeof tier, "%.*s", (int)(eq - o->prices[i]), o->prices[i]);
            set_member(tiers, tier, cJSON_CreateNumber((double)amount));
        }
        set_member(body, "priceTiers", tiers);
    }
    static const char *const required[] = {"title", "startsAt", "priceTiers", "seats"};
    static const char *const flag[] = {"--title", "--starts-at", "--price", "--layout"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(body, required[i])) {
            cJSON_Delete(body);
            return usage_error("show create needs %s (or \"%s\" in --body)", flag[i], required[i]);
        }
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    http_res_t res;
    int rc = http_admin(o, "POST", "/v1/shows", text, &res);
    free(text);
    if (rc >= 0)
        return rc;
    if (o->json)
        return print_answer(o, &res);
    printf("created show %s: \"%s\", %.0f seats, starts %s\n", jstr(res.json, "id"),
           tstr(res.json, "title"),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "seatCount")),
           jstr(res.json, "startsAt"));
    http_res_free(&res);
    return EXIT_OK;
}

static int parse_count(const char *v, const char *name, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno || n < 1 || n > max)
        return usage_error("%s takes 1..%ld", name, max);
    *out = n;
    return 0;
}

static int cmd_show_list(opts_t *o)
{
    long page = 1, size = 100;
    if (o->page && parse_count(o->page, "--page", 100000, &page) != 0)
        return EXIT_USAGE;
    if (o->size && parse_count(o->size, "--size", 100, &size) != 0)
        return EXIT_USAGE;
    cJSON *items = cJSON_CreateArray();
    double total = 0;
    for (;; page++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/shows?page=%ld&size=%ld", page, size);
        http_res_t res;
        int rc = http_public(o, path, &res);
        if (rc >= 0) {
            cJSON_Delete(items);
            return rc;
        }
        cJSON *got = cJSON_GetObjectItemCaseSensitive(res.json, "items");
        total = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "total"));
        int n = cJSON_GetArraySize(got);
        while (cJSON_GetArraySize(got) > 0)
            cJSON_AddItemToArray(items, cJSON_DetachItemFromArray(got, 0));
        http_res_free(&res);
        if (o->page || n < size || (double)cJSON_GetArraySize(items) >= total)
            break;
    }
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "items", items);
        cJSON_AddNumberToObject(j, "total", total);
        print_json(j);
        return EXIT_OK;
    }
    printf("%-8s %-26s %7s  %s\n", "ID", "STARTS", "SEATS", "TITLE");
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, items)
    {
        printf("%-8s %-26s %7.0f  %s\n", tstr(s, "id"), tstr(s, "startsAt"),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "seatCount")),
               tstr(s, "title"));
    }
    printf("%d of %.0f upcoming shows\n", cJSON_GetArraySize(items), total);
    cJSON_Delete(items);
    return EXIT_OK;
}

static int cmd_show_get(opts_t *o)
{
    int rc = check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[96];
    snprintf(path, sizeof path, "/v1/shows/%s", o->args[0]);
    http_res_t res;
    if ((rc = http_public(o, path, &res)) >= 0)
        return rc;
    return print_answer(o, &res);
}

static int64_t iso_ms(const cJSON *o, const char *name)
{
    int64_t ms = 0;
    const char *s = jstr(o, name);
    return s[0] && seatd_time_parse(s, &ms) == 0 ? ms : 0;
}

static int record_cmd(opts_t *o, const char *method, const char *what, char kind)
{
    int rc = check_id(o->args[0], kind);
    if (rc)
        return rc;
    char path[128];
    snprintf(path, sizeof path, "/v1/admin/%s/%s", what, o->args[0]);
    http_res_t res;
    if ((rc = http_admin(o, method, path, NULL, &res)) >= 0)
        return rc;
    if (!o->json && kind == 'h') {
        const char *status = jstr(res.json, "status");
        int64_t exp = iso_ms(res.json, "expiresAt");
        if (exp && (strcmp(status, "HELD") == 0 || strcmp(status, "PENDING_PAYMENT") == 0)) {
            char left[48];
            int64_t ms = exp - now_ms();
            format_left(ms > 0 ? ms : 0, left, sizeof left);
            print_record(res.json);
            printf("%-14s %s (this machine's clock)\n", "timeLeft", left);
            http_res_free(&res);
            return EXIT_OK;
        }
    }
    return print_answer(o, &res);
}

static int cmd_hold_show(opts_t *o)
{
    return record_cmd(o, "GET", "holds", 'h');
}

static int cmd_hold_release(opts_t *o)
{
    return record_cmd(o, "DELETE", "holds", 'h');
}

static int cmd_booking_show(opts_t *o)
{
    return record_cmd(o, "GET", "bookings", 'b');
}

static int cmd_booking_cancel(opts_t *o)
{
    return record_cmd(o, "DELETE", "bookings", 'b');
}

/* channel set / release: the admin route of channel o->args[1] of show o->args[0]. */
static int channel_cmd(opts_t *o, const char *method, const char *body)
{
    int rc = check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[160];
    snprintf(path, sizeof path, "/v1/admin/shows/%s/channels/%.40s", o->args[0], o->args[1]);
    http_res_t res;
    if ((rc = http_admin(o, method, path, body, &res)) >= 0)
        return rc;
    if (o->json)
        return print_answer(o, &res);
    printf("show %s: channel %s %s, version %.0f\n", o->args[0], o->args[1],
           strcmp(method, "DELETE") == 0 ? "released" : "set",
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "version")));
    http_res_free(&res);
    return EXIT_OK;
}

static int cmd_channel_set(opts_t *o)
{
    char why[512];
    if (o->body == NULL)
        return usage_error("channel set needs --body FILE");
    cJSON *body = read_json_file(o->body, why, sizeof why);
    if (body == NULL)
        return usage_error("%s", why);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    int rc = channel_cmd(o, "PUT", text);
    free(text);
    return rc;
}

static int cmd_channel_release(opts_t *o)
{
    return channel_cmd(o, "DELETE", NULL);
}

static int cmd_reap(opts_t *o)
{
    int rc = check_show_id(o->args[0]);
    if (rc)
        return rc;
    char path[96];
    snprintf(path, sizeof path, "/v1/admin/shows/%s/reap", o->args[0]);
    http_res_t res;
    if ((rc = http_admin(o, "POST", path, NULL, &res)) >= 0)
        return rc;
    if (o->json)
        return print_answer(o, &res);
    printf("show %s: reaped %.0f expired holds, %.0f still due, version %.0f\n", o->args[0],
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "reaped")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "due")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(res.json, "version")));
    http_res_free(&res);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * Redis, read-only
 * --------------------------------------------------------------------------------------- */

/* Connects and authenticates; NULL after printing why. The client follows a Redis Cluster's
 * redirections from the node given (tools/redis_sync.h): every key of a show shares its slot. */
static seatd_redis_t *redis_open(const opts_t *o)
{
    char addr[1024];
    const char *explicit = redis_addr(o, addr, sizeof addr);
    char host[1024];
    int port = 0;
    if (strncmp(addr, "unix:", 5) == 0 || addr[0] == '/') {
        snprintf(host, sizeof host, "%s", addr[0] == '/' ? addr : addr + 5);
    } else {
        const char *colon = strrchr(addr, ':');
        port = colon ? atoi(colon + 1) : 0;
        if (!colon || port <= 0 || port > 65535) {
            fail(o, "--redis takes host:port or a unix socket path, not '%s'", addr);
            return NULL;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    }
    /* The password: --redis-pass, $REDISCLI_AUTH, else the stack's admin password (deploy/up's
     * default user) when Redis is the stack's or its runtime folder was named. */
    const char *pass = o->redis_pass ? o->redis_pass : getenv("REDISCLI_AUTH");
    char file_pass[SECRET_FILE_MAX], why[512];
    if ((!pass || !pass[0]) && (!explicit || stack.run_given) && is_dir(stack.run) &&
        stack_secret("redis-admin.pass", file_pass, sizeof file_pass, why, sizeof why) == 0)
        pass = file_pass;
    char target[1100];
    snprintf(target, sizeof target, "redis %s", addr);
    announce(target, explicit);
    seatd_redis_opts_t ro = {.host = host,
                             .port = port,
                             .user = pass && pass[0] ? o->redis_user : NULL,
                             .password = pass && pass[0] ? pass : NULL,
                             .timeout_ms = 60000};
    char err[512];
    seatd_redis_t *c = seatd_redis_connect(&ro, err, sizeof err);
    memset(file_pass, 0, sizeof file_pass);
    if (!c)
        fail(o, "redis %s: %s", addr, err);
    return c;
}

/* The seat's index in the show's layout: >= 0, -1 when the show or seat is unknown (printed),
 * -2 on a Redis failure (printed). */
static int seat_index(const opts_t *o, seatd_redis_t *c, const char *show, const char *seat)
{
    redisReply *lh = seatd_redis_command(c, "HGET {s:%s}:meta layoutHash", show);
    if (!lh || lh->type == REDIS_REPLY_ERROR) {
        fail(o, "redis: %s", lh ? lh->str : seatd_redis_errstr(c));
        if (lh)
            freeReplyObject(lh);
        return -2;
    }
    if (lh->type != REDIS_REPLY_STRING) {
        freeReplyObject(lh);
        fail(o, "show %s not found", show);
        return -1;
    }
    redisReply *lay = seatd_redis_command(c, "GET seatd:layout:%s", lh->str);
    freeReplyObject(lh);
    if (!lay || lay->type != REDIS_REPLY_STRING) {
        fail(o, "show %s: its layout is missing", show);
        if (lay)
            freeReplyObject(lay);
        return -2;
    }
    cJSON *doc = cJSON_ParseWithLength(lay->str, lay->len);
    freeReplyObject(lay);
    int i = 0, found = -1;
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, doc)
    {
        if (strcmp(jstr(s, "id"), seat) == 0) {
            found = i;
            break;
        }
        i++;
    }
    cJSON_Delete(doc);
    if (found < 0)
        fail(o, "seat %s is not in show %s", seat, show);
    return found;
}

/* The seat key, its TTL, both bits, Redis's clock and the hold record, in one read-only step:
 * {holdId or "", pttl, heldBit, bookedBit, nowMs[, owner, status, expiresAt, bookingId]}. */
static const char seat_who_lua[] =
    "local v = redis.call('GET', KEYS[1]) "
    "local t = redis.call('TIME') "
    "local out = {v or '', redis.call('PTTL', KEYS[1]), "
    "  redis.call('GETBIT', KEYS[2], tonumber(ARGV[1])), "
    "  redis.call('GETBIT', KEYS[3], tonumber(ARGV[1])), "
    "  tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))} "
    "if v then "
    "  local h = redis.call('HMGET', ARGV[2] .. v, 'owner', 'status', 'expiresAt', 'bookingId') "
    "  for i = 1, 4 do out[#out + 1] = h[i] or '' end "
    "end "
    "return out";

/* The CONFIRMED booking listing 'seat' (a SCAN of the show's bookings): 0 found, -1 none. */
static int find_booking(seatd_redis_t *c, const char *show, const char *seat, char *id, size_t idn,
                        char *owner, size_t ownern)
{
    char cursor[32] = "0";
    int found = -1;
    do {
        redisReply *r =
            seatd_redis_command(c, "SCAN %s MATCH {s:%s}:booking:* COUNT 1000", cursor, show);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements && found < 0; i++) {
            const char *key = r->element[1]->element[i]->str;
            redisReply *h = seatd_redis_command(c, "HMGET %s status seatIds owner", key);
            if (h && h->type == REDIS_REPLY_ARRAY && h->elements == 3 &&
                h->element[0]->type == REDIS_REPLY_STRING &&
                strcmp(h->element[0]->str, "CONFIRMED") == 0 &&
                h->element[1]->type == REDIS_REPLY_STRING) {
                size_t n = strlen(seat);
                for (const char *p = h->element[1]->str; p && *p;) {
                    const char *q = strchr(p, ',');
                    size_t len = q ? (size_t)(q - p) : strlen(p);
                    if (len == n && memcmp(p, seat, n) == 0) {
                        snprintf(id, idn, "%s", strrchr(key, ':') + 1);
                        snprintf(owner, ownern, "%s",
                                 h->element[2]->type == REDIS_REPLY_STRING ? h->element[2]->str
                                                                           : "");
                        found = 0;
                        break;
                    }
                    p = q ? q + 1 : NULL;
                }
            }
            if (h)
                freeReplyObject(h);
        }
        freeReplyObject(r);
    } while (found < 0 && strcmp(cursor, "0") != 0);
    return found;
}

static int cmd_seat_who(opts_t *o)
{
    const char *show = o->args[0], *seat = o->args[1];
    int rc = check_show_id(show);
    if (rc)
        return rc;
    if (!seatd_keys_valid_seat_id(seat))
        return usage_error("'%s' is not a seat id ([A-Za-z0-9_-]{1,16})", seat);
    seatd_redis_t *c = redis_open(o);
    if (!c)
        return EXIT_FAIL;
    int idx = seat_index(o, c, show, seat);
    if (idx < 0) {
        seatd_redis_free(c);
        return EXIT_FAIL;
    }
    char seat_key[SEATD_KEY_MAX], held[SEATD_KEY_MAX], booked[SEATD_KEY_MAX];
    char hold_prefix[SEATD_KEY_MAX], bit[16];
    snprintf(seat_key, sizeof seat_key, "{s:%s}:seat:%s", show, seat);
    snprintf(held, sizeof held, "{s:%s}:held", show);
    snprintf(booked, sizeof booked, "{s:%s}:booked", show);
    snprintf(hold_prefix, sizeof hold_prefix, "{s:%s}:hold:", show);
    snprintf(bit, sizeof bit, "%d", idx);
    const char *argv[] = {"EVAL_RO", seat_who_lua, "3", seat_key, held, booked, bit, hold_prefix};
    redisReply *r = seatd_redis_commandv(c, 8, argv, NULL);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 5) {
        rc = fail(o, "redis: %s",
                  r && r->type == REDIS_REPLY_ERROR ? r->str : seatd_redis_errstr(c));
        if (r)
            freeReplyObject(r);
        seatd_redis_free(c);
        return rc;
    }
    const char *hold = r->element[0]->str;
    long long held_bit = r->element[2]->integer, booked_bit = r->element[3]->integer;
    int64_t now = strtoll(r->element[4]->str, NULL, 10);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "showId", show);
    cJSON_AddStringToObject(j, "seat", seat);
    cJSON_AddNumberToObject(j, "index", idx);
    char ts[SEATD_TIME_STR_MAX], line[512];
    if (hold[0] && r->elements == 9) {
        const char *owner = r->element[5]->str, *status = r->element[6]->str;
        int64_t exp = strtoll(r->element[7]->str, NULL, 10), left = exp - now;
        const char *booking = r->element[8]->str;
        seatd_time_format(exp, ts);
        cJSON_AddStringToObject(j, "status", "held");
        cJSON_AddStringToObject(j, "holder", owner);
        cJSON_AddStringToObject(j, "holdId", hold);
        cJSON_AddStringToObject(j, "holdStatus", status);
        cJSON_AddStringToObject(j, "expiresAt", ts);
        cJSON_AddNumberToObject(j, "msLeft", (double)(left > 0 ? left : 0));
        cJSON_AddNumberToObject(j, "keyPttlMs", (double)r->element[1]->integer);
        if (booking[0])
            cJSON_AddStringToObject(j, "bookingId", booking);
        cJSON_AddBoolToObject(j, "heldBit", held_bit == 1);
        char left_s[48];
        format_left(left > 0 ? left : 0, left_s, sizeof left_s);
        snprintf(line, sizeof line,
                 "show %s seat %s: HELD by %s, hold %s (%s%s%s), %s left, until %s", show, seat,
                 owner[0] ? owner : "?", hold, status[0] ? status : "no record",
                 booking[0] ? ", booking " : "", booking, left_s, ts);
    } else if (booked_bit) {
        char bid[SEATD_ID_MAX] = "", owner[80] = "";
        int found = find_booking(c, show, seat, bid, sizeof bid, owner, sizeof owner);
        cJSON_AddStringToObject(j, "status", "booked");
        if (found == 0) {
            cJSON_AddStringToObject(j, "bookingId", bid);
            cJSON_AddStringToObject(j, "owner", owner);
            snprintf(line, sizeof line, "show %s seat %s: BOOKED by %s, booking %s", show, seat,
                     owner, bid);
        } else {
            snprintf(line, sizeof line,
                     "show %s seat %s: BOOKED, but no CONFIRMED booking lists it (seatctl audit "
                     "%s)",
                     show, seat, show);
        }
    } else {
        cJSON_AddStringToObject(j, "status", "available");
        if (held_bit)
            cJSON_AddBoolToObject(j, "heldBit", 1); /* an ended hold not reaped yet */
        snprintf(line, sizeof line, "show %s seat %s: AVAILABLE%s", show, seat,
                 held_bit ? " (its hold ended; the held bit awaits the sweeper)" : "");
    }
    freeReplyObject(r);
    seatd_redis_free(c);
    if (o->json)
        print_json(j);
    else {
        printf("%s\n", line);
        cJSON_Delete(j);
    }
    return EXIT_OK;
}

/* Collects the violations (the first 1,000) for the answer. */
static void on_violation(const char *check, const char *text, void *data)
{
    cJSON *list = data;
    if (cJSON_GetArraySize(list) >= 1000)
        return;
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "check", check);
    cJSON_AddStringToObject(v, "text", text);
    cJSON_AddItemToArray(list, v);
}

static int cmd_audit(opts_t *o)
{
    const char *show = o->args[0];
    int rc = check_show_id(show);
    if (rc)
        return rc;
    seatd_redis_t *c = redis_open(o);
    if (!c)
        return EXIT_FAIL;
    seatd_audit_report_t rep;
    struct {
        cJSON *list;
    } out = {NULL};
    char err[512];
    int attempt = 0;
    /* A failing audit of a show that changed while it was read is run again: the whole-show
     * comparisons may have seen a transient difference (show_audit.h). */
    for (;;) {
        cJSON_Delete(out.list);
        out.list = cJSON_CreateArray();
        seatd_audit_opts_t ao = {
            .wins = -1, .bookings = -1, .on_violation = on_violation, .data = out.list};
        rc = seatd_audit_show_sync(c, show, &ao, &rep, err, sizeof err);
        attempt++;
        if (rc < 0 || rep.violations == 0 || rep.stable || attempt == AUDIT_ATTEMPTS)
            break;
    }
    seatd_redis_free(c);
    if (rc < 0) {
        cJSON_Delete(out.list);
        return fail(o, "%s", err);
    }
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "showId", show);
        cJSON_AddBoolToObject(j, "ok", rep.violations == 0);
        cJSON_AddNumberToObject(j, "violationCount", (double)rep.violations);
        cJSON_AddItemToObject(j, "violations", out.list);
        cJSON_AddNumberToObject(j, "seats", rep.nseats);
        cJSON_AddNumberToObject(j, "heldSeats", (double)rep.held_seats);
        cJSON_AddNumberToObject(j, "bookedSeats", (double)rep.booked_seats);
        cJSON_AddNumberToObject(j, "seatKeys", (double)rep.seat_keys);
        cJSON_AddNumberToObject(j, "holds", (double)rep.holds);
        cJSON_AddNumberToObject(j, "liveHolds", (double)rep.live_holds);
        cJSON_AddNumberToObject(j, "confirmedBookings", (double)rep.confirmed);
        cJSON_AddNumberToObject(j, "pendingBookings", (double)rep.pending);
        cJSON_AddNumberToObject(j, "areas", (double)rep.areas);
        cJSON_AddNumberToObject(j, "areaPlaces", (double)rep.area_places);
        cJSON_AddNumberToObject(j, "version", (double)rep.version);
        cJSON_AddBoolToObject(j, "stable", rep.stable);
        cJSON_AddNumberToObject(j, "attempts", attempt);
        print_json(j);
    } else {
        const cJSON *v = NULL;
        cJSON_ArrayForEach(v, out.list)
        {
            printf("VIOLATION [%s] %s\n", jstr(v, "check"), jstr(v, "text"));
        }
        cJSON_Delete(out.list);
        printf("audit show %s: %s: %d seats, %ld held, %ld booked, %ld live holds, %ld "
               "bookings confirmed, %ld pending, %ld places taken in %ld areas, version %lld%s; "
               "%ld violations\n",
               show, rep.violations ? "FAILED" : "consistent", rep.nseats, rep.held_seats,
               rep.booked_seats, rep.live_holds, rep.confirmed, rep.pending, rep.area_places,
               rep.areas, rep.version, rep.stable ? "" : " (the show changed while it was read)",
               rep.violations);
    }
    return rep.violations ? EXIT_FAIL : EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * token
 * --------------------------------------------------------------------------------------- */

static int cmd_token(opts_t *o)
{
    long long ttl = 3600;
    if (o->ttl) {
        char *end = NULL;
        errno = 0;
        ttl = strtoll(o->ttl, &end, 10);
        if (*o->ttl == '\0' || *end != '\0' || errno || ttl <= 0 || ttl > 366LL * 86400)
            return usage_error("--ttl must be 1..31622400 seconds");
    }
    if (o->sub == NULL)
        return usage_error("token needs --sub USER");
    if (o->role != NULL && strcmp(o->role, "admin") != 0)
        return usage_error("the only role is 'admin'");
    char secret[SECRET_FILE_MAX], why[512];
    if (jwt_secret(1, secret, sizeof secret, why, sizeof why) < 0)
        return fail(o,
                    "no JWT secret (%s): set SEATD_JWT_SECRET (at least %d bytes), or SEATD_PORT "
                    "/ SEATD_RUN_DIR for the stack whose runtime folder holds jwt_secret",
                    why, SEATD_AUTH_MIN_SECRET);
    if (stack.run_used) { /* say whose secret signed it */
        char target[64];
        snprintf(target, sizeof target, "127.0.0.1:%d", stack.port);
        announce(target, NULL);
    }
    seatd_auth_t *auth = NULL;
    int bad = seatd_auth_new(secret, strlen(secret), &auth) < 0;
    memset(secret, 0, sizeof secret);
    if (bad)
        return fail(o, "bad secret");
    char *token = NULL;
    int rc = seatd_auth_sign_channels(auth, o->sub, o->role != NULL, o->channels, ttl, &token);
    seatd_auth_free(auth);
    if (rc < 0)
        return usage_error("'%s' is not a valid user id (^[A-Za-z0-9_.@:|-]{1,64}$), or "
                           "--channels is not up to 8 names of [a-z0-9_-]{1,32}",
                           o->sub);
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "token", token);
        print_json(j);
    } else {
        printf("%s\n", token);
    }
    free(token);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * user create
 * --------------------------------------------------------------------------------------- */

static int cmd_user_create(opts_t *o)
{
    if (o->email == NULL)
        return usage_error("user create needs --email EMAIL");
    if (!(o->given & O_PASSWORD_STDIN))
        return usage_error("user create needs --password-stdin (the password on standard input)");
    char pw[1024];
    if (fgets(pw, sizeof pw, stdin) == NULL)
        return fail(o, "no password on standard input");
    size_t len = strlen(pw);
    if (len > 0 && pw[len - 1] != '\n' && !feof(stdin))
        return fail(o, "the password is too long");
    while (len > 0 && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
        pw[--len] = '\0';
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "email", o->email);
    cJSON_AddStringToObject(body, "password", pw);
    memset(pw, 0, sizeof pw);
    if (o->name)
        cJSON_AddStringToObject(body, "name", o->name);
    cJSON_AddBoolToObject(body, "admin", (o->given & O_ADMIN) != 0);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    http_res_t res;
    int rc = http_admin(o, "POST", "/v1/admin/users", text, &res);
    memset(text, 0, strlen(text));
    free(text);
    if (rc >= 0)
        return rc;
    if (o->json)
        return print_answer(o, &res);
    printf("%s\n", jstr(res.json, "userId"));
    http_res_free(&res);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * main: options anywhere, then the command words and their arguments
 * --------------------------------------------------------------------------------------- */

static int set_option(opts_t *o, size_t k, const char *v)
{
    if (options[k].flag == O_PRICE) {
        if (o->nprices == MAX_PRICES)
            return usage_error("at most %d --price options", MAX_PRICES);
        o->prices[o->nprices++] = v;
    } else if (options[k].flag == O_JSON) {
        o->json = 1;
    } else if (options[k].offset != NO_FIELD) {
        *(const char **)((char *)o + options[k].offset) = v;
    }
    o->given |= options[k].flag;
    return 0;
}

int main(int argc, char **argv)
{
    seatd_mem_init();
    opts_t o = {0};
    const char *words[MAX_ARGS + 2];
    int nwords = 0;
    for (int i = 1; i < argc; i++)
        json_usage |= strcmp(argv[i], "--json") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0)
            a = "--help";
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
            if (nwords == MAX_ARGS + 2)
                return usage_error("too many arguments");
            words[nwords++] = a;
            continue;
        }
        size_t k = 0;
        const char *eq = strchr(a, '=');
        size_t namelen = eq ? (size_t)(eq - a) : strlen(a);
        for (k = 0; k < sizeof options / sizeof options[0]; k++)
            if (strlen(options[k].name) == namelen && strncmp(a, options[k].name, namelen) == 0)
                break;
        if (k == sizeof options / sizeof options[0])
            return usage_error("unknown option '%s'", a);
        const char *v = NULL;
        if (options[k].has_value) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else
                return usage_error("%s needs a value", options[k].name);
        } else if (eq) {
            return usage_error("%s takes no value", options[k].name);
        }
        if (set_option(&o, k, v) != 0)
            return EXIT_USAGE;
    }
    if (strcmp(nwords ? words[0] : "", "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (nwords == 0) {
        if (o.given & O_HELP) {
            usage(stdout);
            return EXIT_OK;
        }
        usage(stderr);
        return usage_error("no command given");
    }
    const struct command_s *cmd = NULL;
    int group_known = 0;
    for (size_t i = 0; i < NCOMMANDS && !cmd; i++) {
        if (strcmp(commands[i].group, words[0]) != 0)
            continue;
        group_known = 1;
        if (commands[i].verb == NULL || (nwords > 1 && strcmp(commands[i].verb, words[1]) == 0))
            cmd = &commands[i];
    }
    if (!cmd && !group_known)
        return usage_error("unknown command '%s'", words[0]);
    if (!cmd) {
        /* A group without its verb: its commands' help, or the list of its verbs. */
        char verbs[128] = "";
        for (size_t i = 0; i < NCOMMANDS; i++) {
            if (strcmp(commands[i].group, words[0]) != 0)
                continue;
            if (o.given & O_HELP) {
                command_help(stdout, &commands[i]);
                fputs("\n", stdout);
            }
            size_t len = strlen(verbs);
            snprintf(verbs + len, sizeof verbs - len, "%s%s", len ? ", " : "", commands[i].verb);
        }
        if (o.given & O_HELP)
            return EXIT_OK;
        return usage_error("'%s' needs a subcommand: %s", words[0], verbs);
    }
    if (o.given & O_HELP) {
        command_help(stdout, cmd);
        return EXIT_OK;
    }
    unsigned extra = o.given & ~(cmd->allowed | O_ALWAYS);
    if (extra) {
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
            if (extra & options[k].flag)
                return usage_error("%s does not apply to '%s%s%s'", options[k].name, cmd->group,
                                   cmd->verb ? " " : "", cmd->verb ? cmd->verb : "");
    }
    int skip = cmd->verb ? 2 : 1;
    o.nargs = nwords - skip;
    if (o.nargs != cmd->nargs)
        return usage_error("usage: seatctl %s", cmd->synopsis);
    for (int i = 0; i < o.nargs; i++)
        o.args[i] = words[skip + i];
    int rc = stack_init();
    if (rc)
        return rc;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmd->fn(&o);
    curl_global_cleanup();
    return rc;
}
