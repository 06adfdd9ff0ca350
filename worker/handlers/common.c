/* common.c - shared handler helpers; see common.h. */
#include "common.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "http/auth.h"
#include "base/buf.h"
#include "base/fmt.h"
#include "http/http_request.h"
#include "http/json.h"
#include "domain/areas.h"
#include "domain/keys.h"
#include "domain/layout.h"
#include "flows/layout_fetch.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "domain/seatmap.h"
#include "domain/seats.h"
#include "base/timefmt.h"

seatd_app_t *seatd__app(seatd_req_t *r)
{
    return seatd_req_app(r);
}

const char *seatd__sub(seatd_req_t *r)
{
    const seatd_principal_t *p = seatd_req_principal(r);
    return p ? p->sub : "";
}

/* Logs the text behind a store error (a script's detail or Redis's own message), which may
 * name keys or internals and therefore never goes into an answer. */
static void log_store_error(seatd_req_t *r, const seatd_store_result_t *res)
{
    if (res->detail == NULL || res->detail[0] == '\0')
        return;
    int level = seatd_err_http_status(res->err) >= 500 ? SEATD_LOG_WARN : SEATD_LOG_DEBUG;
    if (!seatd_log_enabled(level))
        return; /* a conflict's detail is a debug line: not escaped for nothing */
    seatd_buf_t b = SEATD_BUF_INIT;
    seatd_buf_json_escape(&b, res->detail, strnlen(res->detail, 300));
    seatd_log(level, seatd_req_id(r), "store error", "\"error\":\"%s\",\"detail\":\"%s\"",
              seatd_err_name(res->err), b.data ? b.data : "");
    seatd_buf_free(&b);
}

/* The status words a script may name in "STATE <status>"; anything else is not repeated. */
static int known_status(const char *s)
{
    static const char *const statuses[] = {"HELD",    "PENDING_PAYMENT", "BOOKED", "RELEASED",
                                           "EXPIRED", "CONFIRMED",       "FAILED", "CANCELLED"};
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
        if (strcmp(s, statuses[i]) == 0)
            return 1;
    return 0;
}

/* Appends the seat ids of the comma-joined 'csv' (a script's word after "alt=") to 'b' as a
 * JSON array, after a comma unless it is the 'first' array; returns 1, or 0 with 'b' as it was
 * when one is not a valid seat id. */
