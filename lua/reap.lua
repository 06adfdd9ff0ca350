--[[
reap.lua - seatd_reap: ends up to 'max' holds of one show whose deadline has come (expiresAt <= now).

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  max holds to reap (1..10000)
  Each reaped hold: seat keys that still name it deleted, held bits cleared where no seat
  key remains, status EXPIRED, out of the expiry set and its owner's hash; one version bump
  and one delta ("available") for all the seats that changed. Channels whose release time
  has come are released in the same step (lib.lua, "Channels"); "next" is then the earlier
  of the next hold deadline and the next channel release.
  Returns  {"reaped", n, "version", v, "due", remaining due holds,
            "next", the earliest deadline (epoch ms) in the expiry set or "" when it is empty,
            "now", Redis's clock (epoch ms)}
  The sweeper (worker/flows/sweeper.c) files the show under "next" in seatd:due.
  Errors   NOSHOW, INVAL
]]

-- The prefix of the show whose meta key is KEYS[1], or nil and the error reply (INVAL for a
-- key that is not a show's, NOSHOW for a show that does not exist).
local function existing_show(keys)
    local p = show_prefix(keys[1])
    if not p then
        return nil, fail('INVAL', 'bad show key')
    end
    if redis.call('EXISTS', keys[1]) == 0 then
        return nil, fail('NOSHOW', keys[1])
    end
    return p
end

local function reap(keys, args)
    local p, err = existing_show(keys)
    if not p then
        return err
    end
    local max = tonumber(args[1])
    if not max or max < 1 or max > 10000 then
        return fail('INVAL', 'max')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    local changes = {}
    local n = reap_due(p, now, max, changes)
    -- channels whose release time came (issue 30): the sweeper comes by at that time too
    local channels = redis.call('HGET', keys[1], 'channels')
    if channels then
        channels = channels_release_due(p, channels, now, changes)
    end
    local v = flush(p, changes)
    local left = redis.call('ZCOUNT', p .. ':expiry', '-inf', now)
    local first = redis.call('ZRANGE', p .. ':expiry', 0, 0, 'WITHSCORES')
    local nxt = #first == 2 and math.floor(tonumber(first[2])) or nil
    local release = channels_next_release(channels)
    if release and (not nxt or release < nxt) then
        nxt = release
    end
    nxt = nxt and string.format('%d', nxt) or ''
    return {'reaped', tostring(n), 'version', tostring(v), 'due', tostring(left), 'next', nxt,
            'now', tostring(now)}
end

redis.register_function{function_name='seatd_reap', callback=reap}

--[[
seatd_version_floor: the show's version moves past a version a worker saw, after Redis
answered an older one (it lost acknowledged writes: a restart that replayed an AOF missing
its last second, a failover to a replica that had not received them). Versions must never
be reused: a client holding the lost version's map (an ETag, a feed's ?since=) would take
the new history's same number for the map it has.
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  the version seen (integer >= 0)
  When the version is at most ARGV[1], it becomes ARGV[1] + 2 and an empty delta is published
  at it: every feed sees a gap (ARGV[1] + 1 never comes) and reads a fresh snapshot. A later
  version is left as it is.
  Returns  {"version", v, "bumped", "1"|"0"}
  Errors   NOSHOW, INVAL
]]
local function version_floor(keys, args)
    local p, err = existing_show(keys)
    if not p then
        return err
    end
    local seen = tonumber(args[1] or '')
    if not seen or seen < 0 or seen ~= math.floor(seen) then
        return fail('INVAL', 'version')
    end
    local v = tonumber(redis.call('GET', p .. ':ver') or '0')
    if v > seen then
        return {'version', tostring(v), 'bumped', '0'}
    end
    v = seen + 2
    redis.call('SET', p .. ':ver', v)
    redis.call('PUBLISH', p .. ':ch', '{"v":' .. v .. ',"c":[]}')
    return {'version', tostring(v), 'bumped', '1'}
end

redis.register_function{function_name='seatd_version_floor', callback=version_floor}
