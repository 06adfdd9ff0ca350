/*
 * store.h - typed seat operations: one function per Lua function of the seatd library.
 *
 * Handlers and tests call these and never build KEYS/ARGV. Each call validates its arguments
 * (ids against keys.h's grammar) before anything is queued, builds the keys with keys.c and
 * decodes the reply into a seatd_store_result_t.
 *
 * Result shape: every seatd function answers a flat array of name/value pairs on success
 * ("holdId", "42-h…", "expiresAt", "1764…", …) and a Redis error reply "<WORD> detail…" on
 * failure, where WORD is a Lua word of SEATD_ERRNO_MAP. store.c decodes the reply once: 'err'
 * (0 or the SEATD_E* code) with the detail split into words (e.g. the conflicting seat ids),
 * or, on success, the typed member of the operation's entity (each operation below names it
 * under "Result:"; a field read by a wrong name does not compile). The raw pairs stay
 * available (names/values) for tests and diagnostics only.
 *
 * Callback contract (STYLE rule 18): a call that returns 0 runs 'cb' exactly once, with a
 * result borrowed until 'cb' returns; a call that returns an error never runs 'cb'.
 *
 * Loop and threads: those of the rds client behind 'scripts'.
 */
#ifndef SEATD_STORE_H
#define SEATD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "domain/areas.h"
#include "domain/keys.h"
#include "domain/seats.h"
#include "store/scripts.h"

typedef struct seatd_store_s seatd_store_t;
struct seatd_layout_s;

/*
 * Typed results. Strings are borrowed like the result, "" when the reply lacks them; numbers
 * are 0 (or the default noted) when missing or not a number; 'has_*' says whether an optional
 * number was there. Only the member of the operation's entity is decoded: the others are
 * zero (their strings NULL).
 */
typedef struct seatd_show_result_s { /* create_show, next_show_id, show_get, layout_get */
    const char *show_id;
    const char *title;
    const char *price_tiers; /* JSON object */
    const char *extra;       /* JSON object or "" */
    const char *layout_hash;
    const char *layout; /* layout_get: the layout document (JSON) */
    int64_t starts_at_ms;
    int64_t sales_close_at_ms; /* valid when has_sales_close_at */
    int has_sales_close_at;
    int64_t hold_ttl_ms;
    int64_t seat_count;
    int64_t version;
    int64_t created_at_ms;
    int catalogued; /* create_show: 1 when the catalogue entry was written */
} seatd_show_result_t;

typedef struct seatd_show_page_s { /* list_shows */
    int64_t total;                 /* shows in the catalogue */
    size_t nids;
    const char *const *ids; /* the page's show ids, in order */
} seatd_show_page_t;

typedef struct seatd_seatmap_result_s { /* seatmap */
    int64_t version;
    int64_t seat_count;
    const unsigned char *held; /* bitmap, MSB-first; 'held_len' bytes (may be 0) */
    size_t held_len;
    const unsigned char *booked; /* likewise */
    size_t booked_len;
    const char *areas; /* standing areas, "FLOOR:5000:4862,…" (id:capacity:free), "" for none */
    const unsigned char *blocked; /* seats kept for a sales channel (issue 30); may be 0 long */
    size_t blocked_len;
} seatd_seatmap_result_t;

/* A hold's status, decoded once here (the word stays beside it for the API). */
typedef enum {
    SEATD_HOLD_ST_NONE = 0, /* missing, or a word this worker does not know */
    SEATD_HOLD_ST_HELD,
    SEATD_HOLD_ST_PENDING_PAYMENT,
    SEATD_HOLD_ST_BOOKED,
    SEATD_HOLD_ST_RELEASED,
    SEATD_HOLD_ST_EXPIRED
} seatd_hold_state_t;

typedef struct seatd_hold_result_s { /* hold, hold_get, release, release_unclaimed */
    const char *hold_id;
    const char *show_id;
    const char *owner;
    const char *seat_ids; /* comma-joined */
    const char *status;
    seatd_hold_state_t state; /* 'status', decoded */
    const char *booking_id;   /* "" when none */
    int64_t expires_at_ms;    /* epoch ms, Redis clock */
    int64_t created_at_ms;
    int64_t version;
    int replayed;      /* hold: answered from the idempotency record */
    int split;         /* hold (best available): the seats are two blocks, not one */
    const char *areas; /* places in standing areas, "FLOOR:2,…" (domain/areas.h), "" for none */
} seatd_hold_result_t;

/* A booking's status and its refund's, decoded once here (the words stay beside them for the
 * API, which shows them as they are): nothing above the store compares status words. */
typedef enum {
    SEATD_BOOKING_ST_NONE = 0,        /* missing, or a word this worker does not know */
    SEATD_BOOKING_ST_PENDING_PAYMENT, /* begun, its charge not settled */
    SEATD_BOOKING_ST_CONFIRMED,
    SEATD_BOOKING_ST_FAILED,
    SEATD_BOOKING_ST_CANCELLED
} seatd_booking_state_t;

typedef enum {
    SEATD_REFUND_ST_NONE = 0, /* no refund ("", "none") */
    SEATD_REFUND_ST_PENDING,  /* owed: written down, not confirmed by the gateway */
    SEATD_REFUND_ST_SUCCEEDED
} seatd_refund_state_t;

/* The state of status word 'word' (NULL or unknown: SEATD_BOOKING_ST_NONE). */
seatd_booking_state_t seatd_store_booking_state(const char *word);

