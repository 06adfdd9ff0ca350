--[[
sweep.lua - seatd_sweep_claim: hands due shows to one sweeper (worker/sweeper.c).

  seatd:due is a hint index, outside every show's slot: show id -> the earliest deadline
  (epoch ms, Redis's clock) at which that show may have a hold to reap. Workers add to it with
  ZADD LT after a hold (score 0: "look soon"), the sweeper files each show it reaped under the
  "next" deadline seatd_reap returned. Claiming removes the members, so two workers never
  reap the same show for the same claim; a hint that arrives meanwhile adds the show back.
  A sweeper that dies between claim and file loses only hints, which the catalogue rescan
  (every 30 s) restores.

  KEYS[1]  seatd:due
  ARGV[1]  max shows to claim (1..10000)
  Returns  {"now", Redis's clock in ms, "id", <show id>, "id", …} (due shows, earliest first)
  Errors   INVAL
]]

local function sweep_claim(keys, args)
    if keys[1] ~= 'seatd:due' then
        return fail('INVAL', 'bad due key')
    end
    local max = tonumber(args[1])
    if not max or max < 1 or max > 10000 then
        return fail('INVAL', 'max')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    local ids = redis.call('ZRANGEBYSCORE', keys[1], '-inf', now, 'LIMIT', 0, max)
    local out = {'now', tostring(now)}
    for _, id in ipairs(ids) do
        out[#out + 1] = 'id'
        out[#out + 1] = id
    end
    if #ids > 0 then
        redis.call('ZREM', keys[1], unpack(ids))
    end
    return out
end

redis.register_function{function_name='seatd_sweep_claim', callback=sweep_claim}
