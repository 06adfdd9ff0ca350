/* config.c - the settings table and the code that walks it; see config.h. */
#include "domain/config.h"
#include "base/log.h"
#include "domain/seats.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_STR, T_INT, T_LEVEL, T_ADDR, T_OPTADDR, T_URL } type_t;

typedef struct {
    const char *name;   /* the flag without "--" */
    const char *env;    /* environment variable */
    type_t type;        /* how the value is parsed and checked */
    long long min, max; /* T_INT bounds, inclusive */
    const char *def;    /* default, as text */
    size_t off;         /* offsetof(seatd_config_t, field) */
    size_t size;        /* sizeof the field (string capacity) */
    const char *help;   /* one line */
} row_t;

#define F(field) offsetof(seatd_config_t, field), sizeof(((seatd_config_t *)0)->field)

/* The table: every setting, once. */
static const row_t rows[] = {
    {"listen", "SEATD_LISTEN", T_ADDR, 0, 0, "127.0.0.1:8081", F(listen),
     "HTTP listen address: host:port or unix:/path"},
    {"metrics-listen", "SEATD_METRICS_LISTEN", T_OPTADDR, 0, 0, "", F(metrics_listen),
     "a second listener serving only GET /metrics and GET /healthz, so Prometheus can scrape "
     "each worker: host:port or unix:/path (empty: none)"},
    {"redis", "SEATD_REDIS", T_ADDR, 0, 0, "127.0.0.1:6379", F(redis),
     "Redis address: host:port or unix:/path"},
    {"redis-pool", "SEATD_REDIS_POOL", T_INT, 1, 64, "2", F(redis_pool),
     "Redis connections per worker"},
    {"hash-concurrency", "SEATD_HASH_CONCURRENCY", T_INT, 1, SEATD_PASSWD_IN_FLIGHT_MAX, "1",
     F(hash_concurrency),
     "argon2id hashes (sign-up, login) this worker runs at once, at nice 19; the rest wait"},
    {"hold-batch", "SEATD_HOLD_BATCH", T_INT, 1, SEATD_HOLD_BATCH_MAX, "32", F(hold_batch),
     "holds of one show sent to Redis in one call, at most (those that arrive in one turn of "
     "the loop); 1: a call per hold"},
    {"hold-in-flight", "SEATD_HOLD_IN_FLIGHT", T_INT, 0, 64, "1", F(hold_in_flight),
     "batches of one show's holds on their way to Redis at once; the holds that arrive "
     "meanwhile go together when one comes back (a full batch goes at once); 0: no limit"},
    {"redis-timeout-ms", "SEATD_REDIS_TIMEOUT_MS", T_INT, 10, 60000, "1000", F(redis_timeout_ms),
     "deadline of one Redis command"},
    {"redis-max-pending", "SEATD_REDIS_MAX_PENDING", T_INT, 1, 1000000, "10000",
     F(redis_max_pending), "Redis commands queued or in flight before 503"},
    {"gateway-url", "SEATD_GATEWAY_URL", T_URL, 0, 0, "http://127.0.0.1:8090", F(gateway_url),
     "payment gateway base URL"},
    {"payment-timeout-ms", "SEATD_PAYMENT_TIMEOUT_MS", T_INT, 100, 120000, "10000",
     F(payment_timeout_ms), "deadline of one payment gateway call"},
    {"payment-window-ms", "SEATD_PAYMENT_WINDOW_MS", T_INT, 1000, 3600000, "120000",
     F(payment_window_ms), "how long seats stay held while a payment runs"},
    {"hold-ttl-ms", "SEATD_HOLD_TTL_MS", T_INT, 100, 3600000, "300000", F(hold_ttl_ms),
     "default hold TTL for shows created without one"},
    {"max-seats-per-hold", "SEATD_MAX_SEATS_PER_HOLD", T_INT, 1, SEATD_SEATS_MAX_PER_HOLD, "10",
     F(max_seats_per_hold), "seats in one hold"},
    {"max-seats-per-user", "SEATD_MAX_SEATS_PER_USER", T_INT, 1, 1000, "10", F(max_seats_per_user),
     "seats one user may hold or book per show"},
    {"max-connections", "SEATD_MAX_CONNECTIONS", T_INT, 1, 1000000, "10000", F(max_connections),
     "open HTTP connections; more get 503 and are closed"},
    {"idle-timeout-ms", "SEATD_IDLE_TIMEOUT_MS", T_INT, 100, 3600000, "60000", F(idle_timeout_ms),
     "keep-alive idle time before a connection is closed"},
    {"max-body", "SEATD_MAX_BODY", T_INT, 1024, 1048576, "16384", F(max_body),
     "request body bytes (413 beyond)"},
    {"max-header", "SEATD_MAX_HEADER", T_INT, 1024, 65536, "8192", F(max_header),
     "request line + header bytes (431 beyond)"},
    {"log-level", "SEATD_LOG_LEVEL", T_LEVEL, 0, 0, "info", F(log_level),
     "debug, info, warn or error"},
    {"worker-name", "SEATD_WORKER_NAME", T_STR, 0, 0, "", F(worker_name),
     "name added to every log line"},
    {"sweeper-interval-ms", "SEATD_SWEEPER_INTERVAL_MS", T_INT, 10, 60000, "250",
     F(sweeper_interval_ms), "period of the expired-hold sweeper"},
    {"reconcile-interval-ms", "SEATD_RECONCILE_INTERVAL_MS", T_INT, 10, 600000, "1000",
     F(reconcile_interval_ms), "period of the payment reconciler"},
    {"reconcile-after-ms", "SEATD_RECONCILE_AFTER_MS", T_INT, 0, 86400000, "0",
     F(reconcile_after_ms),
     "settle bookings pending payment this long (0: twice --payment-timeout-ms)"},
    {"health-timeout-ms", "SEATD_HEALTH_TIMEOUT_MS", T_INT, 10, 60000, "250", F(health_timeout_ms),
     "/healthz fails (503) when Redis does not answer PING this soon"},
    {"redis-user", "SEATD_REDIS_USER", T_STR, 0, 0, "", F(redis_user),
     "Redis ACL user of the worker's connections (empty: no AUTH, or the default user)"},
    {"redis-password-file", "SEATD_REDIS_PASSWORD_FILE", T_STR, 0, 0, "", F(redis_password_file),
     "file holding the Redis password of --redis-user (empty: none)"},
    {"redis-loader-user", "SEATD_REDIS_LOADER_USER", T_STR, 0, 0, "", F(redis_loader_user),
     "Redis ACL user that loads the Functions library on a short connection of its own "
     "(empty: the worker's connections load it)"},
    {"redis-loader-password-file", "SEATD_REDIS_LOADER_PASSWORD_FILE", T_STR, 0, 0, "",
     F(redis_loader_password_file), "file holding the password of --redis-loader-user"},
    {"hold-rate-per-user", "SEATD_HOLD_RATE_PER_USER", T_INT, 0, 1000000, "30",
     F(hold_rate_per_user),
     "hold requests one user may make per --hold-rate-window-ms, then 429 (0: no limit)"},
    {"hold-rate-window-ms", "SEATD_HOLD_RATE_WINDOW_MS", T_INT, 100, 3600000, "60000",
     F(hold_rate_window_ms), "window of the per-user hold rate limit"},
    {"access-token-ttl-s", "SEATD_ACCESS_TOKEN_TTL_S", T_INT, 60, 86400, "900",
     F(access_token_ttl_s), "lifetime of the access tokens /v1/auth/login and refresh issue"},
    {"refresh-ttl-ms", "SEATD_REFRESH_TTL_MS", T_INT, 60000, 31536000000, "2592000000",
     F(refresh_ttl_ms), "absolute lifetime of a refresh-token family (one login), 30 days"},
    {"login-per-addr", "SEATD_LOGIN_PER_ADDR", T_INT, 1, 1000000, "30", F(login_per_addr),
     "login attempts from one client address per --login-addr-window-ms, then 429"},
    {"login-addr-window-ms", "SEATD_LOGIN_ADDR_WINDOW_MS", T_INT, 1000, 86400000, "60000",
     F(login_addr_window_ms), "window of the per-address login and registration limits"},
    {"login-fails-per-account", "SEATD_LOGIN_FAILS_PER_ACCOUNT", T_INT, 1, 1000000, "5",
     F(login_fails_per_account),
     "failed logins of one email from one client address per --login-account-window-ms, then "
     "429 for that address"},
    {"login-fails-per-account-total", "SEATD_LOGIN_FAILS_PER_ACCOUNT_TOTAL", T_INT, 1, 1000000,
     "100", F(login_fails_per_account_total),
     "failed logins of one email from all addresses per --login-account-window-ms, then 429"},
    {"login-account-window-ms", "SEATD_LOGIN_ACCOUNT_WINDOW_MS", T_INT, 1000, 86400000, "900000",
     F(login_account_window_ms), "window of the per-account failed-login limit"},
    {"register-per-addr", "SEATD_REGISTER_PER_ADDR", T_INT, 1, 1000000, "30", F(register_per_addr),
     "registrations from one client address per --login-addr-window-ms"},
    {"charge-horizon-ms", "SEATD_CHARGE_HORIZON_MS", T_INT, 0, 86400000, "0", F(charge_horizon_ms),
     "after this long (from booking start) a charge the gateway does not know can no longer "
     "land, and the booking fails (0: --payment-timeout-ms + 30000)"},
    {"ledger-interval-ms", "SEATD_LEDGER_INTERVAL_MS", T_INT, 0, 86400000, "5000",
     F(ledger_interval_ms),
     "period of the ledger walk: the gateway's charges checked against their bookings (0: off)"},
    {"ledger-grace-ms", "SEATD_LEDGER_GRACE_MS", T_INT, 0, 86400000, "0", F(ledger_grace_ms),
     "the ledger walk refunds a charge whose booking is missing or not CONFIRMED only once it is "
     "this old (0: the charge horizon)"},
    {"decline-cap-per-hold", "SEATD_DECLINE_CAP_PER_HOLD", T_INT, 1, 1000, "5",
     F(decline_cap_per_hold), "declined payments per hold before 429"},
    {"decline-cap-per-user", "SEATD_DECLINE_CAP_PER_USER", T_INT, 1, 100000, "20",
     F(decline_cap_per_user), "declined payments per user per --decline-window-ms before 429"},
    {"decline-window-ms", "SEATD_DECLINE_WINDOW_MS", T_INT, 1000, 86400000, "3600000",
     F(decline_window_ms), "window of the per-user decline cap"},
    {"show-retention-ms", "SEATD_SHOW_RETENTION_MS", T_INT, 0, 31536000000, "86400000",
     F(show_retention_ms),
     "a show leaves the scan sets (catalogue listing, sweeps) this long after it started"},
    {"conn-output-budget", "SEATD_CONN_OUTPUT_BUDGET", T_INT, 65536, 268435456, "1048576",
     F(conn_output_budget),
     "queued output bytes per connection (HTTP and WebSocket): reads pause at half, "
     "resume below a quarter; a WebSocket client past it is closed"},
    {"redis-cluster", "SEATD_REDIS_CLUSTER", T_INT, 0, 1, "0", F(redis_cluster),
     "1: Redis Cluster mode, seeded by --redis-cluster-nodes, else by --redis"},
    {"redis-cluster-nodes", "SEATD_REDIS_CLUSTER_NODES", T_STR, 0, 0, "", F(redis_cluster_nodes),
     "Redis Cluster seed nodes, host:port,host:port (set: cluster mode)"},
    {"redis-wait-replicas", "SEATD_REDIS_WAIT_REPLICAS", T_INT, 0, 16, "0", F(redis_wait_replicas),
     "acknowledge a booking only after WAIT for this many replicas (0: off); a late replica "
     "is logged and counted, the booking stands"},
    {"redis-wait-ms", "SEATD_REDIS_WAIT_MS", T_INT, 1, 60000, "100", F(redis_wait_ms),
     "how long WAIT waits for --redis-wait-replicas"},
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
#define SECRET_ENV "SEATD_JWT_SECRET"

static int errorf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int errorf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return SEATD_EINVAL;
}

