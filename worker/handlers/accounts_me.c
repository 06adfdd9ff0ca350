/*
 * accounts_me.c - the buyer's own lists: the per-user indexes of holds and bookings (filed by
 * holds.c and bookings.c through common.h), and GET /v1/me/holds and GET /v1/me/bookings,
 * which read one page of an index and then every entry from its show.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "handlers.h"
#include "domain/areas.h"
#include "domain/keys.h"
#include "http/http_request.h"
#include "http/router.h"
#include "base/log.h"
#include "base/mem.h"
#include "store/store.h"

#define ME_HOLDS_MAX 50   /* index entries /v1/me/holds looks at per round */
#define ME_HOLDS_ROUNDS 4 /* rounds at most: a round that found dead entries reads on */
#define ME_BOOKINGS_DEFAULT 20
#define ME_BOOKINGS_MAX 100
#define HOLD_INDEX_RETAIN_MS (24LL * 3600 * 1000) /* holds live minutes; kept a day at most */

/* ---------------------------------------------------------------------------------------
 * The per-user indexes, written when a booking has begun (bookings.c; seatd-notify files
 * confirmed and cancelled ones from the outbox) and when a hold is made (holds.c).
 * --------------------------------------------------------------------------------------- */

int seatd__index_hold(seatd_req_t *r, const char *hold_id, seatd_store_cb cb, void *data)
{
    return seatd_store_me_add(seatd__app(r)->store, seatd__sub(r), "holds", hold_id,
                              HOLD_INDEX_RETAIN_MS, cb, data);
}

int seatd__index_booking(seatd_app_t *app, const char *owner, const char *booking_id,
                         seatd_store_cb cb, void *data)
{
    return seatd_store_me_add(app->store, owner, "bookings", booking_id, 0, cb, data);
}

/* ---------------------------------------------------------------------------------------
 * GET /v1/me/holds, GET /v1/me/bookings: one index read, then every entry read in parallel
 * from its show; entries whose hold or booking does not exist (never made, or gone) are left
 * out. Each read holds the request; the answer goes out when the last one is back.
 * --------------------------------------------------------------------------------------- */

typedef struct me_op_s me_op_t;

typedef struct me_item_s {
    me_op_t *op;
    cJSON *json; /* owned until taken into the answer; NULL: left out */
    char id[SEATD_ID_MAX];
    int dead; /* a hold no longer live (or gone): its index entry is removed */
} me_item_t;

struct me_op_s {
    seatd_req_t *r; /* the request: each item read holds it */
    seatd_store_t *store;
    char sub[65];   /* the buyer, for the index clean-up after the answer */
    int bookings;   /* 1: bookings, 0: holds */
    size_t n, left; /* items, items still being read */
    int gone;       /* the client left, or something was answered */
    int more;
    size_t round_start; /* holds: the first item of this round */
    int rounds;         /* holds: rounds read after the first */
    char cursor[96];    /* "<score>.<id>" of the last index entry of this page */
    me_item_t *items;
};

static void me_op_free(me_op_t *op)
{
    for (size_t i = 0; i < op->n; i++)
        cJSON_Delete(op->items[i].json);
    free(op->items);
    free(op);
}

static cJSON *me_booking_json(const seatd_booking_result_t *b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "bookingId", b->booking_id);
    cJSON_AddStringToObject(o, "showId", b->show_id);
    cJSON_AddStringToObject(o, "holdId", b->hold_id);
    seatd__json_add_csv_array(o, "seatIds", b->seat_ids);
    cJSON *areas = seatd_areas_places_json(b->areas);
    if (areas) /* places in standing areas (issue 30) */
        cJSON_AddItemToObject(o, "areas", areas);
    cJSON_AddStringToObject(o, "status", b->status);
    cJSON_AddNumberToObject(o, "amount", (double)b->amount);
    if (b->currency[0])
        cJSON_AddStringToObject(o, "currency", b->currency);
    if (b->created_at_ms)
        seatd__json_add_time(o, "createdAt", b->created_at_ms);
    if (b->confirmed_at_ms)
        seatd__json_add_time(o, "confirmedAt", b->confirmed_at_ms);
    return o;
}

