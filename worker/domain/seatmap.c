/* seatmap.c - the per-worker seat-status cache and its renderings; see seatmap.h. */
#include "domain/seatmap.h"

#include <cjson/cJSON.h>

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "base/buf.h"
#include "domain/areas.h"
#include "domain/layout.h"
#include "base/mem.h"

static seatd_seatmap_t slots[SEATD_SEATMAP_SLOTS];

int64_t seatd_seatmap_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static seatd_seatmap_t *find(const char *show_id)
{
    for (int i = 0; i < SEATD_SEATMAP_SLOTS; i++)
        if (slots[i].show_id[0] && strcmp(slots[i].show_id, show_id) == 0)
            return &slots[i];
    return NULL;
}

static void entry_clear(seatd_seatmap_t *e)
{
    free(e->held);
    free(e->booked);
    free(e->areas);
    free(e->blocked);
    free(e->availability);
    free(e->status);
    free(e->status_gz);
    memset(e, 0, sizeof(*e));
}

seatd_seatmap_t *seatd_seatmap_get(const char *show_id, long long min_version)
{
    seatd_seatmap_t *e = find(show_id);
    if (e == NULL || e->version < min_version || e->version < e->floor ||
        seatd_seatmap_now_ms() - e->read_at_ms >= SEATD_SEATMAP_FRESH_MS)
        return NULL;
    return e;
}

static unsigned char *copy_bytes(const void *p, size_t len)
{
    unsigned char *c = seatd_malloc(len + 1);
    if (len)
        memcpy(c, p, len);
    return c;
}

/* The slot of 'show_id': its own, else a free one, else the one read longest ago (cleared,
 * with no read kept). */
static seatd_seatmap_t *slot_for(const char *show_id)
{
    seatd_seatmap_t *e = find(show_id);
    if (e)
        return e;
    e = &slots[0];
    for (int i = 1; i < SEATD_SEATMAP_SLOTS && e->show_id[0]; i++)
        if (!slots[i].show_id[0] || slots[i].read_at_ms < e->read_at_ms)
            e = &slots[i];
    entry_clear(e);
    snprintf(e->show_id, sizeof(e->show_id), "%s", show_id);
    e->version = -1;
    e->read_at_ms = INT64_MIN / 2;
    return e;
}

seatd_seatmap_t *seatd_seatmap_put(const char *show_id, long long version, size_t seat_count,
                                   const void *held, size_t held_len, const void *booked,
                                   size_t booked_len, int64_t issued_at_ms, int64_t read_at_ms)
{
    seatd_seatmap_t *e = slot_for(show_id);
    /* Older than what is known although sent after it was known: Redis lost those versions
     * (the floor of a change this worker made may be among them). */
    int lost = (version < e->version && issued_at_ms > e->answered_at_ms) ||
               (version < e->floor && issued_at_ms > e->floor_at_ms);
    if (e->version > version && !lost)
        return e; /* a newer read landed while this one was on its way: keep it */
    long long floor = lost ? version : e->floor;
    long long lost_from = !lost ? -1 : e->version > e->floor ? e->version : e->floor;
    int64_t floor_at = e->floor_at_ms;
    entry_clear(e);
    snprintf(e->show_id, sizeof(e->show_id), "%s", show_id);
    e->floor = floor;
    e->floor_at_ms = floor_at;
    e->version = version;
    e->seat_count = seat_count;
    e->held = copy_bytes(held, held ? held_len : 0);
    e->held_len = held ? held_len : 0;
    e->booked = copy_bytes(booked, booked ? booked_len : 0);
    e->booked_len = booked ? booked_len : 0;
    /* A read that started before a change this worker made and answered since (the floor)
     * still answers its own request, but is never served from here. */
    e->read_at_ms = version >= floor ? read_at_ms : INT64_MIN / 2;
    e->answered_at_ms = read_at_ms;
    e->lost_from = lost_from;
    return e;
}

void seatd_seatmap_set_extras(seatd_seatmap_t *m, const char *areas, const void *blocked,
                              size_t blocked_len)
{
    free(m->areas);
    free(m->blocked);
    m->areas = areas && *areas ? seatd_strdup(areas) : NULL;
    m->blocked = blocked && blocked_len ? copy_bytes(blocked, blocked_len) : NULL;
    m->blocked_len = m->blocked ? blocked_len : 0;
}

/* Appends ,"areas":{…} for a map with standing areas. */
static void put_areas(seatd_buf_t *b, const seatd_seatmap_t *m)
{
    cJSON *o = seatd_areas_free_json(m->areas);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    if (text)
        seatd_buf_printf(b, ",\"areas\":%s", text);
    free(text);
    cJSON_Delete(o);
}

