/* show_audit_records.c - the audit's per-key probes: each booking, hold, buyer and seat key of
 * a show read in one atomic EVAL_RO step and checked against the others (show_audit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "show_audit_internal.h"

/* A booking and its membership of {s}:pending and {s}:failed, atomically: {pending score or "",
 * failed score or "", field, value, …}. */
static const char booking_probe_lua[] =
    "local z = redis.call('ZSCORE', KEYS[2], ARGV[1]) "
    "local f = redis.call('ZSCORE', KEYS[3], ARGV[1]) "
    "local out = {z or '', f or ''} "
    "for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end "
    "return out";

/* A group payment's status and each of its show bookings' (KEYS[2…]), atomically: a payment
 * confirmed or failed between two reads would otherwise look split. */
static const char payment_probe_lua[] =
    "local out = {redis.call('HGET', KEYS[1], 'status') or ''} "
    "for i = 2, #KEYS do out[i] = redis.call('HGET', KEYS[i], 'status') or '(none)' end "
    "return out";

/* Group payment 'id' (record 'key', with 'members' "42:42-b…,43:43-b…", issue 30): each of its
 * show bookings is in the payment's state (CONFIRMED: or CANCELLED since), never one show paid
 * and another not. The members share the payment's slot, so one probe reads them all. */
static void check_payment(audit_t *a, const char *key, const char *id, const char *members)
{
    char *copy = strdup(members), *save = NULL;
    char keys[PROBE_ARGS_MAX][160], *show[PROBE_ARGS_MAX], *booking[PROBE_ARGS_MAX];
    const char *args[PROBE_ARGS_MAX];
    int n = 1;
    if (!copy)
        abort();
    a->rep->payments++;
    args[0] = key;
    for (char *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(m, ':');
        if (colon == NULL || n == PROBE_ARGS_MAX) {
            audit__violation(a, "payments", "group payment %s names a booking badly: %s", id, m);
            continue;
        }
        *colon = '\0';
        show[n] = m;
        booking[n] = colon + 1;
        snprintf(keys[n], sizeof keys[n], "{s:%s}:booking:%s", m, colon + 1);
        args[n] = keys[n];
        n++;
    }
    redisReply *st = audit__probe(a, payment_probe_lua, n, n, args);
    if (st && st->type == REDIS_REPLY_ARRAY && st->elements == (size_t)n &&
        st->element[0]->str[0]) { /* else gone meanwhile */
        const char *status = st->element[0]->str;
        for (int i = 1; i < n; i++) {
            const char *have = st->element[i]->str;
            int same = strcmp(have, status) == 0 ||
                       (strcmp(status, "CONFIRMED") == 0 && strcmp(have, "CANCELLED") == 0);
            if (!same)
                audit__violation(a, "payments",
                                 "group payment %s is %s but its booking %s of show %s is %s", id,
                                 status, booking[i], show[i], have);
        }
    }
    if (st)
        freeReplyObject(st);
    free(copy);
}

void audit__on_booking(audit_t *a, const char *key)
{
    const char *id = strrchr(key, ':') + 1;
    char pending[96], failed[96];
    snprintf(pending, sizeof pending, "%s:pending", a->prefix);
    snprintf(failed, sizeof failed, "%s:failed", a->prefix);
    const char *args[] = {key, pending, failed, id};
    redisReply *h = audit__probe(a, booking_probe_lua, 3, 4, args);
    if (!h)
        return;
    if (h->type != REDIS_REPLY_ARRAY || h->elements < 4) { /* gone meanwhile */
        freeReplyObject(h);
        return;
    }
    const char *in_pending = h->element[0]->str, *in_failed = h->element[1]->str;
    const char *status = audit__hfield(h, 2, "status"), *seats = audit__hfield(h, 2, "seatIds");
    const char *owner = audit__hfield(h, 2, "owner");
    int is_pending = status && strcmp(status, "PENDING_PAYMENT") == 0;
    if (is_pending)
        a->rep->pending++;
    if (is_pending && !in_pending[0])
        audit__violation(a, "pending", "booking %s is PENDING_PAYMENT but not in %s:pending", id,
                         a->prefix);
    if (!is_pending && in_pending[0])
        audit__violation(a, "pending", "booking %s is %s but still in %s:pending", id,
                         status ? status : "(no status)", a->prefix);
    if (in_failed[0] && (!status || strcmp(status, "FAILED") != 0))
        audit__violation(a, "failed", "booking %s is %s but watched in %s:failed", id,
                         status ? status : "(no status)", a->prefix);
    else if (in_failed[0] && audit__hfield(h, 2, "refund"))
        audit__violation(a, "failed",
                         "booking %s has its refund recorded but is still in %s:failed", id,
                         a->prefix);
    const char *members = audit__hfield(h, 2, "members");
    if (members && members[0]) { /* a group payment: no seats of its own */
        check_payment(a, key, id, members);
        freeReplyObject(h);
        return;
    }
    if (status && strcmp(status, "CONFIRMED") == 0) {
        a->rep->confirmed++;
        audit__check_bits(a, key, seats, audit__hfield(h, 2, "bits"), NULL);
        long n = 0;
        char *copy = strdup(seats ? seats : ""), *save = NULL;
        if (!copy)
            abort();
        for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            int i = audit__seat_index(a, s);
            n++;
            if (i < 0)
                audit__violation(a, "booked_bits", "booking %s lists unknown seat %s", id, s);
            else if (++a->booked_by[i] == 2)
                audit__violation(a, "double_booking",
                                 "seat %s is in two CONFIRMED bookings (second: %s)", s, id);
        }
        free(copy);
        n += audit__count_places(a, audit__hfield(h, 2, "areas"), 1, key);
        if (owner)
            audit__owner_add(a, owner, n);
    }
    freeReplyObject(h);
}

