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
  Confirming again answers the same. A group payment (lib.lua, payment_members) confirms
  every member in this one step, or none (EXPIRED "show=<id> …": the charge goes back whole).
  Returns  the booking as seatd_booking_get answers it (lib.lua, booking_reply): status
           CONFIRMED, version the seat map version that shows it booked; so that the worker
           answers the buyer without reading it again
  Errors   NOTFOUND, EXPIRED (deadline passed or a seat key lost), STATE <status>
]]

-- Whether booking 'b' (PENDING_PAYMENT) of show 'p' can be confirmed now: its hold not
-- expired (due holds reaped into 'changes'), PENDING_PAYMENT for it, every seat key its
-- own. Returns the hold record, or nil and the error word and detail.
local function confirm_check(p, booking_id, b, now, changes)
    reap_due(p, now, REAP_BATCH, changes)
    reap_hold(p, b.holdId, now, changes)
    local h = hgetall(p .. ':hold:' .. b.holdId)
    if not h or h.status == 'EXPIRED' then
        return nil, 'EXPIRED', b.holdId
    end
    if h.status ~= 'PENDING_PAYMENT' or h.bookingId ~= booking_id then
        return nil, 'STATE', h.status
    end
    if not seats_still_named(p, b.holdId, h) then
        return nil, 'EXPIRED', 'seat lost'
    end
    return h
end

-- Confirms booking 'b' (record key 'bk') of show 'p', checked by confirm_check (hold 'h'),
-- paid by charge 'ref': seats BOOKED, the hold BOOKED, the booking CONFIRMED, the delta and
-- the outbox's event. Cannot fail. Updates 'b' as written.
local function confirm_apply(p, bk, booking_id, b, h, ref, now, changes)
    local hold_id = b.holdId
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
    redis.call('HSET', p .. ':hold:' .. hold_id, 'status', 'BOOKED')
    redis.call('PEXPIRE', p .. ':hold:' .. hold_id, RETENTION_MS)
    redis.call('ZREM', p .. ':expiry', hold_id)
    local uk = p .. ':user:' .. h.owner
    redis.call('HDEL', uk, hold_id)
    redis.call('HINCRBY', uk, 'booked', #seats + area_places(h.areas))
    local v = flush(p, changes)
    redis.call('HSET', bk, 'status', 'CONFIRMED', 'paymentRef', ref, 'confirmedAt', now,
        'version', v)
    redis.call('ZREM', p .. ':pending', booking_id)
    redis.call('XADD', p .. ':bookings', '*', 'type', 'booking.confirmed',
        'bookingId', booking_id, 'showId', b.showId, 'holdId', hold_id, 'owner', b.owner,
        'seatIds', b.seatIds, 'areas', b.areas or '', 'amount', b.amount,
        'currency', b.currency or '', 'paymentRef', ref, 'version', v, 'at', now)
    b.status, b.paymentRef = 'CONFIRMED', ref
    b.confirmedAt, b.version = string.format('%d', now), string.format('%d', v)
end

-- A group payment (lib.lua, payment_members): every member is checked as a single booking
-- would be, and only when all passed are they confirmed, each in its show (its version, its
-- delta, its event); a member that cannot be confirmed makes the payment EXPIRED (the worker
-- refunds the charge whole, then fails it: seatd_book_fail), nothing confirmed.
local function confirm_payment(keys, p, booking_id, bk, b, ref, now)
    local ms = payment_members(b)
    for _, m in ipairs(ms) do
        m.changes = {}
        m.b = hgetall(m.bk)
        local word, detail
        if not m.b or m.b.status ~= 'PENDING_PAYMENT' then
            word, detail = 'EXPIRED', 'show=' .. m.show .. ' ' .. ((m.b and m.b.status) or '')
        else
            m.h, word, detail = confirm_check(m.p, m.id, m.b, now, m.changes)
            detail = 'show=' .. m.show .. ' ' .. (detail or '')
        end
        if word then
            flush_each(ms)
            return fail(word == 'STATE' and 'EXPIRED' or word, detail)
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    for _, m in ipairs(ms) do
        confirm_apply(m.p, m.bk, m.id, m.b, m.h, ref, now, m.changes)
    end
    redis.call('HSET', bk, 'status', 'CONFIRMED', 'paymentRef', ref, 'confirmedAt', now)
    redis.call('ZREM', p .. ':pending', booking_id)
    b.status, b.paymentRef, b.confirmedAt = 'CONFIRMED', ref, string.format('%d', now)
    return booking_reply(keys[1], b)
end

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
    if (b.paidBy or '') ~= '' then -- settled only with its payment, all shows at once
        return fail('INVAL', 'a group payment\'s booking: settle ' .. b.paidBy)
    end
    local now = now_ms()
    if b.members then
        return confirm_payment(keys, p, booking_id, bk, b, args[2] or '', now)
    end
    local changes = {}
    local h, word, detail = confirm_check(p, booking_id, b, now, changes)
    if not h then
        return fail_flush(p, changes, word, detail)
    end

    ------------------------------------------------------------------ effects (cannot fail)
    confirm_apply(p, bk, booking_id, b, h, args[2] or '', now, changes)
    -- The record as just written: 'b' with the fields this script set (no second read).
    return booking_reply(keys[1], b)
end

redis.register_function{function_name='seatd_book_confirm', callback=book_confirm}