/* Checks "host:port" (port 0..65535; "[v6]:port" allowed) or "unix:/path". */
static int valid_addr(const char *s)
{
    if (strncmp(s, "unix:", 5) == 0)
        return s[5] == '/' && s[6] != '\0';
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon[1] == '\0')
        return 0;
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    return errno == 0 && *end == '\0' && port >= 0 && port <= 65535;
}

/* Parses 'value' for 'row' into 'cfg'. 'src' names where it came from, for messages. */
static int set_value(seatd_config_t *cfg, const row_t *row, const char *value, const char *src,
                     char *err, size_t errlen)
{
    char *field = (char *)cfg + row->off;
    switch (row->type) {
    case T_INT: {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (value[0] == '\0' || *end != '\0' || errno == ERANGE)
            return errorf(err, errlen, "%s: '%s' is not an integer", src, value);
        if (v < row->min)
            return errorf(err, errlen, "%s: %lld is below the minimum %lld", src, v, row->min);
        if (v > row->max)
            return errorf(err, errlen, "%s: %lld is above the maximum %lld", src, v, row->max);
        *(long long *)(void *)field = v;
        return 0;
    }
    case T_LEVEL:
        if (seatd_log_level_parse(value) < 0)
            return errorf(err, errlen, "%s: '%s' is not one of debug, info, warn, error", src,
                          value);
        break;
    case T_ADDR:
        if (!valid_addr(value))
            return errorf(err, errlen, "%s: '%s' is not host:port or unix:/path", src, value);
        break;
    case T_OPTADDR:
        if (value[0] != '\0' && !valid_addr(value))
            return errorf(err, errlen, "%s: '%s' is not host:port, unix:/path or empty", src,
                          value);
        break;
    case T_URL:
        if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
            return errorf(err, errlen, "%s: '%s' is not an http:// or https:// URL", src, value);
        break;
    case T_STR:
        break;
    }
    if (strlen(value) >= row->size)
        return errorf(err, errlen, "%s: value longer than %zu bytes", src, row->size - 1);
    memcpy(field, value, strlen(value) + 1);
    return 0;
}

