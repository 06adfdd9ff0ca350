/*
 * cluster_fixture.c - a real local Redis Cluster for integration tests; see cluster_fixture.h.
 */
#define _GNU_SOURCE
#include "cluster_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_fixture.h"

#define START_TIMEOUT_MS 30000
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

/* 1 if 'port' can be bound on loopback now. */
static int port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* A port whose bus port (+10000) is free too, distinct from the 'n' in 'taken'. */
static int cluster_port(const int *taken, int n)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        int p = seatd_test_free_port();
        if (p <= 0 || p > 55535 || !port_free(p + 10000))
            continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            if (taken[i] == p || taken[i] + 10000 == p || taken[i] == p + 10000)
                dup = 1;
        if (!dup)
            return p;
    }
    return -1;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[768];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int spawn_node(seatd_test_cluster_t *cl, int i, const char *exe)
{
    char port[16], timeout[16], ndir[300], logpath[340];
    snprintf(port, sizeof(port), "%d", cl->port[i]);
    snprintf(timeout, sizeof(timeout), "%d", SEATD_TEST_CLUSTER_NODE_TIMEOUT_MS);
    snprintf(ndir, sizeof(ndir), "%s/%d", cl->dir, cl->port[i]);
    if (mkdir(ndir, 0700) != 0)
        return -1;
    snprintf(logpath, sizeof(logpath), "%s/redis.log", ndir);
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
        execl(exe, exe, "--bind", "127.0.0.1", "--port", port, "--cluster-enabled", "yes",
              "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", timeout,
              "--appendonly", "yes", "--cluster-require-full-coverage", "no", "--save", "",
              "--maxmemory-policy", "noeviction", "--notify-keyspace-events", "Ex",
              "--enable-debug-command", "local", "--daemonize", "no", "--dir", ndir, (char *)NULL);
        _exit(127);
    }
    cl->pid[i] = (int)pid;
    return 0;
}

redisContext *seatd_test_cluster_connect(seatd_test_cluster_t *cl, int i)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", cl->port[i], tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