typedef struct seatd_booking_result_s { /* book_*, booking_get, cancel*, refund_done, late_charge */
    const char *booking_id;
    const char *show_id;
    const char *hold_id;
    const char *owner;
    const char *seat_ids; /* comma-joined */
    const char *areas;    /* places in standing areas, "FLOOR:2,…", "" for none */
    const char *currency;
    const char *status;
    const char *payment_ref;
    const char *reason;
    const char *refund_status;         /* "pending", "succeeded", "none" or "" */
    seatd_booking_state_t state;       /* 'status', decoded; with a STATE error, the state the
                                          booking was found in */
    seatd_refund_state_t refund_state; /* 'refund_status', decoded */
    const char *late_charge;           /* the charge id of a late charge, or "" */
    int64_t amount;                    /* valid when has_amount */
    int has_amount;
    int64_t refund; /* valid when has_refund */
    int has_refund;
    int64_t version; /* valid when has_version: the seat map version of the change */
    int has_version;
    int64_t created_at_ms, confirmed_at_ms, failed_at_ms, cancelled_at_ms, starts_at_ms;
    int replayed;        /* book_begin: the booking already existed */
    const char *members; /* a group hold's payment (issue 30): its bookings, one per show,
                            "show|bookingId|status|amount|version|seats;…|places;…" comma-joined
                            (seatd_store_payment_member()); "" for a booking of one show */
    const char *paid_by; /* a booking paid as part of a group hold: the payment's id, else "" */
} seatd_booking_result_t;

/* One member of a group payment, parsed out of seatd_booking_result_t.members. */
typedef struct seatd_payment_member_s {
    char show_id[SEATD_ID_MAX];
    char booking_id[SEATD_ID_MAX];
    char status[24];
    int64_t amount;
    int64_t version; /* the seat map version of its last change, 0 if none */
    char seat_ids[SEATD_SEATS_MAX_PER_HOLD * 17]; /* comma-joined */
    char areas[SEATD_AREAS_TEXT_MAX];             /* "FLOOR:2,…" */
} seatd_payment_member_t;

/* Parses the member at '*pos' of 'members' into 'm' and moves '*pos' past it. Returns 1, or 0
 * at the end (or at an entry it cannot read, which ends the list). */
int seatd_store_payment_member(const char *members, size_t *pos, seatd_payment_member_t *m);

/* One show's hold of a group hold, parsed out of seatd_group_result's holds[i]. */
typedef struct seatd_group_show_hold_s {
    char show_id[SEATD_ID_MAX];
    char hold_id[SEATD_ID_MAX];
    int64_t expires_at_ms;
    int64_t version;                              /* the show's seat map version with the hold */
    char seat_ids[SEATD_SEATS_MAX_PER_HOLD * 17]; /* comma-joined */
    char areas[SEATD_AREAS_TEXT_MAX];             /* "FLOOR:2,…" */
} seatd_group_show_hold_t;

/* Parses 'text' ("<showId>|<holdId>|<expiresAt ms>|<version>|<seats ;-joined>|<places>") into
 * 'h'. Returns 0, or -1 when it cannot be read. */
int seatd_store_group_show_hold(const char *text, seatd_group_show_hold_t *h);

typedef struct seatd_pending_result_s { /* pending_due */
    int64_t remaining;                  /* all entries, due or not; -1 when missing */
    size_t nbookings;
    const char *const *bookings; /* due PENDING_PAYMENT booking ids */
    size_t nrefunds;
    const char *const *refunds; /* due unconfirmed refunds (booking ids) */
    size_t nlate;
    const char *const *late; /* FAILED bookings past the charge horizon whose charge may have
                                landed after all ({s}:failed; booking ids) */
} seatd_pending_result_t;

typedef struct seatd_reap_result_s { /* reap */
    int64_t reaped;
    int64_t version;
    int64_t due;      /* holds still due after this reap */
    int64_t now_ms;   /* Redis clock */
    const char *next; /* score text of the next deadline, or "" */
} seatd_reap_result_t;

typedef struct seatd_attempt_result_s { /* attempt */
    int ok;                             /* 1: counted; 0: over the cap, nothing counted */
    int64_t count;
    int64_t retry_after_ms; /* 1000 when missing */
} seatd_attempt_result_t;

typedef struct seatd_account_result_s { /* email_*, user_*, session_*, me_* */
    const char *user_id;
    const char *email;
    const char *name;
    const char *hash; /* argon2id, encoded */
    int admin;
    int64_t created_at_ms;
    const char *family_id;     /* session_*: the refresh-token family */
    int64_t expires_at_ms;     /* session_*: the family's end (Redis clock) */
    int removed;               /* email_release */
    int revoked;               /* session_revoke */
    int64_t score;             /* me_add: the entry's score (ms) */
    size_t nentries;           /* me_list: entries, newest first */
    const char *const *ids;    /* me_list: their ids */
    const char *const *scores; /* me_list: their scores (ms, text): the paging cursor */
    int more;                  /* me_list: older entries exist */
    const char *outcome;       /* idem_claim: what the first request settled ("" if nothing) */
} seatd_account_result_t;

/* A buyer's place in a waiting room, decoded once here (the word stays for the API). */
typedef enum {
    SEATD_QUEUE_ST_NONE = 0, /* missing, or a word this worker does not know */
    SEATD_QUEUE_ST_WAITING,
    SEATD_QUEUE_ST_ADMITTED,
    SEATD_QUEUE_ST_EXPIRED,
    SEATD_QUEUE_ST_SOLD_OUT,
    SEATD_QUEUE_ST_CLOSED
} seatd_queue_state_t;

