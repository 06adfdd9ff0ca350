/*
 * keys.h - the Redis key schema and the grammar of every id that reaches a key name.
 *
 * Every key of a show carries the hash tag {s:<showId>}, so a show's keys share one slot:
 *
 *   {s:42}:meta              hash    title, startsAt, holdTtlMs, priceTiers, layoutHash,
 *                                    seatCount, createdAt, extra (only when not empty),
 *                                    salesCloseAt, orphanRule ("block"; only when set)
 *   {s:42}:seat:<seatId>     string  the hold id holding the seat; PXAT = the hold deadline
 *   {s:42}:held              bitmap  bit i set <=> seat i has a live seat key; absent = all 0
 *   {s:42}:booked            bitmap  bit i set <=> seat i is in a CONFIRMED booking; absent =
 *                                    all 0 (an all-zero bitmap is deleted by the scripts)
 *   {s:42}:ver               integer projection version, bumped on every seat change (ETag)
 *   {s:42}:expiry            zset    hold id -> deadline (epoch ms), for reaping
 *   {s:42}:hold:<holdId>     hash    owner, showId, seats, bits (each seat's bit index, aligned
 *                                    with seats), status, expiresAt, createdAt, bookingId,
 *                                    heldUntil, idemKey; no TTL while HELD or
 *                                    PENDING_PAYMENT, 1 h once RELEASED/EXPIRED/BOOKED
 *   {s:42}:user:<sub>        hash    live hold id -> seat count, and "booked" -> seats booked
 *   {s:42}:idem:<sub>:<key>  string  the first answer as JSON (holdId, expiresAt, version,
 *                                    seatIds = the fingerprint, or fp = the request of a
 *                                    best-available hold, split), 24 h TTL
 *   {s:42}:booking:<id>      hash    owner, holdId, seatIds, bits (copied from the hold),
 *                                    amount, status, paymentRef, …
 *   {s:42}:bookings          stream  booking events (the outbox), appended by the scripts
 *   {s:42}:bookings:dead     stream  events seatd-notify gave up on (dead letters), kept
 *   {s:42}:notified:<g>:<e>  string  seatd-notify's delivery claim of event <e> for group <g>
 *                                    ("sending:<ms>:<consumer>" then "done"), 7 d TTL
 *   {s:42}:pending           zset    bookingId -> ms it started, while PENDING_PAYMENT
 *   {s:42}:refunds           zset    bookingId -> ms cancelled, until the refund is confirmed
 *                                    (also a late charge's refund, until it is recorded)
 *   {s:42}:failed            zset    bookingId -> ms it started, once FAILED while its charge
 *                                    may still land, until reconciliation asked the gateway
 *                                    past the charge horizon (reconcile.h)
 *   {s:42}:ch                channel seat deltas {"v":version,"c":[[seat,status],…]}, and the
 *                                    waiting room's {"q":1,"a":admitted,"s":state,"w":waiting}
 *   {s:42}:queue             zset    waiting room (issue 15, lua/queue.lua): user -> rank key
 *   {s:42}:qticket           hash    user -> ticket ("<showId>-q<20 hex>"), one per user
 *   {s:42}:qadmit, :qpend    zset    user -> admission deadline (ms): admitted shoppers, and
 *                                    those of them who have not held yet
 *   {s:42}:qstate            hash    admitted (count), seq (arrivals), firstAt, pub
 *   seatd:queues:{hN}        zset    show id -> sales close (ms): waiting rooms with people in
 *                                    them, advanced by every worker's sweeper (16 buckets, as
 *                                    the hint indexes below)
 *   seatd:layout:<sha256>    string  a frozen layout, shared by every show created with it: the
 *                                    canonical "seats" JSON array (seat i has bit i), stored
 *                                    once (SET NX) under the SHA-256 hex of its text, never
 *                                    changed or expired. Read by workers only (layout.h's
 *                                    seatd_layout_digest() is the address); a show's meta
 *                                    names it by layoutHash.
 *   seatd:shows              zset    catalogue: show id by startsAt
 *
 * Accounts (issue 14; lua/accounts.lua): every key of one user carries the hash tag
 * {u:<userId>}, so a user's functions are single-slot; the email index is its own slot.
 *   seatd:email:<email>      string  the user id of the account with that (normalised) email;
 *                                    claimed with SET NX before the user record is written
 *   {u:<id>}:user            hash    email, name, hash (argon2id, encoded), admin, createdAt
 *   {u:<id>}:fam:<familyId>  hash    a refresh-token family (one login): current (token hash),
 *                                    createdAt, expiresAt, rotatedAt; PEXPIREAT expiresAt
 *   {u:<id>}:rt:<sha256>     hash    one refresh token, by the SHA-256 hex of its text: fam,
 *                                    used ("1" once rotated); expires with its family
 *   {u:<sub>}:holds          zset    hold id -> ms the worker filed it (queued before the 201,
 *                                    not waited for); entries older than 1 day are trimmed
 *   {u:<sub>}:bookings       zset    booking id -> ms filed (queued when it begins, not waited
 *                                    for; seatd-notify files confirmed and cancelled ones from
 *                                    the outbox, ZADD NX), kept
 *   seatd:login:addr:<addr>  string  login attempts from one client address (seatd_attempt)
 *   seatd:login:acct:<h>     string  failed logins of one email (<h>: 32 hex of its SHA-256)
 *   seatd:register:addr:<a>  string  registrations from one client address
 *   seatd:declines:<sub>     string  the per-user decline cap's counter (skipped, not waited for,
 *                                    when its shard cannot be reached: SEATD_RDS_NO_WAIT)
 *   seatd:show_seq           integer show id sequence
 *   seatd:pending_shows:{hN} zset    show id -> hint count: shows reconciliation should look at
 *                                    (16 buckets, see "Hint indexes" below)
 *
 * The scripts receive {s:<id>}:meta as KEYS[1] (it routes the call to the show's slot) and
 * derive the other keys of the same show from its hash tag. No show script reads a shared
 * layout (another slot): the worker sends each seat's bit with its id and the layout's hash,
 * which seatd_hold checks against the show's layoutHash before any write.
 *
 * Pure: no I/O.
 */
