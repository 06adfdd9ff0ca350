#!lua name=seatd
--[[
lib.lua - shared helpers of the seatd Redis Functions library, and seatd_ping.

All lua/*.lua files are concatenated (lib.lua first) into one library named "seatd" and
loaded with FUNCTION LOAD REPLACE; see worker/store/scripts.h. The helpers below are locals of the
one library chunk, so every function file can use them; nothing is global.

Conventions (keys.h documents every key):
  - KEYS[1] is "{s:<showId>}:meta"; the show's other keys are derived from its hash-tag
    prefix "{s:<showId>}", so every key a script touches lives in the show's slot.
  - Time comes only from redis.call('TIME'): ms = sec * 1000 + floor(usec / 1000).
  - A hold is live while now < expiresAt and expired AT expiresAt (not a millisecond later),
    as the API says. Redis expires a key when now > its deadline, so a hold's seat keys carry
    PXAT expiresAt - 1: the last millisecond a seat key exists is expiresAt - 1, the same rule.
    A hold is due for reaping when expiresAt <= now (seat_deadline() and live_at() below).
  - Sales close at the show's salesCloseAt, or at startsAt without one (sales_close()): from
    that millisecond on, seatd_hold and seatd_book_begin answer SALES_CLOSED before any write.
    (A script's key-expiry clock is the script's start, never later than its TIME, so while
    TIME says a hold is live its seat keys exist; reaping ends it once TIME says otherwise.)
  - Every script checks first (no writes), then writes (cannot fail). The only writes that
    may precede a rejection are lazy reaping of already-expired holds, which preserves
    the semantics; their seat changes are still published (flush) before the error returns.
  - Every version bump publishes exactly one delta carrying that version:
    {"v":<version>,"c":[["C7","held"],...]} on "{s:<id>}:ch".
  - Replies are flat arrays of name/value strings; errors are error replies "<WORD> detail".

seatd_ping (no-writes): KEYS none, ARGV none -> {"pong", "1", "library", "seatd"}.
]]

local RETENTION_MS = 3600 * 1000  -- terminal holds are kept this long for GET /v1/holds
local IDEM_TTL_MS = 24 * 3600 * 1000
local REAP_BATCH = 100            -- due holds reaped lazily per script
local REAP_BATCH_TEXT = '100'     -- the same, as a command argument (no tostring at load time)
-- MAX_SEATS_PER_HOLD (the hard cap of seats in one hold) is declared in worker/domain/seats.h and
-- generated right after this file (cmake/embed_lua.cmake).

local function now_ms()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- now_ms() and the same instant as text, written from TIME's own digits: a Lua number handed
-- to redis.call is formatted with "%.14g", which cost a refused hold more than a command.
local function now_ms_text()
    local t = redis.call('TIME')
    local us = t[2]
    local ms = #us > 3 and string.sub(us, 1, #us - 3) or ''
    local text = t[1] .. string.rep('0', 3 - #ms) .. ms
    return tonumber(text), text
end

-- f(s) for a text 's', remembered: the texts a hold converts (bit numbers, ttls, counts, meta
-- fields) are few and repeat. nil for nil, and whatever f answers nil for is not remembered.
-- Bounded: forgotten whole at MEMO_MAX texts. (f is wrapped, not passed: the library's globals
-- are not there while it loads.)
local MEMO_MAX = 4096
local function memoized(f)
    local memo, n = {}, 0
    return function(s)
        if s == nil then
            return nil
        end
        local v = memo[s]
        if v == nil then
            v = f(s)
            if v == nil then
                return nil
            end
            if n >= MEMO_MAX then
                memo, n = {}, 0
            end
            memo[s] = v
            n = n + 1
        end
        return v
    end
end

-- tonumber(s), remembered: Lua 5.1 converts a string with strtod, twice, which a profile of a
-- batch of refused holds found the largest single cost after the interpreter itself.
local num = memoized(function(s) return tonumber(s) end)

-- Whether text 's' is a number as Redis and Lua both write it ("0", or digits without a
-- leading zero), so it can be passed to redis.call as given.
local canonical_uint = memoized(function(s)
    return s == '0' or string.find(s, '^[1-9]%d*$') ~= nil
end)

-- The PXAT / PEXPIREAT value for a seat key of a hold that expires at 'expires_at': Redis
-- keeps a key while now <= its deadline, and a hold is expired at expires_at.
local function seat_deadline(expires_at)
    return expires_at - 1
end

-- Whether a hold with deadline 'expires_at' (number or text) is still live at 'now'.
local function live_at(expires_at, now)
    return (tonumber(expires_at) or 0) > now
end

-- The instant (epoch ms) sales close for a show from its meta fields: salesCloseAt when set,
-- else startsAt; nil when neither is a number.
local function sales_close(starts_at, sales_close_at)
    return num(sales_close_at) or num(starts_at)
end

-- "{s:42}:meta" -> "{s:42}", "42"; nil when KEYS[1] is not a show's meta key.
local function show_prefix(meta_key)
    local id = string.match(meta_key or '', '^{s:(%d+)}:meta$')
    if not id then
        return nil, nil
    end
    return '{s:' .. id .. '}', id
end

-- An error reply "<WORD> <detail>". Redis prefixes "ERR " to a message without a space, so
-- there is always a detail.
local function fail(word, detail)
    if not detail or detail == '' then
        detail = '-'
    end
    return redis.error_reply(word .. ' ' .. detail)
end

local function split_commas(s)
    local out = {}
    if not s or s == '' then
        return out
    end
    for part in string.gmatch(s, '[^,]+') do
        out[#out + 1] = part
    end
    return out
end

-- HGETALL flat reply -> table; nil when the key does not exist.
local function hgetall(key)
    local flat = redis.call('HGETALL', key)
    if #flat == 0 then
        return nil
    end
    local t = {}
    for i = 1, #flat, 2 do
        t[flat[i]] = flat[i + 1]
    end
    return t
end

-- The booking named by ARGV[1] of a booking function: returns p, booking id, booking key and
-- its fields; or nil and the error reply (bad show key, or NOTFOUND — also when 'owner' is
-- given and is not the booking's: another user's booking is not confirmed to exist).
local function load_booking(keys, args, owner)
    local p = show_prefix(keys[1])
    if not p then
        return nil, fail('INVAL', 'bad show key')
    end
    local booking_id = args[1] or ''
    local bk = p .. ':booking:' .. booking_id
    local b = hgetall(bk)
    if not b or (owner and owner ~= '' and b.owner ~= owner) then
        return nil, fail('NOTFOUND', args[1] or '?')
    end
    return p, booking_id, bk, b
end

-- Table of fields -> flat name/value array, in the order of 'names'; missing fields are "".
local function reply_fields(t, names)
    local out = {}
    for _, n in ipairs(names) do
        out[#out + 1] = n
        out[#out + 1] = tostring(t[n] or '')
    end
    return out
end

-- A booking as seatd_booking_get answers it (read.lua), also the answer of seatd_book_confirm,
-- so that a confirmed booking is rendered without reading it again. 'b' is its record,
-- 'meta_key' its show's meta.
local BOOKING_FIELDS = {'bookingId', 'showId', 'holdId', 'owner', 'seatIds', 'amount',
    'currency', 'paymentMethod', 'status', 'paymentRef', 'createdAt', 'confirmedAt', 'reason',
    'refund', 'cancelledAt', 'failedAt', 'refundStatus', 'refundRef', 'refundPercent',
    'startsAt', 'version', 'lateCharge', 'areas', 'members', 'paidBy'}

-- One payment for a group hold (issue 30): a booking record of the group's first show with no
-- seats of its own, 'members' "42:42-b…,43:43-b…" naming one ordinary booking per show (each
-- with 'paidBy' = the payment's id). The payment is what is charged (its id the charge's
-- idempotency key, its amount the members' sum); begin, confirm and fail act on it and on
-- every member in one step, so that a buyer never has part of a group paid. The members share
-- the payment's slot (groups.lua), so their keys are reached from its Functions.
-- Returns the members of payment record 'b': {{show, id, p, bk}, …} (empty for a booking).
local function payment_members(b)
    local out = {}
    for show, id in string.gmatch(b.members or '', '(%d+):([^,]+)') do
        local p = '{s:' .. show .. '}'
        out[#out + 1] = {show = show, id = id, p = p, bk = p .. ':booking:' .. id}
    end
    return out
end

-- A payment's members as its reply carries them: "show|bookingId|status|amount|version|
-- seats ;-joined|places ;-joined" per member, comma-joined.
local function members_reply(b)
    local out = {}
    for _, m in ipairs(payment_members(b)) do
        local r = redis.call('HMGET', m.bk, 'status', 'amount', 'version', 'cancelVersion',
            'seatIds', 'areas')
        out[#out + 1] = table.concat({m.show, m.id, r[1] or '', r[2] or '0', r[4] or r[3] or '',
            (string.gsub(r[5] or '', ',', ';')), (string.gsub(r[6] or '', ',', ';'))}, '|')
    end
    return table.concat(out, ',')
end

local function booking_reply(meta_key, b)
    b.startsAt = redis.call('HGET', meta_key, 'startsAt') or ''
    b.version = b.cancelVersion or b.version -- the show version of its last seat change
    if b.members then
        b.members = members_reply(b)
    end
    return reply_fields(b, BOOKING_FIELDS)
end

-- Standing areas (issue 30). A show's areas are its meta field 'areas',
-- "FLOOR:5000:standing,BALC:200:balcony" (id, capacity, price tier; written by create_show.lua),
-- parsed once per text: {[0] = {'FLOOR', 'BALC'}, FLOOR = {cap = 5000, tier = 'standing'}, …}
-- (shared: never changed by a caller); nil for a show without areas. The places taken in an
-- area (held and booked alike) are the field <id> of {s}:areas; free = capacity - taken, never
-- below zero because seatd_hold checks capacity and adds in one step. A hold or booking keeps
-- its places as 'areas', "FLOOR:2,BALC:1" (sorted by id).
local parse_areas = memoized(function(s)
    if s == '' then
        return nil
    end
    local out = {[0] = {}} -- [0]: the ids in order (a number: never an id)
    for id, cap, tier in string.gmatch(s, '([^,:]+):(%d+):([^,:]+)') do
        out[0][#out[0] + 1] = id
        out[id] = {cap = tonumber(cap), tier = tier}
    end
    return out
end)

-- A record's places, "FLOOR:2,BALC:1" -> {{'FLOOR', 2}, {'BALC', 1}} (empty for none).
local function area_counts(s)
    local out = {}
    for id, n in string.gmatch(s or '', '([^,:]+):(%d+)') do
        out[#out + 1] = {id, tonumber(n)}
    end
    return out
end

-- The number of places in a record's 'areas' text.
local function area_places(s)
    local n = 0
    for _, a in ipairs(area_counts(s)) do
        n = n + a[2]
    end
    return n
end

-- Records that area 'id''s free count changed: flush() publishes its new count in the delta.
-- (A field of 'changes' beside its array of seat changes; flush() takes it out.)
local function area_touch(changes, id)
    changes.areas = changes.areas or {}
    changes.areas[id] = true
end

-- Whether 'changes' has anything to publish (seat changes, area counts, or a change that is
-- a version of its own without either: changes.bump, a channel released).
local function has_changes(changes)
    return #changes > 0 or changes.areas ~= nil or changes.bump ~= nil
end

-- Gives back a record's places (its 'areas' text) to their areas: a hold that ends unbooked, a
-- booking cancelled.
local function areas_give_back(p, text, changes)
    for _, a in ipairs(area_counts(text)) do
        redis.call('HINCRBY', p .. ':areas', a[1], -a[2])
        area_touch(changes, a[1])
    end
end

-- Channels (issue 30): seats and places kept for a channel (the box office, house seats, a
-- partner) until it is released, by an admin or at its release time. Only a buyer whose token
-- carries the channel may hold them; everyone else sees kept free seats as "unavailable".
--   meta 'channels'   "boxoffice:0,house:1767225600000": each unreleased channel and its
--                     release time (epoch ms; 0 = none), in the order they were made
--   {s}:blocked       bitmap: bit i set while seat i is kept by an unreleased channel
--   {s}:keptby        hash: seat bit -> "<channel>|<seat id>"
--   {s}:akept         hash: "<area>|<channel>" -> places of the area still kept for it; the
--                     public's free count of an area is capacity - taken - every channel's
--                     kept places, a channel holder's adds their channels' kept places
--   {s}:kgen          hash: channel -> how many times an admin set it (seatd_channel_set)
-- A hold by a channel holder takes places from its channels' quota first and keeps what it
-- took as 'kept' ("FLOOR|boxoffice#<kgen>:2,…"), given back to the quota when the hold or
-- booking ends while the channel is still unreleased and its quota was not set again since
-- (an admin's new quota replaces the old one whole: the places return to the public).
local parse_channels = memoized(function(s)
    local out = {[0] = {}} -- [0]: the ids in order (a number: never an id)
    for name, at in string.gmatch(s, '([^,:]+):(%d+)') do
        out[0][#out[0] + 1] = name
        out[name] = tonumber(at)
    end
    return out
end)

-- Places kept for channels: the total per area, and each "<area>|<channel>" -> n.
local function kept_places(p)
    local flat = redis.call('HGETALL', p .. ':akept')
    local total, each = {}, {}
    for i = 1, #flat, 2 do
        local area = string.match(flat[i], '^([^|]+)|')
        local n = tonumber(flat[i + 1]) or 0
        if area then
            total[area] = (total[area] or 0) + n
            each[flat[i]] = n
        end
    end
    return total, each
end

-- The free places of areas 'ids' (of 'defs', parse_areas) of show 'p', as id -> n: for the
-- public when 'allowed' is nil, else for a buyer with those channels (a set). 'channels' is
-- the meta's text: without channels nothing is kept.
local function areas_free(p, defs, ids, channels, allowed)
    local taken = redis.call('HMGET', p .. ':areas', unpack(ids))
    local kept, each = {}, {}
    if channels and channels ~= '' then
        kept, each = kept_places(p)
    end
    local out = {}
    for i, id in ipairs(ids) do
        local free = defs[id].cap - (tonumber(taken[i]) or 0) - (kept[id] or 0)
        for ch in pairs(allowed or {}) do
            free = free + (each[id .. '|' .. ch] or 0)
        end
        out[id] = free > 0 and free or 0
    end
    return out
end

-- The public's free places of every area of show 'p', "FLOOR:5000:4862,BALC:200:200" (id,
-- capacity, free; the meta's order); "" for a show without areas. For seatd_seatmap and
-- refusals.
local function areas_free_text(p, areas_text, channels)
    local defs = parse_areas(areas_text or '')
    if not defs then
        return ''
    end
    local free = areas_free(p, defs, defs[0], channels, nil)
    local out = {}
    for i, id in ipairs(defs[0]) do
        out[i] = id .. ':' .. defs[id].cap .. ':' .. free[id]
    end
    return table.concat(out, ',')
end

-- Gives back the places a hold or booking took from channels' quotas ('kept' text) to the
-- channels still unreleased (a released channel's places are the public's already).
local function kept_give_back(p, text, changes)
    if not text or text == '' then
        return
    end
    local chans = parse_channels(redis.call('HGET', p .. ':meta', 'channels') or '')
    for _, k in ipairs(area_counts(text)) do
        -- "FLOOR|boxoffice#3": taken from the quota the admin set third ({s}:kgen); a quota
        -- set again since replaced it, and the places go to the public (their area's count)
        local area, ch, gen = string.match(k[1], '^([^|]+)|([^#]+)#?(%d*)$')
        if area and chans[ch] and (tonumber(gen) or 0) ==
            tonumber(redis.call('HGET', p .. ':kgen', ch) or '0') then
            redis.call('HINCRBY', p .. ':akept', area .. '|' .. ch, k[2])
            area_touch(changes, area)
        end
    end
end

-- The status a seat's change publishes when it is no longer held or booked: "unavailable"
-- while a channel keeps it, else "available".
local function freed_status(p, bit)
    if bit and redis.call('GETBIT', p .. ':blocked', bit) == 1 then
        return 'unavailable'
    end
    return 'available'
end

-- Releases channel 'name' of show 'p' to everyone (an admin's release, or its time came): its
-- seats are no longer kept (free ones published "available"), its places join the public's,
-- the meta forgets it; a version of its own even when nothing else changed. Returns false when
-- the show has no such unreleased channel.
local function channel_release(p, name, changes)
    local meta_key = p .. ':meta'
    local chans = parse_channels(redis.call('HGET', meta_key, 'channels') or '')
    if not chans[name] then
        return false
    end
    local rest = {}
    for _, n in ipairs(chans[0]) do
        if n ~= name then
            rest[#rest + 1] = n .. ':' .. string.format('%d', chans[n])
        end
    end
    if #rest == 0 then
        redis.call('HDEL', meta_key, 'channels')
    else
        redis.call('HSET', meta_key, 'channels', table.concat(rest, ','))
    end
    local flat = redis.call('HGETALL', p .. ':keptby')
    local mine = {} -- {bit, seat}, in bit order (a delta that does not depend on hashing)
    for i = 1, #flat, 2 do
        local ch, seat = string.match(flat[i + 1], '^([^|]+)|(.+)$')
        if ch == name then
            mine[#mine + 1] = {tonumber(flat[i]), seat}
        end
    end
    table.sort(mine, function(a, b) return a[1] < b[1] end)
    for _, k in ipairs(mine) do
        redis.call('HDEL', p .. ':keptby', k[1])
        redis.call('SETBIT', p .. ':blocked', k[1], 0)
        -- (a held bit without its seat key: an expired hold not yet reaped, which publishes
        -- "available" when it is)
        if redis.call('EXISTS', p .. ':seat:' .. k[2]) == 0
            and redis.call('GETBIT', p .. ':booked', k[1]) == 0
            and redis.call('GETBIT', p .. ':held', k[1]) == 0 then
            changes[#changes + 1] = {k[2], 'available'}
        end
    end
    if redis.call('BITCOUNT', p .. ':blocked') == 0 then
        redis.call('DEL', p .. ':blocked')
    end
    flat = redis.call('HGETALL', p .. ':akept')
    for i = 1, #flat, 2 do
        local area, ch = string.match(flat[i], '^([^|]+)|(.+)$')
        if ch == name then
            redis.call('HDEL', p .. ':akept', flat[i])
            area_touch(changes, area)
        end
    end
    changes.bump = true
    return true
end

-- Releases every channel of show 'p' whose release time has come ('channels' the meta's
-- text, 'now' Redis's clock). Returns the meta's channels text as it is after.
local function channels_release_due(p, channels, now, changes)
    local chans = parse_channels(channels or '')
    local any = false
    for _, name in ipairs(chans[0]) do
        if chans[name] > 0 and chans[name] <= now then
            any = channel_release(p, name, changes) or any
        end
    end
    if not any then
        return channels
    end
    return redis.call('HGET', p .. ':meta', 'channels') or ''
end

-- The earliest release time of the show's channels, or nil.
local function channels_next_release(channels)
    local chans = parse_channels(channels or '')
    local first
    for _, name in ipairs(chans[0]) do
        if chans[name] > 0 and (not first or chans[name] < first) then
            first = chans[name]
        end
    end
    return first
end

-- The price of the seats with bits 'bits_text' (comma-joined, the hold's 'bits') and the
-- places 'areas_text' (the hold's 'areas', "" for none) in show 'p': each seat's tier from
-- {s}:tiers (one letter per seat, 'a' = the first of the meta's tierNames; written at
-- creation, create_show.lua), each place's from its area (the meta's 'areas'), and each
-- tier's price from the meta's priceTiers.
-- Returns the amount, or nil and the error word: UNPRICED when the show has no seat tiers
-- stored and seats are to be priced (a show created before seats were priced here: the
-- worker stores them and asks again), INTERNAL when a seat or place has no price.
local function price_seats(p, meta_key, bits_text, areas_text)
    local m = redis.call('HMGET', meta_key, 'priceTiers', 'tierNames', 'areas')
    local bits = split_commas(bits_text)
    local places = area_counts(areas_text)
    local codes = #bits > 0 and redis.call('GET', p .. ':tiers')
    if not m[1] or (#bits > 0 and (not m[2] or not codes)) or (#bits == 0 and #places == 0) then
        return nil, 'UNPRICED'
    end
    local ok, prices = pcall(cjson.decode, m[1])
    if not ok or type(prices) ~= 'table' then
        return nil, 'INTERNAL'
    end
    local names = split_commas(m[2])
    local amount = 0
    for _, b in ipairs(bits) do
        local i = tonumber(b)
        local code = i and string.byte(codes, i + 1)
        local price = code and names[code - 96] and prices[names[code - 96]]
        if type(price) ~= 'number' then
            return nil, 'INTERNAL'
        end
        amount = amount + price
    end
    local defs = parse_areas(m[3] or '')
    for _, a in ipairs(places) do
        local price = defs and defs[a[1]] and prices[defs[a[1]].tier]
        if type(price) ~= 'number' then
            return nil, 'INTERNAL'
        end
        amount = amount + price * a[2]
    end
    return amount
end

-- Publishes the accumulated seat changes as one delta with a fresh version. Returns the
-- version (unchanged when there was nothing to publish). A bitmap left all zeros is deleted:
-- a missing bitmap reads as zeros everywhere (GETBIT, BITCOUNT, seatd_seatmap's ""), so a
-- show with no live hold and no booking keeps no bitmap (memory at rest).
local function flush(p, changes)
    if not has_changes(changes) then
        return tonumber(redis.call('GET', p .. ':ver') or '0')
    end
    -- the areas whose free count changed: "a":{"FLOOR":4862,…} (sorted by id)
    local area_json = ''
    changes.bump = nil
    if changes.areas then
        local m = redis.call('HMGET', p .. ':meta', 'areas', 'channels')
        local defs = parse_areas(m[1] or '')
        local ids = {}
        for id in pairs(changes.areas) do
            if defs and defs[id] then
                ids[#ids + 1] = id
            end
        end
        changes.areas = nil -- (cjson.encode: the seat changes stay an array)
        table.sort(ids)
        if #ids > 0 then
            local free = areas_free(p, defs, ids, m[2], nil)
            local parts = {}
            for i, id in ipairs(ids) do
                parts[i] = '"' .. id .. '":' .. free[id]
            end
            area_json = ',"a":{' .. table.concat(parts, ',') .. '}'
        end
    end
    -- Only a cleared bit can leave a bitmap empty: a batch of new holds (every change 'held',
    -- the hot path) sets bits only, and skips the two BITCOUNTs.
    local cleared = false
    for _, c in ipairs(changes) do
        if c[2] ~= 'held' then
            cleared = true
            break
        end
    end
    if cleared then
        for _, bm in ipairs({p .. ':held', p .. ':booked'}) do
            if redis.call('BITCOUNT', bm) == 0 then
                redis.call('DEL', bm)
            end
        end
    end
    local v = redis.call('INCR', p .. ':ver')
    redis.call('PUBLISH', p .. ':ch', '{"v":' .. v .. ',"c":'
        .. (#changes > 0 and cjson.encode(changes) or '[]') .. area_json .. '}')
    return v
end

-- Publishes what each of 'shows' ({p = prefix, changes = …}) reaped before a call that spans
-- several shows was refused: the refusal changes nothing else, but a reaped hold stays reaped.
local function flush_each(shows)
    for _, s in ipairs(shows) do
        if s.changes and has_changes(s.changes) then
            flush(s.p, s.changes)
        end
    end
end

-- Flushes pending changes, if any (an error reply carries no version: nothing to read when
-- there are none), then returns an error reply.
local function fail_flush(p, changes, word, detail)
    if has_changes(changes) then
        flush(p, changes)
    end
    return fail(word, detail)
end

-- The seats of a record (hold or booking) with their bit indexes: records carry 'bits', the
-- comma-joined bit index of each seat, aligned with the seat list (the seat -> bit mapping
-- is the show's layout, which lives outside the show's slot: the worker sends each seat's bit
-- to seatd_hold, which checks it against the show's layoutHash and seatCount, and the bits
-- travel with the hold into its booking). Returns seats, bits; bits[i] is a number, or nil
-- when the record has none for seat i (then no bit of that seat is touched).
local function seats_bits(seats_text, bits_text)
    local seats = split_commas(seats_text)
    local bits = split_commas(bits_text)
    for i = 1, #seats do
        bits[i] = tonumber(bits[i])
    end
    return seats, bits
end

-- Clears seat 'seat''s held bit 'bit' when no seat key exists any more, recording the change.
local function clear_held(p, seat, bit, changes)
    if not bit then
        return
    end
    local was = redis.call('SETBIT', p .. ':held', bit, 0)
    if was == 1 and redis.call('GETBIT', p .. ':booked', bit) == 0 then
        changes[#changes + 1] = {seat, freed_status(p, bit)}
    end
end

-- Ends a live hold (HELD or PENDING_PAYMENT) as 'status' (EXPIRED or RELEASED): its seat keys
-- that still name it are deleted, held bits cleared where no seat key remains, the hold
-- leaves the expiry set and its owner's hash. A seat key naming another hold is not touched.
local function end_hold(p, hold_id, h, status, changes)
    local seats, bits = seats_bits(h.seats, h.bits)
    for i, seat in ipairs(seats) do
        local sk = p .. ':seat:' .. seat
        local v = redis.call('GET', sk)
        if v == hold_id then
            redis.call('DEL', sk)
            v = false
        end
        if not v then
            clear_held(p, seat, bits[i], changes)
        end
    end
    areas_give_back(p, h.areas, changes)
    kept_give_back(p, h.kept, changes)
    local hk = p .. ':hold:' .. hold_id
    redis.call('HSET', hk, 'status', status)
    redis.call('PEXPIRE', hk, RETENTION_MS)
    redis.call('ZREM', p .. ':expiry', hold_id)
    if h.owner then
        redis.call('HDEL', p .. ':user:' .. h.owner, hold_id)
    end
end

-- Reaps one hold if it is live and due. Returns 1 if it was reaped.
local function reap_hold(p, hold_id, now, changes)
    local h = hgetall(p .. ':hold:' .. hold_id)
    if not h then
        redis.call('ZREM', p .. ':expiry', hold_id)
        return 0
    end
    if h.status ~= 'HELD' and h.status ~= 'PENDING_PAYMENT' then
        redis.call('ZREM', p .. ':expiry', hold_id)
        return 0
    end
    if live_at(h.expiresAt, now) then
        return 0
    end
    end_hold(p, hold_id, h, 'EXPIRED', changes)
    return 1
end

-- Reaps up to 'max' holds of the show whose deadline has passed. Returns the count.
local function reap_due(p, now, max, changes, now_text)
    local due = redis.call('ZRANGEBYSCORE', p .. ':expiry', '-inf', now_text or now, 'LIMIT', '0',
        max == REAP_BATCH and REAP_BATCH_TEXT or max)
    local n = 0
    for _, hold_id in ipairs(due) do
        n = n + reap_hold(p, hold_id, now, changes)
    end
    return n
end

-- Reaps the due holds of one owner (their live holds are the fields of the user hash).
local function reap_owner(p, owner, now, changes)
    local fields = redis.call('HKEYS', p .. ':user:' .. owner)
    for _, f in ipairs(fields) do
        if f ~= 'booked' then
            local score = redis.call('ZSCORE', p .. ':expiry', f)
            if not score or tonumber(score) <= now then
                local r = reap_hold(p, f, now, changes)
                if r == 0 and not score then
                    -- a stale entry: the hold is no longer live
                    local st = redis.call('HGET', p .. ':hold:' .. f, 'status')
                    if st ~= 'HELD' and st ~= 'PENDING_PAYMENT' then
                        redis.call('HDEL', p .. ':user:' .. owner, f)
                    end
                end
            end
        end
    end
end

-- Answers whether every seat key of hold 'h' still names it.
local function seats_still_named(p, hold_id, h)
    for _, seat in ipairs(split_commas(h.seats)) do
        if redis.call('GET', p .. ':seat:' .. seat) ~= hold_id then
            return false
        end
    end
    return true
end

-- A counter with a window at key 'k' (seatd_attempt's "take", and book_begin's per-hold
-- decline cap): counts one more unless that would pass 'cap'; the window ('window' ms) starts
-- with the counter and is never extended. Returns true and the count, or false, the count
-- and the ms until the window ends (nothing counted).
local function counter_take(k, cap, window)
    local n = redis.call('INCR', k)
    if n == 1 then
        redis.call('PEXPIRE', k, window)
    end
    if n <= cap then
        return true, n, 0
    end
    redis.call('DECR', k)
    local ttl = redis.call('PTTL', k)
    if ttl < 0 then -- no window (a counter left from a crash): start one now
        redis.call('PEXPIRE', k, window)
        ttl = window
    end
    return false, n - 1, ttl
end

local function ping(keys, args)
    return {'pong', '1', 'library', 'seatd'}
end

redis.register_function{function_name='seatd_ping', callback=ping, flags={'no-writes'}}
