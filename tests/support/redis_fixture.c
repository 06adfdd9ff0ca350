/*
 * redis_fixture.c - a real redis-server for integration tests; see redis_fixture.h.
 *
 * The server runs as a child of the process that called seatd_test_redis_start() (the
 * integration runner), with PR_SET_PDEATHSIG(SIGKILL) so that it dies with the runner.
 *
 * Restart from a test process: tests run in Criterion worker processes, which must not
 * become the parent of the server (it would die with them, and the runner could not reap or
 * stop it). So seatd_test_redis_restart() asks the running server to re-execute itself with
 * `DEBUG CRASH-AND-RECOVER 0`: Redis closes every socket, skips any save and execve()s its
 * own binary with the same arguments. The new image keeps the pid (and so its parent and its
 * death signal), listens on the same port, and starts empty: no data and no functions
 * (save '' and appendonly no mean nothing is reloaded). This is why the binary is started
 * with an absolute argv[0]: Redis re-executes argv[0] and refuses a relative one.
 */
#define _GNU_SOURCE
#include "redis_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 5000
#define STOP_GRACE_MS 2000

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Asks the kernel for a free loopback port. The port is released before redis binds it, so
 * a collision is possible in theory; start() retries with a new port if the server dies. */
int seatd_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    socklen_t len = sizeof(sa);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* Finds redis-server on PATH; writes its absolute path to 'out'. */
int seatd_test_redis_exe(char *out, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0 && n + sizeof("/redis-server") < cap) {
            char cand[4096];
            memcpy(cand, p, n);
            strcpy(cand + n, "/redis-server");
            /* Not realpath(): redis-server is a symlink to a multi-call binary that
             * chooses its role from argv[0]. */
            if (access(cand, X_OK) == 0 && cand[0] == '/') {
                memcpy(out, cand, n + sizeof("/redis-server")); /* fits: checked above */
                return 0;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    return -1;
}

/* One PING on a fresh connection; 0 if it answered PONG. */
static int ping(int port)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int rc = -1;
    if (c && !c->err) {
        redisSetTimeout(c, tv);
        redisReply *r = redisCommand(c, "PING");
        if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0)
            rc = 0;
        if (r)
            freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return rc;
}

/* Waits until the server answers PING; -1 on timeout or if 'pid' (when > 0) exited. */
static int wait_ready(int port, int pid)
{
    long long deadline = now_ms() + START_TIMEOUT_MS;
    while (now_ms() < deadline) {
        if (ping(port) == 0)
            return 0;
        if (pid > 0) {
            int st;
            if (waitpid(pid, &st, WNOHANG) == pid)
                return -2; /* it exited (and is reaped) */
        }
        sleep_ms(20);
    }
    return -1;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Forks and execs the server on fx->port in fx->dir; fills fx->pid. */
static int spawn(seatd_test_redis_t *fx, const char *exe)
{
    char port[16], logpath[320];
    snprintf(port, sizeof(port), "%d", fx->port);
    snprintf(logpath, sizeof(logpath), "%s/redis.log", fx->dir);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            close(devnull);
        }
        execl(exe, exe, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
              "--maxmemory-policy", "noeviction", "--notify-keyspace-events", "Ex",
              "--enable-debug-command", "local", "--daemonize", "no", "--dir", fx->dir,
              (char *)NULL);
        _exit(127);
    }
    fx->pid = (int)pid;
    return 0;
}

/* Kills 'pid' (SIGTERM, then SIGKILL after the grace period) and reaps it if it is ours. */
static void kill_and_reap(int pid, int grace_ms)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    long long deadline = now_ms() + grace_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) {
            /* Not our child (or already reaped elsewhere): wait until it is gone. */
            if (r < 0) {
                while (kill(pid, 0) == 0 && now_ms() < deadline)
                    sleep_ms(10);
                if (kill(pid, 0) == 0)
                    kill(pid, SIGKILL);
            }
            return;
        }
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return;
        }
        sleep_ms(10);
    }
}

