--[[
book_confirm.lua - seatd_book_confirm: the payment succeeded; seats HELD -> BOOKED.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  ARGV[2]  payment reference
  Only if the booking is PENDING_PAYMENT, its hold is PENDING_PAYMENT for this booking, and
  every seat key still names the hold. Effects: seat keys deleted, held bits cleared, booked
  bits set (the bits of the hold record), booking CONFIRMED (paymentRef, confirmedAt, version), hold BOOKED, owner's hash:
  hold entry -> "booked" count; version + delta ("booked"); one "booking.confirmed" entry
  XADDed to {s}:bookings in the same script (the outbox); the booking leaves {s}:pending.
  Confirming again answers the same.
  Returns  the booking as seatd_booking_get answers it (lib.lua, booking_reply): status
           CONFIRMED, version the seat map version that shows it booked; so that the worker
           answers the buyer without reading it again
  Errors   NOTFOUND, EXPIRED (deadline passed or a seat key lost), STATE <status>
]]

local function book_confirm(keys, args)
    local p, booking_id, bk, b = load_booking(keys, args)
    if not p then
        return booking_id -- the error reply
    end
    if b.status == 'CONFIRMED' then
        return booking_reply(keys[1], b)
    end
    if b.status ~= 'PENDING_PAYMENT' then
        return fail('STATE', b.status)
    end
    local hold_id = b.holdId
    local hk = p .. ':hold:' .. hold_id
    local now = now_ms()
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    reap_hold(p, hold_id, now, changes)
    local h = hgetall(hk)
    if not h or h.status == 'EXPIRED' then
        return fail_flush(p, changes, 'EXPIRED', hold_id)
    end
    if h.status ~= 'PENDING_PAYMENT' or h.bookingId ~= booking_id then
        return fail_flush(p, changes, 'STATE', h.status)
    end
    if not seats_still_named(p, hold_id, h) then
        return fail_flush(p, changes, 'EXPIRED', 'seat lost')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local seats, bits = seats_bits(h.seats, h.bits)
    for k, seat in ipairs(seats) do
        local i = bits[k]
        redis.call('DEL', p .. ':seat:' .. seat)
        if i then
            redis.call('SETBIT', p .. ':held', i, 0)
            redis.call('SETBIT', p .. ':booked', i, 1)
        end
        changes[#changes + 1] = {seat, 'booked'}
    end
    redis.call('HSET', hk, 'status', 'BOOKED')
    redis.call('PEXPIRE', hk, RETENTION_MS)
    redis.call('ZREM', p .. ':expiry', hold_id)
    local uk = p .. ':user:' .. h.owner
    redis.call('HDEL', uk, hold_id)
    redis.call('HINCRBY', uk, 'booked', #seats + area_places(h.areas))
    local v = flush(p, changes)
    redis.call('HSET', bk, 'status', 'CONFIRMED', 'paymentRef', args[2] or '',
        'confirmedAt', now, 'version', v)
    redis.call('ZREM', p .. ':pending', booking_id)
    redis.call('XADD', p .. ':bookings', '*', 'type', 'booking.confirmed',
        'bookingId', booking_id, 'showId', b.showId, 'holdId', hold_id, 'owner', b.owner,
        'seatIds', b.seatIds, 'areas', b.areas or '', 'amount', b.amount, 'currency', b.currency or '',
        'paymentRef', args[2] or '', 'version', v, 'at', now)
    -- The record as just written: 'b' with the fields this script set (no second read).
    b.status, b.paymentRef = 'CONFIRMED', args[2] or ''
    b.confirmedAt, b.version = string.format('%d', now), string.format('%d', v)
    return booking_reply(keys[1], b)
end

redis.register_function{function_name='seatd_book_confirm', callback=book_confirm}
