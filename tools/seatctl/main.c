/*
 * main.c - seatctl, the operator's tool (docs/operations.md, "seatctl"): the options and
 * commands tables, the help, and main(), which parses the command line and runs one command.
 * The commands live in one file per group (seatctl.h lists them).
 *
 * Writes go through the HTTP API with an admin token (minted from SEATD_JWT_SECRET, or given
 * with --token / SEATD_TOKEN), so every change is a seatd Function run by a worker, exactly as
 * for a buyer; public reads (show list, show get, group show) send no token. Redis is read
 * directly, read-only, for inspection only (`seat who`, `audit`): plain reads and EVAL_RO probes,
 * never a write.
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
#include "seatctl.h"
#include "http.h"
#include "base/mem.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------
 * Options and commands: two tables, walked by the parser and the help.
 * --------------------------------------------------------------------------------------- */

/* Each option with a value sets the seatctl_opts_t field at 'offset' (a const char *), except
 * --price (repeatable: 'prices'); --json and --help only set their flag. */
#define NO_FIELD ((size_t)-1)
static const struct {
    const char *name;
    unsigned flag;
    int has_value;
    size_t offset; /* of the field it sets, or NO_FIELD */
} options[] = {
    {"--url", O_URL, 1, offsetof(seatctl_opts_t, url)},
    {"--token", O_TOKEN, 1, offsetof(seatctl_opts_t, token)},
    {"--redis", O_REDIS, 1, offsetof(seatctl_opts_t, redis)},
    {"--redis-user", O_REDIS_USER, 1, offsetof(seatctl_opts_t, redis_user)},
    {"--redis-pass", O_REDIS_PASS, 1, offsetof(seatctl_opts_t, redis_pass)},
    {"--json", O_JSON, 0, NO_FIELD},
    {"--help", O_HELP, 0, NO_FIELD},
    {"--layout", O_LAYOUT, 1, offsetof(seatctl_opts_t, layout)},
    {"--body", O_BODY, 1, offsetof(seatctl_opts_t, body)},
    {"--title", O_TITLE, 1, offsetof(seatctl_opts_t, title)},
    {"--starts-at", O_STARTS, 1, offsetof(seatctl_opts_t, starts_at)},
    {"--hold-ttl", O_HOLD_TTL, 1, offsetof(seatctl_opts_t, hold_ttl)},
    {"--price", O_PRICE, 1, NO_FIELD},
    {"--sales-close-at", O_CLOSE, 1, offsetof(seatctl_opts_t, sales_close_at)},
    {"--page", O_PAGE, 1, offsetof(seatctl_opts_t, page)},
    {"--size", O_SIZE, 1, offsetof(seatctl_opts_t, size)},
    {"--sub", O_SUB, 1, offsetof(seatctl_opts_t, sub)},
    {"--role", O_ROLE, 1, offsetof(seatctl_opts_t, role)},
    {"--ttl", O_TTL, 1, offsetof(seatctl_opts_t, ttl)},
    {"--email", O_EMAIL, 1, offsetof(seatctl_opts_t, email)},
    {"--password-stdin", O_PASSWORD_STDIN, 0, NO_FIELD},
    {"--admin", O_ADMIN, 0, NO_FIELD},
    {"--name", O_NAME, 1, offsetof(seatctl_opts_t, name)},
    {"--channels", O_CHANNELS, 1, offsetof(seatctl_opts_t, channels)},
    {"--shows", O_SHOWS, 1, offsetof(seatctl_opts_t, shows)},
};

typedef int (*cmd_fn)(seatctl_opts_t *o);

