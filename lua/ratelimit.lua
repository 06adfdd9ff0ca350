--[[
ratelimit.lua - seatd_rate_hit: one fixed-window request counter per key (issue 9).

KEYS[1] = the counter, e.g. "{s:<showId>}:rate:hold:<sub>" (in the show's slot, so a hold
never waits for another shard).
ARGV[1] = requests allowed per window, ARGV[2] = the window in ms.
Counts this request; within the limit -> {"count", n, "resetMs", ms left}; past it -> the
error "RATELIMIT too many requests from this user; retry in <s> s" (429 from the worker). The counter's key carries the
window as its TTL, set in the same script, so a counter never outlives its window.
]]

local function rate_hit(keys, args)
    local limit = tonumber(args[1])
    local window = tonumber(args[2])
    if not limit or not window or limit < 1 or window < 1 then
        return redis.error_reply('INVAL rate limit arguments')
    end
    local n = redis.call('INCR', keys[1])
    local left = redis.call('PTTL', keys[1])
    if left < 0 then
        redis.call('PEXPIRE', keys[1], window)
        left = window
    end
    if n > limit then
        return redis.error_reply('RATELIMIT too many requests from this user; retry in ' ..
                                 math.ceil(left / 1000) .. ' s')
    end
    return {'count', tostring(n), 'resetMs', tostring(left)}
end

redis.register_function{function_name='seatd_rate_hit', callback=rate_hit}