static void me_answer(me_op_t *op)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, op->bookings ? "bookings" : "holds");
    for (size_t i = 0; i < op->n; i++) {
        if (op->items[i].json) {
            cJSON_AddItemToArray(arr, op->items[i].json);
            op->items[i].json = NULL;
        }
    }
    if (op->bookings) {
        if (op->more)
            cJSON_AddStringToObject(o, "nextCursor", op->cursor);
        else
            cJSON_AddNullToObject(o, "nextCursor");
    }
    seatd_req_finish_json(op->r, 200, o);
}

/* The holds index keeps an entry per hold made, live or not, and /v1/me/holds reads only the
 * ME_HOLDS_MAX newest: entries of holds found no longer live are removed (releases remove
 * their own), or enough of them would hide a live hold behind them. */
static void me_prune(me_op_t *op)
{
    const char *dead[64];
    size_t n = 0;
    for (size_t i = op->round_start; i < op->n && n < 64; i++)
        if (op->items[i].dead)
            dead[n++] = op->items[i].id;
    static const char what[] = "dead hold entries removed from the buyer's index";
    if (n)
        seatd_store_forget(seatd_store_me_remove(op->store, op->sub, "holds", dead, n,
                                                 seatd_store_forgotten, (void *)what),
                           what);
}

static int me_next_round(me_op_t *op);

/* One item read is back: releases the request; the last one answers. */
static void me_item_done(me_op_t *op, int err)
{
    if (seatd_req_release(op->r))
        op->gone = 1; /* 'r' may be freed once the last read is back: not touched again */
    else if (err && !op->gone) {
        op->gone = 1;
        seatd_req_finish_problem(op->r, err, NULL, NULL);
    }
    if (--op->left > 0)
        return;
    if (!op->bookings)
        me_prune(op);
    if (me_next_round(op))
        return;
    if (!op->gone)
        me_answer(op);
    me_op_free(op);
}

static void on_me_hold(const seatd_store_result_t *res, void *data)
{
    me_item_t *it = data;
    me_op_t *op = it->op;
    int err = 0;
    if (!res->err) {
        seatd_hold_state_t st = res->hold.state;
        if (st == SEATD_HOLD_ST_HELD || st == SEATD_HOLD_ST_PENDING_PAYMENT)
            it->json = seatd__json_hold(&res->hold, NULL);
        else
            it->dead = 1; /* released, expired or booked: it never comes back */
    } else if (res->err == SEATD_ENOTFOUND || res->err == SEATD_ENOSHOW) {
        it->dead = 1;
    } else {
        err = res->err;
    }
    me_item_done(op, err);
}

static void on_me_booking(const seatd_store_result_t *res, void *data)
{
    me_item_t *it = data;
    me_op_t *op = it->op;
    int err = 0;
    if (!res->err)
        it->json = me_booking_json(&res->booking);
    else if (res->err != SEATD_ENOTFOUND && res->err != SEATD_ENOSHOW)
        err = res->err;
    me_item_done(op, err);
}

/* Reads every entry of one page of the index 'a' in its show (the request is held by each
 * read), after the entries of earlier rounds. */
static void me_fan_out(me_op_t *op, const seatd_account_result_t *a)
{
    seatd_req_t *r = op->r;
    op->more = a->more;
    if (a->nentries) /* the entry itself, not only its score: entries share milliseconds */
        snprintf(op->cursor, sizeof(op->cursor), "%s.%s", a->scores[a->nentries - 1],
                 a->ids[a->nentries - 1]);
    /* No read of an earlier round is pending: the items may move. */
    op->items = seatd_realloc(op->items, (op->n + a->nentries + 1) * sizeof(*op->items));
    memset(op->items + op->n, 0, (a->nentries + 1) * sizeof(*op->items));
    /* Hold the request once for the whole fan-out, so no read can free it before the last
     * one is queued. */
    seatd_req_hold(r);
    op->left = 1;
    for (size_t i = 0; i < a->nentries; i++) {
        me_item_t *it = &op->items[op->n++];
        it->op = op;
        snprintf(it->id, sizeof(it->id), "%s", a->ids[i]);
        int rc = op->bookings
                     ? seatd_store_booking_get(op->store, a->ids[i], op->sub, on_me_booking, it)
                     : seatd_store_hold_get(op->store, a->ids[i], op->sub, on_me_hold, it);
        if (rc == SEATD_EBADID)
            continue; /* not an id of ours: left out */
        if (rc < 0) {
            if (!op->gone) {
                op->gone = 1;
                seatd_req_finish_problem(r, rc, NULL, NULL);
            }
            break;
        }
        seatd_req_hold(r);
        op->left++;
    }
    me_item_done(op, 0);
}

