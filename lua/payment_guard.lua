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

seatd_book_lost: a succeeded charge whose booking does not exist in its show (lost with a
primary that was cut off, or died, before the booking reached a replica: the gateway's ledger
is the backstop, docs/durability.md): the booking's record is written, FAILED, with the refund
it is owed, before the refund is asked for, so that its buyer sees what happened (GET
/v1/bookings/{id}: FAILED, refundStatus "pending", then "succeeded" once seatd_book_fail records
the refund) and reconciliation retries the refund from {s}:refunds until it is recorded.
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id (the charge's idempotency key)
  ARGV[2]  the charge's id at the gateway
  ARGV[3]  amount charged (integer, minor units)
  ARGV[4]  currency
  ARGV[5]  owner, ARGV[6] hold id, ARGV[7] seat ids comma-joined: the charge's metadata ("" when
           the gateway has none)
  Effects: only when no booking has that id: the booking, status FAILED, reason
  "lost_in_failover", lateCharge = the charge, refundStatus "pending", createdAt = failedAt =
  now; it enters {s}:refunds. No seat changes (the lost booking's seats are whatever the
  surviving state says). An existing booking is answered as it is, unchanged.
  Returns  {"bookingId", id, "status", status, "refundStatus", rs, "created", "0"|"1"}
  Errors   INVAL

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

local function book_lost(keys, args)
    local p, show_id = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local booking_id, charge = args[1] or '', args[2] or ''
    local amount = tonumber(args[3] or '')
    if booking_id == '' or charge == '' or not amount or amount < 1 then
        return fail('INVAL', 'booking id, charge and amount')
    end
    local bk = p .. ':booking:' .. booking_id
    local b = hgetall(bk)
    if b then
        return {'bookingId', booking_id, 'status', b.status or '',
            'refundStatus', b.refundStatus or '', 'created', '0'}
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    redis.call('HSET', bk, 'bookingId', booking_id, 'showId', show_id, 'holdId', args[6] or '',
        'owner', args[5] or '', 'seatIds', args[7] or '', 'amount', tostring(amount),
        'currency', args[4] or '', 'status', 'FAILED', 'reason', 'lost_in_failover',
        'createdAt', now, 'failedAt', now, 'lateCharge', charge, 'refundStatus', 'pending')
    redis.call('ZADD', p .. ':refunds', now, booking_id)
    return {'bookingId', booking_id, 'status', 'FAILED', 'refundStatus', 'pending',
        'created', '1'}
end

redis.register_function{function_name='seatd_late_charge', callback=late_charge}
redis.register_function{function_name='seatd_book_lost', callback=book_lost}
redis.register_function{function_name='seatd_late_clear', callback=late_clear}
redis.register_function{function_name='seatd_attempt', callback=attempt}