int seatd_test_redis_start(seatd_test_redis_t *fx)
{
    char exe[1024];
    memset(fx, 0, sizeof(*fx));
    if (seatd_test_redis_exe(exe, sizeof(exe)) != 0) {
        fprintf(stderr, "redis_fixture: redis-server not found on PATH\n");
        return -1;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        snprintf(fx->dir, sizeof(fx->dir), "/tmp/seatd-redis-XXXXXX");
        if (!mkdtemp(fx->dir)) {
            perror("redis_fixture: mkdtemp");
            fx->dir[0] = '\0';
            return -1;
        }
        fx->port = seatd_test_free_port();
        if (fx->port > 0 && spawn(fx, exe) == 0) {
            int rc = wait_ready(fx->port, fx->pid);
            if (rc == 0)
                return 0;
            if (rc == -1)
                kill_and_reap(fx->pid, 200);
        }
        fprintf(stderr, "redis_fixture: redis-server did not start on port %d (attempt %d)\n",
                fx->port, attempt + 1);
        remove_dir(fx->dir);
        fx->pid = 0;
        fx->dir[0] = '\0';
    }
    return -1;
}

void seatd_test_redis_stop(seatd_test_redis_t *fx)
{
    kill_and_reap(fx->pid, STOP_GRACE_MS);
    fx->pid = 0;
    if (fx->dir[0])
        remove_dir(fx->dir);
    fx->dir[0] = '\0';
}

int seatd_test_redis_restart(seatd_test_redis_t *fx)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", fx->port, tv);
    if (!c || c->err) {
        fprintf(stderr, "redis_fixture: restart: cannot connect to port %d\n", fx->port);
        if (c)
            redisFree(c);
        return -1;
    }
    redisSetTimeout(c, tv);
    /* On success the server never answers: the connection is closed by the re-exec. */
    redisReply *r = redisCommand(c, "DEBUG CRASH-AND-RECOVER 0");
    int refused = r && r->type == REDIS_REPLY_ERROR;
    if (refused)
        fprintf(stderr, "redis_fixture: restart refused: %s\n", r->str);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    if (refused)
        return -1;
    return wait_ready(fx->port, 0) == 0 ? 0 : -1;
}

int seatd_test_redis_port(void)
{
    const char *s = getenv("SEATD_TEST_REDIS_PORT");
    if (!s || !*s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > 65535)
        return -1;
    return (int)v;
}

int seatd_test_redis_from_env(seatd_test_redis_t *fx)
{
    memset(fx, 0, sizeof(*fx));
    fx->port = seatd_test_redis_port();
    if (fx->port < 0)
        return -1;
    const char *dir = getenv("SEATD_TEST_REDIS_DIR");
    if (dir)
        snprintf(fx->dir, sizeof(fx->dir), "%s", dir);
    const char *pid = getenv("SEATD_TEST_REDIS_PID");
    if (pid)
        fx->pid = atoi(pid);
    return 0;
}

redisContext *seatd_test_redis_connect(void)
{
    int port = seatd_test_redis_port();
    if (port < 0) {
        fprintf(stderr, "redis_fixture: SEATD_TEST_REDIS_PORT is not set (run the integration "
                        "binary's own main)\n");
        abort();
    }
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        fprintf(stderr, "redis_fixture: cannot connect to 127.0.0.1:%d: %s\n", port,
                c ? c->errstr : "out of memory");
        abort();
    }
    redisSetTimeout(c, tv);
    return c;
}

int seatd_test_redis_is_cluster(void)
{
    const char *nodes = getenv("SEATD_TEST_CLUSTER_NODES");
    return nodes && *nodes;
}

/* Sends the formatted command 'cmd' on 'c' and reads its reply; NULL on a connection error. */
static redisReply *send_formatted(redisContext *c, const char *cmd, int len)
{
    void *r = NULL;
    if (redisAppendFormattedCommand(c, cmd, (size_t)len) != REDIS_OK ||
        redisGetReply(c, &r) != REDIS_OK)
        return NULL;
    return r;
}

/* The connections redirections went to, one per node port, kept for the test process's
 * life (each Criterion test is its own process). */
static struct {
    int port;
    redisContext *c;
} redirects[16];

static redisContext *redirect_conn(const char *host, int port)
{
    int free_slot = -1;
    for (int i = 0; i < 16; i++) {
        if (redirects[i].c && redirects[i].port == port)
            return redirects[i].c;
        if (!redirects[i].c && free_slot < 0)
            free_slot = i;
    }
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err || free_slot < 0) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redirects[free_slot].port = port;
    redirects[free_slot].c = c;
    return c;
}