typedef struct seatd_queue_result_s { /* queue_join, queue_status, queue_advance */
    const char *ticket;               /* "<showId>-q<20 hex>" */
    const char *state;                /* the user's: WAITING, ADMITTED, EXPIRED, SOLD_OUT, CLOSED */
    seatd_queue_state_t user_state;   /* 'state', decoded */
    const char *queue_state;          /* the room's: PENDING, OPEN, SOLD_OUT, CLOSED */
    const char *rate;                 /* admissions per second so far (text), "" before the first */
    int64_t position;                 /* 1-based among the waiting; 0 when not waiting */
    int64_t number;                   /* admitted_through + position: fixed once the room opened */
    int64_t admitted_through;         /* how many have left the queue with an admission */
    int64_t opens_at_ms;
    int64_t expires_at_ms; /* ADMITTED: the admission's deadline (Redis clock) */
    int64_t waiting;       /* people in the queue */
    int64_t available;     /* seats neither held nor booked */
    int64_t admitted;      /* queue_advance: admitted by this call */
    int64_t active;        /* queue_advance: admissions live */
    int64_t sales_close_at_ms;
    int joined; /* queue_join: 1 when this call gave a place (new, or after a lapsed one) */
} seatd_queue_result_t;

typedef struct seatd_statuses_result_s { /* bookings_status */
    size_t n;
    const char *const *status; /* one per id asked, in order: "CONFIRMED", … or "" (missing) */
} seatd_statuses_result_t;

typedef struct seatd_group_result_s { /* group_create, group_get, group_hold, group_release */
    const char *group_id;             /* "<first showId>-g<20 hex>" */
    const char *title;
    const char *show_ids;     /* comma-joined */
    const char *hold_id;      /* group_hold: the group hold, "<first showId>-m<20 hex>" */
    size_t nholds;            /* group_hold: one per show held */
    const char *const *holds; /* "<showId>|<holdId>|<expiresAt ms>|<version>|<seats ;-joined>|
                                 <places text>" */
    int64_t created_at_ms;
    int64_t released; /* group_release: holds released */
    int replayed;     /* group_hold: answered from the idempotency record */
} seatd_group_result_t;

typedef struct seatd_store_result_s {
    int err;            /* 0, or a negative SEATD_E* code */
    const char *detail; /* the error text after the word ("" if none); borrowed */
    size_t nwords;      /* detail split on spaces, e.g. the conflicting seat ids */
    const char **words; /* borrowed */
    /* success: the typed member of the operation (see "Result:") */
    seatd_show_result_t show;
    seatd_show_page_t page;
    seatd_seatmap_result_t seatmap;
    seatd_hold_result_t hold;
    seatd_booking_result_t booking;
    seatd_pending_result_t pending;
    seatd_reap_result_t reap;
    seatd_attempt_result_t attempt;
    seatd_account_result_t account;
    seatd_queue_result_t queue;
    seatd_statuses_result_t statuses;
    seatd_group_result_t group;
    int removed; /* hint_clear: 1 when the hint was dropped */
    /* success: the raw name/value pairs, for tests and diagnostics only */
    size_t nfields;
    const char **names;  /* borrowed */
    const char **values; /* borrowed, NUL-terminated, may contain NULs (see 'lens') */
    const size_t *lens;  /* byte length of each value */
} seatd_store_result_t;

typedef void (*seatd_store_cb)(const seatd_store_result_t *res, void *data);

/*
 * Fire and forget: a store write whose answer nobody waits for (a counter given back, an
 * index entry removed, a claim released). Pass seatd_store_forgotten as the callback and a
 * static text saying what the write was for as its data, and hand the call's return to
 * seatd_store_forget:
 *     seatd_store_forget(seatd_store_x(st, ..., seatd_store_forgotten, (void *)what), what);
 * A failure, when the call is refused or in its answer, is logged at WARN with the real
 * error and counted (seatd_store_forgotten_total); nothing else happens.
 */
void seatd_store_forgotten(const seatd_store_result_t *res, void *what);
void seatd_store_forget(int rc, const char *what);

/* Returns an owned store over 'scripts' (borrowed; must outlive it). */
seatd_store_t *seatd_store_new(seatd_scripts_t *scripts);
/* Files the hints of hints.h through 'rds' (borrowed; must outlive the store; NULL, the
 * default: none) after the operations that create their need: hold, book_begin and every
 * book_fail (seatd:due:{hN}: a new or moved deadline); book_begin unless replayed, and
 * cancel_by_policy when its refund is still owed (seatd:pending_shows:{hN}). */
void seatd_store_set_hints(seatd_store_t *st, seatd_rds_t *rds);
/* Holds of one show that arrive in one turn of 'loop' go to Redis in one call of at most
 * 'max', with at most 'in_flight' such calls of a show at once (0: no limit; the holds that
 * arrive meanwhile wait for one to come back: hold_batch.h); max <= 1: a call per hold (the
 * default). */
void seatd_store_set_batching(seatd_store_t *st, struct uv_loop_s *loop, unsigned max,
                              unsigned in_flight);
/* Frees 'st'. Operations may still be in flight: their callbacks run, with an error, when
 * the Redis client is closed, and touch nothing of the freed store on that path. */
void seatd_store_free(seatd_store_t *st);

/* ---------------------------------------------------------------------------------------
 * Operations. String arguments are borrowed for the call only. Unless noted, ids must match
 * keys.h's grammar or the call returns SEATD_EBADID synchronously.
 * ------------------------------------------------------------------------------------- */

/*
 * create_show: writes a show once: the shared layout (seatd:layout:<digest>, stored once per
 * distinct layout, see keys.h), then meta naming it (layoutHash, seatCount), version 0, and
 * adds it to the catalogue; on success the parsed layout is cached (layout.h). 'show_id' is
 * chosen by the caller (seatd_store_next_show_id). 'layout_json' is the layout document
 * {"showId":…,"seats":[{id,row,number,tier,x,y},…]} in index order (parsed and stored in
 * canonical form); 'seat_ids' lists the same ids in index order (else EINVAL).
 * Synchronous errors also include those of seatd_layout_from_json (EBADSEAT, EDUPSEAT, …).
 * Result: res->show with showId, version. Errors: EXISTS, INTERNAL (a stored layout under that
 * digest with other content).
 */
