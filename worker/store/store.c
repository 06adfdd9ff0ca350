/*
 * store.c - typed seat operations over the seatd Functions library; see store.h.
 *
 * Every operation validates its ids (keys.h), formats KEYS/ARGV, queues one FCALL through
 * scripts.c and decodes the reply in on_reply(), which runs the caller's callback exactly
 * once. The only operation made of two calls is create_show: the show (its own slot) and
 * then the catalogue entry (seatd:shows, another slot).
 *
 * Replies are read through rds.h's accessors (hiredis stays inside rds.c). Each reply is
 * decoded once, in decode(): the raw name/value pairs, then the typed member of the
 * operation's kind from the field tables below.
 */
#include "store/store.h"

#include <assert.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stddef.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/best.h"
#include "base/buf.h"
#include "base/fmt.h"
#include "store/hints.h"
#include "store/hold_batch.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/seats.h"

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
} store_op_t;

#define MAX_DECODED_FIELDS 4096 /* list_shows pages are bounded well below this */

/* ---------------------------------------------------------------------- results */

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
    KIND_COUNT
} kind_t;

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
    INT_HAS("amount", booking.amount, booking.has_amount),
    INT_HAS("refund", booking.refund, booking.has_refund),
    INT_HAS("version", booking.version, booking.has_version),
    INT("createdAt", booking.created_at_ms),
    INT("confirmedAt", booking.confirmed_at_ms),
    INT("failedAt", booking.failed_at_ms),
    INT("cancelledAt", booking.cancelled_at_ms),
    INT("startsAt", booking.starts_at_ms),
    FLAG("replayed", booking.replayed),
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

static const field_t *const kind_fields[KIND_COUNT] = {
    [KIND_QUEUE] = queue_fields,     [KIND_SHOW] = show_fields,
    [KIND_PAGE] = page_fields,       [KIND_SEATMAP] = seatmap_fields,
    [KIND_HOLD] = hold_fields,       [KIND_BOOKING] = booking_fields,
    [KIND_PENDING] = pending_fields, [KIND_REAP] = reap_fields,
    [KIND_ATTEMPT] = attempt_fields, [KIND_REMOVED] = removed_fields,
    [KIND_ACCOUNT] = account_fields, [KIND_STATUSES] = statuses_fields,
};

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

