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
  A group hold's id ("<first>-m…", groups.lua) as ARGV[1], with ARGV[4] "": one payment for
  every show's hold (group_book_begin below): the reply adds "members" (lib.lua, members_reply),
  "seatIds" is "" and "amount" the sum; a refusal names the show ("EXPIRED show=43 …").
  Errors   NOTFOUND (missing, or another owner's), EXPIRED (deadline reached or a seat key
           lost), STATE <status> (released, booked and cancelled), SALES_CLOSED <ms>,
           RATELIMIT <ms>, INVAL <why>, UNPRICED <show> (ARGV[4] "" and the show has no
           seat tiers stored: seatd_show_tiers_put, then again), INTERNAL (a seat without a
           price)
]]

local BOOK_FIELDS = {'bookingId', 'holdId', 'showId', 'status', 'amount', 'seatIds',
    'expiresAt', 'replayed', 'areas', 'members'}

-- A live booking of hold record 'h' of show 'p' (PENDING_PAYMENT or CONFIRMED), or nil.
local function live_booking(p, h)
    if not h.bookingId or h.bookingId == '' then
        return nil
    end
    local b = hgetall(p .. ':booking:' .. h.bookingId)
    if b and (b.status == 'PENDING_PAYMENT' or b.status == 'CONFIRMED') then
        return b
    end
    return nil
end

-- Whether hold 'hold_id' (record 'h') of show 'p' (meta key 'meta_key') may begin a booking
-- now: sales open, not expired (due holds of the show reaped into 'changes'), HELD, every
-- seat key still its own. Returns nil, or the error word and detail. Writes nothing but the
-- reaping.
local function begin_check(p, meta_key, hold_id, h, now, changes)
    local meta = redis.call('HMGET', meta_key, 'startsAt', 'salesCloseAt')
    local close = sales_close(meta[1], meta[2])
    if close and now >= close then
        return 'SALES_CLOSED', tostring(close)
    end
    reap_due(p, now, REAP_BATCH, changes)
    reap_hold(p, hold_id, now, changes)
    h.status = redis.call('HGET', p .. ':hold:' .. hold_id, 'status')
    if h.status == 'EXPIRED' then
        return 'EXPIRED', hold_id
    end
    if h.status ~= 'HELD' then
        return 'STATE', h.status
    end
    if not seats_still_named(p, hold_id, h) then
        return 'EXPIRED', 'seat lost'
    end
    return nil
end

-- Begins booking 'booking_id' of hold 'hold_id' (record 'h', checked by begin_check) in show
-- 'p': the record (PENDING_PAYMENT, 'paid_by' the group payment that charges it, or nil),
-- {s}:pending, the hold PENDING_PAYMENT and its seat keys extended to the payment window.
-- 'o' = {owner, amount, currency, method, window, now}. Cannot fail. Returns the deadline.
local function begin_apply(p, show_id, hold_id, h, booking_id, o, paid_by)
    local held_until = tonumber(h.expiresAt)
    local deadline = math.max(held_until, o.now + o.window)
    redis.call('HSET', p .. ':booking:' .. booking_id, 'bookingId', booking_id,
        'showId', show_id, 'holdId', hold_id, 'owner', o.owner, 'seatIds', h.seats,
        'bits', h.bits or '', 'areas', h.areas or '', 'kept', h.kept or '',
        'amount', string.format('%d', o.amount), 'currency', o.currency,
        'paymentMethod', o.method, 'status', 'PENDING_PAYMENT', 'createdAt', o.now)
    if paid_by then
        redis.call('HSET', p .. ':booking:' .. booking_id, 'paidBy', paid_by)
    end
    redis.call('ZADD', p .. ':pending', o.now, booking_id)
    if deadline > held_until then
        -- Only a longer deadline is written: the seat keys already end with held_until, and
        -- then now + window - 1 >= held_until > now, so no key is given a past deadline
        -- (which PEXPIREAT would turn into a delete).
        for _, seat in ipairs(split_commas(h.seats)) do
            redis.call('PEXPIREAT', p .. ':seat:' .. seat, seat_deadline(deadline))
        end
    end
    redis.call('ZADD', p .. ':expiry', deadline, hold_id)
    redis.call('HSET', p .. ':hold:' .. hold_id, 'status', 'PENDING_PAYMENT',
        'bookingId', booking_id, 'heldUntil', held_until, 'expiresAt', deadline)
    return deadline
end

-- The decline cap of ARGV[8..9] (nil when none), or the error reply.
local function decline_cap(args)
    local cap, cap_window = tonumber(args[8] or ''), tonumber(args[9] or '')
    if (args[8] or '') ~= '' and (not cap or cap < 1 or not cap_window or cap_window < 1) then
        return nil, fail('INVAL', 'decline cap and window')
    end
    return cap and {cap, cap_window} or nil
end