typedef struct seatd_show_args_s {
    const char *show_id;
    const char *title;
    int64_t starts_at_ms; /* epoch ms */
    int64_t hold_ttl_ms;
    const char *price_tiers_json; /* {"standard":1200,…} */
    const char *layout_json;
    const char *const *seat_ids; /* in index order */
    size_t nseats;
    const char *extra_json; /* optional meta extras (screen, refund policy), may be NULL */
    /* optional channels (issue 30), may be NULL: {"<name>":{"seatIds":[…],"areas":{"FLOOR":
     * 100},"releaseAt":<epoch ms>},…}, checked by the caller (seats of the layout) */
    const char *channels_json;
} seatd_show_args_t;
SEATD_MUSTCHECK int seatd_store_create_show(seatd_store_t *st, const seatd_show_args_t *a,
                                            seatd_store_cb cb, void *data);

/* Channels (issue 30; lua/channels.lua): what channel 'name' keeps on show 'show_id' — the
 * seats 'seat_ids' (of 'layout', the show's, borrowed for the call) and the places 'areas'
 * ("FLOOR:100,…", area ids sorted; NULL or "" for none) — replacing what it kept, from now
 * until 'release_at_ms' (epoch ms; 0: until released). Result: res->show with version.
 * Errors: NOSHOW, INVAL, UNKNOWNSEAT (a seat not in 'layout'), UNKNOWNAREA, CONFLICT (a seat
 * kept by another channel), AREASOLDOUT (places that are not free). */
typedef struct seatd_channel_args_s {
    const char *show_id;
    const char *name; /* [a-z0-9_-]{1,32} */
    int64_t release_at_ms;
    const struct seatd_layout_s *layout;
    const char *const *seat_ids;
    size_t nseats;
    const char *areas;
} seatd_channel_args_t;
SEATD_MUSTCHECK int seatd_store_channel_set(seatd_store_t *st, const seatd_channel_args_t *a,
                                            seatd_store_cb cb, void *data);
/* Releases channel 'name' of show 'show_id' to everyone now. Result: res->show with version.
 * Errors: NOSHOW, NOTFOUND (no such unreleased channel). */
SEATD_MUSTCHECK int seatd_store_channel_release(seatd_store_t *st, const char *show_id,
                                                const char *name, seatd_store_cb cb, void *data);

/* Event groups (issue 30; lua/groups.lua). A group lives in its first show's slot; on a Redis
 * Cluster every show must share it (created "groupWith" the first). */
/* Creates group 'group_id' (from seatd_keys_new_id(…, first show, 'g')) of the 'n' shows
 * 'show_ids' (2..20, the first the id's) titled 'title'. Result: res->group. Errors: NOSHOW,
 * EXISTS, INVAL. */
SEATD_MUSTCHECK int seatd_store_group_create(seatd_store_t *st, const char *group_id,
                                             const char *title, const char *const *show_ids,
                                             size_t n, seatd_store_cb cb, void *data);
/* Group 'group_id'. Result: res->group. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_group_get(seatd_store_t *st, const char *group_id,
                                          seatd_store_cb cb, void *data);
/* One show of a group hold: its id, its layout (borrowed for the call) and the seats. */
typedef struct seatd_group_leg_s {
    const char *show_id;
    const struct seatd_layout_s *layout;
} seatd_group_leg_t;
typedef struct seatd_group_hold_args_s {
    const char *group_id;
    const char *hold_id; /* the group hold's, from seatd_keys_new_id(…, first show, 'm') */
    const char *owner;
    int max_per_user;
    const char *request; /* "named[;<places>[;<channels>]]", as seatd_hold_args_t.request */
    const seatd_group_leg_t *legs;
    size_t nlegs;
    const char *const *seat_ids; /* the same seats in every show (sorted, unique) */
    size_t nseats;
    const char *idem_key; /* the buyer's idempotency key, or NULL: the same key with the same
                             request answers the first group hold (replayed), with another
                             IDEM_MISMATCH */
} seatd_group_hold_args_t;
/* Holds the same seats (and places) in every show of 'legs', all or nothing, in one call.
 * Result: res->group with hold_id, holds and replayed. Errors: NOTFOUND (no such group), INVAL,
 * IDEM_MISMATCH, and a
 * show's refusal with the words "show=<id>" first, then its detail (CONFLICT, NOT_FOR_SALE,
 * AREA_SOLD_OUT, LIMIT, SALES_CLOSED, UNKNOWN_SEAT, …). */
SEATD_MUSTCHECK int seatd_store_group_hold(seatd_store_t *st, const seatd_group_hold_args_t *a,
                                           seatd_store_cb cb, void *data);
/* Releases every HELD hold of group hold 'hold_id' of 'owner'. Result: res->group with
 * released. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_group_release(seatd_store_t *st, const char *hold_id,
                                              const char *owner, seatd_store_cb cb, void *data);

/* Stores the seat tiers of show 'show_id' from its layout 'l' (borrowed for the call), for a
 * show created before create_show stored them (seatd_store_book_begin's SEATD_EUNPRICED); a
 * show that has them keeps them. Result: res->show with showId. Errors: NOSHOW, INVAL. */
SEATD_MUSTCHECK int seatd_store_show_tiers_put(seatd_store_t *st, const char *show_id,
                                               const struct seatd_layout_s *l, seatd_store_cb cb,
                                               void *data);

/* INCR of the show id sequence. Result: res->show with showId. */
SEATD_MUSTCHECK int seatd_store_next_show_id(seatd_store_t *st, seatd_store_cb cb, void *data);
/* Moves the show id sequence to 'id', chosen by the caller (a show that shares another's hash
 * slot, issue 30). Result: res->show with showId. Errors: EXISTS (an id at or above 'id' was
 * given already: choose again above it). */
SEATD_MUSTCHECK int seatd_store_claim_show_id(seatd_store_t *st, long long id, seatd_store_cb cb,
                                              void *data);