static void decoded_free(decoded_t *d)
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
static const char *raw_get(const seatd_store_result_t *res, const char *name, size_t *len)
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
static void decode_typed(decoded_t *d, kind_t kind)
{
    static const char *const none[1] = {NULL};
    seatd_store_result_t *res = &d->res;
    int nlists = 0;
    for (const field_t *f = kind_fields[kind]; f != NULL && f->name != NULL; f++) {
        const char *v = NULL;
        size_t len = 0;
        switch (f->type) {
        case F_STR:
            v = raw_get(res, f->name, NULL);
            set_ptr(res, f->off, v ? v : "");
            break;
        case F_BYTES:
            v = raw_get(res, f->name, &len);
            set_ptr(res, f->off, v ? v : "");
            *(size_t *)member(res, f->aux) = v ? len : 0;
            break;
        case F_INT: {
            int64_t n = f->dflt;
            int ok = parse_int(raw_get(res, f->name, NULL), &n);
            *(int64_t *)member(res, f->off) = ok ? n : f->dflt;
            if (f->aux != NOAUX)
                *(int *)member(res, f->aux) = ok;
            break;
        }
        case F_FLAG: {
            int64_t n = 0;
            *(int *)member(res, f->off) = parse_int(raw_get(res, f->name, NULL), &n) && n == 1;
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
}

/* Sets the error detail of 'd' to 'text' ('len' bytes, or up to a NUL before) and its words
 * (split at spaces), replacing any it had: the words, the detail and the copy the words point
 * into are one allocation. */
static void set_detail(decoded_t *d, const char *text, size_t len)
{
    len = strnlen(text, len);
    size_t max_words = len / 2 + 1; /* words have a space between them */
    char *block = seatd_malloc(max_words * sizeof(const char *) + 2 * (len + 1));
    const char **words = (const char **)(void *)block;
    char *detail = block + max_words * sizeof(*words);
    char *wordbuf = detail + len + 1;
    memcpy(detail, text, len);
    detail[len] = '\0';
    memcpy(wordbuf, text, len);
    wordbuf[len] = '\0';
    size_t nw = 0;
    char *q = wordbuf;
    while (*q) {
        while (*q == ' ')
            *q++ = '\0';
        if (*q == '\0')
            break;
        words[nw++] = q;
        while (*q && *q != ' ')
            q++;
    }
    free(d->detail_block); /* after the copy: 'text' may be the old detail */
    d->detail_block = block;
    d->res.detail = detail;
    d->res.words = words;
    d->res.nwords = nw;
}

/* An error reply "<WORD> detail…" (possibly "ERR <WORD> …") -> err, detail, words. */
static void decode_error(decoded_t *d, const char *s, size_t len)
{
    const char *p = s, *end = s + len;
    if (len >= 4 && memcmp(s, "ERR ", 4) == 0)
        p += 4;
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    const char *wend = sp ? sp : end;
    d->res.err = seatd_err_from_lua_word(p, (unsigned long)(wend - p));
    /* Redis's own transient states: replaying its AOF, a busy script, a read-only replica
     * after failover, out of memory under noeviction, a primary fenced for want of a replica
     * (min-replicas-to-write). Retry later, elsewhere: 503. */
    static const char *transient[] = {"LOADING",    "BUSY",     "READONLY",    "OOM",
                                      "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS"};
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        if ((size_t)(wend - p) == strlen(transient[i]) &&
            memcmp(p, transient[i], (size_t)(wend - p)) == 0)
            d->res.err = SEATD_EUNAVAILABLE;
    if (d->res.err == SEATD_EINTERNAL || d->res.err == SEATD_EUNAVAILABLE) {
        seatd_buf_t b = SEATD_BUF_INIT;
        seatd_buf_json_escape(&b, s, len > 200 ? 200 : len);
        seatd_log(SEATD_LOG_WARN, NULL, "unexpected redis error", "\"reply\":\"%s\"",
                  b.data ? b.data : "");
        seatd_buf_free(&b);
    }
    const char *rest = sp ? sp + 1 : end;
    size_t rlen = (size_t)(end - rest);
    if (rlen == 1 && rest[0] == '-')
        rlen = 0; /* the scripts' "no detail" placeholder */
    set_detail(d, rest, rlen);
    /* The show's layout is not the one this worker cached (a show id re-created after a
     * flush): forget every cached layout so the next request reads the real one. Nothing
     * was written: the hold function checks the hash before its first write. */
    if (d->res.err == SEATD_EINVAL && strcmp(d->res.detail, "layout mismatch") == 0)
        seatd_layout_cache_clear();
}

/* In a batch the bitmaps come once, for all its refusals (hold_batch.h). */
static void refusal_maps_from_batch(decoded_t *d)
{
    const struct redisReply *shared = seatd_hold_batch_shared();
    if (shared == NULL || d->maps.booked != NULL || d->maps.held != NULL)
        return;
    for (size_t i = 0; i + 1 < seatd_rds_reply_elements(shared); i += 2) {
        const char *name = seatd_rds_reply_str(seatd_rds_reply_element(shared, i), NULL);
        size_t len = 0;
        const char *v = seatd_rds_reply_str(seatd_rds_reply_element(shared, i + 1), &len);
        if (name == NULL || v == NULL)
            continue;
        if (strcmp(name, "booked") == 0) {
            d->maps.booked = (const unsigned char *)v;
            d->maps.booked_len = len;
        } else if (strcmp(name, "held") == 0) {
            d->maps.held = (const unsigned char *)v;
            d->maps.held_len = len;
        }
    }
}

/* A refusal of seatd_hold_sell (lua/hold.lua refuse()): {"refused", "<WORD> <seat…>", "asked",
 * …, "orphanRule", …, "booked", <bitmap>, "held", <bitmap>} -> the error of its first value,
 * with the rest kept for propose_alternatives(). */
static void decode_refusal(decoded_t *d)
{
    seatd_store_result_t *res = &d->res;
    for (size_t i = 1; i < res->nfields; i++) {
        const char *name = res->names[i];
        if (strcmp(name, "asked") == 0) {
            d->asked = res->values[i];
        } else if (strcmp(name, "orphanRule") == 0) {
            d->orphan_rule = strcmp(res->values[i], "1") == 0;
        } else if (strcmp(name, "booked") == 0) {
            d->maps.booked = (const unsigned char *)res->values[i];
            d->maps.booked_len = res->lens[i];
        } else if (strcmp(name, "held") == 0) {
            d->maps.held = (const unsigned char *)res->values[i];
            d->maps.held_len = res->lens[i];
        }
    }
    refusal_maps_from_batch(d);
    d->refused = 1;
    decode_error(d, res->values[0], res->lens[0]);
    res->nfields = 0; /* a failure carries no fields */
}

/* A refusal within seatd_hold_batch's answer (lua/hold.lua refuse()), one text:
 * "refused <orphanRule 0|1>\n<WORD> <seat…>\n<asked>" -> as decode_refusal(), the bitmaps
 * from the batch. Returns 0, or SEATD_EPROTO when 's' is not one. */
static int decode_refusal_text(decoded_t *d, const char *s, size_t len)
{
    static const char prefix[] = "refused ";
    const size_t plen = sizeof(prefix) - 1;
    if (len < plen + 2 || memcmp(s, prefix, plen) != 0 || (s[plen] != '0' && s[plen] != '1') ||
        s[plen + 1] != '\n')
        return SEATD_EPROTO;
    const char *line = s + plen + 2, *end = s + len;
    const char *nl = memchr(line, '\n', (size_t)(end - line));
    if (nl == NULL || nl == line)
        return SEATD_EPROTO;
    d->orphan_rule = s[plen] == '1';
    d->asked = nl + 1; /* the reply's last line: its end is the string's NUL */
    refusal_maps_from_batch(d);
    d->refused = 1;
    decode_error(d, line, (size_t)(nl - line));
    d->res.nfields = 0;
    return 0;
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
 * 'kind'. 'd' is freed with decoded_free(). */
static void decode(decoded_t *d, const struct redisReply *r, int err, kind_t kind)
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
        decode_error(d, s ? s : "", s ? len : 0);
    } else if (type == SEATD_RDS_REPLY_STRING) {
        size_t len = 0;
        const char *s = seatd_rds_reply_str(r, &len);
        if (s == NULL || decode_refusal_text(d, s, len) < 0)
            d->res.err = SEATD_EPROTO;
    } else if (type != SEATD_RDS_REPLY_ARRAY) {
        d->res.err = SEATD_EPROTO;
    } else {
        int rc = decode_fields(d, r);
        if (rc < 0) {
            d->res.err = rc;
            d->res.nfields = 0;
        } else if (d->res.nfields > 0 && strcmp(d->res.names[0], "refused") == 0) {
            decode_refusal(d);
        }
    }
    /* A write the script made that is not on a replica yet: decoded as a success, reported
     * as SEATD_ENOTDURABLE with its result (the booking flow reads both). */
    if (err == SEATD_ENOTDURABLE && d->res.err == 0)
        d->res.err = SEATD_ENOTDURABLE;
    decode_typed(d, kind); /* on failure too: no NULL string in the operation's member */
}

/*
 * A refused named hold of show 'show_id' (decode_refusal): the alternatives to the seats it
 * asked, blocks free in the bitmaps the script read when it refused (best.c, on this worker's
 * cached layout of the show, which the hold was made with), appended to the error's detail
 * and words as "alt=<id>,<id>…", the words the script itself used to write.
 */
static void propose_alternatives(decoded_t *d, const char *show_id)
{
    const seatd_layout_t *l = seatd_layout_cache_get(show_id);
    if (!d->refused || d->asked == NULL || l == NULL)
        return;
    const char *ids[SEATD_SEATS_MAX_PER_HOLD];
    char small[512]; /* the seats asked, split here unless they are longer */
    size_t asked_len = strlen(d->asked);
    char *asked =
        asked_len < sizeof(small) ? memcpy(small, d->asked, asked_len + 1) : seatd_strdup(d->asked);
    size_t n = 0;
    for (char *save = NULL, *id = strtok_r(asked, ",", &save); id && n < SEATD_SEATS_MAX_PER_HOLD;
         id = strtok_r(NULL, ",", &save))
        ids[n++] = id;
    seatd_best_list_t alts = {0};
    seatd_best_alternatives(l, ids, n, &d->maps, d->orphan_rule, &alts);
    if (asked != small)
        free(asked);
    if (alts.n == 0) {
        seatd_best_list_free(&alts);
        return;
    }
    size_t need = strlen(d->res.detail);
    for (size_t i = 0; i < alts.n; i++)
        need += strlen(alts.items[i]) + sizeof(" alt=");
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_reserve(&b, need);
    seatd_buf_puts(&b, d->res.detail);
    for (size_t i = 0; i < alts.n; i++) {
        if (b.len > 0)
            seatd_buf_puts(&b, " ");
        seatd_buf_puts(&b, "alt=");
        seatd_buf_puts(&b, alts.items[i]);
    }
    seatd_best_list_free(&alts);
    set_detail(d, b.data, b.len); /* detail and words again, from the longer text */
    seatd_buf_free(&b);
}

/* ---------------------------------------------------------------------- calling */

static void op_free(store_op_t *op)
{
    for (int i = 0; i < op->argc; i++)
        free(op->argv[i]);
    free(op->argv);
    seatd_layout_free(op->layout);
    free(op);
}

/* Keeps owned copies of 'n' strings as the op's arguments. */
static void op_keep_args(store_op_t *op, int n, const char *const *args)
{
    op->argv = seatd_calloc((size_t)n + 1, sizeof(*op->argv));
    op->argc = n;
    for (int i = 0; i < n; i++)
        op->argv[i] = seatd_strdup(args[i]);
}

/* Ends a chain with the error 'err' through the callback. */
static void op_fail(store_op_t *op, int err)
{
    decoded_t d = {.res = {.err = err, .detail = ""}};
    decode_typed(&d, (kind_t)op->kind);
    op->cb(&d.res, op->data);
    decoded_free(&d);
    op_free(op);
}

/* Files the hints of a succeeded operation (the need it created) before its callback runs. */
static void file_hints(const store_op_t *op, const seatd_store_result_t *res)
{
    /* A failed operation files nothing and must not reach the store: the replies of calls
     * still in flight when the Redis client closes arrive (as errors) after
     * seatd_store_free(). */
    if ((res->err != 0 && res->err != SEATD_ENOTDURABLE) || op->hints == 0)
        return; /* (a write not yet on a replica was made: its need is filed) */
    seatd_rds_t *rds = op->st->hints;
    const seatd_booking_result_t *b = &res->booking;
    if (rds == NULL)
        return;
    if (op->hints & HINT_DUE)
        seatd_hints_due(rds, op->show_id);
    if ((op->hints & HINT_PENDING) && !b->replayed)
        seatd_hints_pending(rds, op->show_id);
    if (op->hints & HINT_QUEUE)
        seatd_hints_queue(rds, op->show_id, (long long)res->queue.sales_close_at_ms);
    if ((op->hints & HINT_REFUND) && strcmp(b->refund_status, "pending") == 0 && b->refund > 0 &&
        b->payment_ref[0])
        seatd_hints_pending(rds, op->show_id);
}

/* Marks 'op' to file 'hints' for the show named by 'id' (a hold or booking id of 'kind').
 * Returns 'op'. */
static store_op_t *op_hint(store_op_t *op, unsigned hints, const char *id, char kind)
{
    if (seatd_keys_parse_id(id, kind, op->show_id) == 0)
        op->hints = hints;
    return op;
}

static void on_reply(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    decode(&d, reply, err, (kind_t)op->kind);
    if (d.refused && op->kind == KIND_HOLD)
        propose_alternatives(&d, op->show_id);
    file_hints(op, &d.res);
    op->cb(&d.res, op->data);
    decoded_free(&d);
    op_free(op);
}

static store_op_t *op_new(seatd_store_t *st, kind_t kind, seatd_store_cb cb, void *data)
{
    store_op_t *op = seatd_calloc(1, sizeof(*op));
    op->st = st;
    op->kind = kind;
    op->cb = cb;
    op->data = data;
    return op;
}

/* Queues FCALL 'fn' with one key; takes 'op' (freed here if nothing was queued). */
static int fcall(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                 const size_t *lens, seatd_rds_reply_cb cb)
{
    const char *keys[1] = {key};
    int rc = seatd_scripts_fcall(op->st->scripts, fn, 1, keys, nargs, args, lens, cb, op);
    if (rc < 0)
        op_free(op);
    return rc;
}

/* The next link of a chain, from a callback: a call that cannot be queued ends the chain
 * with its error through the callback. */
static void chain(store_op_t *op, const char *fn, const char *key, int nargs, const char **args,
                  seatd_rds_reply_cb cb)
{
    const char *keys[1] = {key};
    int rc = seatd_scripts_fcall(op->st->scripts, fn, 1, keys, nargs, args, NULL, cb, op);
    if (rc < 0)
        op_fail(op, rc);
}

/* "seatd:layout:<hash>" into 'out' (SEATD_KEY_MAX bytes). */
static void layout_key(char *out, const char *hash)
{
    snprintf(out, SEATD_KEY_MAX, LAYOUT_KEY_PREFIX "%s", hash);
}

static int valid_digest(const char *s, size_t len)
{
    if (s == NULL || len != SEATD_LAYOUT_DIGEST_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* Keeps the show's layoutHash from a seatd_layout_get reply in op->hash and queues the read
 * of the shared layout with 'next'; or ends the chain with the reply's error. */
static void fetch_shared_layout(store_op_t *op, const struct redisReply *reply, int err,
                                seatd_rds_reply_cb next)
{
    decoded_t d;
    decode(&d, reply, err, (kind_t)op->kind);
    if (d.res.err != 0) {
        op->cb(&d.res, op->data);
        decoded_free(&d);
        op_free(op);
        return;
    }
    size_t len = 0;
    const char *hash = raw_get(&d.res, "layoutHash", &len);
    if (!valid_digest(hash, len)) {
        decoded_free(&d);
        seatd_log(SEATD_LOG_ERROR, NULL, "show meta has no valid layoutHash", "\"showId\":\"%s\"",
                  op->show_id);
        op_fail(op, SEATD_EINTERNAL);
        return;
    }
    memcpy(op->hash, hash, len + 1);
    decoded_free(&d);
    char key[SEATD_KEY_MAX];
    layout_key(key, op->hash);
    chain(op, "seatd_layout_fetch", key, 0, NULL, next);
}

/* The shared layout text from a seatd_layout_fetch reply; NULL after ending the chain with
 * an error (a show whose shared layout is missing is an internal error). 'd' is freed by the
 * caller when non-NULL was returned. */
static const char *shared_layout_text(store_op_t *op, decoded_t *d, const struct redisReply *reply,
                                      int err, size_t *len)
{
    decode(d, reply, err, (kind_t)op->kind);
    const char *text = d->res.err == 0 ? raw_get(&d->res, "seats", len) : NULL;
    if (text != NULL)
        return text;
    int e = d->res.err;
    if (e == 0 || e == SEATD_ENOTFOUND) {
        seatd_log(SEATD_LOG_ERROR, NULL, "shared layout missing",
                  "\"showId\":\"%s\",\"layoutHash\":\"%s\"", op->show_id, op->hash);
        e = SEATD_EINTERNAL;
    }
    decoded_free(d);
    op_fail(op, e);
    return NULL;
}

/* The meta key of the show named by 'id' (a hold or booking id of kind 'kind'). */
static int meta_of_id(char *key, const char *id, char kind)
{
    char show[SEATD_ID_MAX];
    int rc = seatd_keys_parse_id(id, kind, show);
    if (rc < 0)
        return rc;
    return seatd_keys_show(key, show, "meta");
}

seatd_store_t *seatd_store_new(seatd_scripts_t *scripts)
{
    seatd_store_t *st = seatd_calloc(1, sizeof(*st));
    st->scripts = scripts;
    return st;
}

void seatd_store_set_hints(seatd_store_t *st, seatd_rds_t *rds)
{
    st->hints = rds;
}

void seatd_store_set_batching(seatd_store_t *st, struct uv_loop_s *loop, unsigned max,
                              unsigned in_flight)
{
    seatd_hold_batch_free(st->batch);
    st->batch = max > 1 ? seatd_hold_batch_new(loop, st->scripts, max, in_flight) : NULL;
}

void seatd_store_free(seatd_store_t *st)
{
    if (st == NULL)
        return;
    seatd_hold_batch_free(st->batch);
    free(st);
}

/* ---------------------------------------------------------------------- shows */

/* The catalogue answer of a created show: success whatever happened to the catalogue entry
 * (the show exists; a missing entry is logged and reported as catalogued=0). */
static void on_catalogued(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    int ok = err == 0 && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ARRAY;
    if (!ok)
        seatd_log(SEATD_LOG_WARN, NULL, "show created but not catalogued", "\"showId\":\"%s\"",
                  op->show_id);
    const char *names[] = {"showId", "version", "catalogued"};
    const char *values[] = {op->show_id, "0", ok ? "1" : "0"};
    size_t lens[] = {strlen(op->show_id), 1, 1};
    decoded_t d = {
        .res = {.detail = "", .nfields = 3, .names = names, .values = values, .lens = lens}};
    decode_typed(&d, KIND_SHOW);
    op->cb(&d.res, op->data);
    decoded_free(&d);
    op_free(op);
}

static void on_show_created(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    decode(&d, reply, err, (kind_t)op->kind);
    if (d.res.err != 0) {
        op->cb(&d.res, op->data);
        decoded_free(&d);
        op_free(op);
        return;
    }
    decoded_free(&d);
    /* The show exists with this layout: later holds of this process start from the cache. */
    seatd_layout_cache_put(op->show_id, op->layout);
    op->layout = NULL;
    const char *keys[1] = {SEATD_KEY_CATALOGUE};
    const char *args[2] = {op->starts_at, op->show_id};
    if (seatd_scripts_fcall(op->st->scripts, "seatd_catalogue_add", 1, keys, 2, args, NULL,
                            on_catalogued, op) < 0)
        on_catalogued(NULL, SEATD_EUNAVAILABLE, op);
}

/* The shared layout is stored (or already was): now the show, with the arguments kept. */
static void on_layout_put(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    decode(&d, reply, err, (kind_t)op->kind);
    if (d.res.err != 0) {
        op->cb(&d.res, op->data);
        decoded_free(&d);
        op_free(op);
        return;
    }
    decoded_free(&d);
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show(key, op->show_id, "meta") < 0) { /* checked before queueing */
        op_fail(op, SEATD_EBADID);
        return;
    }
    chain(op, "seatd_create_show", key, op->argc, (const char **)op->argv, on_show_created);
}

int seatd_store_create_show(seatd_store_t *st, const seatd_show_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX], starts[24], ttl[24], count[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    if (a->title == NULL || a->price_tiers_json == NULL || a->layout_json == NULL ||
        a->hold_ttl_ms <= 0 || a->nseats == 0 || a->nseats > SEATD_LAYOUT_MAX_SEATS)
        return SEATD_EINVAL;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    /* The layout as stored and shared: its canonical seats array, addressed by its digest.
     * seat_ids must be the layout's ids in index order (bit i is seat i). */
    cJSON *doc = cJSON_Parse(a->layout_json);
    seatd_layout_t *l = NULL;
    rc = seatd_layout_from_json(cJSON_GetObjectItemCaseSensitive(doc, "seats"), NULL, &l, NULL, 0);
    cJSON_Delete(doc);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < a->nseats; i++) {
        if (seatd_layout_count(l) != a->nseats ||
            strcmp(seatd_layout_seat(l, i)->id, a->seat_ids[i]) != 0) {
            seatd_layout_free(l);
            return SEATD_EINVAL;
        }
    }
    snprintf(starts, sizeof(starts), "%" PRId64, a->starts_at_ms);
    snprintf(ttl, sizeof(ttl), "%" PRId64, a->hold_ttl_ms);
    snprintf(count, sizeof(count), "%zu", a->nseats);
    const char *hash = seatd_layout_digest(l);
    const char *show_args[7] = {
        a->title, starts, ttl, a->price_tiers_json, hash, a->extra_json ? a->extra_json : "",
        count};
    store_op_t *op = op_new(st, KIND_SHOW, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", a->show_id);
    memcpy(op->starts_at, starts, sizeof(starts));
    memcpy(op->hash, hash, sizeof(op->hash));
    op_keep_args(op, 7, show_args);
    op->layout = l;
    char lkey[SEATD_KEY_MAX];
    layout_key(lkey, op->hash);
    char *text = seatd_layout_seats_json(l);
    const char *put_args[1] = {text};
    rc = fcall(op, "seatd_layout_put", lkey, 1, put_args, NULL, on_layout_put);
    free(text);
    return rc;
}

int seatd_store_next_show_id(seatd_store_t *st, seatd_store_cb cb, void *data)
{
    return fcall(op_new(st, KIND_SHOW, cb, data), "seatd_next_show_id", SEATD_KEY_SHOW_SEQ, 0, NULL,
                 NULL, on_reply);
}

/* A no-argument read of one show's function 'fn'. */
static int show_read(seatd_store_t *st, const char *fn, kind_t kind, const char *show_id,
                     seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    return fcall(op_new(st, kind, cb, data), fn, key, 0, NULL, NULL, on_reply);
}

int seatd_store_show_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, "seatd_show_get", KIND_SHOW, show_id, cb, data);
}

/* layout_get, last link: the shared layout, checked against its address, rendered as the
 * show's document. */
static void on_layout_text(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    size_t len = 0;
    const char *text = shared_layout_text(op, &d, reply, err, &len);
    if (text == NULL)
        return;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1] = "";
    if (EVP_Digest(text, len, md, &mdlen, EVP_sha256(), NULL))
        for (unsigned int i = 0; i < mdlen; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (strcmp(hex, op->hash) != 0) {
        decoded_free(&d);
        seatd_log(SEATD_LOG_ERROR, NULL, "shared layout does not match its hash",
                  "\"showId\":\"%s\",\"layoutHash\":\"%s\"", op->show_id, op->hash);
        op_fail(op, SEATD_EINTERNAL);
        return;
    }
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_printf(&b, "{\"showId\":\"%s\",\"seats\":", op->show_id);
    seatd_buf_append(&b, text, len);
    seatd_buf_append(&b, "}", 1);
    decoded_free(&d);
    const char *names[] = {"layout", "layoutHash"};
    const char *values[] = {b.data, op->hash};
    size_t lens[] = {b.len, strlen(op->hash)};
    decoded_t res = {
        .res = {.detail = "", .nfields = 2, .names = names, .values = values, .lens = lens}};
    decode_typed(&res, KIND_SHOW);
    op->cb(&res.res, op->data);
    decoded_free(&res);
    seatd_buf_free(&b);
    op_free(op);
}

static void on_layout_ref(const struct redisReply *reply, int err, void *data)
{
    fetch_shared_layout(data, reply, err, on_layout_text);
}

int seatd_store_layout_get(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    store_op_t *op = op_new(st, KIND_SHOW, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", show_id);
    return fcall(op, "seatd_layout_get", key, 0, NULL, NULL, on_layout_ref);
}

int seatd_store_seatmap(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    return show_read(st, "seatd_seatmap", KIND_SEATMAP, show_id, cb, data);
}

int seatd_store_version_floor(seatd_store_t *st, const char *show_id, long long seen,
                              seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], v[24];
    if (seen < 0)
        return SEATD_EINVAL;
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    snprintf(v, sizeof(v), "%lld", seen);
    const char *args[1] = {v};
    return fcall(op_new(st, KIND_REAP, cb, data), "seatd_version_floor", key, 1, args, NULL,
                 on_reply);
}

int seatd_store_list_shows(seatd_store_t *st, long offset, long count, seatd_store_cb cb,
                           void *data)
{
    char off[24], cnt[24];
    if (offset < 0 || count < 0 || count > 1000)
        return SEATD_EINVAL;
    snprintf(off, sizeof(off), "%ld", offset);
    snprintf(cnt, sizeof(cnt), "%ld", count);
    const char *args[2] = {off, cnt};
    return fcall(op_new(st, KIND_PAGE, cb, data), "seatd_list_shows", SEATD_KEY_CATALOGUE, 2, args,
                 NULL, on_reply);
}

/* ---------------------------------------------------------------------- holds */

/* Queues seatd_hold for 'op' (its reply runs on_reply): 'base' = hold id, owner, ttl, max,
 * idem; then the layout's digest and each seat with its bit in 'l', or "-" for a seat that is
 * not in 'l' (the script answers UNKNOWN_SEAT for it, in its own order of checks, once it has
 * checked that 'l' is the show's layout). With a 'request' (seatd_hold_args_t.request) the
 * call is seatd_hold_sell: the request, the number of pairs, the pairs, the candidates.
 * All borrowed, copied. Returns 0, or an error with 'op' untouched. */
static int hold_queue(store_op_t *op, const char *key, const char *const *base, const char *request,
                      const char *const *seats, size_t n, const char *const *cands, size_t ncands,
                      const seatd_layout_t *l)
{
    const char **args = seatd_calloc(8 + 2 * n + ncands, sizeof(*args));
    char(*bits)[24] = seatd_calloc(n ? n : 1, sizeof(*bits));
    char np[24];
    int argc = 0;
    for (int i = 0; i < 5; i++)
        args[argc++] = base[i];
    args[argc++] = seatd_layout_digest(l);
    if (request != NULL) {
        seatd_fmt_uint(np, n);
        args[argc++] = request;
        args[argc++] = np;
    }
    for (size_t i = 0; i < n; i++) {
        long bit = seatd_layout_find(l, seats[i]);
        if (bit >= 0)
            seatd_fmt_int(bits[i], bit);
        else
            memcpy(bits[i], "-", 2);
        args[argc++] = seats[i];
        args[argc++] = bits[i];
    }
    for (size_t i = 0; request != NULL && i < ncands; i++)
        args[argc++] = cands[i];
    char qkey[SEATD_KEY_MAX];
    const char *keys[2] = {key, qkey};
    int nkeys = 1;
    if (op->admitted && seatd_keys_show(qkey, op->show_id, "qadmit") == 0)
        nkeys = 2; /* the verified admission (hold.lua) */
    int rc;
    if (request != NULL && op->st->batch != NULL) /* with the show's other holds of this turn */
        rc = seatd_hold_batch_add(op->st->batch, key, nkeys == 2 ? qkey : NULL, argc, args,
                                  on_reply, op);
    else
        rc = seatd_scripts_fcall(op->st->scripts, request ? "seatd_hold_sell" : "seatd_hold", nkeys,
                                 keys, argc, args, NULL, on_reply, op);
    free(bits);
    free(args);
    return rc;
}

/* hold, slow path, last step: the show's layout 'l' (borrowed from the cache) is known to
 * be the one its meta names; op->argv = base arguments, the request ("" for none), the number
 * of seats, the seats, the candidates. */
static void hold_with_layout(store_op_t *op, const seatd_layout_t *l)
{
    const char *const *argv = (const char *const *)op->argv;
    size_t n = (size_t)strtoull(argv[6], NULL, 10);
    const char *request = argv[5][0] ? argv[5] : NULL;
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, op->show_id, "meta");
    if (rc == 0)
        rc = hold_queue(op, key, argv, request, argv + 7, n, argv + 7 + n, (size_t)op->argc - 7 - n,
                        l);
    if (rc < 0)
        op_fail(op, rc);
}

