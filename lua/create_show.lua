--[[
create_show.lua - creates a show once; plus the catalogue and id-sequence helpers.

seatd_create_show
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  title (string)
  ARGV[2]  startsAt (epoch ms)
  ARGV[3]  holdTtlMs (ms, > 0)
  ARGV[4]  priceTiers (JSON object text)
  ARGV[5]  layout (the canonical layout JSON document, stored verbatim)
  ARGV[6]  extra (JSON object text or "")
  ARGV[7…] seat ids in index order (seat i has bit i)
  Writes {s}:meta, {s}:layout, {s}:idx (seat -> index), {s}:held and {s}:booked (zeroed,
  n bits), {s}:ver = 0.
  Returns  {"showId", id, "version", "0", "createdAt", ms}
  Errors   EXISTS (meta exists), EMPTY (no seats), DUPSEAT <seat>, INVAL (bad key or ttl)

seatd_catalogue_add
  KEYS[1]  seatd:shows       ARGV[1] score (startsAt ms)   ARGV[2] show id
  Returns  {"showId", id}

seatd_next_show_id
  KEYS[1]  seatd:show_seq
  Returns  {"showId", next id}
]]

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
    local n = #args - 6
    if n < 1 then
        return fail('EMPTY', 'no seats')
    end
    local seen = {}
    for i = 7, #args do
        if seen[args[i]] then
            return fail('DUPSEAT', args[i])
        end
        seen[args[i]] = true
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    redis.call('HSET', keys[1], 'showId', id, 'title', args[1], 'startsAt', args[2],
        'holdTtlMs', args[3], 'priceTiers', args[4], 'seatCount', n, 'createdAt', now,
        'extra', args[6])
    redis.call('SET', p .. ':layout', args[5])
    local chunk = {}
    for i = 7, #args do
        chunk[#chunk + 1] = args[i]
        chunk[#chunk + 1] = i - 7
        if #chunk >= 1000 then
            redis.call('HSET', p .. ':idx', unpack(chunk))
            chunk = {}
        end
    end
    if #chunk > 0 then
        redis.call('HSET', p .. ':idx', unpack(chunk))
    end
    redis.call('SETBIT', p .. ':held', n - 1, 0)
    redis.call('SETBIT', p .. ':booked', n - 1, 0)
    redis.call('SET', p .. ':ver', 0)
    return {'showId', id, 'version', '0', 'createdAt', tostring(now)}
end

local function catalogue_add(keys, args)
    if not tonumber(args[1]) or not string.match(args[2] or '', '^%d+$') then
        return fail('INVAL', 'score and id')
    end
    redis.call('ZADD', keys[1], args[1], args[2])
    return {'showId', args[2]}
end

local function next_show_id(keys, args)
    return {'showId', tostring(redis.call('INCR', keys[1]))}
end

redis.register_function{function_name='seatd_create_show', callback=create_show}
redis.register_function{function_name='seatd_catalogue_add', callback=catalogue_add}
redis.register_function{function_name='seatd_next_show_id', callback=next_show_id}