#ifndef SEATD_KEYS_H
#define SEATD_KEYS_H

#include <stddef.h>

#include "base/errors.h"

#define SEATD_KEY_MAX 256 /* longest key we build, NUL included */
#define SEATD_ID_MAX 48   /* longest show/hold/booking id, NUL included */

/* Show ids: 1-18 decimal digits, no leading zero. */
int seatd_keys_valid_show_id(const char *s);
/* Seat ids: ^[A-Za-z0-9_-]{1,16}$. */
int seatd_keys_valid_seat_id(const char *s);
/* User ids (JWT sub): ^[A-Za-z0-9_.@:|-]{1,64}$ (no braces, no spaces). */
int seatd_keys_valid_sub(const char *s);
/* Idempotency keys: ^[A-Za-z0-9_.-]{1,128}$ (no ':', see keys.c). */
int seatd_keys_valid_idem_key(const char *s);

/*
 * Hold and booking ids name their show so any worker finds the keys from the id alone:
 * "<showId>-h<20 hex>" and "<showId>-b<20 hex>"; so do waiting-room tickets,
 * "<showId>-q<20 hex>" (issue 15); event groups and group holds name their first show,
 * "<showId>-g<20 hex>" and "<showId>-m<20 hex>" (issue 30). 'kind' is 'h', 'b', 'q', 'g'
 * or 'm'.
 * seatd_keys_new_id() writes a fresh random id (OpenSSL RAND_bytes) into 'out'
 * (SEATD_ID_MAX bytes). seatd_keys_parse_id() checks 'id' and copies its show id into
 * 'show_out' (SEATD_ID_MAX bytes); returns 0 or SEATD_EBADID.
 */
SEATD_MUSTCHECK int seatd_keys_new_id(char *out, const char *show_id, char kind);
SEATD_MUSTCHECK int seatd_keys_parse_id(const char *id, char kind, char *show_out);

