--[[
create_show.lua - creates a show once; the shared layouts; the catalogue and id sequence.

Layouts are content-addressed and shared: the canonical "seats" array of a layout (JSON, seat
i has bit i) is stored once under seatd:layout:<sha256 hex of that text>, whatever number of
shows use it; a show's meta names it by layoutHash. The worker writes the layout
(seatd_layout_put) before the show that names it, and reads it back by hash; no seat script
reads it (it is not in the show's slot): the worker sends each seat's bit with its id, and the
hold script checks the worker's layoutHash against the show's.

seatd_layout_put
  KEYS[1]  seatd:layout:<64 hex>
  ARGV[1]  the canonical seats array JSON whose SHA-256 is the key's hex (computed by the
           worker; Lua has no SHA-256)
  SET NX: a layout is written once and never changes. An existing key with other content is
  refused (a corrupt key, or a worker hashing differently), never overwritten.
  Returns  {"layoutHash", hex, "created", "0"|"1"}
  Errors   INVAL (bad key, empty text), INTERNAL layout collision <hex>

seatd_create_show
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  title (string)
  ARGV[2]  startsAt (epoch ms)
  ARGV[3]  holdTtlMs (ms, > 0)
  ARGV[4]  priceTiers (JSON object text)
  ARGV[5]  layoutHash (64 lowercase hex: the shared layout, written before)
  ARGV[6]  extra (JSON object text or ""); a numeric "salesCloseAt" member in it (epoch ms,
           at most startsAt) is also written to the meta as salesCloseAt: the instant sales
           close (seatd_hold, seatd_book_begin; without it sales close at startsAt); an
           "orphanRule": "block" member is also written to the meta as orphanRule (hold.lua);
           an "areas" member [{id, capacity, tier}] (standing areas, issue 30) is also
           written to the meta as areas, "FLOOR:5000:standing,…" (lib.lua, parse_areas);
           a "queue" member {opensAt (ms), maxShoppers (1..1e6), admissionSeconds (10..3600),
           seatsPerShopper (1..MAX_SEATS_PER_HOLD)} makes it a queued show: queueOpensAt,
           queueMax, queueAdmitMs, queueSeats in the meta (queue.lua, hold.lua)
  ARGV[7]  seatCount (the layout's seats, >= 1)
  ARGV[8]  optional: tierNames, the layout's tiers comma-joined (each a priceTiers name), and
  ARGV[9]  each seat's tier, one letter per seat in bit order ('a' = the first tierName):
           written as the meta's tierNames and {s}:tiers, so that seatd_book_begin prices a
           booking itself (lib.lua, price_seats)
  ARGV[10] optional: the channels (issue 30), JSON {"<name>":{"seats":[["A1",0],…],"areas":
           "FLOOR:100,…","releaseAt":ms}}: seats and places kept for each (channels.lua),
           applied with the show
  Writes {s}:meta (title, startsAt, holdTtlMs, priceTiers, layoutHash, seatCount, createdAt,
  and extra when not "") and {s}:ver = 0. The bitmaps {s}:held and {s}:booked are not
  created: a missing bitmap reads as all zeros (GETBIT, BITCOUNT, seatd_seatmap's ""), the
  first SETBIT creates it, and flush() deletes it again once it is all zeros (lib.lua), so a
  show at rest costs its meta, its version and its catalogue entry.
  Returns  {"showId", id, "version", "0", "createdAt", ms}
  Errors   EXISTS (meta exists), EMPTY (no seats), INVAL (bad key, ttl, hash, count,
           salesCloseAt, queue or tiers)

seatd_show_tiers_put
  KEYS[1]  {s:<id>}:meta   ARGV[1] tierNames   ARGV[2] the seats' tier letters (as above)
  Stores the seat tiers of a show created before create_show wrote them; a show that has
  them keeps them (written once, like the layout they come from).
  Returns  {"showId", id, "created", "0"|"1"}
  Errors   NOSHOW, INVAL (tiers that do not fit the show: count, letters, prices)

seatd_catalogue_add
  KEYS[1]  seatd:shows       ARGV[1] score (startsAt ms)   ARGV[2] show id
  Returns  {"showId", id}

seatd_next_show_id
  KEYS[1]  seatd:show_seq
  ARGV[1]  optional: the id wanted (the worker chose it for its hash slot: a show created
           "groupWith" another shares its slot, so a group of them is one Function call on a
           Redis Cluster); it must be above every id given so far (else EXISTS <last id>),
           and the sequence moves to it
  Returns  {"showId", next id}
]]

-- A layout digest: 64 lowercase hex characters.
local function is_digest(s)
    return type(s) == 'string' and #s == 64 and not string.find(s, '[^0-9a-f]')
end

local function layout_put(keys, args)
    local key = keys[1] or ''
    local hash = string.sub(key, 14)
    if string.sub(key, 1, 13) ~= 'seatd:layout:' or not is_digest(hash) or not args[1]
        or args[1] == '' then
        return fail('INVAL', 'layout key and text')
    end
    if redis.call('SET', key, args[1], 'NX') then
        return {'layoutHash', hash, 'created', '1'}
    end
    if redis.call('GET', key) ~= args[1] then
        return fail('INTERNAL', 'layout collision ' .. hash)
    end
    return {'layoutHash', hash, 'created', '0'}
end

-- The "areas" member of a show's extras (issue 30), checked against the show's price tiers
-- (JSON text): 1..MAX_AREAS areas [{id, capacity, tier}], ids of [A-Za-z0-9_-]{1,16} each
-- once, capacity an integer 1..1000000, tier a priceTiers name. Returns the meta's text
-- "FLOOR:5000:standing,…" (lib.lua, parse_areas), or nil.
local MAX_AREAS = 32
local function valid_areas(list, tiers_json)
    local ok, prices = pcall(cjson.decode, tiers_json or '')
    if type(list) ~= 'table' or #list < 1 or #list > MAX_AREAS or not ok
        or type(prices) ~= 'table' then
        return nil
    end
    local seen, out = {}, {}
    for i, a in ipairs(list) do
        local id, cap, tier = type(a) == 'table' and a.id, type(a) == 'table' and a.capacity,
            type(a) == 'table' and a.tier
        if type(id) ~= 'string' or #id > 16 or not string.find(id, '^[A-Za-z0-9_-]+$')
            or seen[id] or type(cap) ~= 'number' or cap ~= math.floor(cap) or cap < 1
            or cap > 1000000 or type(tier) ~= 'string' or type(prices[tier]) ~= 'number' then
            return nil
        end
        seen[id] = true
        out[i] = id .. ':' .. string.format('%d', cap) .. ':' .. tier
    end
    return table.concat(out, ',')
end

-- The channels of a new show (ARGV[10], JSON {"<name>":{"seats":[["A1",0],…],"areas":
-- "FLOOR:100,…","releaseAt":ms},…}, written by the worker: worker/store/shows.c), checked for a
-- show of 'seat_count' seats with the areas 'areas_text' (the meta's): no seat kept twice, every
-- area's kept places within its capacity. Returns the list {{name, releaseAt, seats,
-- places}…} (in name order), or nil and the error reply.
local function valid_channels(p, seat_count, text, areas_text)
    local ok, x = pcall(cjson.decode, text)
    if not ok or type(x) ~= 'table' then
        return nil, fail('INVAL', 'channels')
    end
    local names = {}
    for name in pairs(x) do
        names[#names + 1] = name
    end
    table.sort(names)
    if #names > CHANNELS_MAX then
        return nil, fail('INVAL', 'too many channels')
    end
    local out, seen, sums = {}, {}, {}
    local defs = parse_areas(areas_text)
    for _, name in ipairs(names) do
        local c = x[name]
        if type(c) ~= 'table' then
            return nil, fail('INVAL', 'channels')
        end
        local seats = {}
        for _, s in ipairs(type(c.seats) == 'table' and c.seats or {}) do
            if type(s) ~= 'table' or type(s[1]) ~= 'string' or type(s[2]) ~= 'number'
                or seen[s[2]] then
                return nil, fail('INVAL', 'channel seats')
            end
            seen[s[2]] = true
            seats[#seats + 1] = {s[1], s[2]}
        end
        local places = area_counts(type(c.areas) == 'string' and c.areas or '')
        for _, a in ipairs(places) do
            sums[a[1]] = (sums[a[1]] or 0) + a[2]
            if not (defs and defs[a[1]]) or sums[a[1]] > defs[a[1]].cap then
                return nil, fail('INVAL', 'channel areas')
            end
        end
        local err = channel_check(p, {seat_count, areas_text, ''}, name,
            tonumber(c.releaseAt) or 0, seats, {})
        if err then
            return nil, err
        end
        out[#out + 1] = {name, tonumber(c.releaseAt) or 0, seats, places}
    end
    return out
end

-- The "queue" member of a show's extras (issue 15, queue.lua), checked: {opensAt = ms,
-- maxShoppers, admissionSeconds, seatsPerShopper}, all positive integers within bounds; nil
-- when anything is off.
local function valid_queue(qx)
    if type(qx) ~= 'table' then
        return nil
    end
    local function int(v, lo, hi)
        v = tonumber(v)
        if v and v == math.floor(v) and v >= lo and v <= hi then
            return v
        end
        return nil
    end
    local q = {opens = int(qx.opensAt, 1, 1e14), max = int(qx.maxShoppers, 1, 1000000),
        admit = int(qx.admissionSeconds, 10, 3600),
        seats = int(qx.seatsPerShopper, 1, MAX_SEATS_PER_HOLD)}
    if not q.opens or not q.max or not q.admit or not q.seats then
        return nil
    end
    return q
end

-- Seat tiers (ARGV 'names', 'codes'): checked against the show's seat count and price tiers
-- ('prices_text', JSON). Returns true, or nil when anything is off.
local function valid_tiers(names_text, codes, n, prices_text)
    local names = split_commas(names_text)
    local ok, prices = pcall(cjson.decode, prices_text or '')
    if #names == 0 or #names > 26 or not ok or type(prices) ~= 'table' or #codes ~= n then
        return nil
    end
    for _, name in ipairs(names) do
        if type(prices[name]) ~= 'number' then
            return nil
        end
    end
    local last = string.char(96 + #names)
    return not string.find(codes, '[^a-' .. last .. ']')
end

local function create_show(keys, args)
    local p, id = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    if redis.call('EXISTS', keys[1]) == 1 then
        return fail('EXISTS', id)
    end
    local ttl = tonumber(args[3])
    if not ttl or ttl <= 0 or not tonumber(args[2]) then
        return fail('INVAL', 'holdTtlMs and startsAt must be numbers')
    end
    if not is_digest(args[5]) then
        return fail('INVAL', 'layoutHash')
    end
    local n = tonumber(args[7])
    if not n or n < 1 then
        return fail('EMPTY', 'no seats')
    end
    if n ~= math.floor(n) or n > 100000 then
        return fail('INVAL', 'seatCount')
    end
    if (args[8] or '') ~= '' and not valid_tiers(args[8], args[9] or '', n, args[4]) then
        return fail('INVAL', 'tiers')
    end
    local close, orphan_rule, queue, areas
    if args[6] and args[6] ~= '' then
        local ok, x = pcall(cjson.decode, args[6])
        if ok and type(x) == 'table' and x.areas ~= nil then
            areas = valid_areas(x.areas, args[4])
            if not areas then
                return fail('INVAL', 'areas')
            end
        end
        if ok and type(x) == 'table' and x.queue ~= nil then
            queue = valid_queue(x.queue)
            if not queue then
                return fail('INVAL', 'queue')
            end
        end
        if ok and type(x) == 'table' and x.orphanRule == 'block' then
            orphan_rule = 'block'
        end
        if ok and type(x) == 'table' and x.salesCloseAt ~= nil then
            close = tonumber(x.salesCloseAt)
            if not close or close ~= math.floor(close) or close <= 0
                or close > tonumber(args[2]) then
                return fail('INVAL', 'salesCloseAt')
            end
        end
    end
    local channels -- ARGV[10] decoded: {{name, release_at, seats, places}…}
    if (args[10] or '') ~= '' then
        local err
        channels, err = valid_channels(p, n, args[10], areas or '')
        if not channels then
            return err
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    redis.call('HSET', keys[1], 'title', args[1], 'startsAt', args[2], 'holdTtlMs', args[3],
        'priceTiers', args[4], 'layoutHash', args[5], 'seatCount', n, 'createdAt', now)
    if args[6] and args[6] ~= '' then
        redis.call('HSET', keys[1], 'extra', args[6])
    end
    if close then
        redis.call('HSET', keys[1], 'salesCloseAt', string.format('%d', close))
    end
    if orphan_rule then
        redis.call('HSET', keys[1], 'orphanRule', orphan_rule)
    end
    if areas then
        redis.call('HSET', keys[1], 'areas', areas)
    end
    if queue then
        redis.call('HSET', keys[1], 'queueOpensAt', string.format('%d', queue.opens), 'queueMax',
            queue.max, 'queueAdmitMs', queue.admit * 1000, 'queueSeats', queue.seats)
    end
    if (args[8] or '') ~= '' then
        redis.call('HSET', keys[1], 'tierNames', args[8])
        redis.call('SET', p .. ':tiers', args[9])
    end
    redis.call('SET', p .. ':ver', 0)
    for _, c in ipairs(channels or {}) do -- a new show: nothing to publish (version 0)
        channel_apply(p, redis.call('HGET', keys[1], 'channels'), c[1], c[2], c[3], c[4], {})
    end
    return {'showId', id, 'version', '0', 'createdAt', tostring(now)}
end

local function show_tiers_put(keys, args)
    local p, id = show_prefix(keys[1])
    local m = p and redis.call('HMGET', keys[1], 'seatCount', 'priceTiers', 'tierNames')
    if not m or not m[1] then
        return fail('NOSHOW', keys[1])
    end
    if m[3] and redis.call('EXISTS', p .. ':tiers') == 1 then
        return {'showId', id, 'created', '0'}
    end
    if not valid_tiers(args[1], args[2] or '', tonumber(m[1]), m[2]) then
        return fail('INVAL', 'tiers')
    end
    redis.call('HSET', keys[1], 'tierNames', args[1])
    redis.call('SET', p .. ':tiers', args[2])
    return {'showId', id, 'created', '1'}
end

local function catalogue_add(keys, args)
    if not tonumber(args[1]) or not string.match(args[2] or '', '^%d+$') then
        return fail('INVAL', 'score and id')
    end
    redis.call('ZADD', keys[1], args[1], args[2])
    return {'showId', args[2]}
end

local function next_show_id(keys, args)
    local at = args[1] and tonumber(args[1])
    if not at then
        return {'showId', tostring(redis.call('INCR', keys[1]))}
    end
    -- an id chosen by the worker (its hash slot: a group's shows share one, issue 30), above
    -- every id given so far
    local cur = tonumber(redis.call('GET', keys[1]) or '0') or 0
    if at ~= math.floor(at) or at < 1 or at > 1e15 then
        return fail('INVAL', 'show id')
    end
    if at <= cur then
        return fail('EXISTS', tostring(cur))
    end
    redis.call('SET', keys[1], string.format('%d', at))
    return {'showId', string.format('%d', at)}
end

redis.register_function{function_name='seatd_layout_put', callback=layout_put}
redis.register_function{function_name='seatd_create_show', callback=create_show}
redis.register_function{function_name='seatd_show_tiers_put', callback=show_tiers_put}
redis.register_function{function_name='seatd_catalogue_add', callback=catalogue_add}
redis.register_function{function_name='seatd_next_show_id', callback=next_show_id}
