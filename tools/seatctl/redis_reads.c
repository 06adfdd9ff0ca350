/*
 * redis_reads.c - seatctl's read-only looks straight into Redis: who holds or booked a seat
 * (seat who) and the seat-invariant audit of a show (audit, tools/show_audit.h). Plain reads
 * and EVAL_RO probes, never a write.
 */
#include "seatctl.h"
#include "base/timefmt.h"
#include "domain/keys.h"
#include "redis_sync.h"
#include "show_audit.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_ATTEMPTS 5 /* reruns while the show changed under a failing audit */

/* ---------------------------------------------------------------------------------------
 * Redis, read-only
 * --------------------------------------------------------------------------------------- */

/* Connects and authenticates; NULL after printing why. The client follows a Redis Cluster's
 * redirections from the node given (tools/redis_sync.h): every key of a show shares its slot. */
static seatd_redis_t *redis_open(const seatctl_opts_t *o)
{
    char addr[1024];
    const char *explicit = seatctl_redis_addr(o, addr, sizeof addr);
    char host[1024];
    int port = 0;
    if (strncmp(addr, "unix:", 5) == 0 || addr[0] == '/') {
        snprintf(host, sizeof host, "%s", addr[0] == '/' ? addr : addr + 5);
    } else {
        const char *colon = strrchr(addr, ':');
        port = colon ? atoi(colon + 1) : 0;
        if (!colon || port <= 0 || port > 65535) {
            seatctl_fail(o, "--redis takes host:port or a unix socket path, not '%s'", addr);
            return NULL;
        }
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    }
    /* The password: --redis-pass, $REDISCLI_AUTH, else the stack's admin password (deploy/up's
     * default user) when Redis is the stack's or its runtime folder was named. */
    const char *pass = o->redis_pass ? o->redis_pass : getenv("REDISCLI_AUTH");
    char file_pass[SECRET_FILE_MAX], why[512];
    if ((!pass || !pass[0]) && (!explicit || seatctl_stack.run_given) &&
        seatctl_is_dir(seatctl_stack.run) &&
        seatctl_stack_secret("redis-admin.pass", file_pass, sizeof file_pass, why, sizeof why) == 0)
        pass = file_pass;
    char target[1100];
    snprintf(target, sizeof target, "redis %s", addr);
    seatctl_announce(target, explicit);
    seatd_redis_opts_t ro = {.host = host,
                             .port = port,
                             .user = pass && pass[0] ? o->redis_user : NULL,
                             .password = pass && pass[0] ? pass : NULL,
                             .timeout_ms = 60000};
    char err[512];
    seatd_redis_t *c = seatd_redis_connect(&ro, err, sizeof err);
    memset(file_pass, 0, sizeof file_pass);
    if (!c)
        seatctl_fail(o, "redis %s: %s", addr, err);
    return c;
}

/* The seat's index in the show's layout: >= 0, -1 when the show or seat is unknown (printed),
 * -2 on a Redis failure (printed). */
static int seat_index(const seatctl_opts_t *o, seatd_redis_t *c, const char *show, const char *seat)
{
    redisReply *lh = seatd_redis_command(c, "HGET {s:%s}:meta layoutHash", show);
    if (!lh || lh->type == REDIS_REPLY_ERROR) {
        seatctl_fail(o, "redis: %s", lh ? lh->str : seatd_redis_errstr(c));
        if (lh)
            freeReplyObject(lh);
        return -2;
    }
    if (lh->type != REDIS_REPLY_STRING) {
        freeReplyObject(lh);
        seatctl_fail(o, "show %s not found", show);
        return -1;
    }
    redisReply *lay = seatd_redis_command(c, "GET seatd:layout:%s", lh->str);
    freeReplyObject(lh);
    if (!lay || lay->type != REDIS_REPLY_STRING) {
        seatctl_fail(o, "show %s: its layout is missing", show);
        if (lay)
            freeReplyObject(lay);
        return -2;
    }
    cJSON *doc = cJSON_ParseWithLength(lay->str, lay->len);
    freeReplyObject(lay);
    int i = 0, found = -1;
    const cJSON *s = NULL;
    cJSON_ArrayForEach(s, doc)
    {
        if (strcmp(seatctl_jstr(s, "id"), seat) == 0) {
            found = i;
            break;
        }
        i++;
    }
    cJSON_Delete(doc);
    if (found < 0)
        seatctl_fail(o, "seat %s is not in show %s", seat, show);
    return found;
}