/* A hold record, its score in {s}:expiry and its field in its owner's hash, atomically:
 * {status, owner, seats, expiresAt, score or "", user field or "", areas or ""}. */
static const char hold_probe_lua[] =
    "local h = redis.call('HMGET', KEYS[1], 'status', 'owner', 'seats', 'expiresAt', 'areas') "
    "local z = redis.call('ZSCORE', KEYS[2], ARGV[1]) "
    "local u = false "
    "if h[2] then u = redis.call('HGET', ARGV[2] .. h[2], ARGV[1]) end "
    "return {h[1] or '', h[2] or '', h[3] or '', h[4] or '', z or '', u or '', h[5] or ''}";

void audit__on_hold(audit_t *a, const char *key)
{
    const char *id = strrchr(key, ':') + 1;
    char expiry[96], user_prefix[96];
    snprintf(expiry, sizeof expiry, "%s:expiry", a->prefix);
    snprintf(user_prefix, sizeof user_prefix, "%s:user:", a->prefix);
    const char *args[] = {key, expiry, id, user_prefix};
    redisReply *r = audit__probe(a, hold_probe_lua, 2, 4, args);
    if (!r)
        return;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7 || !r->element[0]->str[0]) {
        freeReplyObject(r); /* gone meanwhile (records end an hour after their hold) */
        return;
    }
    const char *status = r->element[0]->str, *owner = r->element[1]->str;
    const char *seats = r->element[2]->str, *expires = r->element[3]->str;
    const char *score = r->element[4]->str, *user = r->element[5]->str;
    const char *places = r->element[6]->str;
    a->rep->holds++;
    if (audit__live_status(status)) {
        /* Live by its status until reaped, due or not: as its held bits (audit__check_held_bit),
         * its places stay counted in {s}:areas until the reaper gives them back. */
        long n = audit__count_csv(seats) + audit__count_places(a, places, 0, key);
        a->rep->live_holds++;
        if (!score[0])
            audit__violation(a, "expiry", "hold %s is %s but not in %s:expiry", id, status,
                             a->prefix);
        else if (strtoll(score, NULL, 10) != strtoll(expires, NULL, 10))
            audit__violation(a, "expiry", "hold %s expires at %s but %s:expiry says %s", id,
                             expires, a->prefix, score);
        if (!user[0])
            audit__violation(a, "user_holds", "hold %s is %s but not in %s:user:%s", id, status,
                             a->prefix, owner);
        else if (atol(user) != n)
            audit__violation(a, "user_holds",
                             "hold %s has %ld seats and places but %s:user:%s counts %s", id, n,
                             a->prefix, owner, user);
    } else {
        if (score[0])
            audit__violation(a, "expiry", "hold %s is %s but still in %s:expiry", id, status,
                             a->prefix);
        if (user[0])
            audit__violation(a, "user_holds", "hold %s is %s but still in %s:user:%s", id, status,
                             a->prefix, owner);
    }
    freeReplyObject(r);
}

/* A member of a zset whose record is missing: 1 when fine (gone from the zset, or the record
 * exists), 0 when the zset names a record that does not exist. */
static const char member_probe_lua[] = "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then "
                                       "return 1 end "
                                       "return redis.call('EXISTS', KEYS[2])";

void audit__check_members(audit_t *a, const char *zset, const char *record, const char *check)
{
    redisReply *m = audit__cmd(a, "ZRANGE %s:%s 0 -1", a->prefix, zset);
    if (!m)
        return;
    char zkey[96];
    snprintf(zkey, sizeof zkey, "%s:%s", a->prefix, zset);
    for (size_t i = 0; m->type == REDIS_REPLY_ARRAY && i < m->elements && !a->failed; i++) {
        char rkey[192];
        snprintf(rkey, sizeof rkey, "%s:%s:%s", a->prefix, record, m->element[i]->str);
        const char *args[] = {zkey, rkey, m->element[i]->str};
        redisReply *r = audit__probe(a, member_probe_lua, 2, 3, args);
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            audit__violation(a, check, "%s names %s, which has no record", zkey,
                             m->element[i]->str);
        if (r)
            freeReplyObject(r);
    }
    freeReplyObject(m);
}