static int put_alternative(seatd_buf_t *b, const char *csv, int first)
{
    char buf[SEATD_SEATS_MAX_PER_HOLD * 18];
    if (strlen(csv) >= sizeof(buf))
        return 0;
    memcpy(buf, csv, strlen(csv) + 1);
    size_t mark = b->len;
    seatd_buf_puts(b, first ? "[" : ",[");
    int n = 0;
    for (char *save = NULL, *id = strtok_r(buf, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        if (!seatd_keys_valid_seat_id(id)) {
            b->len = mark;
            b->data[mark] = '\0';
            return 0;
        }
        seatd_buf_puts(b, n++ ? ",\"" : "\""); /* valid ids need no escaping */
        seatd_buf_puts(b, id);
        seatd_buf_puts(b, "\"");
    }
    seatd_buf_puts(b, "]");
    return 1;
}

/* A 409 seat-conflict or orphan-seat, the most frequent answer of an on-sale, written without
 * a JSON tree: "conflictingSeats" (or "orphanSeats") and "alternatives" from the script's
 * words. */
static void reply_refusal(seatd_req_t *r, const seatd_store_result_t *res)
{
    int orphan = res->err == SEATD_EORPHANSEAT;
    seatd_buf_t members = SEATD_BUF_INIT; /* one buffer: the seats, then the alternatives */
    size_t n = 0, nalts = 0;
    const char *first = NULL;
    seatd_buf_puts(&members, orphan ? "\"orphanSeats\":[" : "\"conflictingSeats\":[");
    for (size_t i = 0; i < res->nwords; i++) {
        if (strncmp(res->words[i], "alt=", 4) == 0 || !seatd_keys_valid_seat_id(res->words[i]))
            continue;
        seatd_buf_puts(&members, n ? ",\"" : "\""); /* valid ids need no escaping */
        seatd_buf_puts(&members, res->words[i]);
        seatd_buf_puts(&members, "\"");
        first = first ? first : res->words[i];
        n++;
    }
    seatd_buf_puts(&members, "],\"alternatives\":[");
    for (size_t i = 0; i < res->nwords; i++)
        if (strncmp(res->words[i], "alt=", 4) == 0)
            nalts += put_alternative(&members, res->words[i] + 4, nalts == 0);
    seatd_buf_puts(&members, "]");
    /* Most answers when a show opens: written without printf. A seat id is at most 16 bytes
     * (seats.h), so every message fits. */
    char msg[160], count[SEATD_FMT_INT_MAX];
    seatd_fmt_uint(count, n);
    if (orphan && n == 1)
        seatd_fmt_cat(msg, sizeof(msg), "seat ", first, " would be left alone between taken seats");
    else if (orphan)
        seatd_fmt_cat(msg, sizeof(msg), count, " seats would be left alone between taken seats");
    else if (n == 1)
        seatd_fmt_cat(msg, sizeof(msg), "seat ", first, " was just taken");
    else
        seatd_fmt_cat(msg, sizeof(msg), count, " of the seats asked for were just taken");
    seatd_req_finish_problem_members(r, res->err, msg, members.data);
    seatd_buf_free(&members);
}

void seatd__reply_store_error(seatd_req_t *r, const seatd_store_result_t *res)
{
    seatd__reply_store_error_in(r, res, NULL);
}

void seatd__reply_store_error_in(seatd_req_t *r, const seatd_store_result_t *res, const char *show)
{
    /* Every detail below is written here from validated words: a script's or Redis's text can
     * name keys ("{s:42}:meta") or internals, so it is only logged. */
    log_store_error(r, res);
    seatd_store_result_t shifted;
    if (show == NULL && res->nwords > 0 && strncmp(res->words[0], "show=", 5) == 0 &&
        seatd_keys_valid_show_id(res->words[0] + 5)) {
        /* "WORD show=<id> …": a group's refusal (a group hold, one payment) names its show */
        shifted = *res;
        show = shifted.words[0] + 5;
        shifted.words++;
        shifted.nwords--;
        res = &shifted;
    }
    cJSON *extra = NULL;
    const char *detail = NULL;
    char msg[160];
    long long a = 0, b = 0, c = 0;
    if (res->err == SEATD_ECONFLICT || res->err == SEATD_EORPHANSEAT) {
        reply_refusal(r, res);
        return;
    } else if (res->err == SEATD_EAREASOLDOUT && res->nwords > 1 &&
               seatd_keys_valid_seat_id(res->words[0]) && sscanf(res->words[1], "%lld", &a) == 1) {
        /* "AREA_SOLD_OUT <id> <free> <id:capacity:free,…>": what is left, every area */
        snprintf(msg, sizeof(msg), "area %s has %lld places free", res->words[0], a);
        detail = msg;
        extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "area", res->words[0]);
        cJSON_AddNumberToObject(extra, "available", (double)a);
        cJSON *all = res->nwords > 2 ? seatd_areas_free_json(res->words[2]) : NULL;
        if (all)
            cJSON_AddItemToObject(extra, "areas", all);
    } else if (res->err == SEATD_ENOTFORSALE && res->nwords > 0) {
        /* "NOT_FOR_SALE <seat…>": kept for a channel (issue 30) */
        extra = cJSON_CreateObject();
        cJSON *seats = cJSON_AddArrayToObject(extra, "unavailableSeats");
        for (size_t i = 0; i < res->nwords; i++)
            if (seatd_keys_valid_seat_id(res->words[i]))
                cJSON_AddItemToArray(seats, cJSON_CreateString(res->words[i]));
        detail = "these seats are kept for a sales channel: not for sale to this token";
    } else if (res->err == SEATD_EUNKNOWNAREA && res->nwords > 0 &&
               seatd_keys_valid_seat_id(res->words[0])) {
        snprintf(msg, sizeof(msg), "area %s is not in this show", res->words[0]);
        detail = msg;
    } else if (res->err == SEATD_ENOBLOCK && res->nwords > 0 &&
               sscanf(res->words[0], "%lld", &a) == 1) {
        snprintf(msg, sizeof(msg), "no %lld seats that fit are free, together or in two blocks", a);
        detail = msg;
    } else if (res->err == SEATD_EUNKNOWNSEAT && res->nwords > 0 &&
               seatd_keys_valid_seat_id(res->words[0])) {
        snprintf(msg, sizeof(msg), "seat %s is not in this show", res->words[0]);
        detail = msg;
    } else if (res->err == SEATD_ESTATE && res->nwords > 0 && known_status(res->words[0])) {
        snprintf(msg, sizeof(msg), "its status is %s", res->words[0]);
        detail = msg;
    } else if (res->err == SEATD_ELIMIT && res->nwords > 0 &&
               sscanf(res->words[0], "%lld+%lld>%lld", &a, &b, &c) == 3) {
        snprintf(msg, sizeof(msg),
                 "you have %lld seats of this show; %lld more would pass the limit of %lld", a, b,
                 c);
        detail = msg;
    } else if (res->err == SEATD_ESALESCLOSED) {
        long long close = 0;
        char *end = NULL;
        if (res->nwords > 0)
            close = strtoll(res->words[0], &end, 10);
        if (end && *end == '\0' && close > 0) {
            char ts[SEATD_TIME_STR_MAX];
            seatd_time_format(close, ts);
            snprintf(msg, sizeof(msg), "sales for this show closed at %s", ts);
            detail = msg;
            extra = cJSON_CreateObject();
            cJSON_AddStringToObject(extra, "salesCloseAt", ts);
        }
    }
    if (show != NULL) { /* a group hold's refusal names the show that refused */
        if (extra == NULL)
            extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "showId", show);
    }
    seatd_req_finish_problem(r, res->err, detail, extra);
}