/* A show's meta. Result: res->show with showId, title, startsAt (ms), holdTtlMs, priceTiers (JSON),
 * seatCount, version, createdAt, extra, layoutHash. Errors: NOSHOW. */
SEATD_MUSTCHECK int seatd_store_show_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb,
                                         void *data);

/* The frozen layout document {"showId":…,"seats":[…]}, rendered from the shared layout the
 * show names (two reads: meta, then the layout, checked against its SHA-256).
 * Result: res->show with layout (JSON), layoutHash. Errors: NOSHOW, INTERNAL (layout missing or
 * altered). */
SEATD_MUSTCHECK int seatd_store_layout_get(seatd_store_t *st, const char *show_id,
                                           seatd_store_cb cb, void *data);

/* Catalogue page by start time: ids of shows [offset, offset+count). Result: res->page with total,
 * then "id" repeated once per show, in order. */
SEATD_MUSTCHECK int seatd_store_list_shows(seatd_store_t *st, long offset, long count,
                                           seatd_store_cb cb, void *data);

/* Seat status projection, read atomically: Result: res->seatmap with version, seatCount, held
 * (bitmap bytes), booked (bitmap bytes). Bit i (MSB-first, as SETBIT numbers them) is seat index i.
 * Errors: NOSHOW. */
SEATD_MUSTCHECK int seatd_store_seatmap(seatd_store_t *st, const char *show_id, seatd_store_cb cb,
                                        void *data);

/* After a seat-map read answered a version older than 'seen', one this worker saw (Redis lost
 * acknowledged writes): moves the show's version past 'seen' (to seen + 2, with an empty delta
 * published there, so every feed sees a gap and reads a snapshot) unless it already is.
 * Result: reap.version, the version now. Errors: NOSHOW. */
SEATD_MUSTCHECK int seatd_store_version_floor(seatd_store_t *st, const char *show_id,
                                              long long seen, seatd_store_cb cb, void *data);

/*
 * hold: all-or-nothing over 'seat_ids' (already normalised by seats.c: valid, unique,
 * sorted). Each seat goes to the script with its bit index, taken from the show's layout in
 * layout.h's cache (read from Redis and cached first when missing), and the layout's digest,
 * which the script checks against the show's layoutHash before any write.
 * Result: res->hold with holdId, showId, expiresAt (epoch ms, Redis clock), version, seatIds
 * (comma-joined), replayed ("1" when answered from the idempotency record).
 * (comma-joined), replayed ("1" when answered from the idempotency record), split (best).
 * Errors: CONFLICT <seat…> [alt=<seat>,…], UNKNOWN_SEAT <seat>, NOSHOW, LIMIT, IDEM_MISMATCH,
 * QUEUE_REQUIRED (a queued show, without a live admission: 'admitted' below),
 * EMPTY, TOOMANY, INVAL (this process's cached layout is not the show's), INTERNAL (shared
 * layout missing or altered); with a request also NO_BLOCK <count>, ORPHAN_SEAT <seat…> [alt=…].
 */
typedef struct seatd_hold_args_s {
    const char *show_id;
    const char *hold_id;         /* fresh id from seatd_keys_new_id(); used unless replayed */
    const char *owner;           /* the JWT sub */
    const char *const *seat_ids; /* normalised */
    size_t nseats;
    const char *idem_key; /* may be NULL */
    int64_t ttl_ms;       /* 0: the show's holdTtlMs */
    int max_per_user;     /* seats per user per show, held + booked */
    /* The box-office rules (issue 13; lua/hold.lua seatd_hold_sell): with a 'request', either
     * "named" (the seats above, checked for orphans, with alternatives on a conflict) or
     * "best:<count>:<tier or ->:<0|1>" (no seats: the script takes the first candidate that
     * fits), and the candidates written by best.h. NULL: plain seatd_hold. */
    const char *request;
    const char *const *cands; /* best.h's candidate texts */
    size_t ncands;
    /* The request carried an admission to the show's waiting room that the caller verified
     * (admission.h: signature, show, owner, expiry): the script then checks it is still live
     * in Redis. A queued show refuses a hold without one (QUEUE_REQUIRED). */
    int admitted;
} seatd_hold_args_t;
SEATD_MUSTCHECK int seatd_store_hold(seatd_store_t *st, const seatd_hold_args_t *a,
                                     seatd_store_cb cb, void *data);
/* Per-user hold rate limit, per show: with 'per_window' > 0 every seatd_store_hold() first
 * counts one request of its owner on that show in a fixed window of 'window_ms' (the Redis key
 * "{s:<showId>}:rate:hold:<sub>", in the show's slot; function seatd_rate_hit) and answers
 * RATELIMIT (429) past it.
 * 0 turns it off (the default). */
void seatd_store_set_hold_rate(seatd_store_t *st, long long per_window, long long window_ms);

/* A hold, as its owner sees it ('owner' NULL: any owner, for operators). Result: res->hold
 * with holdId, showId, owner, seatIds, status, expiresAt, createdAt, bookingId (may be "").
 * Errors: NOTFOUND (missing or another owner's). */
SEATD_MUSTCHECK int seatd_store_hold_get(seatd_store_t *st, const char *hold_id, const char *owner,
                                         seatd_store_cb cb, void *data);

/* release: HELD -> RELEASED, seats AVAILABLE ('owner' must be the hold's; NULL never matches).
 * Result: res->hold with holdId, status, version.
 * Errors: NOTFOUND, STATE (paying or booked), EXPIRED. Releasing twice answers the same. */
SEATD_MUSTCHECK int seatd_store_release(seatd_store_t *st, const char *hold_id, const char *owner,
                                        seatd_store_cb cb, void *data);
/* As release, unless a client has already been answered this hold by an idempotent replay
 * (the hold is "claimed"): then STATE CLAIMED and nothing changes. The compensation of a hold
 * answered 5xx uses it, so a buyer whose retry got the hold keeps it. */
