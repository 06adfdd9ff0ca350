--[[
cancel.lua - seatd_cancel: a CONFIRMED booking is cancelled; its seats become AVAILABLE.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  ARGV[2]  owner ("" = any owner: operator or reconciliation)
  ARGV[3]  refund (integer, minor units)
  Effects: booked bits cleared, booking CANCELLED (refund, cancelledAt, cancelVersion),
  owner's "booked" count decreased, version + delta ("available"), one "booking.cancelled"
  stream entry. Cancelling again answers the same; the refund is recorded once.
  Returns  {"bookingId", id, "status", "CANCELLED", "refund", n, "version", v}
  Errors   NOTFOUND (missing, or another owner's), STATE <status>, INVAL
]]

local function cancel(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local booking_id, owner = args[1] or '', args[2] or ''
    local refund = tonumber(args[3])
    local bk = p .. ':booking:' .. booking_id
    local b = hgetall(bk)
    if not b or (owner ~= '' and b.owner ~= owner) then
        return fail('NOTFOUND', args[1] or '?')
    end
    if b.status == 'CANCELLED' then
        return {'bookingId', booking_id, 'status', 'CANCELLED', 'refund', b.refund,
            'version', b.cancelVersion}
    end
    if b.status ~= 'CONFIRMED' then
        return fail('STATE', b.status)
    end
    if not refund or refund < 0 then
        return fail('INVAL', 'refund')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    local seats = split_commas(b.seatIds)
    for _, seat in ipairs(seats) do
        local i = tonumber(redis.call('HGET', p .. ':idx', seat))
        if i and redis.call('SETBIT', p .. ':booked', i, 0) == 1 then
            changes[#changes + 1] = {seat, 'available'}
        end
    end
    redis.call('HINCRBY', p .. ':user:' .. b.owner, 'booked', -#seats)
    local v = flush(p, changes)
    redis.call('HSET', bk, 'status', 'CANCELLED', 'refund', args[3], 'cancelledAt', now,
        'cancelVersion', v)
    redis.call('XADD', p .. ':bookings', '*', 'type', 'booking.cancelled',
        'bookingId', booking_id, 'showId', b.showId, 'owner', b.owner, 'seatIds', b.seatIds,
        'refund', args[3], 'version', v, 'at', now)
    return {'bookingId', booking_id, 'status', 'CANCELLED', 'refund', args[3],
        'version', tostring(v)}
end

redis.register_function{function_name='seatd_cancel', callback=cancel}
