--[[
sweep.lua - seatd_sweep_claim: hands due shows to one sweeper (worker/flows/sweeper.c).

  seatd:due:{hN} is a hint index, outside every show's slot (split in buckets by the shows'
  slots, worker/domain/keys.h): show id -> the earliest deadline
  (epoch ms, Redis's clock) at which that show may have a hold to reap. Workers add to it with
  ZADD LT after a hold (score 0: "look soon"), the sweeper files each show it reaped under the
  "next" deadline seatd_reap returned. Claiming removes the members, so two workers never
  reap the same show for the same claim; a hint that arrives meanwhile adds the show back.
  A sweeper that dies between claim and file loses only hints, which the catalogue rescan
  (every 30 s) restores.

  KEYS[1]  seatd:due:{hN}, one bucket
  ARGV[1]  max shows to claim (1..10000)
  Returns  {"now", Redis's clock in ms, "id", <show id>, "id", …} (due shows, earliest first)
  Errors   INVAL
]]

-- Removes up to 'max' members of zset 'key' scored up to 'upto' and answers them as
-- {"now", now, "id", id1, "id", id2, ...}.
local function pop_due(key, now, upto, max)
    local ids = redis.call('ZRANGEBYSCORE', key, '-inf', upto, 'LIMIT', 0, max)
    local out = {'now', tostring(now)}
    for _, id in ipairs(ids) do
        out[#out + 1] = 'id'
        out[#out + 1] = id
    end
    if #ids > 0 then
        redis.call('ZREM', key, unpack(ids))
    end
    return out
end

local function sweep_claim(keys, args)
    if not string.match(keys[1] or '', '^seatd:due:{h%d+}$') then
        return fail('INVAL', 'bad due key')
    end
    local max = tonumber(args[1])
    if not max or max < 1 or max > 10000 then
        return fail('INVAL', 'max')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    return pop_due(keys[1], now, now, max)
end

redis.register_function{function_name='seatd_sweep_claim', callback=sweep_claim}

--[[
seatd_catalogue_prune: shows past their start plus a retention leave the catalogue seatd:shows
(the scan set of the sweeper's and the reconciler's rescans and of seatd-notify), so those
scans grow with the shows on sale, not with every show ever created. The show's own keys stay
(GET /v1/shows/{id} and its bookings still answer); the caller also drops the pruned shows
from their bucket of the hint set seatd:due (another key: another slot on Redis Cluster).
  KEYS[1]  seatd:shows
  ARGV[1]  retention (ms >= 0): shows whose startsAt <= now - retention are pruned
  ARGV[2]  at most this many per call (1..10000)
  Returns  {"now", ms, "id", <show id>, …} (the pruned shows)
]]
local function catalogue_prune(keys, args)
    if keys[1] ~= 'seatd:shows' then
        return fail('INVAL', 'bad catalogue key')
    end
    local retention, max = tonumber(args[1]), tonumber(args[2])
    if not retention or retention < 0 or not max or max < 1 or max > 10000 then
        return fail('INVAL', 'retention and count')
    end
    local now = now_ms()
    return pop_due(keys[1], now, now - retention, max)
end

--[[
seatd_lease: a lease one worker holds while it walks the catalogue.
  KEYS[1]  the lease key (seatd:sweep:rescan)
  ARGV[1]  "take" (SET NX PX) or "renew" (PEXPIRE only if the lease still names the holder)
  ARGV[2]  the holder's token     ARGV[3]  the lease time (ms > 0)
  Returns  {"held", "1"|"0"}
]]
local function lease(keys, args)
    local ttl = tonumber(args[3])
    if (args[1] ~= 'take' and args[1] ~= 'renew') or not args[2] or args[2] == '' or not ttl
        or ttl < 1 then
        return fail('INVAL', 'lease')
    end
    if args[1] == 'take' then
        local ok = redis.call('SET', keys[1], args[2], 'NX', 'PX', ttl)
        return {'held', ok and '1' or '0'}
    end
    if redis.call('GET', keys[1]) == args[2] then
        redis.call('PEXPIRE', keys[1], ttl)
        return {'held', '1'}
    end
    return {'held', '0'}
end

redis.register_function{function_name='seatd_catalogue_prune', callback=catalogue_prune}
redis.register_function{function_name='seatd_lease', callback=lease}
