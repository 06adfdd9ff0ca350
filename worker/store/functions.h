/*
 * functions.h - every Redis Function of the seatd library (the lua/ folder), named once.
 *
 * The C side calls a Function only through these names (tests/unit/test_functions.c checks
 * that this list and the register_function calls of the lua/ folder are the same set, and
 * that no other file of worker/ spells a Function's name), and says here how the Redis
 * client may treat each call:
 *   SEATD_RDS_IDEMPOTENT  safe to run twice: a call sent on a connection that was then lost
 *                         may be resent (cluster mode);
 *   SEATD_RDS_DURABLE     acknowledged only after WAIT (--redis-wait-replicas): the money
 *                         path (docs/durability.md);
 *   0                     never resent after it may have run, no WAIT. (seatd_hold,
 *                         seatd_hold_sell and seatd_hold_batch are idempotent exactly when
 *                         their holds carry an idempotency key: scripts.c decides per call.)
 * Why: the no-writes Functions are idempotent; so is seatd_me_add (a repeat only moves the
 * entry's score), never seatd_session_refresh (a resent refresh would be a replay and revoke
 * the family). The money path is durable: a booking's begin is on a replica before its card
 * is charged, its confirm before the buyer hears 201, a lost booking's record and a
 * cancellation before their refund is asked for.
 */
#ifndef SEATD_STORE_FUNCTIONS_H
#define SEATD_STORE_FUNCTIONS_H

#include "clients/rds.h"

/* lua/accounts.lua */
#define SEATD_FN_EMAIL_CLAIM "seatd_email_claim"
#define SEATD_FN_EMAIL_GET "seatd_email_get"
#define SEATD_FN_EMAIL_RELEASE "seatd_email_release"
#define SEATD_FN_IDEM_CLAIM "seatd_idem_claim"
#define SEATD_FN_IDEM_RELEASE "seatd_idem_release"
#define SEATD_FN_IDEM_SETTLE "seatd_idem_settle"
#define SEATD_FN_ME_ADD "seatd_me_add"
#define SEATD_FN_ME_LIST "seatd_me_list"
#define SEATD_FN_ME_REMOVE "seatd_me_remove"
#define SEATD_FN_SESSION_REFRESH "seatd_session_refresh"
#define SEATD_FN_SESSION_REVOKE "seatd_session_revoke"
#define SEATD_FN_SESSION_START "seatd_session_start"
#define SEATD_FN_USER_CREATE "seatd_user_create"
#define SEATD_FN_USER_GET "seatd_user_get"
/* lua/book_begin.lua */
#define SEATD_FN_BOOK_BEGIN "seatd_book_begin"
#define SEATD_FN_HINT_CLEAR "seatd_hint_clear"
#define SEATD_FN_PENDING_DUE "seatd_pending_due"
/* lua/book_confirm.lua */
#define SEATD_FN_BOOK_CONFIRM "seatd_book_confirm"
/* lua/book_fail.lua */
#define SEATD_FN_BOOK_FAIL "seatd_book_fail"
/* lua/cancel.lua */
#define SEATD_FN_CANCEL "seatd_cancel"
#define SEATD_FN_REFUND_DONE "seatd_refund_done"
/* lua/create_show.lua */
#define SEATD_FN_CATALOGUE_ADD "seatd_catalogue_add"
#define SEATD_FN_CREATE_SHOW "seatd_create_show"
#define SEATD_FN_LAYOUT_PUT "seatd_layout_put"
#define SEATD_FN_NEXT_SHOW_ID "seatd_next_show_id"
#define SEATD_FN_SHOW_TIERS_PUT "seatd_show_tiers_put"
/* lua/channels.lua */
#define SEATD_FN_CHANNEL_RELEASE "seatd_channel_release"
#define SEATD_FN_CHANNEL_SET "seatd_channel_set"
/* lua/groups.lua */
#define SEATD_FN_GROUP_CREATE "seatd_group_create"
#define SEATD_FN_GROUP_GET "seatd_group_get"
#define SEATD_FN_GROUP_HOLD "seatd_group_hold"
#define SEATD_FN_GROUP_RELEASE "seatd_group_release"
/* lua/hold.lua */
#define SEATD_FN_HOLD "seatd_hold"
#define SEATD_FN_HOLD_BATCH "seatd_hold_batch"
#define SEATD_FN_HOLD_SELL "seatd_hold_sell"
/* lua/lib.lua */
#define SEATD_FN_PING "seatd_ping"
/* lua/payment_guard.lua */
#define SEATD_FN_ATTEMPT "seatd_attempt"
#define SEATD_FN_BOOK_LOST "seatd_book_lost"
#define SEATD_FN_LATE_CHARGE "seatd_late_charge"
#define SEATD_FN_LATE_CLEAR "seatd_late_clear"
/* lua/queue.lua */
#define SEATD_FN_QUEUE_ADVANCE "seatd_queue_advance"
#define SEATD_FN_QUEUE_JOIN "seatd_queue_join"
#define SEATD_FN_QUEUE_STATUS "seatd_queue_status"
/* lua/ratelimit.lua */
#define SEATD_FN_RATE_HIT "seatd_rate_hit"
/* lua/read.lua */
#define SEATD_FN_BOOKING_GET "seatd_booking_get"
#define SEATD_FN_BOOKINGS_STATUS "seatd_bookings_status"
#define SEATD_FN_HOLD_GET "seatd_hold_get"
#define SEATD_FN_LAYOUT_FETCH "seatd_layout_fetch"
#define SEATD_FN_LAYOUT_GET "seatd_layout_get"
#define SEATD_FN_LIST_SHOWS "seatd_list_shows"
#define SEATD_FN_SEATMAP "seatd_seatmap"
#define SEATD_FN_SHOW_GET "seatd_show_get"
/* lua/reap.lua */
#define SEATD_FN_REAP "seatd_reap"
#define SEATD_FN_VERSION_FLOOR "seatd_version_floor"
/* lua/release.lua */
#define SEATD_FN_RELEASE "seatd_release"
/* lua/sweep.lua */
#define SEATD_FN_CATALOGUE_PRUNE "seatd_catalogue_prune"
#define SEATD_FN_LEASE "seatd_lease"
#define SEATD_FN_SWEEP_CLAIM "seatd_sweep_claim"

