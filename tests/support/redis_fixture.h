/*
 * redis_fixture.h - a real redis-server for integration tests.
 *
 * The integration binary's main() starts one redis-server on a free loopback port in a temp
 * dir (bind 127.0.0.1, save '', appendonly no, maxmemory-policy noeviction,
 * notify-keyspace-events Ex, enable-debug-command local), exports SEATD_TEST_REDIS_PORT and
 * SEATD_TEST_REDIS_DIR, runs Criterion, then stops it. Each test's .init connects
 * synchronously and FLUSHALLs (functions survive FLUSHALL).
 *
 * The server is a child process with PR_SET_PDEATHSIG as a backstop, so a crashed runner
 * does not leave it behind.
 */
#ifndef SEATD_TEST_REDIS_FIXTURE_H
#define SEATD_TEST_REDIS_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>

struct redisContext;
struct redisReply;

typedef struct seatd_test_redis_s {
    int port;      /* loopback TCP port */
    int pid;       /* redis-server pid, 0 when stopped */
    char dir[256]; /* temp dir holding its files */
} seatd_test_redis_t;

/* Starts a server on a free port; returns 0 once it answers PING, -1 on failure. */
int seatd_test_redis_start(seatd_test_redis_t *fx);
/* Stops the server (SIGTERM, then SIGKILL after 2 s) and removes its dir. */
void seatd_test_redis_stop(seatd_test_redis_t *fx);
/* Kills the server and starts a new, empty one on the same port (no functions, no data). */
int seatd_test_redis_restart(seatd_test_redis_t *fx);

/* The port from SEATD_TEST_REDIS_PORT (set by the integration main()), or -1. */
int seatd_test_redis_port(void);
/* Re-attaches to the runner's server from a test process: fills 'fx' from the environment. */
int seatd_test_redis_from_env(seatd_test_redis_t *fx);

/* A new synchronous hiredis connection to the test server; aborts the test on failure.
 * Returns owned (redisFree). */
struct redisContext *seatd_test_redis_connect(void);
/* A command on 'c' (hiredis's printf-like format) that follows a cluster's redirections: on
 * MOVED or ASK it sends the same command again on a new connection to the named node (after
 * ASKING for ASK), up to 5 hops. On one server it is redisCommand(). Returns an owned reply
 * (an error reply if the last node refused), or NULL when a connection failed. For the tests'
 * inspection of keys of any shard over the one connection seatd_test_redis_connect() opened;
 * KEYS and SCAN still see only the node of 'c'. */
struct redisReply *seatd_test_redis_command(struct redisContext *c, const char *fmt, ...);
struct redisReply *seatd_test_redis_vcommand(struct redisContext *c, const char *fmt, va_list ap);
/* 1 when the suite runs on a Redis Cluster (SEATD_TEST_CLUSTER_NODES is set), else 0. */
int seatd_test_redis_is_cluster(void);

/* The number of keys matching 'pattern' (KEYS) on the server, or summed over every primary of
 * the cluster; -1 on failure. */
long seatd_test_redis_count_keys(const char *pattern);

/* FLUSHALL on a fresh connection (keeps functions); on every node when
 * SEATD_TEST_CLUSTER_NODES is set (SEATD_TEST_CLUSTER=1 runs). */
void seatd_test_redis_flushall(void);

/* A free loopback TCP port from the kernel (released before use: a collision is possible), or
 * -1. */
int seatd_test_free_port(void);
/* The absolute path of redis-server found on PATH, written to 'out'; 0 or -1. */
int seatd_test_redis_exe(char *out, size_t cap);

#endif
