/*
 * redis_sync.h - a blocking Redis client for the tools and the tests (seatd-notify, seatctl's
 * read-only inspection, the benchmark's audit, the end-to-end suites' checks) that works the
 * same on one node and on a Redis Cluster.
 *
 * A command goes to the node that owns its key's slot, as far as this client knows: it reads
 * the slot map once (CLUSTER SLOTS) when it connects and learns changes from MOVED answers. MOVED
 * -> remember the slot's owner and send again there; ASK
 * -> ASKING and send again on the named node, remembering nothing; TRYAGAIN, CLUSTERDOWN,
 * LOADING or a broken connection -> wait 100 ms and send again (a broken node is forgotten as
 * a slot owner: another node will name the new one), until 'timeout_ms' has passed. A command
 * that may have run before its connection broke is sent again: only use this client for
 * reads and for writes that are safe to repeat (the tools' are).
 *
 * The key of a command is its first argument, except FCALL/FCALL_RO/EVAL(SHA)[_RO] (the first
 * key after numkeys, if any), XREAD/XREADGROUP (the first stream after STREAMS),
 * XGROUP/XINFO/OBJECT/MEMORY (after the subcommand), KEYS and SCAN (the pattern when it starts with
 * a hash tag: KEYS and SCAN MATCH of "{s:42}:*" go to the node of show 42's slot); commands without
 * a key go to the first node. A MOVED names the key's slot: the command follows that slot from then
 * on (at most 16 redirections). seatd_redis_command_at() sends a command where the last command
 * of a given key's slot ran, on that same connection (WAIT after a write).
 *
 * Not thread-safe; one per thread.
 */
#ifndef SEATD_REDIS_SYNC_H
#define SEATD_REDIS_SYNC_H

#include <stdarg.h>
#include <stddef.h>

struct redisReply;

typedef struct seatd_redis_s seatd_redis_t;

typedef struct seatd_redis_opts_s {
    const char *host;     /* the first node; "127.0.0.1" when NULL; a path: a unix socket */
    int port;             /* 6379 when 0 */
    const char *user;     /* ACL user for AUTH on every connection, or NULL */
    const char *password; /* AUTH password, or NULL for none */
    int timeout_ms;       /* per connect and per command, retries included; 5000 when 0 */
} seatd_redis_opts_t;

/* Connects to the first node. Returns an owned client, or NULL (with a message in 'err',
 * 'errlen' bytes) if that node cannot be reached or refuses the credentials. */
seatd_redis_t *seatd_redis_connect(const seatd_redis_opts_t *opts, char *err, size_t errlen);

/* Runs one command given as 'argc' binary-safe arguments ('lens' may be NULL for C strings).
 * Returns an owned reply (free with freeReplyObject(); it may be an error reply), or NULL
 * when no node answered in time. */
struct redisReply *seatd_redis_commandv(seatd_redis_t *r, int argc, const char **argv,
                                        const size_t *lens);

/* Runs one command ('argc' arguments, 'lens' as for seatd_redis_commandv()) on the very
 * connection that answered the last command of 'key''s slot (a C string, borrowed): the
 * command's own arguments do not route it, and nothing is followed, retried or reconnected.
 * This is for what must run where an earlier command ran, above all WAIT after a write: WAIT
 * counts the replicas that acknowledged this connection's writes to that node, so on another
 * node, or on a new connection that has written nothing, it would say yes at once. "Answered"
 * means the reply seatd_redis_commandv() returned (an error reply included; a redirection or a
 * TRYAGAIN that was retried is not an answer); a connection that closed or was replaced since
 * has answered nothing. Returns an owned reply (it may be an error reply), or NULL when no open
 * connection answered a command of that slot or this one broke (the reason in
 * seatd_redis_errstr(); the node is then dropped and the next command reconnects). */
struct redisReply *seatd_redis_command_at(seatd_redis_t *r, const char *key, int argc,
                                          const char **argv, const size_t *lens);

/* Like seatd_redis_commandv() with hiredis's printf-like format ("GET %s", "%b"...). */
struct redisReply *seatd_redis_command(seatd_redis_t *r, const char *fmt, ...);

/* Like seatd_redis_command() with a va_list. */
struct redisReply *seatd_redis_vcommand(seatd_redis_t *r, const char *fmt, va_list ap);

/* The last failure, for messages. */
const char *seatd_redis_errstr(const seatd_redis_t *r);

void seatd_redis_free(seatd_redis_t *r);

#endif
