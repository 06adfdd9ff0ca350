/*
 * fanout.h - what the files of seatd_fanout (bench/seatd_fanout/, the client of the live-map
 * fan-out benchmark; main.c describes a run) share: the limits, the memory shared by the
 * parent, the publishers and the client processes, the HTTP client (net.c), and the entry of
 * each kind of process: publisher.c, client.c. The parent (main.c) forks them.
 *
 * The shared memory is mapped once by main() before any fork; every process then reads and
 * writes it through fanout_shared. Each process runs on one thread.
 */
#ifndef SEATD_BENCH_FANOUT_H
#define SEATD_BENCH_FANOUT_H

#include <stdint.h>

#include "base/buf.h"
#include "hist.h"
#define MAX_PROCS 64
#define MAX_PUBS 64
#define MAX_OPS (1 << 21) /* changes in one run */
#define MAX_SEATS 4096    /* seats of the show (S1..Sn) */
#define HEAD_MAX 192      /* bytes of a seatd frame needed to read its versions */
#define RBUF (256 * 1024) /* read buffer per client process */
#define VERIFY_MAX 8      /* verified connections per client process */

enum { SIDE_SEATD, SIDE_NCHAN };
enum { ST_AVAILABLE = 0, ST_HELD = 1 };

/* Counters of one client process (written by it alone, read by the parent). */
typedef struct {
    volatile long long delivered;  /* changes x watchers, each counted once */
    volatile long long frames;     /* data frames read */
    volatile long long bytes;      /* bytes read after the upgrades */
    volatile long long snapshots;  /* seatd: snapshots after the first one */
    volatile long long broken;     /* seatd: a delta that did not chain on the last version */
    volatile long long dup;        /* nchan: a message seen twice by one watcher */
    volatile long long closed;     /* connections the server closed */
    volatile long long unresolved; /* latency samples whose change was never acknowledged */
    volatile long long complete;   /* watchers that got every change (after the drain) */
    volatile long long verified;   /* frames whose content was checked */
    volatile long long bad;        /* of which wrong */
    volatile long long pongs;      /* pings answered */
    volatile int deflated;         /* watchers whose permessage-deflate offer was taken */
    volatile int finished;         /* results below are final */
    seatd_hist_t hist;             /* latency of the changes published in the window, us */
    char pad[128];
} proc_stats_t;

typedef struct {
    int side;
    int port;
    int nseats;
    int nsources;
    int verify;
    char target[64]; /* show id (seatd) or channel (nchan) */
    volatile int connected;
    volatile int greeted;      /* seatd: got its snapshot; nchan: upgraded */
    volatile int connect_fail; /* a connection or upgrade that failed */
    volatile long long v0;     /* seatd: the show's version before the first change */
    volatile int stop;         /* clients: finish (after the drain) */
    volatile long long win_start_ns, win_end_ns;
    /* publishers */
    volatile long long t0_ns; /* op i is due at t0 + i * gap */
    volatile long long gap_ns;
    volatile long long ops_max;   /* ops to publish */
    volatile long long next_pair; /* the next hold/release pair to take */
    volatile long long ops_ok, ops_fail, late_ms_max;
    volatile long long max_k; /* highest change number acknowledged */
    volatile int pub_done;
    proc_stats_t proc[MAX_PROCS];
    /* the publishers' log, by change number k (seatd: version - v0; nchan: seq), 1-based */
    volatile long long send_ns[MAX_OPS + 1];
    volatile uint16_t op_seat[MAX_OPS + 1];
    volatile uint8_t op_st[MAX_OPS + 1];
} shared_t;

/* The memory shared by all processes of the run (mapped by main()). */
extern shared_t *fanout_shared;
/* seatd: one user's token per seat (made by main() before the publishers fork). */
extern char **fanout_tokens;

/* CLOCK_MONOTONIC in ns. */
long long fanout_now_ns(void);

/* ---------------------------------------------------------------------------------------
 * Network (net.c)
 * --------------------------------------------------------------------------------------- */

/* A TCP connection to 127.0.0.1:port from 127.0.0.<2 + src> (src < 0: the default address). */
int fanout_tcp_connect(int src);

/* A keep-alive HTTP/1.1 client (the publishers and the show's creation). */
typedef struct {
    int fd;
    seatd_buf_t in;
} http_conn_t;

/* Sends one request on 'h' (reconnecting once if the kept connection was closed) and reads
 * the answer; the body (NUL-terminated) is left in '*body' (owned by 'h', valid until the next
 * call). Returns the status or -1. */
int fanout_http_req(http_conn_t *h, const char *method, const char *path, const char *token,
                    const char *body, const char **out);
/* The integer after 'key' (e.g. "\"version\":") in 's', or -1. */
long long fanout_json_ll(const char *s, const char *key);

/* ---------------------------------------------------------------------------------------
 * The processes
 * --------------------------------------------------------------------------------------- */

/* Sleeps until CLOCK_MONOTONIC reaches 't' ns (publisher.c). */
void fanout_wait_until(long long t);
/* One publisher process: takes hold/release pairs until ops_max (publisher.c). */
void fanout_publisher_proc(void);
/* Client process 'pi' (its counters: proc[pi]): watchers first .. first + nconns - 1 of the run
 * (client.c). */
void fanout_client_proc(int pi, int first, int nconns);

#endif /* SEATD_BENCH_FANOUT_H */
