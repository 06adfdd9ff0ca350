/* decode.c - a reply of the seatd Functions decoded once: raw pairs, then the typed member
 * of the operation's kind from the field tables; errors and refusals (store.h). */
#include "store/store_internal.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "clients/rds.h"

/* ---------------------------------------------------------------------- results */

typedef enum {
    F_STR,   /* const char *, "" when missing */
    F_INT,   /* int64_t; 'aux': its int has_ flag, set when the value is a number */
    F_FLAG,  /* int: 1 iff the value is the number 1 */
    F_BYTES, /* const unsigned char *, 'aux': its size_t length */
    F_LIST   /* const char *const *, the values of a repeated name; 'aux': their size_t count */
} ftype_t;

#define NOAUX SIZE_MAX

/* One field of a typed result: the reply's name -> the member at 'off'. */
typedef struct field_s {
    const char *name;
    ftype_t type;
    size_t off;
    size_t aux;
    int64_t dflt; /* F_INT: when missing or not a number */
} field_t;

#define OFF(m) offsetof(seatd_store_result_t, m)
#define STR(n, m)                                                                                  \
    {                                                                                              \
        n, F_STR, OFF(m), NOAUX, 0                                                                 \
    }
#define INT(n, m)                                                                                  \
    {                                                                                              \
        n, F_INT, OFF(m), NOAUX, 0                                                                 \
    }
#define INT_OR(n, m, d)                                                                            \
    {                                                                                              \
        n, F_INT, OFF(m), NOAUX, d                                                                 \
    }
#define INT_HAS(n, m, h)                                                                           \
    {                                                                                              \
        n, F_INT, OFF(m), OFF(h), 0                                                                \
    }
#define FLAG(n, m)                                                                                 \
    {                                                                                              \
        n, F_FLAG, OFF(m), NOAUX, 0                                                                \
    }
#define BYTES(n, m, l)                                                                             \
    {                                                                                              \
        n, F_BYTES, OFF(m), OFF(l), 0                                                              \
    }
#define LIST(n, m, c)                                                                              \
    {                                                                                              \
        n, F_LIST, OFF(m), OFF(c), 0                                                               \
    }