void seatd__reply_no_hold(seatd_req_t *r, const char *hold_id)
{
    char show[SEATD_ID_MAX], msg[192];
    int group = hold_id && seatd_keys_parse_id(hold_id, 'm', show) == 0;
    if (group || (hold_id && seatd_keys_parse_id(hold_id, 'h', show) == 0)) {
        snprintf(msg, sizeof(msg),
                 group ? "no group hold %s of yours: holdId must name a group hold you made "
                         "(POST /v1/groups/{id}/holds) that has not ended"
                       : "no hold %s of yours: holdId must name a hold you made (POST "
                         "/v1/shows/{id}/holds)",
                 hold_id);
        cJSON *extra = cJSON_CreateObject();
        cJSON_AddStringToObject(extra, "holdId", hold_id);
        seatd_req_finish_problem(r, SEATD_ENOTFOUND, msg, extra);
        return;
    }
    seatd_req_finish_problem(r, SEATD_ENOTFOUND,
                             "no such hold: holdId is not a hold id (<show>-h<20 hex digits>, as "
                             "POST /v1/shows/{id}/holds answered, or a group hold's <show>-m…)",
                             NULL);
}

static void on_version_floor(const seatd_store_result_t *res, void *data)
{
    char *show_id = data;
    if (res->err)
        seatd_log(SEATD_LOG_WARN, NULL, "lost seat-map versions not skipped",
                  "\"show\":\"%s\",\"error\":\"%s\"", show_id, seatd_err_name(res->err));
    else
        seatd_log(SEATD_LOG_WARN, NULL, "redis lost seat-map versions: skipped past them",
                  "\"show\":\"%s\",\"version\":%lld", show_id, (long long)res->reap.version);
    free(show_id);
}

struct seatd_seatmap_s *seatd__seatmap_keep(struct seatd_app_s *app, const char *show_id,
                                            const seatd_seatmap_result_t *s, int64_t issued_at_ms)
{
    seatd_seatmap_t *m =
        seatd_seatmap_put(show_id, s->version, (size_t)s->seat_count, s->held, s->held_len,
                          s->booked, s->booked_len, issued_at_ms, seatd_seatmap_now_ms());
    if (m->version == s->version)
        seatd_seatmap_set_extras(m, s->areas, s->blocked, s->blocked_len);
    if (m->lost_from >= 0) {
        char *id = seatd_strdup(show_id);
        if (seatd_store_version_floor(app->store, show_id, m->lost_from, on_version_floor, id) < 0)
            free(id);
        m->lost_from = -1; /* reported once */
    }
    return m;
}

int seatd__step_begin(seatd_req_t **rp, int rc)
{
    if (rc == 0 && *rp != NULL)
        seatd_req_hold(*rp);
    return rc;
}