-- seatd_book_begin for group hold 'hold_id' ("<first>-m…", groups.lua): one payment for every
-- show's hold (lib.lua, payment_members). Every hold is checked as a single one would be, and
-- only when all passed is a booking begun in each show (its id "<show>-b" + 20 hex of
-- SHA1(payment id, show): unique as the payment's own) and the payment record written; a
-- refusal names its show ("STATE show=43 BOOKED"), nothing begun. A show's hold booked on its
-- own makes the group hold's payment STATE.
local function group_book_begin(p, first, keys, args, cap)
    local hold_id, owner, pay_id = args[1], args[2], args[3]
    local gk = p .. ':ghold:' .. hold_id
    local g = hgetall(gk)
    if not g or g.owner ~= owner then
        return fail('NOTFOUND', hold_id)
    end
    local began = live_booking(p, g) -- the group hold's payment already began: answer it
    if began then
        began.replayed = '1'
        began.expiresAt = began.expiresAt or ''
        began.members = members_reply(began)
        return reply_fields(began, BOOK_FIELDS)
    end
    if args[4] ~= '' then
        return fail('INVAL', 'a group payment is priced here')
    end
    if redis.call('EXISTS', p .. ':booking:' .. pay_id) == 1 then
        return fail('INVAL', 'booking id in use')
    end
    local now = now_ms()
    local shows, total = {}, 0
    -- A refusal after some shows were looked at: their reaping is published, then the error.
    -- RATELIMIT and UNPRICED keep their detail as a single hold's (the worker reads it).
    local function give_up(show, word, detail)
        flush_each(shows)
        if word == 'RATELIMIT' or word == 'UNPRICED' then
            return fail(word, detail)
        end
        return fail(word, 'show=' .. show .. ' ' .. (detail or ''))
    end
    for show, hid in string.gmatch(g.holds or '', '(%d+):([^,]+)') do
        local sp = '{s:' .. show .. '}'
        local s = {show = show, p = sp, hold_id = hid, changes = {},
            h = hgetall(sp .. ':hold:' .. hid)}
        shows[#shows + 1] = s
        if not s.h then
            return give_up(show, 'EXPIRED', hid)
        end
        if live_booking(sp, s.h) then
            return give_up(show, 'STATE', 'BOOKED')
        end
        local amount, why = price_seats(sp, sp .. ':meta', s.h.bits, s.h.areas)
        if not amount then
            return give_up(show, why, why == 'UNPRICED' and show or 'a seat has no price')
        end
        s.amount, total = amount, total + amount
        local word, detail = begin_check(sp, sp .. ':meta', hid, s.h, now, s.changes)
        if word then
            return give_up(show, word, detail)
        end
    end
    if #shows == 0 then
        return fail('NOTFOUND', hold_id)
    end
    if cap then
        local ok, _, retry = counter_take(p .. ':declines:' .. hold_id, cap[1], cap[2])
        if not ok then
            return give_up(first, 'RATELIMIT', tostring(retry))
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local members, deadline = {}, nil
    for _, s in ipairs(shows) do
        local id = s.show .. '-b' .. string.sub(redis.sha1hex(pay_id .. ':' .. s.show), 1, 20)
        local d = begin_apply(s.p, s.show, s.hold_id, s.h, id, {owner = owner,
            amount = s.amount, currency = args[5] or '', method = args[6] or '',
            window = tonumber(args[7]), now = now}, pay_id)
        deadline = deadline and math.min(deadline, d) or d
        members[#members + 1] = s.show .. ':' .. id
        flush(s.p, s.changes)
    end
    local b = {bookingId = pay_id, showId = first, holdId = hold_id, owner = owner,
        seatIds = '', amount = string.format('%d', total), currency = args[5] or '',
        paymentMethod = args[6] or '', status = 'PENDING_PAYMENT', createdAt = tostring(now),
        members = table.concat(members, ','), expiresAt = tostring(deadline)}
    local flat = {}
    for k, v in pairs(b) do
        flat[#flat + 1] = k
        flat[#flat + 1] = v
    end
    redis.call('HSET', p .. ':booking:' .. pay_id, unpack(flat))
    redis.call('ZADD', p .. ':pending', now, pay_id)
    redis.call('HSET', gk, 'bookingId', pay_id)
    b.replayed = '0'
    b.members = members_reply(b)
    return reply_fields(b, BOOK_FIELDS)
end

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
    local cap, err = decline_cap(args)
    if err then
        return err
    end
    if string.match(hold_id, '^%d+%-m%x+$') then
        return group_book_begin(p, show_id, keys, args, cap)
    end
    local hk = p .. ':hold:' .. hold_id
    local h = hgetall(hk)
    if not h or h.owner ~= owner then
        return fail('NOTFOUND', args[1] or '?')
    end
    local live = live_booking(p, h)
    if live then
        live.replayed = '1'
        live.expiresAt = h.expiresAt
        return reply_fields(live, BOOK_FIELDS)
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
    local changes = {}
    local word, detail = begin_check(p, keys[1], hold_id, h, now, changes)
    if word then
        return fail_flush(p, changes, word, detail)
    end
    if cap then -- the last check: a count taken is always followed by the begin
        local ok, _, retry = counter_take(p .. ':declines:' .. hold_id, cap[1], cap[2])
        if not ok then
            return fail_flush(p, changes, 'RATELIMIT', tostring(retry))
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local deadline = begin_apply(p, show_id, hold_id, h, booking_id, {owner = owner,
        amount = amount, currency = args[5] or '', method = args[6] or '', window = window,
        now = now})
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
    local seen = {}
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. ':pending', '-inf', cutoff,
        'LIMIT', 0, max)) do
        -- a group payment's member is settled by settling its payment (book_confirm)
        id = redis.call('HGET', p .. ':booking:' .. id, 'paidBy') or id
        if not seen[id] then
            seen[id] = true
            out[#out + 1] = 'booking'
            out[#out + 1] = id
        end
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
