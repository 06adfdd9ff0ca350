/*
 * config.h - the worker's settings, declared once as a table (STYLE rule 5).
 *
 * Every setting is one row in config.c: name (the flag, "--redis-pool"), environment variable
 * (SEATD_REDIS_POOL), type, bounds, default, offsetof into seatd_config_t, and help text.
 * seatd_config_load() applies defaults, then the environment, then the command line (a flag
 * wins over the environment); "--flag value" and "--flag=value" are both accepted. --help is
 * generated from the same table. The JWT secret is read only from SEATD_JWT_SECRET (never a
 * flag, no default) and must be at least 32 bytes.
 *
 * Strings live in fixed arrays inside seatd_config_t, so the struct owns no heap memory.
 * Pure apart from reading the environment through an injectable getter. Single-threaded.
 */
#ifndef SEATD_CONFIG_H
#define SEATD_CONFIG_H

#include <stddef.h>

#include "base/buf.h"
#include "base/errors.h"

#define SEATD_CONFIG_STR_MAX 256     /* bytes for string settings, NUL included */
#define SEATD_CONFIG_SECRET_MAX 512  /* bytes for the JWT secret, NUL included */
#define SEATD_PASSWD_IN_FLIGHT_MAX 4 /* --hash-concurrency's bound: libuv's pool has 4 threads */

typedef struct seatd_config_s {
    char listen[SEATD_CONFIG_STR_MAX];         /* --listen: "127.0.0.1:8081" or "unix:/path" */
    char metrics_listen[SEATD_CONFIG_STR_MAX]; /* --metrics-listen: /metrics only, or "" */
    char redis[SEATD_CONFIG_STR_MAX];          /* --redis: "127.0.0.1:6379" or "unix:/path" */
    long long redis_pool;                      /* --redis-pool: connections per worker */
    long long hash_concurrency;                /* --hash-concurrency: argon2id hashes at once */
    long long hold_batch;                      /* --hold-batch: holds of a show per Redis call */
    long long hold_in_flight;                  /* --hold-in-flight: a show's calls at once */
    long long redis_timeout_ms;                /* --redis-timeout-ms: per-command deadline */
    long long redis_max_pending;               /* --redis-max-pending: queued Redis commands */
    char gateway_url[SEATD_CONFIG_STR_MAX];    /* --gateway-url: payment gateway base URL */
    long long payment_timeout_ms;              /* --payment-timeout-ms: one gateway call */
    long long payment_window_ms;               /* --payment-window-ms: seat TTL during payment */
    long long hold_ttl_ms;                     /* --hold-ttl-ms: default hold TTL for new shows */
    long long max_seats_per_hold;              /* --max-seats-per-hold */
    long long max_seats_per_user;              /* --max-seats-per-user: per show */
    long long max_connections;                 /* --max-connections: HTTP connections */
    long long idle_timeout_ms;                 /* --idle-timeout-ms: keep-alive idle time */
    long long max_body;                        /* --max-body: request body bytes */
    long long max_header;                      /* --max-header: request line + header bytes */
    char log_level[16];                        /* --log-level: debug, info, warn, error */
    char worker_name[64];                      /* --worker-name: added to every log line */
    long long sweeper_interval_ms;             /* --sweeper-interval-ms */
    long long reconcile_interval_ms;       /* --reconcile-interval-ms: payment reconciler tick */
    long long reconcile_after_ms;          /* --reconcile-after-ms: 0 = 2 x payment timeout */
    long long ledger_interval_ms;          /* --ledger-interval-ms: ledger walk period, 0 = off */
    long long ledger_grace_ms;             /* --ledger-grace-ms: 0 = the charge horizon */
    long long health_timeout_ms;           /* --health-timeout-ms: /healthz PING deadline */
    char redis_user[SEATD_CONFIG_STR_MAX]; /* --redis-user: ACL user of the pool, or "" */
    char redis_password_file[SEATD_CONFIG_STR_MAX];        /* --redis-password-file, or "" */
    char redis_loader_user[SEATD_CONFIG_STR_MAX];          /* --redis-loader-user, or "" */
    char redis_loader_password_file[SEATD_CONFIG_STR_MAX]; /* --redis-loader-password-file */
    long long hold_rate_per_user;            /* --hold-rate-per-user: holds per window, 0 = off */
    long long hold_rate_window_ms;           /* --hold-rate-window-ms */
    long long access_token_ttl_s;            /* --access-token-ttl-s: JWTs of /v1/auth */
    long long refresh_ttl_ms;                /* --refresh-ttl-ms: a refresh family's lifetime */
    long long login_per_addr;                /* --login-per-addr: per --login-addr-window-ms */
    long long login_addr_window_ms;          /* --login-addr-window-ms */
    long long login_fails_per_account;       /* --login-fails-per-account: per email and address */
    long long login_fails_per_account_total; /* --login-fails-per-account-total: per email */
    long long login_account_window_ms;       /* --login-account-window-ms */
    long long register_per_addr;             /* --register-per-addr */
    long long charge_horizon_ms;             /* --charge-horizon-ms: 0 = payment timeout + 30 s */
    long long decline_cap_per_hold;          /* --decline-cap-per-hold */
    long long decline_cap_per_user;          /* --decline-cap-per-user: per decline window */
    long long decline_window_ms;             /* --decline-window-ms */
    long long show_retention_ms;  /* --show-retention-ms: kept in scan sets after start */
    long long conn_output_budget; /* --conn-output-budget: queued output bytes per
                                     connection (http_server.h) */
    long long redis_cluster;      /* --redis-cluster: 1 = Redis Cluster mode (rds.h) */
    char redis_cluster_nodes[SEATD_CONFIG_STR_MAX]; /* --redis-cluster-nodes: seed host:port,...
                                                       (implies --redis-cluster 1) */
    long long redis_wait_replicas;                  /* --redis-wait-replicas: 0 = off */
    long long redis_wait_ms;                        /* --redis-wait-ms */
    char jwt_secret[SEATD_CONFIG_SECRET_MAX];       /* SEATD_JWT_SECRET only; never logged */
    size_t jwt_secret_len;                          /* bytes in 'jwt_secret' */
    int help;                                       /* 1 if --help was given: print and exit 0 */
} seatd_config_t;

/* Reads an environment variable: returns a borrowed value or NULL (getenv's contract). */
typedef const char *(*seatd_config_getenv_fn)(const char *name);

/* Fills 'cfg' with the defaults of every row (the secret stays empty). */
void seatd_config_defaults(seatd_config_t *cfg);

/*
 * Loads defaults, then the environment (through 'getenv_fn'; NULL means getenv), then the
 * 'argc'/'argv' flags (argv[0] is skipped; both borrowed), then validates: every number
 * within its row's bounds, log level known, SEATD_JWT_SECRET set and >= 32 bytes (unless
 * --help was given). Returns 0, or SEATD_EINVAL with a one-line reason in 'err' ('errlen'
 * bytes, may be NULL) such as "--redis-pool: 0 is below the minimum 1".
 */
SEATD_MUSTCHECK int seatd_config_load(seatd_config_t *cfg, int argc, char **argv,
                                      seatd_config_getenv_fn getenv_fn, char *err, size_t errlen);

/* Appends the --help text (usage, then one entry per row: flag, env, default, bounds, help)
 * to 'out'. 'prog' is borrowed. */
void seatd_config_help(const char *prog, seatd_buf_t *out);

#endif