int seatd__step_end(seatd_req_t **rp)
{
    if (*rp != NULL && seatd_req_release(*rp))
        *rp = NULL;
    return *rp == NULL;
}

void seatd__op_init(seatd__op_t *op, seatd_req_t *r, seatd__op_free_fn free_op)
{
    op->r = r;
    op->free_op = free_op;
}

void seatd__op_free(seatd__op_t *op)
{
    op->free_op(op);
}

int seatd__op_started(seatd__op_t *op, int rc)
{
    if (seatd__step_begin(&op->r, rc) < 0)
        seatd__op_answer_problem(op, rc, NULL, NULL);
    return rc;
}

int seatd__op_gone_or_failed(seatd__op_t *op, const seatd_store_result_t *res)
{
    if (seatd__step_end(&op->r)) {
        seatd__op_free(op);
        return 1;
    }
    if (res->err) {
        seatd__reply_store_error(op->r, res);
        seatd__op_free(op);
        return 1;
    }
    return 0;
}

void seatd__op_answer_problem(seatd__op_t *op, int err, const char *detail, void *extra)
{
    if (op->r)
        seatd_req_finish_problem(op->r, err, detail, extra);
    else
        cJSON_Delete(extra);
    seatd__op_free(op);
}

int seatd__done(seatd_req_t *r, const seatd_store_result_t *res)
{
    if (seatd__step_end(&r))
        return 1;
    if (res->err) {
        seatd__reply_store_error(r, res);
        return 1;
    }
    return 0;
}

void seatd__step_begin_or_answer(seatd_req_t *r, int rc)
{
    if (seatd__step_begin(&r, rc) < 0)
        seatd_req_finish_problem(r, rc, NULL, NULL);
}

void seatd__answer_result(void *data, const seatd_store_result_t *res, int status,
                          seatd__render_fn render)
{
    seatd_req_t *r = data;
    if (seatd__done(r, res))
        return;
    seatd_req_finish_json(r, status, render ? render(res) : NULL);
}

const char *seatd__id_param(seatd_req_t *r, const char *name, char kind, char *show)
{
    const char *id = seatd_req_param(r, name);
    return id && seatd_keys_parse_id(id, kind, show) == 0 ? id : NULL;
}

void seatd__seatmap_changed_by_id(seatd_req_t *r, char kind, long long version)
{
    char show[SEATD_ID_MAX];
    if (seatd__id_param(r, "id", kind, show) != NULL)
        seatd_seatmap_invalidate(show, version);
}

int seatd__start_on_id(seatd_req_t *r, const char *name, char kind, const char *owner,
                       seatd__id_op_fn call, seatd_store_cb cb)
{
    const char *id = seatd__id_param(r, name, kind, NULL);
    if (id == NULL)
        return SEATD_ENOTFOUND;
    return seatd__step_begin(&r, call(seatd__app(r)->store, id, owner, cb, r));
}

/* ---------------------------------------------------------------------------------------
 * Layouts
 * --------------------------------------------------------------------------------------- */

/* A request waiting for its show's layout (flows/layout_fetch.h). */
typedef struct layout_waiter_s {
    seatd_req_t *r;
    seatd__layout_cont cont;
    void (*fail)(void *ctx);
    void *ctx;
} layout_waiter_t;

static void on_layout_fetched(const seatd_store_result_t *res, const seatd_layout_t *l, int why,
                              void *data)
{
    layout_waiter_t *w = data;
    if (seatd__step_end(&w->r)) {
        if (w->fail)
            w->fail(w->ctx);
    } else if (res->err) {
        seatd__reply_store_error(w->r, res);
        if (w->fail)
            w->fail(w->ctx);
    } else if (l == NULL) {
        seatd_req_finish_problem(w->r, why,
                                 why == SEATD_EOVERLOAD ? "too many shows read at once, retry"
                                                        : "the stored layout is unreadable",
                                 NULL);
        if (w->fail)
            w->fail(w->ctx);
    } else {
        w->cont(w->r, l, w->ctx);
    }
    free(w);
}