/* The seat key, its TTL, both bits, Redis's clock and the hold record, in one read-only step:
 * {holdId or "", pttl, heldBit, bookedBit, nowMs[, owner, status, expiresAt, bookingId]}. */
static const char seat_who_lua[] =
    "local v = redis.call('GET', KEYS[1]) "
    "local t = redis.call('TIME') "
    "local out = {v or '', redis.call('PTTL', KEYS[1]), "
    "  redis.call('GETBIT', KEYS[2], tonumber(ARGV[1])), "
    "  redis.call('GETBIT', KEYS[3], tonumber(ARGV[1])), "
    "  tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))} "
    "if v then "
    "  local h = redis.call('HMGET', ARGV[2] .. v, 'owner', 'status', 'expiresAt', 'bookingId') "
    "  for i = 1, 4 do out[#out + 1] = h[i] or '' end "
    "end "
    "return out";

/* The CONFIRMED booking listing 'seat' (a SCAN of the show's bookings): 0 found, -1 none. */
static int find_booking(seatd_redis_t *c, const char *show, const char *seat, char *id, size_t idn,
                        char *owner, size_t ownern)
{
    char cursor[32] = "0";
    int found = -1;
    do {
        redisReply *r =
            seatd_redis_command(c, "SCAN %s MATCH {s:%s}:booking:* COUNT 1000", cursor, show);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r)
                freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements && found < 0; i++) {
            const char *key = r->element[1]->element[i]->str;
            redisReply *h = seatd_redis_command(c, "HMGET %s status seatIds owner", key);
            if (h && h->type == REDIS_REPLY_ARRAY && h->elements == 3 &&
                h->element[0]->type == REDIS_REPLY_STRING &&
                strcmp(h->element[0]->str, "CONFIRMED") == 0 &&
                h->element[1]->type == REDIS_REPLY_STRING) {
                size_t n = strlen(seat);
                for (const char *p = h->element[1]->str; p && *p;) {
                    const char *q = strchr(p, ',');
                    size_t len = q ? (size_t)(q - p) : strlen(p);
                    if (len == n && memcmp(p, seat, n) == 0) {
                        snprintf(id, idn, "%s", strrchr(key, ':') + 1);
                        snprintf(owner, ownern, "%s",
                                 h->element[2]->type == REDIS_REPLY_STRING ? h->element[2]->str
                                                                           : "");
                        found = 0;
                        break;
                    }
                    p = q ? q + 1 : NULL;
                }
            }
            if (h)
                freeReplyObject(h);
        }
        freeReplyObject(r);
    } while (found < 0 && strcmp(cursor, "0") != 0);
    return found;
}

