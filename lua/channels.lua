--[[
channels.lua - seats and places kept for a channel (issue 30; the keys: lib.lua, "Channels").

seatd_channel_set
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  channel name ([a-z0-9_-]{1,32})
  ARGV[2]  release time (epoch ms; 0 = none: kept until an admin releases it)
  ARGV[3]  layoutHash (the layout the worker took the bits from; as seatd_hold)
  ARGV[4]  the places kept, "FLOOR:100,…" ("" for none; area ids of the show, sorted)
  ARGV[5…] pairs: seat id, its bit (the seats kept; none is allowed)
  Sets what the channel keeps, replacing what it kept before: seats it no longer keeps are
  the public's again ("available" when free), new ones are kept ("unavailable" when free; a
  held or booked seat stays so, and is kept once it is free again). A seat kept by another
  channel: CONFLICT <seat…>. Places: each area's kept places must fit what is free of it
  (capacity - taken - other channels' kept): else AREA_SOLD_OUT <area> <free>. One version
  and one delta, even when nothing else changed.
  Returns  {"version", v, "channel", name}
  Errors   NOSHOW, INVAL (name, time, layout, bits, areas), UNKNOWN_AREA, CONFLICT,
           AREA_SOLD_OUT

seatd_channel_release
  KEYS[1]  {s:<id>}:meta   ARGV[1] channel name
  Releases the channel to everyone now (lib.lua, channel_release): one version and one delta.
  Returns  {"version", v, "channel", name}
  Errors   NOSHOW, NOTFOUND (no such unreleased channel)
]]

local CHANNELS_MAX = 8

-- Checks channel 'name' of show 'p' ('meta' = {seatCount, areas, channels} as read) keeping
-- the seats 'seats' ({{id, bit}…}) and places 'places' ({{area, n}…}) from 'release_at'.
-- Returns nil when it may be set, else the error reply.
local function channel_check(p, meta, name, release_at, seats, places)
    if type(name) ~= 'string' or not string.find(name, '^[a-z0-9_-]+$') or #name > 32 then
        return fail('INVAL', 'channel name')
    end
    if not release_at or release_at < 0 or release_at ~= math.floor(release_at) then
        return fail('INVAL', 'release time')
    end
    local chans = parse_channels(meta[3] or '')
    if not chans[name] and #chans[0] >= CHANNELS_MAX then
        return fail('INVAL', 'too many channels')
    end
    local seat_count = tonumber(meta[1]) or 0
    local seen, taken_by_other = {}, nil
    for _, s in ipairs(seats) do
        local bit = s[2]
        if not bit or bit ~= math.floor(bit) or bit < 0 or bit >= seat_count or seen[bit] then
            return fail('INVAL', 'bad bit for seat ' .. tostring(s[1]))
        end
        seen[bit] = true
        local by = redis.call('HGET', p .. ':keptby', bit)
        local ch = by and string.match(by, '^([^|]+)|')
        if ch and ch ~= name then
            taken_by_other = taken_by_other and taken_by_other .. ' ' .. s[1] or s[1]
        end
    end
    if taken_by_other then
        return fail('CONFLICT', taken_by_other)
    end
    if #places > 0 then
        local defs = parse_areas(meta[2] or '')
        local ids = {}
        for i, a in ipairs(places) do
            if not (defs and defs[a[1]]) then
                return fail('UNKNOWN_AREA', a[1])
            end
            if a[2] < 0 or (i > 1 and not (places[i - 1][1] < a[1])) then
                return fail('INVAL', 'areas')
            end
            ids[i] = a[1]
        end
        local free = areas_free(p, defs, ids, meta[3], {[name] = true})
        for _, a in ipairs(places) do
            if a[2] > free[a[1]] then
                return fail('AREA_SOLD_OUT', a[1] .. ' ' .. free[a[1]])
            end
        end
    end
    return nil
end

