/*
 * passwd.c - argon2id hashing on libuv's thread pool; see passwd.h.
 *
 * One heap context per call embeds its uv_work_t (container_of); the work function runs on a
 * pool thread and touches only the context; the after-work callback runs on the loop thread,
 * calls the caller back once and frees the context. Passwords are wiped before free.
 *
 * Hashing must not take the CPU from the event loops, nginx and Redis (the hold path): at most
 * seatd_passwd_set_in_flight() (default 1) hashes per process are on the pool at once (the rest
 * wait, in order, in a FIFO here: libuv's pool has 4 threads by default, and four 19 MiB hashes per
 * worker saturate a small machine's cores and caches), and a pool thread that hashes lowers its own
 * priority to nice 19 once, so the scheduler runs it on what the loops leave.
 */
#include "clients/passwd.h"

#include <argon2.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "base/list.h"
#include "base/mem.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define SALT_LEN 16
#define TAG_LEN 32

typedef struct passwd_op_s {
    uv_work_t work;
    int verify; /* 0: hash, 1: verify */
    char *pw;   /* owned, wiped before free */
    size_t len;
    char encoded[SEATD_PASSWD_ENCODED_MAX]; /* hash: the result; verify: the stored hash */
    int dummy;                              /* verify against the dummy hash */
    int rc;                                 /* hash: 0 or SEATD_EINTERNAL; verify: 1 on a match */
    seatd_passwd_hash_cb hash_cb;
    seatd_passwd_verify_cb verify_cb;
    void *data;
    struct uv_loop_s *loop;
    struct passwd_op_s *next; /* in the wait FIFO */
} passwd_op_t;

/* Hashes on the pool now, and those waiting for a turn (one loop per process). */
static int in_flight;
static int max_in_flight = SEATD_PASSWD_IN_FLIGHT;
static passwd_op_t *wait_head, *wait_tail;

static void after_work(uv_work_t *w, int status);
static void on_work(uv_work_t *w);

int seatd_passwd_hash_sync(const char *pw, size_t len, char *out)
{
    unsigned char salt[SALT_LEN];
    if (RAND_bytes(salt, sizeof(salt)) != 1)
        return SEATD_EINTERNAL;
    int rc = argon2id_hash_encoded(SEATD_PASSWD_T, SEATD_PASSWD_M_KIB, SEATD_PASSWD_P, pw, len,
                                   salt, sizeof(salt), TAG_LEN, out, SEATD_PASSWD_ENCODED_MAX);
    return rc == ARGON2_OK ? 0 : SEATD_EINTERNAL;
}

int seatd_passwd_verify_sync(const char *encoded, const char *pw, size_t len)
{
    if (encoded == NULL || strncmp(encoded, "$argon2id$", 10) != 0)
        return 0;
    return argon2id_verify(encoded, pw, len) == ARGON2_OK;
}

/* The dummy hash: made once, on the first pool thread that needs it, at the same cost. */
static char dummy_hash[SEATD_PASSWD_ENCODED_MAX];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void make_dummy(void)
{
    unsigned char pw[24];
    if (RAND_bytes(pw, sizeof(pw)) != 1)
        memset(pw, 0x5a, sizeof(pw));
    if (seatd_passwd_hash_sync((const char *)pw, sizeof(pw), dummy_hash) < 0)
        dummy_hash[0] = '\0';
}

static void on_work(uv_work_t *w)
{
    static __thread int niced;
    if (!niced) { /* Linux: a thread's nice value is its own (setpriority on its tid) */
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
        niced = 1;
    }
    passwd_op_t *op = container_of(w, passwd_op_t, work);
    if (!op->verify) {
        op->rc = seatd_passwd_hash_sync(op->pw, op->len, op->encoded);
        return;
    }
    if (op->dummy) {
        pthread_once(&dummy_once, make_dummy);
        (void)seatd_passwd_verify_sync(dummy_hash, op->pw, op->len);
        op->rc = 0;
        return;
    }
    op->rc = seatd_passwd_verify_sync(op->encoded, op->pw, op->len);
}