/* hold, slow path: the shared layout, parsed, checked against the show's layoutHash, cached. */
static void on_hold_layout_text(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    decoded_t d;
    size_t len = 0;
    const char *text = shared_layout_text(op, &d, reply, err, &len);
    if (text == NULL)
        return;
    cJSON *arr = cJSON_ParseWithLength(text, len);
    decoded_free(&d);
    seatd_layout_t *l = NULL;
    int rc = seatd_layout_from_json(arr, NULL, &l, NULL, 0);
    cJSON_Delete(arr);
    if (rc < 0 || strcmp(seatd_layout_digest(l), op->hash) != 0) {
        seatd_layout_free(l);
        seatd_log(SEATD_LOG_ERROR, NULL, "shared layout does not match its hash",
                  "\"showId\":\"%s\",\"layoutHash\":\"%s\"", op->show_id, op->hash);
        op_fail(op, SEATD_EINTERNAL);
        return;
    }
    seatd_layout_cache_put(op->show_id, l);
    hold_with_layout(op, l);
}

/* hold, slow path: the show's layoutHash; the cached layout if it is that one. */
static void on_hold_layout_ref(const struct redisReply *reply, int err, void *data)
{
    store_op_t *op = data;
    const seatd_layout_t *l = seatd_layout_cache_get(op->show_id);
    if (l != NULL && err == 0 && seatd_rds_reply_type(reply) == SEATD_RDS_REPLY_ARRAY) {
        decoded_t d;
        decode(&d, reply, err, (kind_t)op->kind);
        const char *hash = raw_get(&d.res, "layoutHash", NULL);
        int same = d.res.err == 0 && hash != NULL && strcmp(hash, seatd_layout_digest(l)) == 0;
        decoded_free(&d);
        if (same) {
            hold_with_layout(op, l);
            return;
        }
    }
    fetch_shared_layout(op, reply, err, on_hold_layout_text);
}

