/* refusal.c - a seatd Function's error and a hold's refusal decoded: the detail and its words,
 * the refused seats' bitmaps, and the alternatives proposed from them (store_internal.h). */
#include "store/store_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "clients/rds.h"
#include "domain/best.h"
#include "domain/layout.h"
#include "domain/seats.h"
#include "store/hold_batch.h"

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
void store__decode_error(decoded_t *d, const char *s, size_t len)
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
 * with the rest kept for store__propose_alternatives(). */
void store__decode_refusal(decoded_t *d)
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
    store__decode_error(d, res->values[0], res->lens[0]);
    res->nfields = 0; /* a failure carries no fields */
}

/* A refusal within seatd_hold_batch's answer (lua/hold.lua refuse()), one text:
 * "refused <orphanRule 0|1>\n<WORD> <seat…>\n<asked>" -> as store__decode_refusal(), the bitmaps
 * from the batch. Returns 0, or SEATD_EPROTO when 's' is not one. */
int store__decode_refusal_text(decoded_t *d, const char *s, size_t len)
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
    store__decode_error(d, line, (size_t)(nl - line));
    d->res.nfields = 0;
    return 0;
}

/*
 * A refused named hold of show 'show_id' (store__decode_refusal): the alternatives to the seats it
 * asked, blocks free in the bitmaps the script read when it refused (best.c, on this worker's
 * cached layout of the show, which the hold was made with), appended to the error's detail
 * and words as "alt=<id>,<id>…", the words the script itself used to write.
 */
void store__propose_alternatives(decoded_t *d, const char *show_id)
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