/* XX(name, flags) for every Function above. */
#define SEATD_FUNCTIONS(XX)                                                                        \
    XX(SEATD_FN_EMAIL_CLAIM, 0)                                                                    \
    XX(SEATD_FN_EMAIL_GET, SEATD_RDS_IDEMPOTENT)                                                   \
    XX(SEATD_FN_EMAIL_RELEASE, 0)                                                                  \
    XX(SEATD_FN_IDEM_CLAIM, 0)                                                                     \
    XX(SEATD_FN_IDEM_RELEASE, 0)                                                                   \
    XX(SEATD_FN_IDEM_SETTLE, 0)                                                                    \
    XX(SEATD_FN_ME_ADD, SEATD_RDS_IDEMPOTENT)                                                      \
    XX(SEATD_FN_ME_LIST, SEATD_RDS_IDEMPOTENT)                                                     \
    XX(SEATD_FN_ME_REMOVE, 0)                                                                      \
    XX(SEATD_FN_SESSION_REFRESH, 0)                                                                \
    XX(SEATD_FN_SESSION_REVOKE, 0)                                                                 \
    XX(SEATD_FN_SESSION_START, 0)                                                                  \
    XX(SEATD_FN_USER_CREATE, 0)                                                                    \
    XX(SEATD_FN_USER_GET, SEATD_RDS_IDEMPOTENT)                                                    \
    XX(SEATD_FN_BOOK_BEGIN, SEATD_RDS_DURABLE)                                                     \
    XX(SEATD_FN_HINT_CLEAR, 0)                                                                     \
    XX(SEATD_FN_PENDING_DUE, 0)                                                                    \
    XX(SEATD_FN_BOOK_CONFIRM, SEATD_RDS_DURABLE)                                                   \
    XX(SEATD_FN_BOOK_FAIL, 0)                                                                      \
    XX(SEATD_FN_CANCEL, SEATD_RDS_DURABLE)                                                         \
    XX(SEATD_FN_REFUND_DONE, 0)                                                                    \
    XX(SEATD_FN_CATALOGUE_ADD, 0)                                                                  \
    XX(SEATD_FN_CREATE_SHOW, 0)                                                                    \
    XX(SEATD_FN_LAYOUT_PUT, 0)                                                                     \
    XX(SEATD_FN_NEXT_SHOW_ID, 0)                                                                   \
    XX(SEATD_FN_SHOW_TIERS_PUT, SEATD_RDS_IDEMPOTENT) /* written once: a repeat is a no-op */      \
    XX(SEATD_FN_CHANNEL_RELEASE, 0)                                                                \
    XX(SEATD_FN_CHANNEL_SET, 0)                                                                    \
    XX(SEATD_FN_GROUP_CREATE, 0)                                                                   \
    XX(SEATD_FN_GROUP_GET, SEATD_RDS_IDEMPOTENT)                                                   \
    XX(SEATD_FN_GROUP_HOLD, 0)                                                                     \
    XX(SEATD_FN_GROUP_RELEASE, 0)                                                                  \
    XX(SEATD_FN_HOLD, 0)                                                                           \
    XX(SEATD_FN_HOLD_BATCH, 0)                                                                     \
    XX(SEATD_FN_HOLD_SELL, 0)                                                                      \
    XX(SEATD_FN_PING, SEATD_RDS_IDEMPOTENT)                                                        \
    XX(SEATD_FN_ATTEMPT, 0)                                                                        \
    XX(SEATD_FN_BOOK_LOST, SEATD_RDS_DURABLE)                                                      \
    XX(SEATD_FN_LATE_CHARGE, 0)                                                                    \
    XX(SEATD_FN_LATE_CLEAR, 0)                                                                     \
    XX(SEATD_FN_QUEUE_ADVANCE, 0)                                                                  \
    XX(SEATD_FN_QUEUE_JOIN, 0)                                                                     \
    XX(SEATD_FN_QUEUE_STATUS, 0)                                                                   \
    XX(SEATD_FN_RATE_HIT, 0)                                                                       \
    XX(SEATD_FN_BOOKING_GET, SEATD_RDS_IDEMPOTENT)                                                 \
    XX(SEATD_FN_BOOKINGS_STATUS, SEATD_RDS_IDEMPOTENT)                                             \
    XX(SEATD_FN_HOLD_GET, SEATD_RDS_IDEMPOTENT)                                                    \
    XX(SEATD_FN_LAYOUT_FETCH, SEATD_RDS_IDEMPOTENT)                                                \
    XX(SEATD_FN_LAYOUT_GET, SEATD_RDS_IDEMPOTENT)                                                  \
    XX(SEATD_FN_LIST_SHOWS, SEATD_RDS_IDEMPOTENT)                                                  \
    XX(SEATD_FN_SEATMAP, SEATD_RDS_IDEMPOTENT)                                                     \
    XX(SEATD_FN_SHOW_GET, SEATD_RDS_IDEMPOTENT)                                                    \
    XX(SEATD_FN_REAP, 0)                                                                           \
    XX(SEATD_FN_VERSION_FLOOR, 0)                                                                  \
    XX(SEATD_FN_RELEASE, 0)                                                                        \
    XX(SEATD_FN_CATALOGUE_PRUNE, 0)                                                                \
    XX(SEATD_FN_LEASE, 0)                                                                          \
    XX(SEATD_FN_SWEEP_CLAIM, 0)

#endif
