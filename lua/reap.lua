--[[
reap.lua - seatd_reap: ends up to 'max' holds of one show whose deadline has come (expiresAt <= now).

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  max holds to reap (1..10000)
  Each reaped hold: seat keys that still name it deleted, held bits cleared where no seat
  key remains, status EXPIRED, out of the expiry set and its owner's hash; one version bump
  and one delta ("available") for all the seats that changed.
  Returns  {"reaped", n, "version", v, "due", remaining due holds,
            "next", the earliest deadline (epoch ms) in the expiry set or "" when it is empty,
            "now", Redis's clock (epoch ms)}
  The sweeper (worker/sweeper.c) files the show under "next" in seatd:due.
  Errors   NOSHOW, INVAL
]]

local function reap(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    if redis.call('EXISTS', keys[1]) == 0 then
        return fail('NOSHOW', keys[1])
    end
    local max = tonumber(args[1])
    if not max or max < 1 or max > 10000 then
        return fail('INVAL', 'max')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    local changes = {}
    local n = reap_due(p, now, max, changes)
    local v = flush(p, changes)
    local left = redis.call('ZCOUNT', p .. ':expiry', '-inf', now)
    local first = redis.call('ZRANGE', p .. ':expiry', 0, 0, 'WITHSCORES')
    local nxt = ''
    if #first == 2 then
        nxt = tostring(math.floor(tonumber(first[2])))
    end
    return {'reaped', tostring(n), 'version', tostring(v), 'due', tostring(left), 'next', nxt,
            'now', tostring(now)}
end

redis.register_function{function_name='seatd_reap', callback=reap}
