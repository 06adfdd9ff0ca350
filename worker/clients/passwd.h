/*
 * passwd.h - password hashing with argon2id (libargon2), off the event loop.
 *
 * Parameters are OWASP's (Password Storage Cheat Sheet) for argon2id: m = 19456 KiB (19 MiB),
 * t = 2 iterations, p = 1 lane, a 16-byte random salt and a 32-byte tag; the hash is stored
 * in argon2's encoded form ("$argon2id$v=19$m=19456,t=2,p=1$<salt>$<tag>"), so a later change
 * of parameters still verifies old hashes.
 *
 * A hash costs tens of milliseconds of CPU and 19 MiB of memory, so seatd_passwd_hash() and
 * seatd_passwd_verify() run on libuv's thread pool (uv_queue_work) and answer on the loop
 * thread; the event loop never hashes. Nor may hashing starve the hold path: at most
 * SEATD_PASSWD_IN_FLIGHT hashes per process are on the pool at once (the others wait their
 * turn in order), and a pool thread that hashes runs at nice 19. Verifying against no hash (an
 * unknown email) verifies against a fixed dummy hash of the same cost, so that answer takes as long
 * as a wrong password.
 *
 * Callback contract (STYLE rule 18): a call that returns 0 runs 'cb' exactly once on the loop
 * thread (also at loop shutdown: libuv completes queued work); an error return never runs it.
 * The only module that includes argon2.h.
 */
#ifndef SEATD_PASSWD_H
#define SEATD_PASSWD_H

#include <stddef.h>

#include "base/errors.h"
#include "domain/config.h" /* SEATD_PASSWD_IN_FLIGHT_MAX */

#define SEATD_PASSWD_M_KIB 19456
#define SEATD_PASSWD_T 2
#define SEATD_PASSWD_P 1
#define SEATD_PASSWD_ENCODED_MAX 128 /* bytes of an encoded hash, NUL included */
#define SEATD_PASSWD_IN_FLIGHT 1     /* default: hashes on the thread pool at once, per process */

struct uv_loop_s;

/* 'err' 0 and 'encoded' (borrowed for the call) the encoded hash, or 'err' < 0 and NULL. */
typedef void (*seatd_passwd_hash_cb)(int err, const char *encoded, void *data);
/* 'ok' 1 when the password matches (never for a NULL hash). */
typedef void (*seatd_passwd_verify_cb)(int ok, void *data);

/* Hashes 'pw' ('len' bytes, borrowed: copied) on the thread pool of 'loop'. 0 or SEATD_EINVAL. */
SEATD_MUSTCHECK int seatd_passwd_hash(struct uv_loop_s *loop, const char *pw, size_t len,
                                      seatd_passwd_hash_cb cb, void *data);

/* Verifies 'pw' against 'encoded' (both borrowed: copied; 'encoded' NULL or "" verifies against
 * the dummy hash and answers 0) on the thread pool. 0 or SEATD_EINVAL. */
SEATD_MUSTCHECK int seatd_passwd_verify(struct uv_loop_s *loop, const char *encoded, const char *pw,
                                        size_t len, seatd_passwd_verify_cb cb, void *data);

/* Sets how many hashes this process runs on the thread pool at once (1..
 * SEATD_PASSWD_IN_FLIGHT_MAX, clamped; --hash-concurrency): deploy/up gives each worker its
 * share of the cores, so a machine with fewer workers than cores still hashes on all of them.
 * Call before the first hash. */
void seatd_passwd_set_in_flight(int n);

/* Hashes on the thread pool now (at most the setting above) and hashes waiting for
 * their turn, in this process: for /metrics and tests. */
int seatd_passwd_in_flight(void);
int seatd_passwd_waiting(void);

/* The same, synchronously on the calling thread (seatctl, tests). Hash: 0 and 'out'
 * (SEATD_PASSWD_ENCODED_MAX bytes), or SEATD_EINTERNAL. Verify: 1 on a match, else 0. */
SEATD_MUSTCHECK int seatd_passwd_hash_sync(const char *pw, size_t len, char *out);
int seatd_passwd_verify_sync(const char *encoded, const char *pw, size_t len);

#endif
