/* Unit tests for config.c: defaults, environment, flags, bounds, the secret, --help. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "domain/config.h"

#define GOOD_SECRET "0123456789abcdef0123456789abcdef"

/* A fake environment: NULL-terminated name/value pairs set per test. */
static const char **fake_env;

static const char *fake_getenv(const char *name)
{
    for (int i = 0; fake_env && fake_env[i]; i += 2)
        if (strcmp(fake_env[i], name) == 0)
            return fake_env[i + 1];
    return NULL;
}

static int load(seatd_config_t *cfg, const char **env, int argc, const char **argv, char *err)
{
    fake_env = env;
    return seatd_config_load(cfg, argc, (char **)argv, fake_getenv, err, 256);
}

Test(config, loads_the_defaults_with_only_a_secret)
{
    seatd_config_t cfg;
    char err[256];
    const char *env[] = {"SEATD_JWT_SECRET", GOOD_SECRET, NULL};
    const char *argv[] = {"seatd"};
    cr_assert_eq(load(&cfg, env, 1, argv, err), 0, "%s", err);
    cr_assert_str_eq(cfg.listen, "127.0.0.1:8081");
    cr_assert_str_eq(cfg.redis, "127.0.0.1:6379");
    cr_assert_eq(cfg.redis_pool, 2);
    cr_assert_eq(cfg.redis_timeout_ms, 1000);
    cr_assert_eq(cfg.redis_max_pending, 10000);
    cr_assert_str_eq(cfg.gateway_url, "http://127.0.0.1:8090");
    cr_assert_eq(cfg.payment_timeout_ms, 10000);
    cr_assert_eq(cfg.payment_window_ms, 120000);
    cr_assert_eq(cfg.hold_ttl_ms, 300000);
    cr_assert_eq(cfg.max_seats_per_hold, 10);
    cr_assert_eq(cfg.max_seats_per_user, 10);
    cr_assert_eq(cfg.max_connections, 10000);
    cr_assert_eq(cfg.idle_timeout_ms, 60000);
    cr_assert_eq(cfg.max_body, 16384);
    cr_assert_eq(cfg.max_header, 8192);
    cr_assert_str_eq(cfg.log_level, "info");
    cr_assert_str_eq(cfg.worker_name, "");
    cr_assert_eq(cfg.sweeper_interval_ms, 250);
    cr_assert_str_eq(cfg.jwt_secret, GOOD_SECRET);
    cr_assert_eq(cfg.jwt_secret_len, 32);
    cr_assert_eq(cfg.help, 0);
}

Test(config, reads_the_environment_and_lets_flags_win)
{
    seatd_config_t cfg;
    char err[256];
    const char *env[] = {"SEATD_JWT_SECRET",
                         GOOD_SECRET,
                         "SEATD_REDIS_POOL",
                         "4",
                         "SEATD_LISTEN",
                         "unix:/tmp/s",
                         "SEATD_WORKER_NAME",
                         "w1",
                         NULL};
    const char *argv[] = {"seatd", "--redis-pool", "8", "--log-level=debug",
                          "--redis=unix:/run/redis.sock"};
    cr_assert_eq(load(&cfg, env, 5, argv, err), 0, "%s", err);
    cr_assert_eq(cfg.redis_pool, 8, "the flag wins over SEATD_REDIS_POOL");
    cr_assert_str_eq(cfg.listen, "unix:/tmp/s");
    cr_assert_str_eq(cfg.worker_name, "w1");
    cr_assert_str_eq(cfg.log_level, "debug");
    cr_assert_str_eq(cfg.redis, "unix:/run/redis.sock");
}

