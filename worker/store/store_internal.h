/*
 * store_internal.h - what the files of the store share: the store's state, one queued
 * operation, the reply decoder and the calling helpers (store.c). Not an interface: include
 * it only from the store's own files; everything else goes through store.h.
 */
#ifndef SEATD_STORE_INTERNAL_H
#define SEATD_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "clients/rds.h"
#include "domain/best.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "store/hold_batch.h"
#include "store/scripts.h"
#include "store/store.h"

struct redisReply;

struct seatd_store_s {
    seatd_scripts_t *scripts;  /* borrowed */
    seatd_hold_batch_t *batch; /* owned; NULL: a Redis call per hold */
    long long hold_rate;       /* hold requests per user per window; 0: no limit */
    long long hold_window_ms;  /* that window */
    seatd_rds_t *hints;        /* borrowed: where hints are filed; NULL: none */
};

/* The hints an operation files on success (hints.h), for the show in op->show_id. */
enum {
    HINT_DUE = 1,     /* a hold, or a deadline moved: the sweepers */
    HINT_PENDING = 2, /* a booking began (not a replay): the reconcilers */
    HINT_REFUND = 4,  /* a cancellation whose refund is still owed: the reconcilers */
    HINT_QUEUE = 8    /* a waiting room has people: the sweepers advance it */
};

#define LAYOUT_KEY_PREFIX "seatd:layout:" /* + the layout's digest: the shared layouts */

/* One queued operation: the caller's callback and what the chained operations carry. */
struct store_op_s;
/* What a chain does with the text of its show's shared layout, once read (the text is
 * borrowed for the call): store__fetch_shared_layout(). */
typedef void (*store_layout_text_cb)(struct store_op_s *op, const char *text, size_t len);

typedef struct store_op_s {
    seatd_store_t *st;                      /* borrowed */
    int kind;                               /* kind_t: what the last reply decodes into */
    unsigned hints;                         /* HINT_* filed when the operation succeeds */
    seatd_store_cb cb;                      /* the caller's callback, run exactly once */
    void *data;                             /* the caller's context */
    char show_id[SEATD_ID_MAX];             /* chains: the show */
    char starts_at[24];                     /* create_show: its catalogue score */
    char hash[SEATD_LAYOUT_DIGEST_LEN + 1]; /* chains: the show's layoutHash */
    seatd_layout_t *layout;                 /* create_show: owned until cached */
    int admitted;                           /* hold: pass {s}:qadmit as KEYS[2] */
    int argc;                               /* chains: the arguments of the next call */
    char **argv;                            /* owned copies */
    store_layout_text_cb layout_text;       /* chains: the shared layout's reader */
} store_op_t;

#define MAX_DECODED_FIELDS 4096 /* list_shows pages are bounded well below this */

/* What an operation's reply decodes into: a member of seatd_store_result_t. */
typedef enum {
    KIND_RAW, /* no typed member (unused by the operations; kept as the zero kind) */
    KIND_SHOW,
    KIND_PAGE,
    KIND_SEATMAP,
    KIND_HOLD,
    KIND_BOOKING,
    KIND_PENDING,
    KIND_REAP,
    KIND_ATTEMPT,
    KIND_REMOVED,
    KIND_ACCOUNT,
    KIND_QUEUE,
    KIND_STATUSES,
    KIND_GROUP,
    KIND_COUNT
} kind_t;

#define MAX_LISTS 3 /* F_LIST fields per kind */

/* Storage behind a decoded result, freed after the callback. */
typedef struct decoded_s {
    seatd_store_result_t res;      /* what the callback sees */
    void *detail_block;            /* owned: res.detail and res.words (set_detail) */
    const char **names;            /* owned array */
    const char **values;           /* owned array */
    size_t *lens;                  /* owned array */
    char (*ints)[24];              /* owned: integer elements printed as text */
    const char **lists[MAX_LISTS]; /* owned arrays of the F_LIST fields */
    /* A refusal of seatd_hold_sell (decode_refusal): borrowed from the reply. */
    int refused;            /* the reply was a refusal: res.err is its error */
    const char *asked;      /* the seats of the refused hold, comma-joined */
    seatd_best_hint_t maps; /* the show's held and booked bitmaps, as the script read them */
    int orphan_rule;        /* the show's orphanRule is "block" */
} decoded_t;

/* ---------------------------------------------------------------- decode.c */

void store__decode(decoded_t *d, const struct redisReply *r, int err, kind_t kind);
void store__decode_typed(decoded_t *d, kind_t kind);
void store__decoded_free(decoded_t *d);
const char *store__raw_get(const seatd_store_result_t *res, const char *name, size_t *len);

/* ---------------------------------------------------------------- refusal.c */

/* A Function's error reply ('s', 'len' bytes: "<WORD> <detail...>") into d->res's error,
 * detail and words; a hold's refusal, as fields after "refused" (store__decode_refusal) or as
 * one text within a batch's answer (store__decode_refusal_text: 0, or SEATD_EPROTO when 's' is
 * not one). */
void store__decode_error(decoded_t *d, const char *s, size_t len);
void store__decode_refusal(decoded_t *d);
int store__decode_refusal_text(decoded_t *d, const char *s, size_t len);
/* The alternatives to a refused named hold's seats, appended to its detail. */
void store__propose_alternatives(decoded_t *d, const char *show_id);

/* ---------------------------------------------------------------- store.c */

void store__chain(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                  seatd_rds_reply_cb cb);
int store__fcall(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                 const size_t *lens, seatd_rds_reply_cb cb);
void store__fetch_shared_layout(store_op_t *op, const struct redisReply *reply, int err,
                                store_layout_text_cb use);
void store__layout_mismatch(store_op_t *op);
void store__layout_key(char *out, const char *hash);
int store__link_ok(store_op_t *op, decoded_t *d, const struct redisReply *reply, int err);
int store__meta_of_id(char *key, const char *id, char kind);
int store__meta_of_owned_id(char *key, const char *id, char kind, const char *owner);
void store__on_reply(const struct redisReply *reply, int err, void *data);
void store__op_fail(store_op_t *op, int err);
void store__op_free(store_op_t *op);
store_op_t *store__op_hint(store_op_t *op, unsigned hints, const char *id, char kind);
void store__op_keep_args(store_op_t *op, int n, const char *const *args);
store_op_t *store__op_new(seatd_store_t *st, kind_t kind, seatd_store_cb cb, void *data);

#endif