static const struct command_s {
    const char *group; /* first word */
    const char *verb;  /* second word, or NULL */
    cmd_fn fn;
    unsigned allowed; /* O_* besides O_ALWAYS */
    int nargs;
    const char *synopsis;
    const char *help;
} commands[] = {
    {"show", "create", seatctl_cmd_show_create,
     O_HTTP | O_LAYOUT | O_BODY | O_TITLE | O_STARTS | O_HOLD_TTL | O_PRICE | O_CLOSE, 0,
     "show create --layout FILE --title T --starts-at ISO --price TIER=AMOUNT... "
     "[--hold-ttl S] [--sales-close-at ISO]\n"
     "       show create --body FILE [--title T] [...]",
     "Creates a show (POST /v1/shows). --layout FILE is a JSON seats array\n"
     "  ([{\"id\":\"A1\",\"row\":\"A\",\"number\":1,\"tier\":\"standard\",\"x\":1,\"y\":1},...])\n"
     "  or an object with \"seats\"; --body FILE a whole request body. The options set or\n"
     "  override title, startsAt, holdTtlSeconds, priceTiers (one --price per tier, amounts\n"
     "  in minor units) and salesCloseAt. Prints the new show's id.\n"},
    {"show", "list", seatctl_cmd_show_list, O_HTTP | O_PAGE | O_SIZE, 0,
     "show list [--page N] [--size N]",
     "Lists the upcoming shows (GET /v1/shows), every page unless --page is given.\n"
     "  A public read: no token is sent, none is needed.\n"},
    {"show", "get", seatctl_cmd_show_get, O_HTTP, 1, "show get SHOW",
     "Prints show SHOW (GET /v1/shows/{id}): title, times, hold TTL, prices, seat count.\n"
     "  A public read: no token is sent, none is needed.\n"},
    {"seat", "who", seatctl_cmd_seat_who, O_RDS, 2, "seat who SHOW SEAT",
     "Who holds or booked seat SEAT of show SHOW, and for how long: reads Redis (the\n"
     "  seat key, its hold record, the bitmaps, Redis's clock) in one read-only step.\n"
     "  Prints the status (available, held, booked), the holder, the hold id and status,\n"
     "  the time left and the deadline; for a booked seat the booking and its owner.\n"},
    {"hold", "show", seatctl_cmd_hold_show, O_HTTP, 1, "hold show HOLDID",
     "Prints any user's hold (GET /v1/admin/holds/{id}) with the time left.\n"},
    {"hold", "release", seatctl_cmd_hold_release, O_HTTP, 1, "hold release HOLDID",
     "Releases any user's HELD hold (DELETE /v1/admin/holds/{id}); its seats become\n"
     "  available. A hold being paid or booked is refused (409).\n"},
    {"booking", "show", seatctl_cmd_booking_show, O_HTTP, 1, "booking show BOOKINGID",
     "Prints any user's booking (GET /v1/admin/bookings/{id}).\n"},
    {"booking", "cancel", seatctl_cmd_booking_cancel, O_HTTP, 1, "booking cancel BOOKINGID",
     "Cancels any user's CONFIRMED booking by the show's refund policy\n"
     "  (DELETE /v1/admin/bookings/{id}); the seats go back on sale, the refund is made by\n"
     "  reconciliation (refundStatus \"pending\" until the gateway confirms).\n"},
    {"audit", NULL, seatctl_cmd_audit, O_RDS, 1, "audit SHOW",
     "Checks show SHOW's seat invariant straight in Redis, read-only (tools/show_audit.h):\n"
     "  no seat in two bookings or both held and booked, bitmaps = seat keys and bookings,\n"
     "  hold records = the expiry set and the owners' counts, pending bookings = the\n"
     "  pending set, the outbox. Exit 0: consistent; 1: violations (each printed).\n"},
    {"reap", NULL, seatctl_cmd_reap, O_HTTP, 1, "reap SHOW",
     "Reaps show SHOW's expired holds now (POST /v1/admin/shows/{id}/reap: the Function\n"
     "  the sweeper runs). Prints how many were reaped and how many are still due.\n"},
    {"user", "create", seatctl_cmd_user_create,
     O_HTTP | O_EMAIL | O_PASSWORD_STDIN | O_ADMIN | O_NAME, 0,
     "user create --email EMAIL --password-stdin [--admin] [--name NAME]",
     "Creates an account (POST /v1/admin/users): the password is read from the first line\n"
     "  of standard input (never from the command line), checked and hashed by the worker\n"
     "  (argon2id) as at registration; --admin grants the admin role, so the account's\n"
     "  access tokens (POST /v1/auth/login) carry role \"admin\". Prints the user id.\n"},
    {"channel", "set", seatctl_cmd_channel_set, O_HTTP | O_BODY, 2,
     "channel set SHOW NAME --body FILE",
     "Sets what sales channel NAME keeps on show SHOW, replacing what it kept\n"
     "  (PUT /v1/admin/shows/{id}/channels/{name}): FILE is {\"seatIds\":[...],\n"
     "  \"areas\":{\"FLOOR\":100},\"releaseAt\":ISO}, each member optional. Only tokens whose\n"
     "  \"channels\" claim names NAME may hold them (seatctl token --channels NAME).\n"},
    {"channel", "release", seatctl_cmd_channel_release, O_HTTP, 2, "channel release SHOW NAME",
     "Releases sales channel NAME of show SHOW to everyone now\n"
     "  (DELETE /v1/admin/shows/{id}/channels/{name}): its seats and places go on sale to\n"
     "  every buyer in one step, with a new version of the seat map.\n"},
    {"group", "create", seatctl_cmd_group_create, O_HTTP | O_SHOWS, 1,
     "group create TITLE --shows SHOW,SHOW[,...]",
     "Creates an event group of the shows listed (POST /v1/groups): shows sold together,\n"
     "  held all or nothing (POST /v1/groups/{id}/holds) and paid with one payment. 2 to 20\n"
     "  shows, each once; on a Redis Cluster they must share a hash slot (create each with\n"
     "  \"groupWith\" naming the first). Prints the group's id and its shows.\n"},
    {"group", "show", seatctl_cmd_group_show, O_HTTP, 1, "group show GROUPID",
     "Prints event group GROUPID (GET /v1/groups/{id}): its title, shows and creation time.\n"
     "  A public read: no token is sent, none is needed.\n"},
    {"token", NULL, seatctl_cmd_token, O_SUB | O_ROLE | O_TTL | O_CHANNELS, 0,
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
          "                     show get, group show) send none\n"
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
 * main: options anywhere, then the command words and their arguments
 * --------------------------------------------------------------------------------------- */

static int set_option(seatctl_opts_t *o, size_t k, const char *v)
{
    if (options[k].flag == O_PRICE) {
        if (o->nprices == MAX_PRICES)
            return seatctl_usage_error("at most %d --price options", MAX_PRICES);
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
    seatctl_opts_t o = {0};
    const char *words[MAX_ARGS + 2];
    int nwords = 0;
    for (int i = 1; i < argc; i++)
        seatctl_json_usage |= strcmp(argv[i], "--json") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0)
            a = "--help";
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
            if (nwords == MAX_ARGS + 2)
                return seatctl_usage_error("too many arguments");
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
            return seatctl_usage_error("unknown option '%s'", a);
        const char *v = NULL;
        if (options[k].has_value) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else
                return seatctl_usage_error("%s needs a value", options[k].name);
        } else if (eq) {
            return seatctl_usage_error("%s takes no value", options[k].name);
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
        return seatctl_usage_error("no command given");
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
        return seatctl_usage_error("unknown command '%s'", words[0]);
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
        return seatctl_usage_error("'%s' needs a subcommand: %s", words[0], verbs);
    }
    if (o.given & O_HELP) {
        command_help(stdout, cmd);
        return EXIT_OK;
    }
    unsigned extra = o.given & ~(cmd->allowed | O_ALWAYS);
    if (extra) {
        for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
            if (extra & options[k].flag)
                return seatctl_usage_error("%s does not apply to '%s%s%s'", options[k].name,
                                           cmd->group, cmd->verb ? " " : "",
                                           cmd->verb ? cmd->verb : "");
    }
    int skip = cmd->verb ? 2 : 1;
    o.nargs = nwords - skip;
    if (o.nargs != cmd->nargs)
        return seatctl_usage_error("usage: seatctl %s", cmd->synopsis);
    for (int i = 0; i < o.nargs; i++)
        o.args[i] = words[skip + i];
    int rc = seatctl_stack_init();
    if (rc)
        return rc;
    seatctl_http_init();
    rc = cmd->fn(&o);
    seatctl_http_cleanup();
    return rc;
}