SEATD_MUSTCHECK int seatd_store_release_unclaimed(seatd_store_t *st, const char *hold_id,
                                                  const char *owner, seatd_store_cb cb, void *data);

/* book_begin: HELD -> PENDING_PAYMENT; one live booking per hold (a repeat answers the same
 * booking with replayed=1); seat keys extended to cover 'payment_window_ms'. With 'amount'
 * SEATD_BOOK_PRICE_IN_STORE the hold's seats are priced in Redis, each at its tier's price
 * (the show's tiers, stored at creation): the caller needs neither the hold nor the show.
 * Result: res->booking with bookingId, holdId, showId, status, amount, seatIds, replayed.
 * Errors: NOTFOUND, EXPIRED, STATE, UNPRICED (priced in the store, and the show has no tiers
 * stored: seatd_store_show_tiers_put, then again), INTERNAL (a seat without a price). */
#define SEATD_BOOK_PRICE_IN_STORE (-1)
typedef struct seatd_book_args_s {
    const char *hold_id;
    const char *owner;
    const char *booking_id;     /* fresh id from seatd_keys_new_id() */
    int64_t amount;             /* minor units, or SEATD_BOOK_PRICE_IN_STORE */
    const char *currency;       /* e.g. "EUR" */
    const char *payment_method; /* e.g. "tok_ok" */
    int64_t payment_window_ms;
    int64_t decline_cap;       /* > 0: a booking begun counts one attempt in the hold's decline */
    int64_t decline_window_ms; /* counter ({s}:declines:<holdId>), RATELIMIT <ms> over the cap */
} seatd_book_args_t;
SEATD_MUSTCHECK int seatd_store_book_begin(seatd_store_t *st, const seatd_book_args_t *a,
                                           seatd_store_cb cb, void *data);

/* book_confirm: seats HELD -> BOOKED iff every seat key still names the hold; booking
 * CONFIRMED; one event on the show's bookings stream. Confirming twice answers the same.
 * Result: res->booking, the whole booking as booking_get reads it (version: the seat map
 * version that shows it booked). Errors: NOTFOUND, EXPIRED (seats lost), STATE. */
SEATD_MUSTCHECK int seatd_store_book_confirm(seatd_store_t *st, const char *booking_id,
                                             const char *payment_ref, seatd_store_cb cb,
                                             void *data);

/* book_fail: booking FAILED (with 'reason'), hold back to HELD until its original deadline.
 * Result: res->booking with bookingId, status. Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_book_fail(seatd_store_t *st, const char *booking_id,
                                          const char *reason, seatd_store_cb cb, void *data);

/* A booking, as its owner sees it ('owner' NULL: any owner, for internal use).
 * Result: res->booking with bookingId, showId, holdId, owner, seatIds, amount, currency, status,
 * paymentRef, createdAt, confirmedAt, reason. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_booking_get(seatd_store_t *st, const char *booking_id,
                                            const char *owner, seatd_store_cb cb, void *data);

/* cancel: CONFIRMED -> CANCELLED, booked seats AVAILABLE, 'refund' recorded, one stream
 * event. Cancelling twice answers the same. Result: res->booking with bookingId, status, refund,
 * version. Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_cancel(seatd_store_t *st, const char *booking_id, const char *owner,
                                       int64_t refund, seatd_store_cb cb, void *data);

/* ---------------------------------------------------------------------------------------
 * Payment failures: reconciliation, refunds, cancellation by policy (issue 5).
 * ------------------------------------------------------------------------------------- */

/* book_fail that also records a refund already made at the gateway ('refund' minor units,
 * 'refund_ref' its reference, may be NULL): booking FAILED with 'reason', refundStatus
 * "succeeded". Result and errors of seatd_store_book_fail(). */
SEATD_MUSTCHECK int seatd_store_book_fail_refunded(seatd_store_t *st, const char *booking_id,
                                                   const char *reason, int64_t refund,
                                                   const char *refund_ref, seatd_store_cb cb,
                                                   void *data);

/* cancel with the refund computed inside the script from the amount charged, the show's
 * tiered refund policy and the time left before the show on Redis's clock. Result: res->booking
 * with bookingId, status, refund, version, paymentRef, refundStatus ("pending", "succeeded",
 * "none"). Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_cancel_by_policy(seatd_store_t *st, const char *booking_id,
                                                 const char *owner, seatd_store_cb cb, void *data);

/* The gateway confirmed a cancelled booking's refund. Result: res->booking with bookingId,
 * refundStatus. Errors: NOTFOUND, STATE. */
SEATD_MUSTCHECK int seatd_store_refund_done(seatd_store_t *st, const char *booking_id,
                                            const char *refund_ref, seatd_store_cb cb, void *data);

/* The status of each of the 'n' bookings 'booking_ids' (1..SEATD_STORE_STATUSES_MAX), all of
 * show 'show_id': one no-writes call for what would otherwise be one booking_get each (the
 * ledger walk). Result: res->statuses, in the order asked ("" for a booking that does not
 * exist). Errors: BADID (an id not of the show), INVAL (n out of range). */
#define SEATD_STORE_STATUSES_MAX 100 /* lua: STATUSES_MAX */
SEATD_MUSTCHECK int seatd_store_bookings_status(seatd_store_t *st, const char *show_id, size_t n,
                                                const char *const *booking_ids, seatd_store_cb cb,
                                                void *data);

/* What reconciliation must settle in show 'show_id': bookings PENDING_PAYMENT for at least
 * 'min_age_ms' (Redis clock), cancelled bookings whose refund is unconfirmed and, when
 * 'horizon_ms' >= 0, FAILED bookings of {s}:failed that began at least 'horizon_ms' ago (the
 * charge horizon: the gateway is to be asked whether their charge landed after all), at most
 * 'max' of each. Result: res->pending with remaining (all entries, due or not), then "booking",
 * "refund" and "late" repeated once per due id. */