static int hold_start(seatd_store_t *st, const seatd_hold_args_t *a, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX], ttl[24], max[24];
    int rc = seatd_keys_show(key, a->show_id, "meta");
    if (rc < 0)
        return rc;
    rc = seatd_keys_parse_id(a->hold_id, 'h', show);
    if (rc < 0 || strcmp(show, a->show_id) != 0 || !seatd_keys_valid_sub(a->owner))
        return SEATD_EBADID;
    if (a->idem_key != NULL && a->idem_key[0] != '\0' && !seatd_keys_valid_idem_key(a->idem_key))
        return SEATD_EBADID;
    if (a->ttl_ms < 0 || a->max_per_user < 0)
        return SEATD_EINVAL;
    if (a->nseats > SEATD_SEATS_MAX_PER_HOLD)
        return SEATD_ETOOMANY;
    if (a->request != NULL && (strlen(a->request) > 64 || strchr(a->request, ' ') != NULL))
        return SEATD_EINVAL;
    for (size_t i = 0; i < a->nseats; i++)
        if (!seatd_keys_valid_seat_id(a->seat_ids[i]))
            return SEATD_EBADSEAT;
    seatd_fmt_int(ttl, a->ttl_ms);
    seatd_fmt_int(max, a->max_per_user);
    const char *base[5] = {a->hold_id, a->owner, ttl, max, a->idem_key ? a->idem_key : ""};
    store_op_t *op = op_hint(op_new(st, KIND_HOLD, cb, data), HINT_DUE, a->hold_id, 'h');
    seatd_fmt_copy(op->show_id, sizeof(op->show_id), a->show_id);
    op->admitted = a->admitted;
    /* Fast path: the layout is cached (the script checks that it is the show's). Otherwise ask
     * the show which layout it has, and read that one. */
    const seatd_layout_t *l = seatd_layout_cache_get(a->show_id);
    if (l != NULL) {
        rc = hold_queue(op, key, base, a->request, a->seat_ids, a->nseats, a->cands, a->ncands, l);
        if (rc < 0)
            op_free(op);
        return rc;
    }
    char nseats[SEATD_FMT_INT_MAX];
    seatd_fmt_uint(nseats, a->nseats);
    size_t nall = 7 + a->nseats + (a->request ? a->ncands : 0);
    const char **all = seatd_calloc(nall, sizeof(*all));
    memcpy(all, base, sizeof(base));
    all[5] = a->request ? a->request : "";
    all[6] = nseats;
    for (size_t i = 0; i < a->nseats; i++)
        all[7 + i] = a->seat_ids[i];
    for (size_t i = 0; a->request && i < a->ncands; i++)
        all[7 + a->nseats + i] = a->cands[i];
    op_keep_args(op, (int)nall, all);
    free(all);
    return fcall(op, "seatd_layout_get", key, 0, NULL, NULL, on_hold_layout_ref);
}

