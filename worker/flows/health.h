/*
 * health.h - is Redis answering? The probe behind GET /healthz (both listeners).
 *
 * Ready means Redis answers a PING within the deadline: a connected but hung Redis (SIGSTOP,
 * a stuck script) must fail readiness, not just a lost connection. The PING and a deadline
 * timer race; the first one decides, the later one only lets go.
 *
 * Loop and threads: the worker's loop; 'app' (its rds client and loop) must outlive the probe.
 */
#ifndef SEATD_FLOWS_HEALTH_H
#define SEATD_FLOWS_HEALTH_H

#include <stdint.h>

#include "base/errors.h"

struct seatd_app_s;

/* 'redis_up': 1 for a PONG within the deadline, 0 for an error, a lost connection or the
 * deadline. */
typedef void (*seatd_health_cb)(int redis_up, void *data);

/* 1 when the worker's Redis client is connected (no PING: a cheap, stale answer). */
int seatd_health_connected(const struct seatd_app_s *app);

/* Sends a PING with a deadline of 'timeout_ms'. 0: started, 'cb' runs exactly once, on a
 * later loop turn; < 0 (SEATD_EUNAVAILABLE): not connected or not sent, 'cb' never runs. */
SEATD_MUSTCHECK int seatd_health_probe(struct seatd_app_s *app, uint64_t timeout_ms,
                                       seatd_health_cb cb, void *data);

#endif