Test(config, refuses_values_out_of_bounds_with_a_clear_message)
{
    seatd_config_t cfg;
    char err[256];
    const char *env[] = {"SEATD_JWT_SECRET", GOOD_SECRET, NULL};
    struct {
        const char *argv[3];
        int argc;
        const char *msg;
    } cases[] = {
        {{"seatd", "--redis-pool", "0"}, 3, "--redis-pool: 0 is below the minimum 1"},
        {{"seatd", "--max-seats-per-hold=101"},
         2,
         "--max-seats-per-hold: 101 is above the maximum 100"},
        {{"seatd", "--redis-pool", "two"}, 3, "--redis-pool: 'two' is not an integer"},
        {{"seatd", "--redis-pool"}, 2, "--redis-pool needs a value"},
        {{"seatd", "--nope", "1"}, 3, "unknown option '--nope' (see --help)"},
        {{"seatd", "stray"}, 2, "unexpected argument 'stray' (see --help)"},
        {{"seatd", "--log-level", "loud"},
         3,
         "--log-level: 'loud' is not one of debug, info, warn, error"},
        {{"seatd", "--listen", "nowhere"}, 3, "--listen: 'nowhere' is not host:port or unix:/path"},
        {{"seatd", "--gateway-url", "ftp://x"},
         3,
         "--gateway-url: 'ftp://x' is not an http:// or https:// URL"},
        {{"seatd", "--jwt-secret", GOOD_SECRET},
         3,
         "--jwt-secret is not accepted: set SEATD_JWT_SECRET in the environment"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(load(&cfg, env, cases[i].argc, cases[i].argv, err), SEATD_EINVAL, "case %zu",
                     i);
        cr_assert_str_eq(err, cases[i].msg, "case %zu", i);
    }
    const char *bad_env[] = {"SEATD_JWT_SECRET", GOOD_SECRET, "SEATD_MAX_BODY", "10", NULL};
    const char *argv[] = {"seatd"};
    cr_assert_eq(load(&cfg, bad_env, 1, argv, err), SEATD_EINVAL);
    cr_assert_str_eq(err, "SEATD_MAX_BODY: 10 is below the minimum 1024");
}

Test(config, requires_a_jwt_secret_of_32_bytes_from_the_environment)
{
    seatd_config_t cfg;
    char err[256];
    const char *argv[] = {"seatd"};
    cr_assert_eq(load(&cfg, NULL, 1, argv, err), SEATD_EINVAL);
    cr_assert(strstr(err, "SEATD_JWT_SECRET is not set"), "%s", err);
    const char *short_env[] = {"SEATD_JWT_SECRET", "0123456789abcdef0123456789abcde", NULL};
    cr_assert_eq(load(&cfg, short_env, 1, argv, err), SEATD_EINVAL);
    cr_assert_str_eq(err, "SEATD_JWT_SECRET is 31 bytes: it must be at least 32 bytes");
}

Test(config, help_needs_no_secret_and_lists_every_setting)
{
    seatd_config_t cfg;
    char err[256];
    const char *argv[] = {"seatd", "--help"};
    cr_assert_eq(load(&cfg, NULL, 2, argv, err), 0);
    cr_assert_eq(cfg.help, 1);
    seatd_buf_t out = SEATD_BUF_INIT;
    seatd_config_help("seatd", &out);
    const char *names[] = {
        "--listen",      "SEATD_LISTEN",          "--redis-pool",      "1..64",
        "--gateway-url", "--sweeper-interval-ms", "SEATD_WORKER_NAME", "SEATD_JWT_SECRET",
        "--max-header",  "--hold-ttl-ms"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        cr_assert(strstr(out.data, names[i]), "help mentions %s", names[i]);
    seatd_buf_free(&out);
}

Test(config, defaults_fill_a_struct_without_a_secret)
{
    seatd_config_t cfg;
    memset(&cfg, 0x5a, sizeof(cfg));
    seatd_config_defaults(&cfg);
    cr_assert_eq(cfg.redis_pool, 2);
    cr_assert_str_eq(cfg.jwt_secret, "");
    cr_assert_eq(cfg.jwt_secret_len, 0);
}

Test(config, metrics_listen_is_off_by_default_and_takes_an_address)
{
    seatd_config_t cfg;
    char err[256];
    const char *env[] = {"SEATD_JWT_SECRET", GOOD_SECRET, "SEATD_METRICS_LISTEN", "127.0.0.1:0",
                         NULL};
    const char *none[] = {"seatd"};
    const char *secret_only[] = {"SEATD_JWT_SECRET", GOOD_SECRET, NULL};
    cr_assert_eq(load(&cfg, secret_only, 1, none, err), 0, "%s", err);
    cr_assert_str_eq(cfg.metrics_listen, "");
    cr_assert_eq(load(&cfg, env, 1, none, err), 0, "%s", err);
    cr_assert_str_eq(cfg.metrics_listen, "127.0.0.1:0");
    const char *unix_argv[] = {"seatd", "--metrics-listen", "unix:/tmp/m.sock"};
    cr_assert_eq(load(&cfg, env, 3, unix_argv, err), 0, "%s", err);
    cr_assert_str_eq(cfg.metrics_listen, "unix:/tmp/m.sock");
    const char *bad[] = {"seatd", "--metrics-listen", "nowhere"};
    cr_assert_eq(load(&cfg, env, 3, bad, err), SEATD_EINVAL);
    cr_assert_str_eq(err, "--metrics-listen: 'nowhere' is not host:port, unix:/path or empty");
}