/* The per-user hold rate limit (issue 9): a fixed-window counter in Redis, counted before the
 * hold is tried (so refused and conflicting attempts count too). The hold's arguments are
 * copied to survive the round trip. */
typedef struct rate_op_s {
    seatd_store_t *st;
    seatd_store_cb cb;
    void *data;
    seatd_hold_args_t a; /* strings below, owned */
    char **seats;        /* owned copies of the seat ids */
    char **cands;        /* owned copies of the candidates */
    char *show_id, *hold_id, *owner, *idem_key, *request;
} rate_op_t;

static void rate_op_free(rate_op_t *r)
{
    for (size_t i = 0; i < r->a.nseats; i++)
        free(r->seats[i]);
    free(r->seats);
    for (size_t i = 0; i < r->a.ncands; i++)
        free(r->cands[i]);
    free(r->cands);
    free(r->request);
    free(r->show_id);
    free(r->hold_id);
    free(r->owner);
    free(r->idem_key);
    free(r);
}

static void on_rate_reply(const struct redisReply *reply, int err, void *data)
{
    rate_op_t *r = data;
    decoded_t d;
    decode(&d, reply, err, KIND_HOLD);
    if (d.res.err != 0) {
        r->cb(&d.res, r->data);
    } else {
        int rc = hold_start(r->st, &r->a, r->cb, r->data);
        if (rc < 0) {
            decoded_t e = {.res = {.err = rc, .detail = ""}};
            decode_typed(&e, KIND_HOLD);
            r->cb(&e.res, r->data);
            decoded_free(&e);
        }
    }
    decoded_free(&d);
    rate_op_free(r);
}

void seatd_store_set_hold_rate(seatd_store_t *st, long long per_window, long long window_ms)
{
    st->hold_rate = per_window > 0 && window_ms > 0 ? per_window : 0;
    st->hold_window_ms = window_ms;
}