void seatd_config_defaults(seatd_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NROWS; i++) {
        int rc = set_value(cfg, &rows[i], rows[i].def, rows[i].name, NULL, 0);
        (void)rc; /* the table's defaults are within their own bounds (tested) */
    }
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

static const row_t *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NROWS; i++)
        if (strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0)
            return &rows[i];
    return NULL;
}

int seatd_config_load(seatd_config_t *cfg, int argc, char **argv, seatd_config_getenv_fn getenv_fn,
                      char *err, size_t errlen)
{
    if (getenv_fn == NULL)
        getenv_fn = env_get;
    seatd_config_defaults(cfg);
    if (err && errlen)
        err[0] = '\0';

    /* Environment first: flags override it below. */
    for (size_t i = 0; i < NROWS; i++) {
        const char *v = getenv_fn(rows[i].env);
        if (v == NULL)
            continue;
        int rc = set_value(cfg, &rows[i], v, rows[i].env, err, errlen);
        if (rc < 0)
            return rc;
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            cfg->help = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return errorf(err, errlen, "unexpected argument '%s' (see --help)", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        if (nlen == strlen("jwt-secret") && memcmp(name, "jwt-secret", nlen) == 0)
            return errorf(err, errlen,
                          "--jwt-secret is not accepted: set " SECRET_ENV " in the environment");
        const row_t *row = find_flag(name, nlen);
        if (row == NULL)
            return errorf(err, errlen, "unknown option '--%.*s' (see --help)", (int)nlen, name);
        const char *value;
        if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return errorf(err, errlen, "--%s needs a value", row->name);
            value = argv[++i];
        }
        char src[64];
        snprintf(src, sizeof(src), "--%s", row->name);
        int rc = set_value(cfg, row, value, src, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (cfg->help)
        return 0;
    /* A booking is reconciled only after its own charge request has surely ended, or the
     * reconciler could fail it while the charge is still on its way ("charged, no ticket"). */
    if (cfg->reconcile_after_ms != 0 && cfg->reconcile_after_ms <= cfg->payment_timeout_ms)
        return errorf(err, errlen,
                      "--reconcile-after-ms (%lld) must be longer than --payment-timeout-ms "
                      "(%lld)",
                      cfg->reconcile_after_ms, cfg->payment_timeout_ms);

    const char *secret = getenv_fn(SECRET_ENV);
    if (secret == NULL || secret[0] == '\0')
        return errorf(err, errlen,
                      SECRET_ENV " is not set: it must hold the JWT HMAC secret "
                                 "(at least 32 bytes)");
    size_t slen = strlen(secret);
    if (slen < 32)
        return errorf(err, errlen, SECRET_ENV " is %zu bytes: it must be at least 32 bytes", slen);
    if (slen >= sizeof(cfg->jwt_secret))
        return errorf(err, errlen, SECRET_ENV " is longer than %zu bytes",
                      sizeof(cfg->jwt_secret) - 1);
    memcpy(cfg->jwt_secret, secret, slen + 1);
    cfg->jwt_secret_len = slen;
    return 0;
}

void seatd_config_help(const char *prog, seatd_buf_t *out)
{
    seatd_buf_printf(out, "Usage: %s [options]\n\n", prog);
    seatd_buf_puts(out, "Every option can also be set in the environment; a flag wins over the\n"
                        "environment. Forms: --name value, --name=value.\n\nOptions:\n");
    for (size_t i = 0; i < NROWS; i++) {
        const row_t *row = &rows[i];
        seatd_buf_printf(out, "  --%-22s %s\n", row->name, row->help);
        seatd_buf_printf(out, "  %-24s env %s, default '%s'", "", row->env, row->def);
        if (row->type == T_INT)
            seatd_buf_printf(out, ", %lld..%lld", row->min, row->max);
        seatd_buf_puts(out, "\n");
    }
    seatd_buf_puts(out, "  --help                   print this help and exit\n\n"
                        "Environment only:\n"
                        "  " SECRET_ENV "         HMAC secret of bearer tokens, at least 32 "
                        "bytes (required)\n");
}