-- Sets channel 'name' of show 'p' (checked by channel_check): see seatd_channel_set.
-- 'channels' is the meta's text before.
local function channel_apply(p, channels, name, release_at, seats, places, changes)
    local want = {}
    for _, s in ipairs(seats) do
        want[s[2]] = s[1]
    end
    local function is_free(seat, bit)
        return redis.call('EXISTS', p .. ':seat:' .. seat) == 0
            and redis.call('GETBIT', p .. ':booked', bit) == 0
            and redis.call('GETBIT', p .. ':held', bit) == 0
    end
    local flat = redis.call('HGETALL', p .. ':keptby')
    for i = 1, #flat, 2 do
        local ch, seat = string.match(flat[i + 1], '^([^|]+)|(.+)$')
        local bit = tonumber(flat[i])
        if ch == name then
            if want[bit] then
                want[bit] = nil -- kept already
            else
                redis.call('HDEL', p .. ':keptby', flat[i])
                redis.call('SETBIT', p .. ':blocked', bit, 0)
                if is_free(seat, bit) then
                    changes[#changes + 1] = {seat, 'available'}
                end
            end
        end
    end
    for bit, seat in pairs(want) do
        redis.call('HSET', p .. ':keptby', bit, name .. '|' .. seat)
        redis.call('SETBIT', p .. ':blocked', bit, 1)
        if is_free(seat, bit) then
            changes[#changes + 1] = {seat, 'unavailable'}
        end
    end
    if redis.call('BITCOUNT', p .. ':blocked') == 0 then
        redis.call('DEL', p .. ':blocked')
    end
    local _, each = kept_places(p)
    local new = {}
    for _, a in ipairs(places) do
        new[a[1] .. '|' .. name] = a[2]
    end
    for k, n in pairs(each) do
        if string.match(k, '|(.+)$') == name and not new[k] then
            redis.call('HDEL', p .. ':akept', k)
            area_touch(changes, string.match(k, '^([^|]+)|'))
        end
    end
    for k, n in pairs(new) do
        if (each[k] or 0) ~= n then
            if n > 0 then
                redis.call('HSET', p .. ':akept', k, n)
            else
                redis.call('HDEL', p .. ':akept', k)
            end
            area_touch(changes, string.match(k, '^([^|]+)|'))
        end
    end
    local chans = parse_channels(channels or '')
    local out = {}
    for _, n in ipairs(chans[0]) do
        out[#out + 1] = n .. ':' .. (n == name and string.format('%d', release_at)
            or string.format('%d', chans[n]))
    end
    if not chans[name] then
        out[#out + 1] = name .. ':' .. string.format('%d', release_at)
    end
    redis.call('HSET', p .. ':meta', 'channels', table.concat(out, ','))
    -- a new quota replaces the old whole: places taken from the old one go to the public
    -- when they come back (lib.lua kept_give_back)
    redis.call('HINCRBY', p .. ':kgen', name, 1)
    changes.bump = true
end

local function channel_set(keys, args)
    local p = show_prefix(keys[1])
    local meta = p and redis.call('HMGET', keys[1], 'seatCount', 'areas', 'channels',
        'layoutHash')
    if not meta or not meta[1] then
        return fail('NOSHOW', keys[1])
    end
    if (#args - 4) % 2 ~= 0 or args[3] ~= meta[4] then
        return fail('INVAL', 'layout mismatch or seat pairs')
    end
    local seats = {}
    for i = 5, #args, 2 do
        seats[#seats + 1] = {args[i], num(args[i + 1])}
    end
    local places = area_counts(args[4] or '')
    local release_at = num(args[2] or '')
    local err = channel_check(p, meta, args[1], release_at, seats, places)
    if err then
        return err
    end
    local changes = {}
    channel_apply(p, meta[3], args[1], release_at, seats, places, changes)
    return {'version', tostring(flush(p, changes)), 'channel', args[1]}
end

local function channel_release_fn(keys, args)
    local p = show_prefix(keys[1])
    if not p or redis.call('EXISTS', keys[1]) == 0 then
        return fail('NOSHOW', keys[1])
    end
    local changes = {}
    if not channel_release(p, args[1] or '', changes) then
        return fail('NOTFOUND', args[1] or '?')
    end
    return {'version', tostring(flush(p, changes)), 'channel', args[1]}
end

redis.register_function{function_name='seatd_channel_set', callback=channel_set}
redis.register_function{function_name='seatd_channel_release', callback=channel_release_fn}