int seatd_store_hold(seatd_store_t *st, const seatd_hold_args_t *a, seatd_store_cb cb, void *data)
{
    if (st->hold_rate == 0 || a->owner == NULL)
        return hold_start(st, a, cb, data);
    char key[SEATD_KEY_MAX], limit[24], window[24];
    if (!seatd_keys_valid_sub(a->owner) || a->nseats > SEATD_SEATS_MAX_PER_HOLD ||
        a->show_id == NULL || a->hold_id == NULL)
        return hold_start(st, a, cb, data); /* its own checks answer */
    /* In the show's slot: a counter of its own slot would make every hold of this user, on
     * any show, wait for the one shard that keeps it (on a cluster, a dead shard would stop
     * holds on shows it does not own). So the limit is per user and show. */
    char suffix[SEATD_KEY_MAX];
    if (seatd_fmt_cat(suffix, sizeof(suffix), "rate:hold:", a->owner) < 0 ||
        seatd_keys_show(key, a->show_id, suffix) < 0)
        return hold_start(st, a, cb, data); /* its own checks answer the bad show id */
    seatd_fmt_int(limit, st->hold_rate);
    seatd_fmt_int(window, st->hold_window_ms);
    rate_op_t *r = seatd_calloc(1, sizeof(*r));
    r->st = st;
    r->cb = cb;
    r->data = data;
    r->a = *a;
    r->show_id = seatd_strdup(a->show_id);
    r->hold_id = seatd_strdup(a->hold_id);
    r->owner = seatd_strdup(a->owner);
    r->idem_key = a->idem_key ? seatd_strdup(a->idem_key) : NULL;
    r->seats = seatd_calloc(a->nseats + 1, sizeof(*r->seats));
    for (size_t i = 0; i < a->nseats; i++)
        r->seats[i] = seatd_strdup(a->seat_ids[i] ? a->seat_ids[i] : "");
    r->a.show_id = r->show_id;
    r->a.hold_id = r->hold_id;
    r->a.owner = r->owner;
    r->a.idem_key = r->idem_key;
    r->a.seat_ids = (const char *const *)r->seats;
    r->request = a->request ? seatd_strdup(a->request) : NULL;
    r->a.request = r->request;
    r->cands = seatd_calloc(a->ncands + 1, sizeof(*r->cands));
    for (size_t i = 0; i < a->ncands; i++)
        r->cands[i] = seatd_strdup(a->cands[i] ? a->cands[i] : "");
    r->a.cands = (const char *const *)r->cands;
    const char *keys[1] = {key};
    const char *args[2] = {limit, window};
    int rc = seatd_scripts_fcall(st->scripts, "seatd_rate_hit", 1, keys, 2, args, NULL,
                                 on_rate_reply, r);
    if (rc < 0)
        rate_op_free(r);
    return rc;
}

/* hold_get and release: (hold id, owner[, mode]); 'mode' may be NULL. */
static int hold_owner_call(seatd_store_t *st, const char *fn, const char *hold_id,
                           const char *owner, const char *mode, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, hold_id, 'h');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[3] = {hold_id, owner ? owner : "", mode};
    return fcall(op_new(st, KIND_HOLD, cb, data), fn, key, mode ? 3 : 2, args, NULL, on_reply);
}

int seatd_store_hold_get(seatd_store_t *st, const char *hold_id, const char *owner,
                         seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, "seatd_hold_get", hold_id, owner, NULL, cb, data);
}

int seatd_store_release(seatd_store_t *st, const char *hold_id, const char *owner,
                        seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, "seatd_release", hold_id, owner, NULL, cb, data);
}

int seatd_store_release_unclaimed(seatd_store_t *st, const char *hold_id, const char *owner,
                                  seatd_store_cb cb, void *data)
{
    return hold_owner_call(st, "seatd_release", hold_id, owner, "unclaimed", cb, data);
}

/* ---------------------------------------------------------------------- bookings */

int seatd_store_book_begin(seatd_store_t *st, const seatd_book_args_t *a, seatd_store_cb cb,
                           void *data)
{
    char key[SEATD_KEY_MAX], show_h[SEATD_ID_MAX], show_b[SEATD_ID_MAX], amount[24], win[24];
    char cap[24] = "", cap_win[24] = "";
    if (seatd_keys_parse_id(a->hold_id, 'h', show_h) < 0 ||
        seatd_keys_parse_id(a->booking_id, 'b', show_b) < 0 || strcmp(show_h, show_b) != 0 ||
        !seatd_keys_valid_sub(a->owner))
        return SEATD_EBADID;
    if (a->amount < 0 || a->payment_window_ms <= 0 ||
        (a->decline_cap > 0 && a->decline_window_ms <= 0))
        return SEATD_EINVAL;
    int rc = seatd_keys_show(key, show_h, "meta");
    if (rc < 0)
        return rc;
    snprintf(amount, sizeof(amount), "%" PRId64, a->amount);
    snprintf(win, sizeof(win), "%" PRId64, a->payment_window_ms);
    if (a->decline_cap > 0) {
        snprintf(cap, sizeof(cap), "%" PRId64, a->decline_cap);
        snprintf(cap_win, sizeof(cap_win), "%" PRId64, a->decline_window_ms);
    }
    const char *args[9] = {a->hold_id,
                           a->owner,
                           a->booking_id,
                           amount,
                           a->currency ? a->currency : "",
                           a->payment_method ? a->payment_method : "",
                           win,
                           cap,
                           cap_win};
    store_op_t *op =
        op_hint(op_new(st, KIND_BOOKING, cb, data), HINT_DUE | HINT_PENDING, a->booking_id, 'b');
    return fcall(op, "seatd_book_begin", key, a->decline_cap > 0 ? 9 : 7, args, NULL, on_reply);
}

/* book_confirm, book_fail: (booking id, text). */
static int booking_text_call(seatd_store_t *st, const char *fn, unsigned hints,
                             const char *booking_id, const char *text, seatd_store_cb cb,
                             void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    const char *args[2] = {booking_id, text ? text : ""};
    store_op_t *op = op_hint(op_new(st, KIND_BOOKING, cb, data), hints, booking_id, 'b');
    return fcall(op, fn, key, 2, args, NULL, on_reply);
}

int seatd_store_book_confirm(seatd_store_t *st, const char *booking_id, const char *payment_ref,
                             seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_book_confirm", 0, booking_id, payment_ref, cb, data);
}

int seatd_store_book_fail(seatd_store_t *st, const char *booking_id, const char *reason,
                          seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_book_fail", HINT_DUE, booking_id, reason, cb, data);
}

int seatd_store_booking_get(seatd_store_t *st, const char *booking_id, const char *owner,
                            seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[2] = {booking_id, owner ? owner : ""};
    return fcall(op_new(st, KIND_BOOKING, cb, data), "seatd_booking_get", key, 2, args, NULL,
                 on_reply);
}

int seatd_store_cancel(seatd_store_t *st, const char *booking_id, const char *owner, int64_t refund,
                       seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    if (refund < 0)
        return SEATD_EINVAL;
    snprintf(amount, sizeof(amount), "%" PRId64, refund);
    const char *args[3] = {booking_id, owner ? owner : "", amount};
    return fcall(op_new(st, KIND_BOOKING, cb, data), "seatd_cancel", key, 3, args, NULL, on_reply);
}

int seatd_store_book_fail_refunded(seatd_store_t *st, const char *booking_id, const char *reason,
                                   int64_t refund, const char *refund_ref, seatd_store_cb cb,
                                   void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (refund < 0)
        return SEATD_EINVAL;
    snprintf(amount, sizeof(amount), "%" PRId64, refund);
    const char *args[4] = {booking_id, reason ? reason : "", amount, refund_ref ? refund_ref : ""};
    return fcall(op_hint(op_new(st, KIND_BOOKING, cb, data), HINT_DUE, booking_id, 'b'),
                 "seatd_book_fail", key, 4, args, NULL, on_reply);
}

int seatd_store_cancel_by_policy(seatd_store_t *st, const char *booking_id, const char *owner,
                                 seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (owner != NULL && !seatd_keys_valid_sub(owner))
        return SEATD_EBADID;
    const char *args[3] = {booking_id, owner ? owner : "", "policy"};
    return fcall(op_hint(op_new(st, KIND_BOOKING, cb, data), HINT_REFUND, booking_id, 'b'),
                 "seatd_cancel", key, 3, args, NULL, on_reply);
}