/* The reply fields of each kind, as the scripts name them (the lua/ files). */
static const field_t show_fields[] = {
    STR("showId", show.show_id),
    STR("title", show.title),
    STR("priceTiers", show.price_tiers),
    STR("extra", show.extra),
    STR("layoutHash", show.layout_hash),
    STR("layout", show.layout),
    INT("startsAt", show.starts_at_ms),
    INT_HAS("salesCloseAt", show.sales_close_at_ms, show.has_sales_close_at),
    INT("holdTtlMs", show.hold_ttl_ms),
    INT("seatCount", show.seat_count),
    INT("version", show.version),
    INT("createdAt", show.created_at_ms),
    FLAG("catalogued", show.catalogued),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t page_fields[] = {
    INT("total", page.total),
    LIST("id", page.ids, page.nids),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t seatmap_fields[] = {
    INT("version", seatmap.version),
    INT("seatCount", seatmap.seat_count),
    BYTES("held", seatmap.held, seatmap.held_len),
    BYTES("booked", seatmap.booked, seatmap.booked_len),
    STR("areas", seatmap.areas),
    BYTES("blocked", seatmap.blocked, seatmap.blocked_len),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t hold_fields[] = {
    STR("holdId", hold.hold_id),
    STR("showId", hold.show_id),
    STR("owner", hold.owner),
    STR("seatIds", hold.seat_ids),
    STR("status", hold.status),
    STR("bookingId", hold.booking_id),
    INT("expiresAt", hold.expires_at_ms),
    INT("createdAt", hold.created_at_ms),
    INT("version", hold.version),
    FLAG("replayed", hold.replayed),
    FLAG("split", hold.split),
    STR("areas", hold.areas),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t booking_fields[] = {
    STR("bookingId", booking.booking_id),
    STR("showId", booking.show_id),
    STR("holdId", booking.hold_id),
    STR("owner", booking.owner),
    STR("seatIds", booking.seat_ids),
    STR("currency", booking.currency),
    STR("status", booking.status),
    STR("paymentRef", booking.payment_ref),
    STR("reason", booking.reason),
    STR("refundStatus", booking.refund_status),
    STR("lateCharge", booking.late_charge),
    STR("areas", booking.areas),
    INT_HAS("amount", booking.amount, booking.has_amount),
    INT_HAS("refund", booking.refund, booking.has_refund),
    INT_HAS("version", booking.version, booking.has_version),
    INT("createdAt", booking.created_at_ms),
    INT("confirmedAt", booking.confirmed_at_ms),
    INT("failedAt", booking.failed_at_ms),
    INT("cancelledAt", booking.cancelled_at_ms),
    INT("startsAt", booking.starts_at_ms),
    FLAG("replayed", booking.replayed),
    STR("members", booking.members),
    STR("paidBy", booking.paid_by),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t pending_fields[] = {
    INT_OR("remaining", pending.remaining, -1),
    LIST("booking", pending.bookings, pending.nbookings),
    LIST("refund", pending.refunds, pending.nrefunds),
    LIST("late", pending.late, pending.nlate),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t reap_fields[] = {
    INT("reaped", reap.reaped), INT("version", reap.version), INT("due", reap.due),
    INT("now", reap.now_ms),    STR("next", reap.next),       {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t attempt_fields[] = {
    FLAG("ok", attempt.ok),
    INT("count", attempt.count),
    INT_OR("retryAfterMs", attempt.retry_after_ms, 1000),
    {NULL, F_STR, 0, NOAUX, 0},
};
static const field_t removed_fields[] = {
    FLAG("removed", removed),
    {NULL, F_STR, 0, NOAUX, 0},
};

static const field_t account_fields[] = {
    STR("userId", account.user_id),
    STR("email", account.email),
    STR("name", account.name),
    STR("hash", account.hash),
    FLAG("admin", account.admin),
    INT("createdAt", account.created_at_ms),
    STR("familyId", account.family_id),
    INT("expiresAt", account.expires_at_ms),
    FLAG("removed", account.removed),
    FLAG("revoked", account.revoked),
    INT("score", account.score),
    LIST("id", account.ids, account.nentries),
    LIST("score", account.scores, account.nentries),
    FLAG("more", account.more),
    STR("outcome", account.outcome),
    {NULL, F_STR, 0, NOAUX, 0},
};

static const field_t queue_fields[] = {
    STR("ticket", queue.ticket),
    STR("state", queue.state),
    STR("queueState", queue.queue_state),
    STR("rate", queue.rate),
    INT("position", queue.position),
    INT("number", queue.number),
    INT("admittedThrough", queue.admitted_through),
    INT("opensAt", queue.opens_at_ms),
    INT("expiresAt", queue.expires_at_ms),
    INT("waiting", queue.waiting),
    INT("available", queue.available),
    INT("admitted", queue.admitted),
    INT("active", queue.active),
    INT("salesCloseAt", queue.sales_close_at_ms),
    FLAG("joined", queue.joined),
    {NULL, F_STR, 0, NOAUX, 0},
};

static const field_t statuses_fields[] = {
    LIST("status", statuses.status, statuses.n),
    {NULL, F_STR, 0, NOAUX, 0},
};

static const field_t group_fields[] = {
    STR("groupId", group.group_id),
    STR("title", group.title),
    STR("showIds", group.show_ids),
    STR("groupHoldId", group.hold_id),
    LIST("hold", group.holds, group.nholds),
    INT("createdAt", group.created_at_ms),
    INT("released", group.released),
    FLAG("replayed", group.replayed),
    {NULL, F_STR, 0, NOAUX, 0},
};

static const field_t *const kind_fields[KIND_COUNT] = {
    [KIND_GROUP] = group_fields,       [KIND_QUEUE] = queue_fields,
    [KIND_SHOW] = show_fields,         [KIND_PAGE] = page_fields,
    [KIND_SEATMAP] = seatmap_fields,   [KIND_HOLD] = hold_fields,
    [KIND_BOOKING] = booking_fields,   [KIND_PENDING] = pending_fields,
    [KIND_REAP] = reap_fields,         [KIND_ATTEMPT] = attempt_fields,
    [KIND_REMOVED] = removed_fields,   [KIND_ACCOUNT] = account_fields,
    [KIND_STATUSES] = statuses_fields,
};

void store__decoded_free(decoded_t *d)
{
    free(d->detail_block);
    free(d->names);
    free(d->values);
    free(d->lens);
    free(d->ints);
    for (int i = 0; i < MAX_LISTS; i++)
        free(d->lists[i]);
}

/* The raw value of field 'name' or NULL (the internal links of a chain). */
const char *store__raw_get(const seatd_store_result_t *res, const char *name, size_t *len)
{
    for (size_t i = 0; res != NULL && i < res->nfields; i++) {
        if (strcmp(res->names[i], name) == 0) {
            if (len != NULL)
                *len = res->lens[i];
            return res->values[i];
        }
    }
    return NULL;
}

static int parse_int(const char *v, int64_t *out)
{
    if (v == NULL || *v == '\0')
        return 0;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end != '\0')
        return 0;
    *out = (int64_t)n;
    return 1;
}

static void *member(seatd_store_result_t *res, size_t off)
{
    return (char *)res + off;
}

static void set_ptr(seatd_store_result_t *res, size_t off, const void *p)
{
    memcpy(member(res, off), &p, sizeof(p));
}

/* Fills the typed member of 'kind' from the raw pairs: every field read once, here. */
seatd_booking_state_t seatd_store_booking_state(const char *word)
{
    static const struct {
        const char *word;
        seatd_booking_state_t state;
    } words[] = {{"PENDING_PAYMENT", SEATD_BOOKING_ST_PENDING_PAYMENT},
                 {"CONFIRMED", SEATD_BOOKING_ST_CONFIRMED},
                 {"FAILED", SEATD_BOOKING_ST_FAILED},
                 {"CANCELLED", SEATD_BOOKING_ST_CANCELLED}};
    for (size_t i = 0; word && i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(word, words[i].word) == 0)
            return words[i].state;
    return SEATD_BOOKING_ST_NONE;
}

static seatd_refund_state_t refund_state(const char *word)
{
    return strcmp(word, "pending") == 0     ? SEATD_REFUND_ST_PENDING
           : strcmp(word, "succeeded") == 0 ? SEATD_REFUND_ST_SUCCEEDED
                                            : SEATD_REFUND_ST_NONE;
}

/* The state 'word' names: its index in 'words' ('n' of them, in the order of the state's
 * enum, whose 0 is "none"), or 0. */
static int state_of_word(const char *word, const char *const *words, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (strcmp(word, words[i]) == 0)
            return (int)i;
    return 0;
}

static seatd_hold_state_t hold_state(const char *word)
{
    static const char *const words[] = {"",       "HELD",     "PENDING_PAYMENT",
                                        "BOOKED", "RELEASED", "EXPIRED"};
    return (seatd_hold_state_t)state_of_word(word, words, sizeof(words) / sizeof(words[0]));
}

static seatd_queue_state_t queue_state(const char *word)
{
    static const char *const words[] = {"", "WAITING", "ADMITTED", "EXPIRED", "SOLD_OUT", "CLOSED"};
    return (seatd_queue_state_t)state_of_word(word, words, sizeof(words) / sizeof(words[0]));
}

/* The enums of the kind's member, from its words (decode_typed). */
static void decode_states(seatd_store_result_t *res, kind_t kind)
{
    if (kind == KIND_QUEUE)
        res->queue.user_state = queue_state(res->queue.state);
    if (kind == KIND_HOLD)
        res->hold.state = hold_state(res->hold.status);
    if (kind == KIND_BOOKING) {
        /* A STATE error's first word is the state the booking was found in. */
        res->booking.state = seatd_store_booking_state(
            res->err == SEATD_ESTATE && res->nwords > 0 ? res->words[0] : res->booking.status);
        res->booking.refund_state = refund_state(res->booking.refund_status);
    }
}

void store__decode_typed(decoded_t *d, kind_t kind)
{
    static const char *const none[1] = {NULL};
    seatd_store_result_t *res = &d->res;
    int nlists = 0;
    for (const field_t *f = kind_fields[kind]; f != NULL && f->name != NULL; f++) {
        const char *v = NULL;
        size_t len = 0;
        switch (f->type) {
        case F_STR:
            v = store__raw_get(res, f->name, NULL);
            set_ptr(res, f->off, v ? v : "");
            break;
        case F_BYTES:
            v = store__raw_get(res, f->name, &len);
            set_ptr(res, f->off, v ? v : "");
            *(size_t *)member(res, f->aux) = v ? len : 0;
            break;
        case F_INT: {
            int64_t n = f->dflt;
            int ok = parse_int(store__raw_get(res, f->name, NULL), &n);
            *(int64_t *)member(res, f->off) = ok ? n : f->dflt;
            if (f->aux != NOAUX)
                *(int *)member(res, f->aux) = ok;
            break;
        }
        case F_FLAG: {
            int64_t n = 0;
            *(int *)member(res, f->off) =
                parse_int(store__raw_get(res, f->name, NULL), &n) && n == 1;
            break;
        }
        case F_LIST: {
            assert(nlists < MAX_LISTS);
            size_t n = 0;
            for (size_t i = 0; i < res->nfields; i++)
                n += strcmp(res->names[i], f->name) == 0;
            const char **list = n ? seatd_calloc(n, sizeof(*list)) : NULL;
            d->lists[nlists++] = list;
            n = 0;
            for (size_t i = 0; i < res->nfields; i++)
                if (strcmp(res->names[i], f->name) == 0)
                    list[n++] = res->values[i];
            set_ptr(res, f->off, list ? (const char *const *)list : none);
            *(size_t *)member(res, f->aux) = n;
            break;
        }
        }
    }
    decode_states(res, kind);
}

/* An array of name/value pairs -> the raw fields. Returns 0 or SEATD_EPROTO. */
static int decode_fields(decoded_t *d, const struct redisReply *r)
{
    size_t elements = seatd_rds_reply_elements(r);
    if (elements % 2 != 0 || elements / 2 > MAX_DECODED_FIELDS)
        return SEATD_EPROTO;
    size_t n = elements / 2;
    d->names = seatd_calloc(n + 1, sizeof(*d->names));
    d->values = seatd_calloc(n + 1, sizeof(*d->values));
    d->lens = seatd_calloc(n + 1, sizeof(*d->lens));
    d->ints = seatd_calloc(n + 1, sizeof(*d->ints));
    for (size_t i = 0; i < n; i++) {
        const struct redisReply *k = seatd_rds_reply_element(r, 2 * i);
        const struct redisReply *v = seatd_rds_reply_element(r, 2 * i + 1);
        int kt = seatd_rds_reply_type(k);
        if (kt != SEATD_RDS_REPLY_STRING && kt != SEATD_RDS_REPLY_STATUS)
            return SEATD_EPROTO;
        d->names[i] = seatd_rds_reply_str(k, NULL);
        switch (seatd_rds_reply_type(v)) {
        case SEATD_RDS_REPLY_STRING:
        case SEATD_RDS_REPLY_STATUS:
            d->values[i] = seatd_rds_reply_str(v, &d->lens[i]);
            break;
        case SEATD_RDS_REPLY_INTEGER:
            snprintf(d->ints[i], sizeof(d->ints[i]), "%lld", seatd_rds_reply_integer(v));
            d->values[i] = d->ints[i];
            d->lens[i] = strlen(d->ints[i]);
            break;
        case SEATD_RDS_REPLY_NIL:
            d->values[i] = "";
            d->lens[i] = 0;
            break;
        default:
            return SEATD_EPROTO;
        }
    }
    d->res.nfields = n;
    d->res.names = d->names;
    d->res.values = d->values;
    d->res.lens = d->lens;
    return 0;
}

/* Decodes 'r' (or 'err') into 'd': the error, or the raw pairs and the typed member of
 * 'kind'. 'd' is freed with store__decoded_free(). */
void store__decode(decoded_t *d, const struct redisReply *r, int err, kind_t kind)
{
    memset(d, 0, sizeof(*d));
    d->res.detail = "";
    int type = seatd_rds_reply_type(r);
    if (err != 0 && !(err == SEATD_ENOTDURABLE && r != NULL)) {
        d->res.err = err;
    } else if (r == NULL) {
        d->res.err = SEATD_EPROTO;
    } else if (type == SEATD_RDS_REPLY_ERROR) {
        size_t len = 0;
        const char *s = seatd_rds_reply_str(r, &len);
        store__decode_error(d, s ? s : "", s ? len : 0);
    } else if (type == SEATD_RDS_REPLY_STRING) {
        size_t len = 0;
        const char *s = seatd_rds_reply_str(r, &len);
        if (s == NULL || store__decode_refusal_text(d, s, len) < 0)
            d->res.err = SEATD_EPROTO;
    } else if (type != SEATD_RDS_REPLY_ARRAY) {
        d->res.err = SEATD_EPROTO;
    } else {
        int rc = decode_fields(d, r);
        if (rc < 0) {
            d->res.err = rc;
            d->res.nfields = 0;
        } else if (d->res.nfields > 0 && strcmp(d->res.names[0], "refused") == 0) {
            store__decode_refusal(d);
        }
    }
    /* A write the script made that is not on a replica yet: decoded as a success, reported
     * as SEATD_ENOTDURABLE with its result (the booking flow reads both). */
    if (err == SEATD_ENOTDURABLE && d->res.err == 0)
        d->res.err = SEATD_ENOTDURABLE;
    store__decode_typed(d, kind); /* on failure too: no NULL string in the operation's member */
}

/* ------------------------------------- a group payment's members, a group hold's show holds */

/* Copies field 'len' bytes at 'src' into 'dst' ('size'), ';' turned back into ','. Returns 0,
 * or -1 if it does not fit. */
static int member_field(char *dst, size_t size, const char *src, size_t len, int commas)
{
    if (len >= size)
        return -1;
    for (size_t i = 0; i < len; i++)
        dst[i] = commas && src[i] == ';' ? ',' : src[i];
    dst[len] = '\0';
    return 0;
}

/* Splits the 'len' bytes at 'p' on '|' into at most 'max' fields ('f', 'flen'). Returns how
 * many there are (max + 1 when there are more). */
static size_t split_bars(const char *p, size_t len, const char **f, size_t *flen, size_t max)
{
    size_t n = 0;
    for (const char *q = p;; q++) {
        const char *bar = memchr(q, '|', (size_t)(p + len - q));
        if (n == max)
            return max + 1;
        f[n] = q;
        flen[n++] = bar ? (size_t)(bar - q) : (size_t)(p + len - q);
        if (bar == NULL)
            return n;
        q = bar;
    }
}

int seatd_store_payment_member(const char *members, size_t *pos, seatd_payment_member_t *m)
{
    if (members == NULL || members[*pos] == '\0')
        return 0;
    const char *p = members + *pos;
    size_t len = strcspn(p, ",");
    const char *f[7];
    size_t flen[7];
    char num[2][24];
    memset(m, 0, sizeof(*m));
    if (split_bars(p, len, f, flen, 7) != 7 ||
        member_field(m->show_id, sizeof(m->show_id), f[0], flen[0], 0) < 0 ||
        member_field(m->booking_id, sizeof(m->booking_id), f[1], flen[1], 0) < 0 ||
        member_field(m->status, sizeof(m->status), f[2], flen[2], 0) < 0 ||
        member_field(num[0], sizeof(num[0]), f[3], flen[3], 0) < 0 ||
        member_field(num[1], sizeof(num[1]), f[4], flen[4], 0) < 0 ||
        member_field(m->seat_ids, sizeof(m->seat_ids), f[5], flen[5], 1) < 0 ||
        member_field(m->areas, sizeof(m->areas), f[6], flen[6], 1) < 0)
        return 0;
    m->amount = strtoll(num[0], NULL, 10);
    m->version = strtoll(num[1], NULL, 10);
    *pos += len + (p[len] == ',' ? 1 : 0);
    return 1;
}

int seatd_store_group_show_hold(const char *text, seatd_group_show_hold_t *h)
{
    const char *f[6];
    size_t flen[6];
    char num[2][24];
    memset(h, 0, sizeof(*h));
    if (text == NULL || split_bars(text, strlen(text), f, flen, 6) != 6 ||
        member_field(h->show_id, sizeof(h->show_id), f[0], flen[0], 0) < 0 ||
        member_field(h->hold_id, sizeof(h->hold_id), f[1], flen[1], 0) < 0 ||
        member_field(num[0], sizeof(num[0]), f[2], flen[2], 0) < 0 ||
        member_field(num[1], sizeof(num[1]), f[3], flen[3], 0) < 0 ||
        member_field(h->seat_ids, sizeof(h->seat_ids), f[4], flen[4], 1) < 0 ||
        member_field(h->areas, sizeof(h->areas), f[5], flen[5], 0) < 0)
        return -1;
    h->expires_at_ms = strtoll(num[0], NULL, 10);
    h->version = strtoll(num[1], NULL, 10);
    return 0;
}