int seatctl_cmd_seat_who(seatctl_opts_t *o)
{
    const char *show = o->args[0], *seat = o->args[1];
    int rc = seatctl_check_show_id(show);
    if (rc)
        return rc;
    if (!seatd_keys_valid_seat_id(seat))
        return seatctl_usage_error("'%s' is not a seat id ([A-Za-z0-9_-]{1,16})", seat);
    seatd_redis_t *c = redis_open(o);
    if (!c)
        return EXIT_FAIL;
    int idx = seat_index(o, c, show, seat);
    if (idx < 0) {
        seatd_redis_free(c);
        return EXIT_FAIL;
    }
    char seat_key[SEATD_KEY_MAX], held[SEATD_KEY_MAX], booked[SEATD_KEY_MAX];
    char hold_prefix[SEATD_KEY_MAX], bit[16];
    snprintf(seat_key, sizeof seat_key, "{s:%s}:seat:%s", show, seat);
    snprintf(held, sizeof held, "{s:%s}:held", show);
    snprintf(booked, sizeof booked, "{s:%s}:booked", show);
    snprintf(hold_prefix, sizeof hold_prefix, "{s:%s}:hold:", show);
    snprintf(bit, sizeof bit, "%d", idx);
    const char *argv[] = {"EVAL_RO", seat_who_lua, "3", seat_key, held, booked, bit, hold_prefix};
    redisReply *r = seatd_redis_commandv(c, 8, argv, NULL);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 5) {
        rc = seatctl_fail(o, "redis: %s",
                          r && r->type == REDIS_REPLY_ERROR ? r->str : seatd_redis_errstr(c));
        if (r)
            freeReplyObject(r);
        seatd_redis_free(c);
        return rc;
    }
    const char *hold = r->element[0]->str;
    long long held_bit = r->element[2]->integer, booked_bit = r->element[3]->integer;
    int64_t now = strtoll(r->element[4]->str, NULL, 10);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "showId", show);
    cJSON_AddStringToObject(j, "seat", seat);
    cJSON_AddNumberToObject(j, "index", idx);
    char ts[SEATD_TIME_STR_MAX], line[512];
    if (hold[0] && r->elements == 9) {
        const char *owner = r->element[5]->str, *status = r->element[6]->str;
        int64_t exp = strtoll(r->element[7]->str, NULL, 10), left = exp - now;
        const char *booking = r->element[8]->str;
        seatd_time_format(exp, ts);
        cJSON_AddStringToObject(j, "status", "held");
        cJSON_AddStringToObject(j, "holder", owner);
        cJSON_AddStringToObject(j, "holdId", hold);
        cJSON_AddStringToObject(j, "holdStatus", status);
        cJSON_AddStringToObject(j, "expiresAt", ts);
        cJSON_AddNumberToObject(j, "msLeft", (double)(left > 0 ? left : 0));
        cJSON_AddNumberToObject(j, "keyPttlMs", (double)r->element[1]->integer);
        if (booking[0])
            cJSON_AddStringToObject(j, "bookingId", booking);
        cJSON_AddBoolToObject(j, "heldBit", held_bit == 1);
        char left_s[48];
        seatctl_format_left(left > 0 ? left : 0, left_s, sizeof left_s);
        snprintf(line, sizeof line,
                 "show %s seat %s: HELD by %s, hold %s (%s%s%s), %s left, until %s", show, seat,
                 owner[0] ? owner : "?", hold, status[0] ? status : "no record",
                 booking[0] ? ", booking " : "", booking, left_s, ts);
    } else if (booked_bit) {
        char bid[SEATD_ID_MAX] = "", owner[80] = "";
        int found = find_booking(c, show, seat, bid, sizeof bid, owner, sizeof owner);
        cJSON_AddStringToObject(j, "status", "booked");
        if (found == 0) {
            cJSON_AddStringToObject(j, "bookingId", bid);
            cJSON_AddStringToObject(j, "owner", owner);
            snprintf(line, sizeof line, "show %s seat %s: BOOKED by %s, booking %s", show, seat,
                     owner, bid);
        } else {
            snprintf(line, sizeof line,
                     "show %s seat %s: BOOKED, but no CONFIRMED booking lists it (seatctl audit "
                     "%s)",
                     show, seat, show);
        }
    } else {
        cJSON_AddStringToObject(j, "status", "available");
        if (held_bit)
            cJSON_AddBoolToObject(j, "heldBit", 1); /* an ended hold not reaped yet */
        snprintf(line, sizeof line, "show %s seat %s: AVAILABLE%s", show, seat,
                 held_bit ? " (its hold ended; the held bit awaits the sweeper)" : "");
    }
    freeReplyObject(r);
    seatd_redis_free(c);
    if (o->json)
        seatctl_print_json(j);
    else {
        printf("%s\n", line);
        cJSON_Delete(j);
    }
    return EXIT_OK;
}

