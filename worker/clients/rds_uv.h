/*
 * rds_uv.h - our libuv event adapter for hiredis 0.14 async contexts, part of the node layer
 * (rds_node.h): used by rds_conn.c for every connection (pubsub's included) instead of
 * <hiredis/adapters/libuv.h>.
 *
 * Why: libuv reports a socket error (POLLERR: a refused connect, a reset connection) by
 * stopping the poll handle and calling its callback with a negative status and no events.
 * The packaged adapter returns on any status != 0, so hiredis never hears of the error and
 * the connection sits silent until one of our deadlines fires (the connect deadline, at
 * least 1 s, or the command deadline). This adapter hands the error to hiredis at once.
 *
 * Contract: seatd_rds_uv_attach() attaches 'ac' (borrowed; hiredis owns the adapter state
 * from then on and releases it through its cleanup hook when the context is freed) to 'loop'.
 * Returns 0, or SEATD_EINVAL when 'ac' is already attached or its socket cannot be polled
 * (the caller then frees 'ac'). On a poll error the context is failed within that loop turn:
 *   - still connecting: hiredis checks SO_ERROR and runs the connect callback with an error
 *     (then frees the context itself);
 *   - connected: hiredis reads, sees the socket error and disconnects: every pending reply
 *     callback runs with NULL, then the disconnect callback runs with REDIS_ERR.
 * If hiredis finds nothing wrong on a connected context (the error was consumed elsewhere),
 * the adapter fails it the same way itself, since libuv will not poll that socket again.
 *
 * Stats: seatd_rds_uv_poll_errors() counts poll errors handed to hiredis in this process
 * (tests use it to tell the error path from the deadline path).
 */
#ifndef SEATD_RDS_UV_H
#define SEATD_RDS_UV_H

#include "base/errors.h"

struct redisAsyncContext;
struct uv_loop_s;

SEATD_MUSTCHECK int seatd_rds_uv_attach(struct redisAsyncContext *ac, struct uv_loop_s *loop);

/* Poll errors reported to hiredis since the process started (one loop thread). */
unsigned long long seatd_rds_uv_poll_errors(void);

#endif
