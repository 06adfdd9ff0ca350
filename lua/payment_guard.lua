--[[
payment_guard.lua - what keeps money safe around a charge.

seatd_late_charge: a charge landed for a booking that had already FAILED (the reconciler
failed it, or the seats were lost, while the charge was on its way): the refund is written
down before it is asked for, so it survives a worker that dies or a gateway that does not
answer.
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  ARGV[2]  the charge's id at the gateway
  Effects: only on a FAILED booking without a refund: lateCharge = the charge id,
  refundStatus "pending", and the booking enters {s}:refunds, which reconciliation retries
  (key "refund-<bookingId>", the whole amount) until seatd_book_fail records the refund
  (and takes it out of {s}:refunds). The booking leaves {s}:failed (its charge is found).
  Idempotent.
  Returns  {"bookingId", id, "status", status, "refundStatus", "pending"|"succeeded"|""}
  Errors   NOTFOUND, STATE <status> (not FAILED)

seatd_late_clear: reconciliation asked the gateway about a booking of {s}:failed (a FAILED
booking whose charge might still have landed) after the charge horizon, and it has no
successful charge (none, or declined): nothing can land any more, the watch ends.
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  Effects: the booking leaves {s}:failed (whatever its status). Idempotent.
  Returns  {"bookingId", id, "status", status ("" if the booking is gone)}

seatd_attempt: a counter with a window, in the key's own slot (per hold: KEYS[1] in the
show's hash tag; per user: a global key routed by itself).
  KEYS[1]  the counter key
  ARGV[1]  "take": counts one more and answers whether it is within ARGV[2]; a count beyond
           the cap is undone (nothing recorded) and answered with the ms until the window
           ends. "give": gives one back (never below 0; a counter back at 0 is deleted, so
           an attempt refused before any charge leaves no key).
  ARGV[2]  the cap (take)
  ARGV[3]  the window (ms, take): set when the counter is created, never extended
  Returns  {"ok", "1"|"0", "count", n, "retryAfterMs", ms}
]]

local function late_charge(keys, args)
    local p, booking_id, bk, b = load_booking(keys, args)
    if not p then
        return booking_id -- the error reply
    end
    if b.status ~= 'FAILED' then
        return fail('STATE', b.status)
    end
    if not b.refund and (args[2] or '') ~= '' then
        redis.call('HSET', bk, 'lateCharge', args[2], 'refundStatus', 'pending')
        redis.call('ZADD', p .. ':refunds', now_ms(), booking_id)
        b.refundStatus = 'pending'
    end
    redis.call('ZREM', p .. ':failed', booking_id)
    return {'bookingId', booking_id, 'status', b.status, 'refundStatus', b.refundStatus or ''}
end

local function late_clear(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local booking_id = args[1] or ''
    if booking_id == '' then
        return fail('INVAL', 'booking id')
    end
    redis.call('ZREM', p .. ':failed', booking_id)
    return {'bookingId', booking_id,
        'status', redis.call('HGET', p .. ':booking:' .. booking_id, 'status') or ''}
end

local function attempt(keys, args)
    local k = keys[1]
    if args[1] == 'give' then
        local n = tonumber(redis.call('GET', k) or '0')
        if n > 1 then
            redis.call('DECR', k)
        elseif n == 1 then
            redis.call('DEL', k) -- back to nothing: a refused request leaves no trace
        end
        return {'ok', '1', 'count', tostring(n > 0 and n - 1 or 0), 'retryAfterMs', '0'}
    end
    local cap, window = tonumber(args[2]), tonumber(args[3])
    if args[1] ~= 'take' or not cap or cap < 1 or not window or window < 1 then
        return fail('INVAL', 'attempt')
    end
    local ok, n, ttl = counter_take(k, cap, window)
    return {'ok', ok and '1' or '0', 'count', tostring(n), 'retryAfterMs', tostring(ttl)}
end

redis.register_function{function_name='seatd_late_charge', callback=late_charge}
redis.register_function{function_name='seatd_late_clear', callback=late_clear}
redis.register_function{function_name='seatd_attempt', callback=attempt}