/* Collects the violations (the first 1,000) for the answer. */
static void on_violation(const char *check, const char *text, void *data)
{
    cJSON *list = data;
    if (cJSON_GetArraySize(list) >= 1000)
        return;
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "check", check);
    cJSON_AddStringToObject(v, "text", text);
    cJSON_AddItemToArray(list, v);
}

int seatctl_cmd_audit(seatctl_opts_t *o)
{
    const char *show = o->args[0];
    int rc = seatctl_check_show_id(show);
    if (rc)
        return rc;
    seatd_redis_t *c = redis_open(o);
    if (!c)
        return EXIT_FAIL;
    seatd_audit_report_t rep;
    struct {
        cJSON *list;
    } out = {NULL};
    char err[512];
    int attempt = 0;
    /* A failing audit of a show that changed while it was read is run again: the whole-show
     * comparisons may have seen a transient difference (show_audit.h). */
    for (;;) {
        cJSON_Delete(out.list);
        out.list = cJSON_CreateArray();
        seatd_audit_opts_t ao = {
            .wins = -1, .bookings = -1, .on_violation = on_violation, .data = out.list};
        rc = seatd_audit_show_sync(c, show, &ao, &rep, err, sizeof err);
        attempt++;
        if (rc < 0 || rep.violations == 0 || rep.stable || attempt == AUDIT_ATTEMPTS)
            break;
    }
    seatd_redis_free(c);
    if (rc < 0) {
        cJSON_Delete(out.list);
        return seatctl_fail(o, "%s", err);
    }
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "showId", show);
        cJSON_AddBoolToObject(j, "ok", rep.violations == 0);
        cJSON_AddNumberToObject(j, "violationCount", (double)rep.violations);
        cJSON_AddItemToObject(j, "violations", out.list);
        cJSON_AddNumberToObject(j, "seats", rep.nseats);
        cJSON_AddNumberToObject(j, "heldSeats", (double)rep.held_seats);
        cJSON_AddNumberToObject(j, "bookedSeats", (double)rep.booked_seats);
        cJSON_AddNumberToObject(j, "seatKeys", (double)rep.seat_keys);
        cJSON_AddNumberToObject(j, "holds", (double)rep.holds);
        cJSON_AddNumberToObject(j, "liveHolds", (double)rep.live_holds);
        cJSON_AddNumberToObject(j, "confirmedBookings", (double)rep.confirmed);
        cJSON_AddNumberToObject(j, "pendingBookings", (double)rep.pending);
        cJSON_AddNumberToObject(j, "areas", (double)rep.areas);
        cJSON_AddNumberToObject(j, "areaPlaces", (double)rep.area_places);
        cJSON_AddNumberToObject(j, "version", (double)rep.version);
        cJSON_AddBoolToObject(j, "stable", rep.stable);
        cJSON_AddNumberToObject(j, "attempts", attempt);
        seatctl_print_json(j);
    } else {
        const cJSON *v = NULL;
        cJSON_ArrayForEach(v, out.list)
        {
            printf("VIOLATION [%s] %s\n", seatctl_jstr(v, "check"), seatctl_jstr(v, "text"));
        }
        cJSON_Delete(out.list);
        printf("audit show %s: %s: %d seats, %ld held, %ld booked, %ld live holds, %ld "
               "bookings confirmed, %ld pending, %ld places taken in %ld areas, version %lld%s; "
               "%ld violations\n",
               show, rep.violations ? "FAILED" : "consistent", rep.nseats, rep.held_seats,
               rep.booked_seats, rep.live_holds, rep.confirmed, rep.pending, rep.area_places,
               rep.areas, rep.version, rep.stable ? "" : " (the show changed while it was read)",
               rep.violations);
    }
    return rep.violations ? EXIT_FAIL : EXIT_OK;
}
