/*
 * notify.h - what the files of seatd-notify (the outbox consumer, tools/seatd-notify/) share:
 * the process's state (the command line, the Redis connection, the streams it reads), the
 * clock, the log and Redis commands (main.c), the catalogue walk that finds the streams
 * (streams.c) and the reading, delivery and retries of their events (delivery.c). main.c's
 * comment describes the consumer as a whole.
 *
 * One process is one consumer, on one thread: the state is a process global, set by main()
 * from the command line before the loop starts.
 */
#ifndef SEATD_NOTIFY_H
#define SEATD_NOTIFY_H

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stddef.h>

#include "domain/keys.h"
#include "redis_sync.h"
#define DEFAULT_BATCH 1000
#define READ_COUNT "10"
#define STALE_CLAIM_MS 1000            /* a "sending" claim this old belongs to a dead consumer */
#define CLAIM_HELD "held-for-replicas" /* a claim not sent for want of replicas: take it */
#define CLIENT_TIMEOUT_MS 5000         /* redis_sync's per-command default */
#define DEDUPE_TTL "604800"
/* A stream that found nothing is read again after IDLE_MIN_MS, doubling to IDLE_MAX_MS while
 * it stays empty; one that found entries is read again at once. So a quiet catalogue costs
 * Redis about one read per show per second, and a busy show does not make every other
 * stream's read busy too (it did: 71 shows, one on sale, ~1,400 XREADGROUP/s). */
#define IDLE_MIN_MS 50
#define IDLE_MAX_MS 1000
/* The pending list is looked at every retry-base/2 while it lists entries (or after a read
 * took some), and the interval doubles to RECLAIM_MAX_MS while it lists none: so a dead
 * consumer's entries are taken over within that much more. */
#define RECLAIM_MAX_MS 4000

typedef struct {
    char show[SEATD_ID_MAX];
    char stream[SEATD_KEY_MAX];
    int grouped;            /* the group exists on this stream */
    unsigned long seen;     /* the catalogue walk that last listed the show */
    int last_read;          /* entries the last read found */
    long idle_ms;           /* 0 after a read that found entries, else the current poll interval */
    long long next_read;    /* monotonic ms: read again from then on */
    long reclaim_ms;        /* the current interval between two looks at the pending list */
    long long next_reclaim; /* monotonic ms: look again from then on */
} stream_t;

/* The consumer's state: its command line and what it has learned since the start. */
typedef struct notify_state_s {
    char host[256];
    int port;
    const char *group;
    char consumer[128];
    const char *log_path;
    long max_deliveries;
    long retry_base_ms;
    long refresh_ms;
    long delay_ms;
    seatd_redis_t *c; /* NULL until connected */
    int log_fd;
    long batch;
    long wait_replicas; /* WAIT for this many replicas before sending; 0: off */
    long wait_ms;       /* WAIT's timeout */
    unsigned long held; /* events held back for replicas since the start */
    stream_t *streams;  /* owned, sorted by show id */
    size_t nstreams, cap;
    long cursor;              /* the next catalogue offset */
    unsigned long walk;       /* catalogue walks begun (the current one included) */
    char redis_user[128];     /* ACL user, or "" */
    char redis_password[256]; /* its password, or "": no AUTH */
} notify_state_t;

extern notify_state_t notify;

/* Set by SIGTERM / SIGINT: finish the current event and exit 0. */
extern volatile sig_atomic_t notify_stop_flag;

/* ---------------------------------------------------------------------------------------
 * The process (main.c)
 * --------------------------------------------------------------------------------------- */

long long notify_now_ms(void);
/* The pace at which a pending list with entries is looked at: half the first retry's wait. */
long notify_reclaim_base(void);
/* Sleeps 'ms', cut short by a stop signal. */
void notify_sleep_ms(long ms);
/* One JSON line on stderr, naming the consumer. */
void notify_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs a command on the node that owns its key, connecting first when there is no client
 * yet. Owned reply or NULL. */
redisReply *notify_cmdv(int argc, const char **argv, const size_t *lens);
redisReply *notify_cmd(int argc, const char **argv);
/* 1 for no reply or an error reply. */
int notify_is_error(const redisReply *r);

/* ---------------------------------------------------------------------------------------
 * The streams (streams.c)
 * --------------------------------------------------------------------------------------- */

/* Reads one page of the catalogue: new shows get a stream entry, every listed one is marked
 * seen in this walk and gets its group once the stream exists. */
void notify_refresh_streams(void);

/* ---------------------------------------------------------------------------------------
 * Delivery and retries (delivery.c)
 * --------------------------------------------------------------------------------------- */

/* Reads the new entries of 's' for this consumer, handles each and sets when to read 's' again;
 * how many entries it found. */
int notify_read_new(stream_t *s);
/* Looks at the pending list of 's' when it is due (retries, a dead consumer's entries); then
 * sets its next look (see RECLAIM_MAX_MS). */
void notify_reclaim_when_due(stream_t *s, long long now);

#endif /* SEATD_NOTIFY_H */