void seatd_seatmap_invalidate(const char *show_id, long long version)
{
    seatd_seatmap_t *e = slot_for(show_id);
    if (version > e->floor) {
        e->floor = version;
        e->floor_at_ms = seatd_seatmap_now_ms();
    }
    e->read_at_ms = INT64_MIN / 2; /* stale; its slot is reused first */
}

void seatd_seatmap_clear(void)
{
    for (int i = 0; i < SEATD_SEATMAP_SLOTS; i++)
        entry_clear(&slots[i]);
}

static int bit(const unsigned char *map, size_t len, size_t i)
{
    return i / 8 < len && (map[i / 8] >> (7 - i % 8)) & 1;
}

int seatd_seatmap_seat_state(const seatd_seatmap_t *m, size_t i)
{
    if (bit(m->booked, m->booked_len, i))
        return 2;
    return bit(m->held, m->held_len, i);
}

/* Appends the standard base64 of 'len' bytes (OpenSSL's encoder, no line breaks). */
static void put_base64(seatd_buf_t *b, const unsigned char *p, size_t len)
{
    size_t out = 4 * ((len + 2) / 3);
    seatd_buf_reserve(b, out + 1);
    EVP_EncodeBlock((unsigned char *)b->data + b->len, p, (int)len);
    b->len += out;
    b->data[b->len] = '\0';
}

const char *seatd_seatmap_availability(seatd_seatmap_t *m, size_t *len)
{
    if (m->availability == NULL) {
        seatd_buf_t b = SEATD_BUF_INIT;
        seatd_buf_reserve(&b, 96 + 4 * (m->held_len + m->booked_len + 4) / 3);
        seatd_buf_printf(&b, "{\"showId\":\"%s\",\"version\":%lld,\"seatCount\":%zu,\"held\":\"",
                         m->show_id, m->version, m->seat_count);
        put_base64(&b, m->held, m->held_len);
        seatd_buf_puts(&b, "\",\"booked\":\"");
        put_base64(&b, m->booked, m->booked_len);
        seatd_buf_puts(&b, "\"");
        if (m->blocked) {
            seatd_buf_puts(&b, ",\"blocked\":\"");
            put_base64(&b, m->blocked, m->blocked_len);
            seatd_buf_puts(&b, "\"");
        }
        put_areas(&b, m);
        seatd_buf_puts(&b, "}");
        m->availability = seatd_buf_steal(&b, &m->availability_len);
    }
    *len = m->availability_len;
    return m->availability;
}

const char *seatd_seatmap_status(seatd_seatmap_t *m, const seatd_layout_t *l, size_t *len)
{
    static const char *const names[] = {"available", "held", "booked", "unavailable"};
    if (m->status == NULL) {
        seatd_buf_t b = SEATD_BUF_INIT;
        size_t n = seatd_layout_count(l);
        seatd_buf_reserve(&b, 64 + n * 24);
        seatd_buf_printf(&b, "{\"showId\":\"%s\",\"version\":%lld,\"seats\":{", m->show_id,
                         m->version);
        for (size_t i = 0; i < n; i++) /* seat ids match ^[A-Za-z0-9_-]+$: nothing to escape */
            seatd_buf_printf(
                &b, "%s\"%s\":\"%s\"", i ? "," : "", seatd_layout_seat(l, i)->id,
                names[seatd_seatmap_seat_state(m, i) == 0 && bit(m->blocked, m->blocked_len, i)
                          ? 3
                          : seatd_seatmap_seat_state(m, i)]);
        seatd_buf_puts(&b, "}");
        put_areas(&b, m);
        seatd_buf_puts(&b, "}");
        m->status = seatd_buf_steal(&b, &m->status_len);
    }
    *len = m->status_len;
    return m->status;
}

const char *seatd_seatmap_status_gzip(seatd_seatmap_t *m, const seatd_layout_t *l, size_t *len)
{
    if (m->status_gz == NULL) {
        size_t in_len;
        const char *in = seatd_seatmap_status(m, l, &in_len);
        z_stream z;
        memset(&z, 0, sizeof(z));
        /* windowBits 15 + 16: a gzip header and trailer, as Content-Encoding: gzip wants */
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK)
            return NULL;
        size_t cap = deflateBound(&z, (uLong)in_len) + 32; /* + the gzip wrapper */
        unsigned char *out = seatd_malloc(cap);
        z.next_in = (Bytef *)(uintptr_t)in;
        z.avail_in = (uInt)in_len;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        int rc = deflate(&z, Z_FINISH);
        size_t out_len = cap - z.avail_out;
        deflateEnd(&z);
        if (rc != Z_STREAM_END) {
            free(out);
            return NULL;
        }
        m->status_gz = (char *)out;
        m->status_gz_len = out_len;
    }
    *len = m->status_gz_len;
    return m->status_gz;
}
