--[[
book_begin.lua - seatd_book_begin: HELD -> PENDING_PAYMENT, and the booking is created.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  hold id
  ARGV[2]  owner
  ARGV[3]  booking id (fresh, "<showId>-b<hex>")
  ARGV[4]  amount (integer, minor units), or "": priced here, each seat at its tier's price
           (lib.lua, price_seats: the show's {s}:tiers and priceTiers), so that the worker
           books without reading the hold and the show first
  ARGV[5]  currency
  ARGV[6]  payment method
  ARGV[7]  payment window (ms, > 0)
  ARGV[8]  optional: the hold's decline cap (attempts; "" or absent: none), and
  ARGV[9]  its window (ms): a booking that begins counts one attempt in
           {s}:declines:<holdId> (seatd_attempt's counter, which the worker gives back when
           the charge is approved or never made); a replay counts nothing, so that retries
           of one booking sent at once are not taken for card testing. Over the cap:
           RATELIMIT <ms until the window ends>, nothing begun.
  One live booking per hold: while the hold has a PENDING_PAYMENT or CONFIRMED booking, a
  repeat answers that booking with replayed=1. Seat keys and the hold's deadline move to
  max(deadline, now + window); the original deadline is kept as heldUntil for book_fail.
  No seat changes state, so the version does not move (reaping aside).
  The booking copies the hold's seat bits ('bits', aligned with seatIds) for cancel, and its
  places in standing areas ('areas', priced at their area's tier).
  The booking enters the show's pending index {s}:pending (bookingId -> started ms), which
  book_confirm and book_fail leave; reconciliation reads it (seatd_pending_due).
  Returns  {"bookingId", id, "holdId", id, "showId", id, "status", "PENDING_PAYMENT"|…,
            "amount", n, "seatIds", "A1,A2", "expiresAt", ms, "replayed", "0"|"1"}
  Sales close (the show's salesCloseAt, else startsAt, on Redis's TIME) is checked after the
  replay and before any write: from then on no new booking starts (SALES_CLOSED <close ms>);
  a booking already begun keeps its payment window. A hold is expired AT its expiresAt.
  Errors   NOTFOUND (missing, or another owner's), EXPIRED (deadline reached or a seat key
           lost), STATE <status> (released, booked and cancelled), SALES_CLOSED <ms>,
           RATELIMIT <ms>, INVAL <why>, UNPRICED <show> (ARGV[4] "" and the show has no
           seat tiers stored: seatd_show_tiers_put, then again), INTERNAL (a seat without a
           price)
]]

local BOOK_FIELDS = {'bookingId', 'holdId', 'showId', 'status', 'amount', 'seatIds',
    'expiresAt', 'replayed', 'areas'}

local function book_begin(keys, args)
    local p, show_id = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local hold_id, owner, booking_id = args[1] or '', args[2] or '', args[3] or ''
    local amount, window = tonumber(args[4]), tonumber(args[7])
    if booking_id == '' or (args[4] ~= '' and (not amount or amount < 0)) or not window
        or window <= 0 then
        return fail('INVAL', 'booking id, amount and window')
    end
    local cap, cap_window = tonumber(args[8] or ''), tonumber(args[9] or '')
    if (args[8] or '') ~= '' and (not cap or cap < 1 or not cap_window or cap_window < 1) then
        return fail('INVAL', 'decline cap and window')
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
    if args[4] == '' then
        local why
        amount, why = price_seats(p, keys[1], h.bits, h.areas)
        if not amount then
            return fail(why, why == 'UNPRICED' and show_id or 'a seat has no price')
        end
    end
    local now = now_ms()
    local meta = redis.call('HMGET', keys[1], 'startsAt', 'salesCloseAt')
    local close = sales_close(meta[1], meta[2])
    if close and now >= close then
        return fail('SALES_CLOSED', tostring(close))
    end
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
    if cap then -- the last check: a count taken is always followed by the begin
        local ok, _, retry = counter_take(p .. ':declines:' .. hold_id, cap, cap_window)
        if not ok then
            return fail_flush(p, changes, 'RATELIMIT', tostring(retry))
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local held_until = tonumber(h.expiresAt)
    local deadline = math.max(held_until, now + window)
    redis.call('HSET', p .. ':booking:' .. booking_id, 'bookingId', booking_id, 'showId', show_id,
        'holdId', hold_id, 'owner', owner, 'seatIds', h.seats, 'bits', h.bits or '',
        'areas', h.areas or '', 'kept', h.kept or '',
        'amount', string.format('%d', amount),
        'currency', args[5] or '', 'paymentMethod', args[6] or '', 'status', 'PENDING_PAYMENT',
        'createdAt', now)
    redis.call('ZADD', p .. ':pending', now, booking_id)
    if deadline > held_until then
        -- Only a longer deadline is written: the seat keys already end with held_until, and
        -- then now + window - 1 >= held_until > now, so no key is given a past deadline
        -- (which PEXPIREAT would turn into a delete).
        for _, seat in ipairs(split_commas(h.seats)) do
            redis.call('PEXPIREAT', p .. ':seat:' .. seat, seat_deadline(deadline))
        end
    end
    redis.call('ZADD', p .. ':expiry', deadline, hold_id)
    redis.call('HSET', hk, 'status', 'PENDING_PAYMENT', 'bookingId', booking_id,
        'heldUntil', held_until, 'expiresAt', deadline)
    flush(p, changes)
    return {'bookingId', booking_id, 'holdId', hold_id, 'showId', show_id,
        'status', 'PENDING_PAYMENT', 'amount', string.format('%d', amount), 'seatIds', h.seats,
        'expiresAt', tostring(deadline), 'replayed', '0', 'areas', h.areas or ''}
end

redis.register_function{function_name='seatd_book_begin', callback=book_begin}

--[[
seatd_pending_due (no-writes): what reconciliation has to settle in one show.
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  minimum age (ms): bookings PENDING_PAYMENT for at least this long (Redis clock)
  ARGV[2]  at most this many of each kind
  ARGV[3]  optional: the charge horizon (ms); without it no "late" entry is answered
  Returns  {"remaining", n, "booking", id, …, "refund", id, …, "late", id, …}: 'remaining'
           counts every entry of {s}:pending, {s}:refunds and {s}:failed (due or not);
           "booking" entries are due pending payments, "refund" entries cancelled bookings
           whose refund is not yet confirmed (due after the same age), "late" entries FAILED
           bookings of {s}:failed that began at least the charge horizon ago: the gateway is
           to be asked whether their charge landed after all.
]]
local function pending_due(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local age, max = tonumber(args[1]), tonumber(args[2])
    if not age or age < 0 or not max or max < 1 then
        return fail('INVAL', 'age and count')
    end
    local cutoff = now_ms() - age
    local horizon = tonumber(args[3] or '')
    if args[3] and args[3] ~= '' and (not horizon or horizon < 0) then
        return fail('INVAL', 'horizon')
    end
    local out = {'remaining', tostring(redis.call('ZCARD', p .. ':pending') +
        redis.call('ZCARD', p .. ':refunds') + redis.call('ZCARD', p .. ':failed'))}
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. ':pending', '-inf', cutoff,
        'LIMIT', 0, max)) do
        out[#out + 1] = 'booking'
        out[#out + 1] = id
    end
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. ':refunds', '-inf', cutoff,
        'LIMIT', 0, max)) do
        out[#out + 1] = 'refund'
        out[#out + 1] = id
    end
    if horizon then
        for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. ':failed', '-inf',
            now_ms() - horizon, 'LIMIT', 0, max)) do
            out[#out + 1] = 'late'
            out[#out + 1] = id
        end
    end
    return out
end

--[[
seatd_hint_clear: drops show ARGV[1] from the global hint set KEYS[1] (seatd:pending_shows:{hN},
a zset written by the workers) only if its score is still ARGV[2], i.e. no worker re-added
the show since the reconciler found it empty. Returns {"removed", 0|1}.
]]
local function hint_clear(keys, args)
    local score = redis.call('ZSCORE', keys[1], args[1] or '')
    if score and tonumber(score) == tonumber(args[2]) then
        redis.call('ZREM', keys[1], args[1])
        return {'removed', '1'}
    end
    return {'removed', '0'}
end

redis.register_function{function_name='seatd_pending_due', callback=pending_due,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_hint_clear', callback=hint_clear}