SEATD_MUSTCHECK int seatd_store_pending_due(seatd_store_t *st, const char *show_id,
                                            int64_t min_age_ms, int64_t horizon_ms, int max,
                                            seatd_store_cb cb, void *data);

/* Removes 'show_id' from its bucket of the hint zset SEATD_KEY_PENDING_SHOWS (keys.h) if its
 * score is still 'score' (text as read). Result: res->removed (removed). */
SEATD_MUSTCHECK int seatd_store_hint_clear(seatd_store_t *st, const char *show_id,
                                           const char *score, seatd_store_cb cb, void *data);

/* reap: releases up to 'max' due holds of one show. Result: res->reap with reaped, version, due,
 * now, next. */
SEATD_MUSTCHECK int seatd_store_reap(seatd_store_t *st, const char *show_id, int max,
                                     seatd_store_cb cb, void *data);

/* ---------------------------------------------------------------------------------------
 * Payment guards (issue 9): late charges, the charge horizon, capped declines.
 * ------------------------------------------------------------------------------------- */

/* book_fail "reason" only if the booking began at least 'min_age_ms' ago (Redis clock); a
 * younger PENDING_PAYMENT booking is answered unchanged (status PENDING_PAYMENT). Fields and
 * errors of seatd_store_book_fail(). */
SEATD_MUSTCHECK int seatd_store_book_fail_after(seatd_store_t *st, const char *booking_id,
                                                const char *reason, int64_t min_age_ms,
                                                seatd_store_cb cb, void *data);

/* seatd_late_charge: a FAILED booking was charged ('charge_id'): the refund it is owed is
 * recorded (refundStatus "pending", {s}:refunds) before it is asked for. Result: res->booking with
 * bookingId, status, refundStatus. Errors: NOTFOUND, STATE (not FAILED). */
SEATD_MUSTCHECK int seatd_store_late_charge(seatd_store_t *st, const char *booking_id,
                                            const char *charge_id, seatd_store_cb cb, void *data);

/* What seatd_store_book_lost() records of a charge whose booking is gone; all borrowed. */
typedef struct seatd_book_lost_args_s {
    const char *booking_id; /* the charge's idempotency key */
    const char *charge_id;  /* "ch_..." */
    int64_t amount;         /* charged, minor units (>= 1) */
    const char *currency;   /* may be NULL */
    const char *owner;      /* the buyer, from the charge's metadata; may be NULL */
    const char *hold_id;    /* may be NULL */
    const char *seat_ids;   /* comma-joined; may be NULL */
} seatd_book_lost_args_t;

/* seatd_book_lost: a succeeded charge whose booking does not exist: the booking is written FAILED
 * ("lost_in_failover") with the refund owed (lateCharge, refundStatus "pending", {s}:refunds)
 * before the refund is asked for; an existing booking is answered unchanged. Durable (WAIT, like
 * book_begin): SEATD_ENOTDURABLE with the result when not on a replica in time. Result:
 * res->booking with bookingId, status, refundStatus. Errors: INVAL. */
SEATD_MUSTCHECK int seatd_store_book_lost(seatd_store_t *st, const seatd_book_lost_args_t *a,
                                          seatd_store_cb cb, void *data);

/* seatd_late_clear: the gateway, asked after the charge horizon, has no successful charge for
 * FAILED booking 'booking_id': it leaves {s}:failed (nothing can land any more). Result:
 * res->booking with bookingId, status ("" if the booking is gone). Errors: INVAL. */
SEATD_MUSTCHECK int seatd_store_late_clear(seatd_store_t *st, const char *booking_id,
                                           seatd_store_cb cb, void *data);

/* seatd_attempt on counter 'key' (borrowed; a key of one slot): 'take' one within 'cap' per
 * 'window_ms', or give one back ('take' 0; 'cap' and 'window_ms' unused). Result: res->attempt with
 * ok ("1", or "0": over the cap, nothing counted), count, retryAfterMs. */
SEATD_MUSTCHECK int seatd_store_attempt(seatd_store_t *st, const char *key, int take, int64_t cap,
                                        int64_t window_ms, seatd_store_cb cb, void *data);
/* seatd_store_attempt() on a counter of another shard than the request's show: on a cluster,
 * when that shard cannot be reached (failing over) it answers UNAVAILABLE at once instead of
 * waiting within the deadline (SEATD_RDS_NO_WAIT), so the caller can go on without it. */
SEATD_MUSTCHECK int seatd_store_attempt_nowait(seatd_store_t *st, const char *key, int take,
                                               int64_t cap, int64_t window_ms, seatd_store_cb cb,
                                               void *data);

/* ---------------------------------------------------------------------------------------
 * Accounts (issue 14; lua/accounts.lua, keys in keys.h). Results: res->account. Emails must
 * be normalised (account.h); user ids match keys.h's sub grammar (else SEATD_EBADID).
 * ------------------------------------------------------------------------------------- */

/* Claims 'email' for 'user_id' (SET NX). Errors: EMAILTAKEN. */
SEATD_MUSTCHECK int seatd_store_email_claim(seatd_store_t *st, const char *email,
                                            const char *user_id, seatd_store_cb cb, void *data);
/* Drops the claim of 'email' if it still names 'user_id'. Result: removed. */
SEATD_MUSTCHECK int seatd_store_email_release(seatd_store_t *st, const char *email,
                                              const char *user_id, seatd_store_cb cb, void *data);
/* The user id of 'email' (user_id "" when none). */
SEATD_MUSTCHECK int seatd_store_email_get(seatd_store_t *st, const char *email, seatd_store_cb cb,
                                          void *data);
