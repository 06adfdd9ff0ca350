/*
 * pubsub.h - one dedicated Redis connection in subscribe mode, for the seat deltas.
 *
 * A subscribed connection can only (un)subscribe and receive, so it is not one of the
 * request/response pool's: it is a one-connection rds client of its own (rds.h, "a
 * subscribe-mode connection"), which owns connecting, AUTH, the backoff (100 ms doubling to
 * 5 s) and the teardown. The owner says which channels it wants (seatd_pubsub_subscribe /
 * _unsubscribe); this module keeps the connection subscribed to exactly that set, across
 * reconnects, and reports three events through one callback:
 *
 *   SEATD_PUBSUB_SUBSCRIBED  Redis confirmed the subscription of 'channel' (after every
 *                            (re)connect too): messages published from now on will arrive.
 *   SEATD_PUBSUB_MESSAGE     a message 'payload' on 'channel'.
 *   SEATD_PUBSUB_LOST        the connection dropped: messages on 'channel' may have been
 *                            missed; a SUBSCRIBED follows once it is back.
 *
 * It knows nothing about shows: channels are opaque strings.
 *
 * Lifecycle: seatd_pubsub_new() (connects at once) -> ... -> seatd_pubsub_close(), an
 * asynchronous teardown that frees the object in its last close callback; no event is
 * reported after close() returns. Loop and threads: one loop, one thread.
 */
#ifndef SEATD_PUBSUB_H
#define SEATD_PUBSUB_H

#include <stddef.h>

#include "base/errors.h"

struct uv_loop_s;

typedef struct seatd_pubsub_s seatd_pubsub_t;

enum seatd_pubsub_event_e {
    SEATD_PUBSUB_SUBSCRIBED,
    SEATD_PUBSUB_MESSAGE,
    SEATD_PUBSUB_LOST,
};

/* One event; 'channel' and 'payload' ('len' bytes; NULL unless MESSAGE) are borrowed for
 * the call. The callback may subscribe and unsubscribe. */
typedef void (*seatd_pubsub_event_cb)(int event, const char *channel, const char *payload,
                                      size_t len, void *data);

/* Credentials sent as "AUTH [user] password" first on every pubsub (re)connection, for
 * every subscriber created afterwards ('user' may be NULL; both copied; NULL password: none).
 * Process-wide, set once at start-up before the loop runs. */
void seatd_pubsub_set_auth(const char *user, const char *password);

/* Cluster mode: subscribers connect to one of these nodes ("host:port,host:port"; copied;
 * NULL or "" = off) instead of their own address, the next one after each failure. Classic
 * PUBLISH is broadcast to every node over the cluster bus, so one connection to any node
 * hears every show's deltas (docs/cluster.md). Process-wide, set once at start-up. */
void seatd_pubsub_set_nodes(const char *list);

/* Returns an owned subscriber connecting to 'host':'port' or to 'unix_path' when it is not
 * NULL (strings borrowed, copied). Events go to 'cb' with 'data'. */
seatd_pubsub_t *seatd_pubsub_new(struct uv_loop_s *loop, const char *host, int port,
                                 const char *unix_path, seatd_pubsub_event_cb cb, void *data);

/* Wants 'channel' (borrowed, copied). Idempotent. SUBSCRIBED is reported once Redis
 * confirms (or after the next reconnect). Returns 0 or SEATD_ESHUTDOWN after close. */
SEATD_MUSTCHECK int seatd_pubsub_subscribe(seatd_pubsub_t *ps, const char *channel);

/* No longer wants 'channel' (borrowed). No event for it is reported after this returns,
 * until it is subscribed again. Idempotent. */
void seatd_pubsub_unsubscribe(seatd_pubsub_t *ps, const char *channel);

/* Channels currently wanted. */
size_t seatd_pubsub_channels(const seatd_pubsub_t *ps);
/* 1 when the connection is up. */
int seatd_pubsub_connected(const seatd_pubsub_t *ps);
/* Connection attempts so far (the clients made: in cluster mode one per node tried). */
unsigned long seatd_pubsub_attempts(const seatd_pubsub_t *ps);

/* Starts the asynchronous teardown described above. NULL is a no-op. */
void seatd_pubsub_close(seatd_pubsub_t *ps);

#endif