int seatd__with_layout(seatd_req_t *r, const char *show_id, seatd__layout_cont cont,
                       void (*fail)(void *ctx), void *ctx)
{
    if (!seatd_keys_valid_show_id(show_id))
        return SEATD_ENOSHOW;
    const seatd_layout_t *l = seatd_layout_cache_get(show_id);
    if (l) {
        cont(r, l, ctx);
        return 0;
    }
    layout_waiter_t *w = seatd_calloc(1, sizeof(*w));
    *w = (layout_waiter_t){.r = r, .cont = cont, .fail = fail, .ctx = ctx};
    int rc = seatd_layout_fetch(seatd__app(r)->store, show_id, on_layout_fetched, w);
    if (rc < 0) {
        free(w);
        return rc;
    }
    return seatd__step_begin(&w->r, 0);
}

/* ---------------------------------------------------------------------------------------
 * JSON bits
 * --------------------------------------------------------------------------------------- */

void seatd__json_add_time(void *obj, const char *name, int64_t ms)
{
    char ts[SEATD_TIME_STR_MAX];
    seatd_time_format(ms, ts);
    cJSON_AddStringToObject(obj, name, ts);
}

void seatd__json_add_csv_array(void *obj, const char *name, const char *csv)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, name);
    if (csv == NULL || csv[0] == '\0')
        return;
    const char *p = csv;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = seatd_strndup(p, len);
        cJSON_AddItemToArray(arr, cJSON_CreateString(item));
        free(item);
        p += len;
        if (*p == ',')
            p++;
    }
}

const char *seatd__hold_request(seatd_req_t *r, const char *mode, const char *areas, char *out,
                                size_t cap)
{
    const seatd_principal_t *p = seatd_req_principal(r);
    const char *channels = p ? p->channels : "";
    if (!areas[0] && !channels[0])
        return mode;
    snprintf(out, cap, "%s;%s%s%s", mode, areas, channels[0] ? ";" : "", channels);
    return out;
}

void *seatd__json_hold(const seatd_hold_result_t *h, const char *status_if_empty)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "holdId", h->hold_id);
    cJSON_AddStringToObject(o, "showId", h->show_id);
    seatd__json_add_csv_array(o, "seatIds", h->seat_ids);
    cJSON_AddStringToObject(o, "status",
                            h->status[0] || status_if_empty == NULL ? h->status : status_if_empty);
    seatd__json_add_time(o, "expiresAt", h->expires_at_ms);
    if (h->created_at_ms)
        seatd__json_add_time(o, "createdAt", h->created_at_ms);
    if (h->booking_id[0])
        cJSON_AddStringToObject(o, "bookingId", h->booking_id);
    cJSON *areas = seatd_areas_places_json(h->areas);
    if (areas)
        cJSON_AddItemToObject(o, "areas", areas);
    return o;
}

int seatd__idempotency_key_check(seatd_json_check_t *v, seatd_req_t *r, const char *body_key,
                                 const char **out)
{
    *out = NULL;
    const char *hdr = seatd_req_header(r, "idempotency-key");
    /* The IETF draft sends the key as a quoted string; accept it bare as well. */
    static __thread char unquoted[160];
    if (hdr && hdr[0] == '"') {
        size_t len = strlen(hdr);
        if (len >= 2 && hdr[len - 1] == '"' && len - 2 < sizeof(unquoted)) {
            memcpy(unquoted, hdr + 1, len - 2);
            unquoted[len - 2] = '\0';
            hdr = unquoted;
        }
    }
    static const char grammar[] = "must be 1-128 characters of [A-Za-z0-9_.-]";
    static const char grammar_detail[] = "idempotency keys are 1-128 characters of [A-Za-z0-9_.-]";
    if (hdr && !seatd_keys_valid_idem_key(hdr))
        return seatd_json_check_fail(v, SEATD_EINVAL, "Idempotency-Key", grammar, grammar_detail);
    if (body_key && !seatd_keys_valid_idem_key(body_key))
        return seatd_json_check_fail(v, SEATD_EINVAL, "idempotencyKey", grammar, grammar_detail);
    if (hdr && body_key && strcmp(hdr, body_key) != 0)
        return seatd_json_check_fail(v, SEATD_EINVAL, "idempotencyKey",
                                     "differs from the Idempotency-Key header",
                                     "Idempotency-Key header and idempotencyKey field differ");
    *out = hdr ? hdr : body_key;
    return 0;
}