/* The live-hold fields of a user hash whose hold is not live, atomically. */
static const char user_probe_lua[] =
    "local bad = {} "
    "for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do "
    "  if f ~= 'booked' then "
    "    local s = redis.call('HGET', ARGV[1] .. f, 'status') "
    "    if s ~= 'HELD' and s ~= 'PENDING_PAYMENT' then bad[#bad + 1] = f end "
    "  end "
    "end "
    "return bad";

void audit__on_user(audit_t *a, const char *key)
{
    char hold_prefix[96];
    snprintf(hold_prefix, sizeof hold_prefix, "%s:hold:", a->prefix);
    const char *args[] = {key, hold_prefix};
    redisReply *r = audit__probe(a, user_probe_lua, 1, 2, args);
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        audit__violation(a, "user_holds", "%s counts hold %s, which is not live", key,
                         r->element[i]->str);
    if (r)
        freeReplyObject(r);
}

/* Reads a seat key, the hold it names and the seat's held bit in one atomic step, so a hold
 * that expires or is reaped while the audit runs cannot look like a violation. */
static const char seat_probe_lua[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if not v then return {} end "
    "local h = redis.call('HMGET', ARGV[1] .. v, 'status', 'seats', 'bits') "
    "return {v, h[1] or '', h[2] or '', redis.call('GETBIT', KEYS[2], tonumber(ARGV[2])), "
    "h[3] or ''}";

void audit__on_seat_key(audit_t *a, const char *key)
{
    const char *seat = strrchr(key, ':') + 1;
    int i = audit__seat_index(a, seat);
    if (i < 0) {
        audit__violation(a, "seat_keys", "seat key %s names a seat not in the layout", key);
        return;
    }
    char held_key[96], hold_prefix[96], idx[16];
    snprintf(held_key, sizeof held_key, "%s:held", a->prefix);
    snprintf(hold_prefix, sizeof hold_prefix, "%s:hold:", a->prefix);
    snprintf(idx, sizeof idx, "%d", i);
    const char *args[] = {key, held_key, hold_prefix, idx};
    redisReply *r = audit__probe(a, seat_probe_lua, 2, 4, args);
    if (!r)
        return;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) { /* expired meanwhile: fine */
        freeReplyObject(r);
        return;
    }
    a->rep->seat_keys++;
    const char *hold = r->element[0]->str, *status = r->element[1]->str;
    const char *seats = r->element[2]->str;
    if (a->o->settled)
        audit__violation(a, "settled", "seat key %s is still live after every deadline passed",
                         key);
    if (r->element[3]->integer != 1)
        audit__violation(a, "seat_keys", "seat %s has a live seat key but no held bit", seat);
    if (!status[0])
        audit__violation(a, "seat_keys", "seat key %s names hold %s which has no record", key,
                         hold);
    else if (!audit__live_status(status))
        audit__violation(a, "seat_keys", "seat key %s names a hold that is %s", key, status);
    else if (!audit__lists_seat(seats, seat))
        audit__violation(a, "seat_keys",
                         "seat key %s names a hold that does not list the seat (%s)", key, seats);
    else
        audit__check_bits(a, hold, seats, r->element[4]->str, seat);
    freeReplyObject(r);
}

/* A held bit without a seat key: fine while a due hold not yet reaped lists the seat. Returns
 * 1 when fine (or changed meanwhile), 0 otherwise. */
static const char held_probe_lua[] =
    "if redis.call('GETBIT', KEYS[2], tonumber(ARGV[1])) == 0 then return 1 end "
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end "
    "local t = redis.call('TIME') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
    "for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do "
    "  local s = redis.call('HGET', ARGV[2] .. id, 'seats') "
    "  if s and string.find(',' .. s .. ',', ',' .. ARGV[3] .. ',', 1, true) then return 1 end "
    "end "
    "return 0";

void audit__check_held_bit(audit_t *a, int i)
{
    const char *seat = a->seat_ids[i] ? a->seat_ids[i] : "?";
    char seat_key[128], held_key[96], expiry[96], hold_prefix[96], idx[16];
    snprintf(seat_key, sizeof seat_key, "%s:seat:%s", a->prefix, seat);
    snprintf(held_key, sizeof held_key, "%s:held", a->prefix);
    snprintf(expiry, sizeof expiry, "%s:expiry", a->prefix);
    snprintf(hold_prefix, sizeof hold_prefix, "%s:hold:", a->prefix);
    snprintf(idx, sizeof idx, "%d", i);
    const char *args[] = {seat_key, held_key, expiry, idx, hold_prefix, seat};
    redisReply *r = audit__probe(a, held_probe_lua, 3, 6, args);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        audit__violation(a, "held_bits", "seat %s has a held bit but no seat key and no due hold",
                         seat);
    if (r)
        freeReplyObject(r);
}