static void redirect_drop(int port)
{
    for (int i = 0; i < 16; i++) {
        if (redirects[i].c && redirects[i].port == port) {
            redisFree(redirects[i].c);
            redirects[i].c = NULL;
        }
    }
}

redisReply *seatd_test_redis_vcommand(redisContext *c, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0)
        return NULL;
    redisReply *r = send_formatted(c, cmd, len);
    for (int hop = 0; hop < 5 && r && r->type == REDIS_REPLY_ERROR; hop++) {
        /* "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" */
        int ask = strncmp(r->str, "ASK ", 4) == 0;
        if (!ask && strncmp(r->str, "MOVED ", 6) != 0)
            break;
        const char *addr = strchr(r->str + (ask ? 4 : 6), ' ');
        const char *colon = addr ? strrchr(addr, ':') : NULL;
        if (!colon)
            break;
        char host[64];
        snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 1), addr + 1);
        int port = atoi(colon + 1);
        freeReplyObject(r);
        r = NULL;
        redisContext *to = redirect_conn(host, port);
        if (to && ask)
            freeReplyObject(redisCommand(to, "ASKING"));
        if (to)
            r = send_formatted(to, cmd, len);
        if (to && !r) /* broken: forget it, try a new connection next time */
            redirect_drop(port);
    }
    redisFreeCommand(cmd);
    return r;
}

redisReply *seatd_test_redis_command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = seatd_test_redis_vcommand(c, fmt, ap);
    va_end(ap);
    return r;
}

/* KEYS 'pattern' on 'c' counted; with 'primary_only', 0 for a replica (it repeats its
 * primary's keys). */
static long count_keys_on(redisContext *c, const char *pattern, int primary_only)
{
    if (primary_only) {
        redisReply *role = redisCommand(c, "ROLE");
        int primary = role && role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
                      role->element[0]->type == REDIS_REPLY_STRING &&
                      strcmp(role->element[0]->str, "master") == 0;
        freeReplyObject(role);
        if (!primary)
            return 0;
    }
    redisReply *r = redisCommand(c, "KEYS %s", pattern);
    long n = r && r->type == REDIS_REPLY_ARRAY ? (long)r->elements : -1;
    freeReplyObject(r);
    return n;
}

long seatd_test_redis_count_keys(const char *pattern)
{
    const char *nodes = getenv("SEATD_TEST_CLUSTER_NODES");
    if (!nodes || !*nodes) {
        redisContext *c = seatd_test_redis_connect();
        long n = count_keys_on(c, pattern, 0);
        redisFree(c);
        return n;
    }
    long total = 0;
    for (const char *p = nodes; p && *p;) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        struct timeval tv = {5, 0};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", atoi(colon + 1), tv);
        long n = c && !c->err ? count_keys_on(c, pattern, 1) : -1;
        if (c)
            redisFree(c);
        if (n < 0)
            return -1;
        total += n;
        p = strchr(colon, ',');
        p = p ? p + 1 : NULL;
    }
    return total;
}

/* Cluster mode (SEATD_TEST_CLUSTER_NODES): FLUSHALL on every node; replicas refuse it
 * (READONLY) and follow their primary. */
static void flushall_cluster(const char *nodes)
{
    for (const char *p = nodes; p && *p;) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        int port = atoi(colon + 1);
        struct timeval tv = {5, 0};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "FLUSHALL");
            if (r)
                freeReplyObject(r);
        }
        if (c)
            redisFree(c);
        p = strchr(colon, ',');
        p = p ? p + 1 : NULL;
    }
}

void seatd_test_redis_flushall(void)
{
    const char *nodes = getenv("SEATD_TEST_CLUSTER_NODES");
    if (nodes && *nodes) {
        flushall_cluster(nodes);
        return;
    }
    redisContext *c = seatd_test_redis_connect();
    redisReply *r = redisCommand(c, "FLUSHALL");
    if (!r || r->type != REDIS_REPLY_STATUS) {
        fprintf(stderr, "redis_fixture: FLUSHALL failed: %s\n",
                r ? (r->str ? r->str : "?") : c->errstr);
        abort();
    }
    freeReplyObject(r);
    redisFree(c);
}