static int node_ping(seatd_test_cluster_t *cl, int i)
{
    redisContext *c = seatd_test_cluster_connect(cl, i);
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

/* Runs redis-cli with 'argv' (NULL-terminated), output to the cluster dir's cli.log; its exit
 * status or -1. */
static int run_cli(seatd_test_cluster_t *cl, char **argv)
{
    char logpath[300];
    snprintf(logpath, sizeof(logpath), "%s/cli.log", cl->dir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execvp("redis-cli", argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The slot map as node i sees it: owner[slot] = index of the primary, -1 if none. */
static int read_slots(seatd_test_cluster_t *cl, int i, int *owner)
{
    for (int s = 0; s < 16384; s++)
        owner[s] = -1;
    redisContext *c = seatd_test_cluster_connect(cl, i);
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    int rc = -1;
    if (r && r->type == REDIS_REPLY_ARRAY) {
        rc = 0;
        for (size_t k = 0; k < r->elements; k++) {
            redisReply *e = r->element[k];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
                continue;
            int port = (int)e->element[2]->element[1]->integer, who = -1;
            for (int j = 0; j < cl->n; j++)
                if (cl->port[j] == port)
                    who = j;
            for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
                if (s >= 0 && s < 16384)
                    owner[s] = who;
        }
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

/* 1 if node i says cluster_state:ok (and, for a replica, its link to its primary is up). */
static int node_ok(seatd_test_cluster_t *cl, int i)
{
    redisContext *c = seatd_test_cluster_connect(cl, i);
    if (!c)
        return 0;
    int ok = 0;
    redisReply *r = redisCommand(c, "CLUSTER INFO");
    if (r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok"))
        ok = 1;
    if (r)
        freeReplyObject(r);
    if (ok) {
        r = redisCommand(c, "INFO replication");
        if (r && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:slave") &&
            !strstr(r->str, "master_link_status:up"))
            ok = 0;
        if (r)
            freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

int seatd_test_cluster_wait_ok(seatd_test_cluster_t *cl, int timeout_ms)
{
    static int first[16384], other[16384];
    long long deadline = now_ms() + timeout_ms;
    while (now_ms() < deadline) {
        int all = 1, ref = -1;
        for (int i = 0; i < cl->n && all; i++) {
            if (!cl->pid[i])
                continue;
            if (!node_ok(cl, i)) {
                all = 0;
                break;
            }
            if (ref < 0) {
                ref = i;
                if (read_slots(cl, i, first) != 0)
                    all = 0;
                for (int s = 0; s < 16384 && all; s++)
                    if (first[s] < 0 || !cl->pid[first[s]])
                        all = 0;
            } else if (read_slots(cl, i, other) != 0 || memcmp(first, other, sizeof(first)) != 0) {
                all = 0;
            }
        }
        if (all && ref >= 0)
            return 0;
        sleep_ms(50);
    }
    return -1;
}

int seatd_test_cluster_start(seatd_test_cluster_t *cl, int primaries, int replicas)
{
    char exe[1024];
    memset(cl, 0, sizeof(*cl));
    int n = primaries * (1 + replicas);
    if (primaries < 3 || n > SEATD_TEST_CLUSTER_MAX) {
        fprintf(stderr, "cluster_fixture: need 3..%d nodes\n", SEATD_TEST_CLUSTER_MAX);
        return -1;
    }
    if (seatd_test_redis_exe(exe, sizeof(exe)) != 0) {
        fprintf(stderr, "cluster_fixture: redis-server not found on PATH\n");
        return -1;
    }
    snprintf(cl->dir, sizeof(cl->dir), "/tmp/seatd-cluster-XXXXXX");
    if (!mkdtemp(cl->dir)) {
        perror("cluster_fixture: mkdtemp");
        cl->dir[0] = '\0';
        return -1;
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cl->port[i] = cluster_port(cl->port, i);
        if (cl->port[i] < 0 || spawn_node(cl, i, exe) != 0)
            goto fail;
        cl->n = i + 1;
        off += (size_t)snprintf(cl->nodes + off, sizeof(cl->nodes) - off, "%s127.0.0.1:%d",
                                i ? "," : "", cl->port[i]);
    }
    long long deadline = now_ms() + START_TIMEOUT_MS;
    for (int i = 0; i < n; i++) {
        while (node_ping(cl, i) != 0) {
            int st;
            if (now_ms() > deadline || waitpid(cl->pid[i], &st, WNOHANG) == cl->pid[i]) {
                fprintf(stderr, "cluster_fixture: node on port %d did not start\n", cl->port[i]);
                if (waitpid(cl->pid[i], &st, WNOHANG) != 0)
                    cl->pid[i] = 0;
                goto fail;
            }
            sleep_ms(20);
        }
    }
    {
        char *argv[SEATD_TEST_CLUSTER_MAX + 8];
        char addr[SEATD_TEST_CLUSTER_MAX][24], reps[8];
        int k = 0;
        argv[k++] = "redis-cli";
        argv[k++] = "--cluster";
        argv[k++] = "create";
        for (int i = 0; i < n; i++) {
            snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d", cl->port[i]);
            argv[k++] = addr[i];
        }
        snprintf(reps, sizeof(reps), "%d", replicas);
        argv[k++] = "--cluster-replicas";
        argv[k++] = reps;
        argv[k++] = "--cluster-yes";
        argv[k] = NULL;
        if (run_cli(cl, argv) != 0) {
            fprintf(stderr, "cluster_fixture: redis-cli --cluster create failed (see %s/cli.log)\n",
                    cl->dir);
            goto fail;
        }
    }
    if (seatd_test_cluster_wait_ok(cl, (int)(deadline - now_ms())) != 0) {
        fprintf(stderr, "cluster_fixture: the cluster did not become ok in time\n");
        goto fail;
    }
    return 0;
fail:
    seatd_test_cluster_stop(cl);
    return -1;
}

static void kill_and_reap(int pid, int sig, int grace_ms)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    long long deadline = now_ms() + grace_ms;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return;
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return;
        }
        sleep_ms(10);
    }
}

void seatd_test_cluster_kill(seatd_test_cluster_t *cl, int i)
{
    kill_and_reap(cl->pid[i], SIGKILL, STOP_GRACE_MS);
    cl->pid[i] = 0;
}

void seatd_test_cluster_stop(seatd_test_cluster_t *cl)
{
    for (int i = 0; i < cl->n; i++)
        if (cl->pid[i])
            kill(cl->pid[i], SIGTERM);
    for (int i = 0; i < cl->n; i++) {
        kill_and_reap(cl->pid[i], SIGTERM, STOP_GRACE_MS);
        cl->pid[i] = 0;
    }
    if (cl->dir[0])
        remove_tree(cl->dir);
    cl->dir[0] = '\0';
    cl->n = 0;
}

int seatd_test_cluster_primary_of(seatd_test_cluster_t *cl, unsigned slot)
{
    static int owner[16384];
    for (int i = 0; i < cl->n; i++)
        if (cl->pid[i] && read_slots(cl, i, owner) == 0)
            return slot < 16384 ? owner[slot] : -1;
    return -1;
}

int seatd_test_cluster_other_primary(seatd_test_cluster_t *cl, int not_this)
{
    static int owner[16384];
    for (int i = 0; i < cl->n; i++) {
        if (!cl->pid[i] || read_slots(cl, i, owner) != 0)
            continue;
        for (int s = 0; s < 16384; s++)
            if (owner[s] >= 0 && owner[s] != not_this && cl->pid[owner[s]])
                return owner[s];
        return -1;
    }
    return -1;
}

int seatd_test_cluster_node_id(seatd_test_cluster_t *cl, int i, char *out)
{
    redisContext *c = seatd_test_cluster_connect(cl, i);
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "CLUSTER MYID");
    int rc = -1;
    if (r && r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(out, r->str, 41);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

/* One command on node i; 0 if it did not answer an error. */
static int node_cmd(seatd_test_cluster_t *cl, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int quiet;

static int node_cmd(seatd_test_cluster_t *cl, int i, const char *fmt, ...)
{
    redisContext *c = seatd_test_cluster_connect(cl, i);
    if (!c)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = r && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (rc && !quiet)
        fprintf(stderr, "cluster_fixture: node %d: %s: %s\n", cl->port[i], fmt,
                r ? r->str : c->errstr);
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return rc;
}

int seatd_test_cluster_begin_move(seatd_test_cluster_t *cl, unsigned slot, int to)
{
    int from = seatd_test_cluster_primary_of(cl, slot);
    char from_id[41], to_id[41];
    if (from < 0 || from == to || seatd_test_cluster_node_id(cl, from, from_id) != 0 ||
        seatd_test_cluster_node_id(cl, to, to_id) != 0)
        return -1;
    if (node_cmd(cl, to, "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id) != 0 ||
        node_cmd(cl, from, "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id) != 0)
        return -1;
    return 0;
}

/* MIGRATE of 'n' keys from the connection 'c' to node 'to'; 0 or -1 (said). */
static int migrate_batch(seatd_test_cluster_t *cl, redisContext *c, int to, const char **keys,
                         const size_t *klens, size_t n)
{
    const char **argv = calloc(n + 8, sizeof(char *));
    size_t *lens = calloc(n + 8, sizeof(size_t));
    char port[16];
    snprintf(port, sizeof(port), "%d", cl->port[to]);
    const char *head[] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"};
    int k = 0;
    for (; k < 7; k++) {
        argv[k] = head[k];
        lens[k] = strlen(head[k]);
    }
    for (size_t j = 0; j < n; j++, k++) {
        argv[k] = keys[j];
        lens[k] = klens ? klens[j] : strlen(keys[j]);
    }
    redisReply *m = redisCommandArgv(c, k, argv, lens);
    int bad = !m || m->type == REDIS_REPLY_ERROR;
    if (bad)
        fprintf(stderr, "cluster_fixture: MIGRATE: %s\n", m ? m->str : c->errstr);
    if (m)
        freeReplyObject(m);
    free(argv);
    free(lens);
    return bad ? -1 : 0;
}

int seatd_test_cluster_migrate_keys(seatd_test_cluster_t *cl, unsigned slot, int to,
                                    const char *const *keys)
{
    int from = seatd_test_cluster_primary_of(cl, slot);
    redisContext *c = from < 0 ? NULL : seatd_test_cluster_connect(cl, from);
    if (!c)
        return -1;
    int rc = 0;
    if (keys) {
        size_t n = 0;
        while (keys[n])
            n++;
        rc = n ? migrate_batch(cl, c, to, (const char **)keys, NULL, n) : 0;
        redisFree(c);
        return rc;
    }
    for (;;) {
        redisReply *r = redisCommand(c, "CLUSTER GETKEYSINSLOT %u 100", slot);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            rc = -1;
        } else if (r->elements > 0) {
            const char **names = calloc(r->elements, sizeof(char *));
            size_t *lens = calloc(r->elements, sizeof(size_t));
            for (size_t j = 0; j < r->elements; j++) {
                names[j] = r->element[j]->str;
                lens[j] = r->element[j]->len;
            }
            rc = migrate_batch(cl, c, to, names, lens, r->elements);
            free(names);
            free(lens);
        }
        size_t n = r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
        if (r)
            freeReplyObject(r);
        if (rc != 0 || n == 0)
            break;
    }
    redisFree(c);
    return rc;
}

int seatd_test_cluster_finish_move(seatd_test_cluster_t *cl, unsigned slot, int to)
{
    int from = seatd_test_cluster_primary_of(cl, slot);
    char to_id[41];
    if (from < 0 || seatd_test_cluster_node_id(cl, to, to_id) != 0)
        return -1;
    if (node_cmd(cl, to, "CLUSTER SETSLOT %u NODE %s", slot, to_id) != 0 ||
        (from != to && node_cmd(cl, from, "CLUSTER SETSLOT %u NODE %s", slot, to_id) != 0))
        return -1;
    quiet = 1; /* replicas refuse SETSLOT: the other primaries are what matters */
    for (int i = 0; i < cl->n; i++)
        if (cl->pid[i] && i != to && i != from)
            (void)node_cmd(cl, i, "CLUSTER SETSLOT %u NODE %s", slot, to_id);
    quiet = 0;
    return 0;
}

int seatd_test_cluster_move_slot(seatd_test_cluster_t *cl, unsigned slot, int to,
                                 void (*mid)(void *arg), void *arg)
{
    if (seatd_test_cluster_begin_move(cl, slot, to) != 0 ||
        seatd_test_cluster_migrate_keys(cl, slot, to, NULL) != 0)
        return -1;
    if (mid)
        mid(arg);
    return seatd_test_cluster_finish_move(cl, slot, to);
}