int seatd_store_refund_done(seatd_store_t *st, const char *booking_id, const char *refund_ref,
                            seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_refund_done", 0, booking_id, refund_ref, cb, data);
}

int seatd_store_bookings_status(seatd_store_t *st, const char *show_id, size_t n,
                                const char *const *booking_ids, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (n < 1 || n > SEATD_STORE_STATUSES_MAX || booking_ids == NULL)
        return SEATD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (seatd_keys_parse_id(booking_ids[i], 'b', show) < 0 || strcmp(show, show_id) != 0)
            return SEATD_EBADID;
    return fcall(op_new(st, KIND_STATUSES, cb, data), "seatd_bookings_status", key, (int)n,
                 (const char **)booking_ids, NULL, on_reply);
}

int seatd_store_pending_due(seatd_store_t *st, const char *show_id, int64_t min_age_ms,
                            int64_t horizon_ms, int max, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], age[24], n[24], horizon[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (min_age_ms < 0 || max < 1 || max > 1000)
        return SEATD_EINVAL;
    snprintf(age, sizeof(age), "%" PRId64, min_age_ms);
    snprintf(n, sizeof(n), "%d", max);
    snprintf(horizon, sizeof(horizon), "%" PRId64, horizon_ms);
    const char *args[3] = {age, n, horizon};
    return fcall(op_new(st, KIND_PENDING, cb, data), "seatd_pending_due", key,
                 horizon_ms >= 0 ? 3 : 2, args, NULL, on_reply);
}

int seatd_store_hint_clear(seatd_store_t *st, const char *show_id, const char *score,
                           seatd_store_cb cb, void *data)
{
    if (!seatd_keys_valid_show_id(show_id) || score == NULL)
        return SEATD_EBADID;
    char key[SEATD_KEY_MAX];
    if (seatd_keys_show_hint(key, SEATD_KEY_PENDING_SHOWS, show_id) < 0)
        return SEATD_EBADID;
    const char *args[2] = {show_id, score};
    return fcall(op_new(st, KIND_REMOVED, cb, data), "seatd_hint_clear", key, 2, args, NULL,
                 on_reply);
}

int seatd_store_reap(seatd_store_t *st, const char *show_id, int max, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], n[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (max < 1 || max > 10000)
        return SEATD_EINVAL;
    snprintf(n, sizeof(n), "%d", max);
    const char *args[1] = {n};
    return fcall(op_new(st, KIND_REAP, cb, data), "seatd_reap", key, 1, args, NULL, on_reply);
}

/* ------------------------------------------------------------------ payment guards */

int seatd_store_book_fail_after(seatd_store_t *st, const char *booking_id, const char *reason,
                                int64_t min_age_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], age[24];
    int rc = meta_of_id(key, booking_id, 'b');
    if (rc < 0)
        return rc;
    if (min_age_ms < 0)
        return SEATD_EINVAL;
    snprintf(age, sizeof(age), "%" PRId64, min_age_ms);
    const char *args[5] = {booking_id, reason ? reason : "", "", "", age};
    return fcall(op_hint(op_new(st, KIND_BOOKING, cb, data), HINT_DUE, booking_id, 'b'),
                 "seatd_book_fail", key, 5, args, NULL, on_reply);
}

int seatd_store_late_charge(seatd_store_t *st, const char *booking_id, const char *charge_id,
                            seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_late_charge", 0, booking_id, charge_id, cb, data);
}

int seatd_store_book_lost(seatd_store_t *st, const seatd_book_lost_args_t *a, seatd_store_cb cb,
                          void *data)
{
    char key[SEATD_KEY_MAX], amount[24];
    if (a == NULL || a->charge_id == NULL || a->charge_id[0] == '\0' || a->amount < 1)
        return SEATD_EINVAL;
    int rc = meta_of_id(key, a->booking_id, 'b');
    if (rc < 0)
        return rc;
    snprintf(amount, sizeof(amount), "%" PRId64, a->amount);
    const char *args[7] = {a->booking_id,
                           a->charge_id,
                           amount,
                           a->currency ? a->currency : "",
                           a->owner ? a->owner : "",
                           a->hold_id ? a->hold_id : "",
                           a->seat_ids ? a->seat_ids : ""};
    /* Hinted like a refund owed: reconciliation retries it from {s}:refunds. */
    store_op_t *op = op_hint(op_new(st, KIND_BOOKING, cb, data), HINT_PENDING, a->booking_id, 'b');
    return fcall(op, "seatd_book_lost", key, 7, args, NULL, on_reply);
}

int seatd_store_late_clear(seatd_store_t *st, const char *booking_id, seatd_store_cb cb, void *data)
{
    return booking_text_call(st, "seatd_late_clear", 0, booking_id, NULL, cb, data);
}

static int attempt_call(seatd_store_t *st, unsigned flags, const char *key, int take, int64_t cap,
                        int64_t window_ms, seatd_store_cb cb, void *data)
{
    char c[24], w[24];
    if (key == NULL || key[0] == '\0' || (take && (cap < 1 || window_ms < 1)))
        return SEATD_EINVAL;
    snprintf(c, sizeof(c), "%" PRId64, cap);
    snprintf(w, sizeof(w), "%" PRId64, window_ms);
    const char *args[3] = {take ? "take" : "give", c, w};
    const char *keys[1] = {key};
    store_op_t *op = op_new(st, KIND_ATTEMPT, cb, data);
    int rc = seatd_scripts_fcall_ex(st->scripts, "seatd_attempt", flags, 1, keys, take ? 3 : 1,
                                    args, NULL, on_reply, op);
    if (rc < 0)
        op_free(op);
    return rc;
}

int seatd_store_attempt(seatd_store_t *st, const char *key, int take, int64_t cap,
                        int64_t window_ms, seatd_store_cb cb, void *data)
{
    return attempt_call(st, 0, key, take, cap, window_ms, cb, data);
}

int seatd_store_attempt_nowait(seatd_store_t *st, const char *key, int take, int64_t cap,
                               int64_t window_ms, seatd_store_cb cb, void *data)
{
    return attempt_call(st, SEATD_RDS_NO_WAIT, key, take, cap, window_ms, cb, data);
}

/* ---------------------------------------------------------------------- accounts */

static int account_call(seatd_store_t *st, const char *fn, const char *key, int nargs,
                        const char **args, seatd_store_cb cb, void *data)
{
    return fcall(op_new(st, KIND_ACCOUNT, cb, data), fn, key, nargs, args, NULL, on_reply);
}

static int email_call(seatd_store_t *st, const char *fn, const char *email, const char *user_id,
                      seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_email(key, email) < 0 || (user_id && !seatd_keys_valid_sub(user_id)))
        return SEATD_EBADID;
    const char *args[1] = {user_id};
    return account_call(st, fn, key, user_id ? 1 : 0, args, cb, data);
}

int seatd_store_email_claim(seatd_store_t *st, const char *email, const char *user_id,
                            seatd_store_cb cb, void *data)
{
    if (user_id == NULL)
        return SEATD_EBADID;
    return email_call(st, "seatd_email_claim", email, user_id, cb, data);
}

int seatd_store_email_release(seatd_store_t *st, const char *email, const char *user_id,
                              seatd_store_cb cb, void *data)
{
    if (user_id == NULL)
        return SEATD_EBADID;
    return email_call(st, "seatd_email_release", email, user_id, cb, data);
}

int seatd_store_email_get(seatd_store_t *st, const char *email, seatd_store_cb cb, void *data)
{
    return email_call(st, "seatd_email_get", email, NULL, cb, data);
}

int seatd_store_user_create(seatd_store_t *st, const seatd_user_args_t *a, seatd_store_cb cb,
                            void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, a->user_id, "user") < 0 || a->email == NULL || a->hash == NULL)
        return SEATD_EBADID;
    const char *args[4] = {a->email, a->name ? a->name : "", a->hash, a->admin ? "1" : "0"};
    return account_call(st, "seatd_user_create", key, 4, args, cb, data);
}