static void on_me_index(const seatd_store_result_t *res, void *data)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    me_op_t *op = seatd_calloc(1, sizeof(*op));
    op->r = r;
    op->store = seatd__app(r)->store;
    snprintf(op->sub, sizeof(op->sub), "%s", seatd__sub(r));
    op->bookings = strcmp(seatd_req_route(r)->name, "me_bookings") == 0;
    me_fan_out(op, &res->account);
}

/* The next page of the holds index is back (me_next_round). */
static void on_me_holds_next(const seatd_store_result_t *res, void *data)
{
    me_op_t *op = data;
    if (seatd_req_release(op->r)) { /* the client left: nothing to answer */
        me_op_free(op);
        return;
    }
    if (res->err) { /* what the earlier rounds found is still the answer */
        me_answer(op);
        me_op_free(op);
        return;
    }
    me_fan_out(op, &res->account);
}

/* After a round of /v1/me/holds that found holds no longer live (now removed from the index),
 * looks at the next ME_HOLDS_MAX entries, up to ME_HOLDS_ROUNDS rounds: a live hold behind
 * a run of dead entries is still listed. Returns 1 when a round was started. */
static int me_next_round(me_op_t *op)
{
    size_t dead = 0;
    for (size_t i = op->round_start; i < op->n; i++)
        dead += op->items[i].dead;
    if (op->bookings || op->gone || !op->more || dead == 0 || ++op->rounds >= ME_HOLDS_ROUNDS)
        return 0;
    op->round_start = op->n;
    seatd_req_hold(op->r);
    if (seatd_store_me_list(op->store, op->sub, "holds", op->cursor, ME_HOLDS_MAX, on_me_holds_next,
                            op) < 0) {
        seatd_req_release(op->r); /* the answer still holds it: not its last reference */
        return 0;
    }
    return 1;
}

int seatd_handle_me_holds(seatd_req_t *r)
{
    int rc = seatd_store_me_list(seatd__app(r)->store, seatd__sub(r), "holds", NULL, ME_HOLDS_MAX,
                                 on_me_index, r);
    return seatd__step_begin(&r, rc);
}

/* A page's "nextCursor": "<score>.<id>" (a score of 1 to 20 digits, an id of 1 to 64
 * letters, digits, '-' or '_'), or a bare score as older pages gave out. */
static int valid_cursor(const char *c)
{
    size_t digits = strspn(c, "0123456789");
    if (digits == 0 || digits > 20)
        return 0;
    if (c[digits] == '\0')
        return 1;
    const char *id = c + digits + 1;
    size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
    return c[digits] == '.' && n >= 1 && n <= 64 && id[n] == '\0';
}

/* Answers 400 naming query parameter 'name' and what it must be ('reason', borrowed). */
static int bad_query_param(seatd_req_t *r, const char *name, const char *reason)
{
    char detail[192];
    snprintf(detail, sizeof(detail), "query parameter '%s' %s", name, reason);
    cJSON *extra = cJSON_CreateObject();
    cJSON *params = cJSON_AddArrayToObject(extra, "invalidParams");
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddItemToArray(params, p);
    seatd_req_finish_problem(r, SEATD_EINVAL, detail, extra);
    return SEATD_EINVAL;
}

int seatd_handle_me_bookings(seatd_req_t *r)
{
    long long limit = ME_BOOKINGS_DEFAULT;
    const char *l = seatd_req_query(r, "limit");
    if (l) {
        char *end = NULL;
        limit = strtoll(l, &end, 10);
        if (!*l || *end || limit < 1 || limit > ME_BOOKINGS_MAX) {
            char reason[64];
            snprintf(reason, sizeof(reason), "must be an integer in [1, %d]", ME_BOOKINGS_MAX);
            return bad_query_param(r, "limit", reason);
        }
    }
    const char *cursor = seatd_req_query(r, "cursor");
    if (cursor && !valid_cursor(cursor))
        return bad_query_param(r, "cursor",
                               "must be the nextCursor of the previous page, as it was given "
                               "(\"<digits>.<id>\"); leave it out for the first page");
    int rc = seatd_store_me_list(seatd__app(r)->store, seatd__sub(r), "bookings", cursor,
                                 (int)limit, on_me_index, r);
    return seatd__step_begin(&r, rc);
}