/* Writes the user record. Result: userId, email, name, admin, createdAt. Errors: EXISTS. */
typedef struct seatd_user_args_s {
    const char *user_id;
    const char *email;
    const char *name; /* may be NULL */
    const char *hash; /* encoded argon2id */
    int admin;
} seatd_user_args_t;
SEATD_MUSTCHECK int seatd_store_user_create(seatd_store_t *st, const seatd_user_args_t *a,
                                            seatd_store_cb cb, void *data);
/* The user record. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_user_get(seatd_store_t *st, const char *user_id, seatd_store_cb cb,
                                         void *data);
/* Starts refresh-token family 'family_id' with the token whose SHA-256 hex is 'token_hash',
 * living 'ttl_ms'. Result: the user's fields, familyId, expiresAt. Errors: NOTFOUND. */
SEATD_MUSTCHECK int seatd_store_session_start(seatd_store_t *st, const char *user_id,
                                              const char *family_id, const char *token_hash,
                                              int64_t ttl_ms, seatd_store_cb cb, void *data);
/* Rotates: 'old_hash' dies, 'new_hash' joins its family; a replayed (used) token revokes the
 * family. Never resent by the Redis layer. Result: as session_start. Errors: TOKEN. */
SEATD_MUSTCHECK int seatd_store_session_refresh(seatd_store_t *st, const char *user_id,
                                                const char *old_hash, const char *new_hash,
                                                seatd_store_cb cb, void *data);
/* Revokes the family of the token 'token_hash'. Result: revoked. */
SEATD_MUSTCHECK int seatd_store_session_revoke(seatd_store_t *st, const char *user_id,
                                               const char *token_hash, seatd_store_cb cb,
                                               void *data);
/* Files 'id' in the index 'index' ("holds" or "bookings") of user 'sub', trimming entries
 * older than 'retain_ms' (0: none). Result: score. An index entry is a side step of a hold or
 * booking on another shard: on a cluster, when the user's shard cannot be reached it fails at
 * once with UNAVAILABLE (SEATD_RDS_NO_WAIT) and the caller goes on without it. */
SEATD_MUSTCHECK int seatd_store_me_add(seatd_store_t *st, const char *sub, const char *index,
                                       const char *id, int64_t retain_ms, seatd_store_cb cb,
                                       void *data);
/* Claims idempotency key 'key' of user 'sub' for a request of 'route' ("book") with body
 * 'fingerprint' (no newline), for 'ttl_ms': ok when the key is new or was claimed with that
 * fingerprint (result: account.outcome, what seatd_store_idem_settle recorded, or ""),
 * IDEMMISMATCH when with another. Never waits for an unreachable shard (the user's shard may
 * be another than the show's). */
SEATD_MUSTCHECK int seatd_store_idem_claim(seatd_store_t *st, const char *sub, const char *route,
                                           const char *key, const char *fingerprint, int64_t ttl_ms,
                                           seatd_store_cb cb, void *data);
/* Records 'outcome' (no newline) in the record of 'key' claimed with 'fingerprint', keeping
 * its expiry, so that a replay is answered with it; a record of another fingerprint, or
 * none, is left alone. Never waits for an unreachable shard. */
SEATD_MUSTCHECK int seatd_store_idem_settle(seatd_store_t *st, const char *sub, const char *route,
                                            const char *key, const char *fingerprint,
                                            const char *outcome, seatd_store_cb cb, void *data);
/* Deletes the record of 'key' if it is still the unsettled claim of 'fingerprint' (the
 * request was refused before anything began: the key may be used again). Never waits for an
 * unreachable shard. */
SEATD_MUSTCHECK int seatd_store_idem_release(seatd_store_t *st, const char *sub, const char *route,
                                             const char *key, const char *fingerprint,
                                             seatd_store_cb cb, void *data);
/* Removes the entries 'ids' (1..64 of them) from that index: holds that are no longer live.
 * Never waits for an unreachable shard, like seatd_store_me_add. Result: removed. */
SEATD_MUSTCHECK int seatd_store_me_remove(seatd_store_t *st, const char *sub, const char *index,
                                          const char *const *ids, size_t n, seatd_store_cb cb,
                                          void *data);
/* Up to 'limit' (1..1000) entries of that index, newest first, after 'before' (text; NULL or
 * "": from the newest; "<score>.<id>": after that entry; "<score>": with a lower score).
 * Result: nentries, ids, scores, more. */
SEATD_MUSTCHECK int seatd_store_me_list(seatd_store_t *st, const char *sub, const char *index,
                                        const char *before, int limit, seatd_store_cb cb,
                                        void *data);

/* ---------------------------------------------------------------------------------------
 * The waiting room of a queued show (issue 15, lua/queue.lua). Result: res->queue.
 * ------------------------------------------------------------------------------------- */

/* queue_join: 'user' takes a place in show 'show_id''s queue under the fresh 'ticket'
 * ("<showId>-q…", seatd_keys_new_id), or is answered the place (and ticket) they have. A join
 * before the opening gets a random rank (drawn here). On success the show is filed in
 * seatd:queues (hints.h) so the sweepers advance it. Errors: NOSHOW, NOQUEUE, SALESCLOSED. */
SEATD_MUSTCHECK int seatd_store_queue_join(seatd_store_t *st, const char *show_id,
                                           const char *ticket, const char *user, seatd_store_cb cb,
                                           void *data);

/* queue_status: advances the room, then answers the place of 'user' holding 'ticket'.
 * Errors: NOTFOUND (not this user's ticket), NOSHOW, NOQUEUE. */
SEATD_MUSTCHECK int seatd_store_queue_status(seatd_store_t *st, const char *ticket,
                                             const char *user, seatd_store_cb cb, void *data);

/* queue_advance: admits what the inventory allows and announces a change (the sweeper's
 * tick). Errors: NOSHOW, NOQUEUE. */
SEATD_MUSTCHECK int seatd_store_queue_advance(seatd_store_t *st, const char *show_id,
                                              seatd_store_cb cb, void *data);

#endif