static void op_discard(passwd_op_t *op)
{
    OPENSSL_cleanse(op->pw, op->len);
    free(op->pw);
    OPENSSL_cleanse(op, sizeof(*op));
    free(op);
}

/* Starts waiting hashes while there is room; one that libuv refuses is answered as failed. */
static void start_waiting(void)
{
    while (in_flight < max_in_flight && wait_head) {
        passwd_op_t *op = wait_head;
        wait_head = op->next;
        if (wait_head == NULL)
            wait_tail = NULL;
        op->next = NULL;
        if (uv_queue_work(op->loop, &op->work, on_work, after_work) == 0) {
            in_flight++;
            continue;
        }
        if (op->verify)
            op->verify_cb(0, op->data);
        else
            op->hash_cb(SEATD_EINTERNAL, NULL, op->data);
        op_discard(op);
    }
}

static void after_work(uv_work_t *w, int status)
{
    passwd_op_t *op = container_of(w, passwd_op_t, work);
    in_flight--;
    if (op->verify) {
        op->verify_cb(status == 0 && op->rc == 1, op->data);
    } else if (status == 0 && op->rc == 0) {
        op->hash_cb(0, op->encoded, op->data);
    } else {
        op->hash_cb(status ? SEATD_ESHUTDOWN : op->rc, NULL, op->data);
    }
    op_discard(op);
    start_waiting();
}

static passwd_op_t *op_new(const char *pw, size_t len)
{
    passwd_op_t *op = seatd_calloc(1, sizeof(*op));
    op->pw = seatd_malloc(len + 1);
    memcpy(op->pw, pw, len);
    op->pw[len] = '\0';
    op->len = len;
    return op;
}

static int queue(struct uv_loop_s *loop, passwd_op_t *op)
{
    op->loop = loop;
    if (in_flight >= max_in_flight) { /* wait for a turn */
        SEATD_QUEUE_APPEND(wait_head, wait_tail, op);
        return 0;
    }
    if (uv_queue_work(loop, &op->work, on_work, after_work) != 0) {
        op_discard(op);
        return SEATD_EINTERNAL;
    }
    in_flight++;
    return 0;
}

void seatd_passwd_set_in_flight(int n)
{
    max_in_flight = n < 1 ? 1 : n > SEATD_PASSWD_IN_FLIGHT_MAX ? SEATD_PASSWD_IN_FLIGHT_MAX : n;
}

int seatd_passwd_in_flight(void)
{
    return in_flight;
}

int seatd_passwd_waiting(void)
{
    int n = 0;
    for (const passwd_op_t *op = wait_head; op; op = op->next)
        n++;
    return n;
}

int seatd_passwd_hash(struct uv_loop_s *loop, const char *pw, size_t len, seatd_passwd_hash_cb cb,
                      void *data)
{
    if (loop == NULL || pw == NULL || cb == NULL)
        return SEATD_EINVAL;
    passwd_op_t *op = op_new(pw, len);
    op->hash_cb = cb;
    op->data = data;
    return queue(loop, op);
}

int seatd_passwd_verify(struct uv_loop_s *loop, const char *encoded, const char *pw, size_t len,
                        seatd_passwd_verify_cb cb, void *data)
{
    if (loop == NULL || pw == NULL || cb == NULL)
        return SEATD_EINVAL;
    passwd_op_t *op = op_new(pw, len);
    op->verify = 1;
    op->verify_cb = cb;
    op->data = data;
    if (encoded == NULL || encoded[0] == '\0' || strlen(encoded) >= sizeof(op->encoded))
        op->dummy = 1;
    else
        memcpy(op->encoded, encoded, strlen(encoded) + 1);
    return queue(loop, op);
}