int seatd_store_user_get(seatd_store_t *st, const char *user_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0)
        return SEATD_EBADID;
    return account_call(st, "seatd_user_get", key, 0, NULL, cb, data);
}

int seatd_store_session_start(seatd_store_t *st, const char *user_id, const char *family_id,
                              const char *token_hash, int64_t ttl_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], ttl[24];
    if (seatd_keys_user(key, user_id, "user") < 0 || family_id == NULL || token_hash == NULL)
        return SEATD_EBADID;
    if (ttl_ms < 1)
        return SEATD_EINVAL;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *args[3] = {family_id, token_hash, ttl};
    return account_call(st, "seatd_session_start", key, 3, args, cb, data);
}

int seatd_store_session_refresh(seatd_store_t *st, const char *user_id, const char *old_hash,
                                const char *new_hash, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0 || old_hash == NULL || new_hash == NULL)
        return SEATD_EBADID;
    const char *args[2] = {old_hash, new_hash};
    return account_call(st, "seatd_session_refresh", key, 2, args, cb, data);
}

int seatd_store_session_revoke(seatd_store_t *st, const char *user_id, const char *token_hash,
                               seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (seatd_keys_user(key, user_id, "user") < 0 || token_hash == NULL)
        return SEATD_EBADID;
    const char *args[1] = {token_hash};
    return account_call(st, "seatd_session_revoke", key, 1, args, cb, data);
}

/* A side step in the buyer's own keys (index, idempotency record) of a request whose work is
 * in a show's slot: on a cluster the user's shard may be another, and it never waits for it
 * when it cannot be reached (SEATD_RDS_NO_WAIT: fails at once, the caller goes on). */
static int user_side_call(seatd_store_t *st, const char *fn, const char *key, int nargs,
                          const char **args, seatd_store_cb cb, void *data)
{
    const char *keys[1] = {key};
    store_op_t *op = op_new(st, KIND_ACCOUNT, cb, data);
    int rc = seatd_scripts_fcall_ex(st->scripts, fn, SEATD_RDS_NO_WAIT, 1, keys, nargs, args, NULL,
                                    on_reply, op);
    if (rc < 0)
        op_free(op);
    return rc;
}

static int valid_index(const char *index)
{
    return index && (strcmp(index, "holds") == 0 || strcmp(index, "bookings") == 0);
}

int seatd_store_me_add(seatd_store_t *st, const char *sub, const char *index, const char *id,
                       int64_t retain_ms, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], retain[24];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0 || id == NULL || !id[0])
        return SEATD_EBADID;
    if (retain_ms < 0)
        return SEATD_EINVAL;
    snprintf(retain, sizeof(retain), "%" PRId64, retain_ms);
    const char *args[2] = {id, retain};
    return user_side_call(st, "seatd_me_add", key, 2, args, cb, data);
}

/* The key of user 'sub''s idempotency record for 'key' on 'route' ("book") into 'out'
 * (SEATD_KEY_MAX): 0, SEATD_EINVAL or SEATD_EBADID. */
static int idem_record_key(char *out, const char *sub, const char *route, const char *key)
{
    char suffix[SEATD_KEY_MAX];
    if (route == NULL || strcmp(route, "book") != 0 || !seatd_keys_valid_idem_key(key))
        return SEATD_EINVAL;
    snprintf(suffix, sizeof(suffix), "idem:%s:%s", route, key);
    return seatd_keys_user(out, sub, suffix) < 0 ? SEATD_EBADID : 0;
}

int seatd_store_idem_claim(seatd_store_t *st, const char *sub, const char *route, const char *key,
                           const char *fingerprint, int64_t ttl_ms, seatd_store_cb cb, void *data)
{
    char rkey[SEATD_KEY_MAX], ttl[24];
    if (fingerprint == NULL || !fingerprint[0] || ttl_ms < 1)
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    const char *args[2] = {fingerprint, ttl};
    return user_side_call(st, "seatd_idem_claim", rkey, 2, args, cb, data);
}

int seatd_store_idem_settle(seatd_store_t *st, const char *sub, const char *route, const char *key,
                            const char *fingerprint, const char *outcome, seatd_store_cb cb,
                            void *data)
{
    char rkey[SEATD_KEY_MAX];
    if (fingerprint == NULL || !fingerprint[0] || outcome == NULL || !outcome[0])
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    const char *args[2] = {fingerprint, outcome};
    return user_side_call(st, "seatd_idem_settle", rkey, 2, args, cb, data);
}

int seatd_store_idem_release(seatd_store_t *st, const char *sub, const char *route, const char *key,
                             const char *fingerprint, seatd_store_cb cb, void *data)
{
    char rkey[SEATD_KEY_MAX];
    if (fingerprint == NULL || !fingerprint[0])
        return SEATD_EINVAL;
    int rc = idem_record_key(rkey, sub, route, key);
    if (rc < 0)
        return rc;
    const char *args[1] = {fingerprint};
    return user_side_call(st, "seatd_idem_release", rkey, 1, args, cb, data);
}

int seatd_store_me_remove(seatd_store_t *st, const char *sub, const char *index,
                          const char *const *ids, size_t n, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0 || ids == NULL)
        return SEATD_EBADID;
    if (n < 1 || n > 64)
        return SEATD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == NULL || !ids[i][0])
            return SEATD_EBADID;
    return user_side_call(st, "seatd_me_remove", key, (int)n, (const char **)ids, cb, data);
}

int seatd_store_me_list(seatd_store_t *st, const char *sub, const char *index, const char *before,
                        int limit, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], n[24];
    if (!valid_index(index) || seatd_keys_user(key, sub, index) < 0)
        return SEATD_EBADID;
    if (limit < 1 || limit > 1000)
        return SEATD_EINVAL;
    snprintf(n, sizeof(n), "%d", limit);
    const char *args[2] = {before ? before : "", n};
    return account_call(st, "seatd_me_list", key, 2, args, cb, data);
}

/* ------------------------------------------------------------------ waiting room */

int seatd_store_queue_join(seatd_store_t *st, const char *show_id, const char *ticket,
                           const char *user, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX], show[SEATD_ID_MAX], early[24];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    if (seatd_keys_parse_id(ticket, 'q', show) < 0 || strcmp(show, show_id) != 0 ||
        !seatd_keys_valid_sub(user))
        return SEATD_EBADID;
    /* The rank key of a join before the opening: uniform in [0, 2^50). */
    unsigned char rnd[8];
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return SEATD_EINTERNAL;
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(rnd); i++)
        v = v << 8 | rnd[i];
    snprintf(early, sizeof(early), "%" PRIu64, v & ((UINT64_C(1) << 50) - 1));
    const char *args[3] = {ticket, user, early};
    store_op_t *op = op_new(st, KIND_QUEUE, cb, data);
    snprintf(op->show_id, sizeof(op->show_id), "%s", show_id);
    op->hints = HINT_QUEUE;
    return fcall(op, "seatd_queue_join", key, 3, args, NULL, on_reply);
}

int seatd_store_queue_status(seatd_store_t *st, const char *ticket, const char *user,
                             seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = meta_of_id(key, ticket, 'q');
    if (rc < 0)
        return rc;
    if (!seatd_keys_valid_sub(user))
        return SEATD_EBADID;
    const char *args[2] = {ticket, user};
    return fcall(op_new(st, KIND_QUEUE, cb, data), "seatd_queue_status", key, 2, args, NULL,
                 on_reply);
}

int seatd_store_queue_advance(seatd_store_t *st, const char *show_id, seatd_store_cb cb, void *data)
{
    char key[SEATD_KEY_MAX];
    int rc = seatd_keys_show(key, show_id, "meta");
    if (rc < 0)
        return rc;
    return fcall(op_new(st, KIND_QUEUE, cb, data), "seatd_queue_advance", key, 0, NULL, NULL,
                 on_reply);
}
