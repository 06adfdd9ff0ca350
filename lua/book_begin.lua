--[[
book_begin.lua - seatd_book_begin: HELD -> PENDING_PAYMENT, and the booking is created.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  hold id
  ARGV[2]  owner
  ARGV[3]  booking id (fresh, "<showId>-b<hex>")
  ARGV[4]  amount (integer, minor units)
  ARGV[5]  currency
  ARGV[6]  payment method
  ARGV[7]  payment window (ms, > 0)
  One live booking per hold: while the hold has a PENDING_PAYMENT or CONFIRMED booking, a
  repeat answers that booking with replayed=1. Seat keys and the hold's deadline move to
  max(deadline, now + window); the original deadline is kept as heldUntil for book_fail.
  No seat changes state, so the version does not move (reaping aside).
  Returns  {"bookingId", id, "holdId", id, "showId", id, "status", "PENDING_PAYMENT"|…,
            "amount", n, "seatIds", "A1,A2", "expiresAt", ms, "replayed", "0"|"1"}
  Errors   NOTFOUND (missing, or another owner's), EXPIRED (deadline passed or a seat key
           lost), STATE <status> (released, booked and cancelled), INVAL <why>
]]

local BOOK_FIELDS = {'bookingId', 'holdId', 'showId', 'status', 'amount', 'seatIds',
    'expiresAt', 'replayed'}

local function book_begin(keys, args)
    local p, show_id = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local hold_id, owner, booking_id = args[1] or '', args[2] or '', args[3] or ''
    local amount, window = tonumber(args[4]), tonumber(args[7])
    if booking_id == '' or not amount or amount < 0 or not window or window <= 0 then
        return fail('INVAL', 'booking id, amount and window')
    end
    local hk = p .. ':hold:' .. hold_id
    local h = hgetall(hk)
    if not h or h.owner ~= owner then
        return fail('NOTFOUND', args[1] or '?')
    end
    if h.bookingId and h.bookingId ~= '' then
        local b = hgetall(p .. ':booking:' .. h.bookingId)
        if b and (b.status == 'PENDING_PAYMENT' or b.status == 'CONFIRMED') then
            b.replayed = '1'
            b.expiresAt = h.expiresAt
            return reply_fields(b, BOOK_FIELDS)
        end
    end
    if redis.call('EXISTS', p .. ':booking:' .. booking_id) == 1 then
        return fail('INVAL', 'booking id in use')
    end
    local now = now_ms()
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    reap_hold(p, hold_id, now, changes)
    h.status = redis.call('HGET', hk, 'status')
    if h.status == 'EXPIRED' then
        return fail_flush(p, changes, 'EXPIRED', hold_id)
    end
    if h.status ~= 'HELD' then
        return fail_flush(p, changes, 'STATE', h.status)
    end
    if not seats_still_named(p, hold_id, h) then
        return fail_flush(p, changes, 'EXPIRED', 'seat lost')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local held_until = tonumber(h.expiresAt)
    local deadline = math.max(held_until, now + window)
    redis.call('HSET', p .. ':booking:' .. booking_id, 'bookingId', booking_id, 'showId', show_id,
        'holdId', hold_id, 'owner', owner, 'seatIds', h.seats, 'amount', args[4],
        'currency', args[5] or '', 'paymentMethod', args[6] or '', 'status', 'PENDING_PAYMENT',
        'createdAt', now)
    for _, seat in ipairs(split_commas(h.seats)) do
        redis.call('PEXPIREAT', p .. ':seat:' .. seat, deadline)
    end
    redis.call('ZADD', p .. ':expiry', deadline, hold_id)
    redis.call('HSET', hk, 'status', 'PENDING_PAYMENT', 'bookingId', booking_id,
        'heldUntil', held_until, 'expiresAt', deadline)
    flush(p, changes)
    return {'bookingId', booking_id, 'holdId', hold_id, 'showId', show_id,
        'status', 'PENDING_PAYMENT', 'amount', args[4], 'seatIds', h.seats,
        'expiresAt', tostring(deadline), 'replayed', '0'}
end

redis.register_function{function_name='seatd_book_begin', callback=book_begin}