/* Writes "{s:<showId>}:<suffix>" into 'out' (SEATD_KEY_MAX bytes). Returns 0 or SEATD_EBADID
 * if the show id is invalid or the key would not fit. */
SEATD_MUSTCHECK int seatd_keys_show(char *out, const char *show_id, const char *suffix);
/* The Redis Cluster hash slot of show 'show_id''s keys (their tag "s:<id>"). */
unsigned seatd_keys_show_slot(const char *show_id);
/* The smallest show id >= 'from' whose keys are in hash slot 'slot' (a show created to be
 * grouped with another, issue 30: one in 16,384 ids, found in about a millisecond). */
long long seatd_keys_show_id_in_slot(long long from, unsigned slot);

/* Writes "{u:<sub>}:<suffix>" into 'out' (SEATD_KEY_MAX bytes). 0 or SEATD_EBADID (invalid
 * user id, or too long). */
SEATD_MUSTCHECK int seatd_keys_user(char *out, const char *sub, const char *suffix);
/* Writes "seatd:email:<email>" ('email' already normalised by account.h) into 'out'. */
SEATD_MUSTCHECK int seatd_keys_email(char *out, const char *email);

#define SEATD_KEY_CATALOGUE "seatd:shows"
#define SEATD_KEY_SHOW_SEQ "seatd:show_seq"

/*
 * Hint indexes: which shows the sweeper (seatd:due) and reconciliation (seatd:pending_shows)
 * should look at. They are global (a show's script cannot write them: another slot), so they
 * are split into SEATD_HINT_BUCKETS keys, bucket b covering the hash slots
 * [b * 16384 / SEATD_HINT_BUCKETS, (b + 1) * 16384 / SEATD_HINT_BUCKETS): a show's hints go to
 * the bucket of its own slot, and each bucket's key carries a hash tag chosen to fall in that
 * same range, e.g. "seatd:due:{h13}" (slot 606) for bucket 0. On a cluster whose shards own
 * contiguous slot ranges (what `redis-cli --cluster create` makes), a shard then holds the
 * hints of the shows it owns: no shard is the hotspot of all sweeping and reconciliation,
 * and a dead shard stops only its own shows' hints. Readers walk every bucket.
 *   seatd:due:{hN}            zset  show id -> earliest deadline (ms) to look at (sweeper.h)
 *   seatd:pending_shows:{hN}  zset  show id -> hint count: a worker started a booking or a
 *                                   cancellation there (reconcile.h); cleared only if the
 *                                   count did not change meanwhile
 */
#define SEATD_HINT_BUCKETS 16
#define SEATD_KEY_DUE "seatd:due"
#define SEATD_KEY_PENDING_SHOWS "seatd:pending_shows"
/* The ledger walk's cursor (reconcile.h): the id of the last gateway charge it has settled. A
 * string key of its own slot. */
#define SEATD_KEY_LEDGER_CURSOR "seatd:ledger:cursor"
/* Which worker walks the ledger this period: SET NX PX <period> (reconcile.c). */
#define SEATD_KEY_LEDGER_LEASE "seatd:ledger:lease"
#define SEATD_KEY_QUEUES "seatd:queues" /* waiting rooms the sweepers advance (hints.h) */
/* The bucket of show 'show_id' (0..SEATD_HINT_BUCKETS-1), or -1 if the id is invalid. */
int seatd_keys_hint_bucket(const char *show_id);
/* Writes "<base>:{<tag of 'bucket'>}" into 'out' (SEATD_KEY_MAX bytes); 'base' is one of the
 * two above. Returns 0, or SEATD_EBADID for a bucket out of range. */
SEATD_MUSTCHECK int seatd_keys_hint(char *out, const char *base, int bucket);
/* The hint key of 'base' for show 'show_id'. Returns 0 or SEATD_EBADID. */
SEATD_MUSTCHECK int seatd_keys_show_hint(char *out, const char *base, const char *show_id);

#endif
