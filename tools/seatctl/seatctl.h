/*
 * seatctl.h - what the files of seatctl (the operator's tool, tools/seatctl/) share: the parsed
 * command line, the exit statuses, the output helpers (output.c), the stack the tool talks to
 * (stack.c) and one entry point per command (the command table in main.c calls them). The
 * HTTP client is http.h; Redis is read in redis_reads.c alone.
 *
 * seatctl runs one command per process, on one thread: the stack and the --json flag of usage
 * errors are process globals, set once by main() before the command runs.
 */
#ifndef SEATD_SEATCTL_H
#define SEATD_SEATCTL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

#define SECRET_FILE_MAX 4096 /* a secret read from the runtime folder, at most */
#define MAX_PRICES 16        /* --price options */
#define MAX_ARGS 4           /* positional arguments of a command */

/* ---------------------------------------------------------------------------------------
 * The command line: the O_* flags of the options given, and their values
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
    O_SHOWS = 1 << 24,
};
#define O_HTTP (O_URL | O_TOKEN)
#define O_RDS (O_REDIS | O_REDIS_USER | O_REDIS_PASS)
#define O_ALWAYS (O_JSON | O_HELP)

typedef struct seatctl_opts_s {
    unsigned given; /* O_* seen */
    const char *url, *token, *redis, *redis_user, *redis_pass;
    const char *layout, *body, *title, *starts_at, *hold_ttl, *sales_close_at;
    const char *page, *size, *sub, *role, *ttl, *email, *name, *channels;
    const char *shows; /* --shows: a comma-separated list of show ids */
    const char *prices[MAX_PRICES];
    int nprices;
    int json;
    const char *args[MAX_ARGS]; /* the command's positional arguments */
    int nargs;
} seatctl_opts_t;

/* ---------------------------------------------------------------------------------------
 * Output (output.c): a human-readable answer, or with --json one JSON document on stdout
 * --------------------------------------------------------------------------------------- */

/* --json given anywhere on the command line: a usage error is a JSON document too. */
extern int seatctl_json_usage;

/* Prints 'j' (taken) as one line of JSON. */
void seatctl_print_json(cJSON *j);

/* A failure: text on stderr, and {"error":text} on stdout with 'o''s --json. Returns
 * EXIT_FAIL. */
__attribute__((format(printf, 2, 3))) int seatctl_fail(const seatctl_opts_t *o, const char *fmt,
                                                       ...);

/* A usage error: text on stderr, and {"error":text,"usage":true} on stdout with --json.
 * Returns EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) int seatctl_usage_error(const char *fmt, ...);

/* This machine's clock, in milliseconds since the epoch. */
int64_t seatctl_now_ms(void);

/* "3m 12.4s" for 'ms' >= 0, into 'out' ('n' bytes). */
void seatctl_format_left(int64_t ms, char *out, size_t n);

/* Member 'name' of 'o' as a string, "" when it is missing or no string. Returns borrowed
 * (valid while 'o' lives). */
const char *seatctl_jstr(const cJSON *o, const char *name);

/* seatctl_jstr() with control characters replaced by '?', safe for a terminal. Returns
 * borrowed: valid until the fourth call after this one. */
const char *seatctl_tstr(const cJSON *o, const char *name);

/* Prints 'o''s members (borrowed) as "name: value" lines (arrays comma-joined). */
void seatctl_print_record(const cJSON *o);

/* 0 when 'id' is an id of 'kind' ('h' hold, 'b' booking, 'g' group), else a usage error
 * (EXIT_USAGE). */
int seatctl_check_id(const char *id, char kind);

/* 0 when 'id' is a show id, else a usage error (EXIT_USAGE). */
int seatctl_check_show_id(const char *id);

/* The JSON in file 'path' ("-": standard input), at most 32 MiB. Returns owned (cJSON_Delete),
 * or NULL with 'why' ('whylen' bytes) set. */
cJSON *seatctl_read_json_file(const char *path, char *why, size_t whylen);

/* ---------------------------------------------------------------------------------------
 * The stack (stack.c): found as deploy/lib.sh finds it, from SEATD_PORT
 * --------------------------------------------------------------------------------------- */

typedef struct seatctl_stack_s {
    int port;             /* SEATD_PORT, or DEFAULT_PORT */
    int port_given;       /* SEATD_PORT was set */
    char run[4096];       /* the runtime folder: SEATD_RUN_DIR or run/<port> (may not exist) */
    char run_shown[4096]; /* 'run' as printed */
    int run_given;        /* SEATD_RUN_DIR was set */
    int run_used;         /* a secret was read from it */
    int announced;        /* the stack line was printed */
} seatctl_stack_t;

/* The stack of this run, set by seatctl_stack_init(). */
extern seatctl_stack_t seatctl_stack;

/* Reads SEATD_PORT and finds the runtime folder. Returns 0, or EXIT_USAGE (printed). */
int seatctl_stack_init(void);

/* Whether 'path' is a folder. */
int seatctl_is_dir(const char *path);

/* Reads the first line of file 'name' of the runtime folder into 'out' ('n' bytes). Returns 0,
 * or -1 with 'why' ('whylen' bytes) set. */
int seatctl_stack_secret(const char *name, char *out, size_t n, char *why, size_t whylen);

/* The JWT secret: $SEATD_JWT_SECRET, else (when 'may_use_run') the runtime folder's
 * jwt_secret, into 'out' ('n' bytes). Returns 0, or -1 with 'why' set. */
int seatctl_jwt_secret(int may_use_run, char *out, size_t n, char *why, size_t whylen);

/* Says once, on stderr, which stack this run talks to: 'target' (borrowed) and the option or
 * variable that named it ('explicit', or NULL for SEATD_PORT's). */
void seatctl_announce(const char *target, const char *explicit);

/* The API's base URL into 'out' ('n' bytes). Returns the option or variable that named it
 * (static), or NULL when it is the stack's. */
const char *seatctl_api_url(const seatctl_opts_t *o, char *out, size_t n);

/* Redis's address into 'out' ('n' bytes). Returns the option or variable that named it
 * (static), or NULL when it is the stack's. */
const char *seatctl_redis_addr(const seatctl_opts_t *o, char *out, size_t n);

/* ---------------------------------------------------------------------------------------
 * The commands: each takes the parsed command line ('o', its positional arguments checked for
 * number) and returns the exit status, having printed its answer or why it failed.
 * --------------------------------------------------------------------------------------- */

int seatctl_cmd_show_create(seatctl_opts_t *o); /* shows.c */
int seatctl_cmd_show_list(seatctl_opts_t *o);
int seatctl_cmd_show_get(seatctl_opts_t *o);
int seatctl_cmd_hold_show(seatctl_opts_t *o); /* holds_bookings.c */
int seatctl_cmd_hold_release(seatctl_opts_t *o);
int seatctl_cmd_booking_show(seatctl_opts_t *o);
int seatctl_cmd_booking_cancel(seatctl_opts_t *o);
int seatctl_cmd_reap(seatctl_opts_t *o);
int seatctl_cmd_channel_set(seatctl_opts_t *o); /* channels_groups.c */
int seatctl_cmd_channel_release(seatctl_opts_t *o);
int seatctl_cmd_group_create(seatctl_opts_t *o);
int seatctl_cmd_group_show(seatctl_opts_t *o);
int seatctl_cmd_seat_who(seatctl_opts_t *o); /* redis_reads.c */
int seatctl_cmd_audit(seatctl_opts_t *o);
int seatctl_cmd_token(seatctl_opts_t *o); /* accounts_tokens.c */
int seatctl_cmd_user_create(seatctl_opts_t *o);

#endif
