--[[
cancel.lua - seatd_cancel: a CONFIRMED booking is cancelled; its seats become AVAILABLE.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  ARGV[2]  owner ("" = any owner: operator or reconciliation)
  ARGV[3]  refund: an integer (minor units, given by an operator), or "policy": the refund is
           the booking's amount (the price charged, stored on it) times the percentage of the
           show's tiered policy for the time left before startsAt, on Redis's clock (TIME).
           The policy is the show's meta extra "refundPolicy" ([{"beforeSeconds":s,
           "percent":p},…]; the tier with the largest s <= time left wins) or, without one, the
           default: >= 2 h -> 100 %, >= 30 min -> 50 %, else 0.
  Effects: booked bits cleared (the booking's 'bits', copied from its hold), booking CANCELLED (refund, refundPercent, cancelledAt,
  cancelVersion, refundStatus "pending" or "none"), owner's "booked" count decreased,
  version + delta ("available"), one "booking.cancelled" stream entry; a refund > 0 enters
  {s}:refunds (bookingId -> ms) until seatd_refund_done records it, so reconciliation can
  retry a refund the gateway never confirmed. Cancelling again answers the same; the refund
  is decided once.
  Returns  {"bookingId", id, "status", "CANCELLED", "refund", n, "version", v,
            "paymentRef", ref, "refundStatus", "pending"|"succeeded"|"none"}
  Errors   NOTFOUND (missing, or another owner's), STATE <status>, INVAL

seatd_refund_done: the gateway confirmed a cancelled booking's refund.
  KEYS[1]  {s:<id>}:meta   ARGV[1] booking id   ARGV[2] refund reference
  Effects: refundStatus "succeeded", refundRef, refundedAt; leaves {s}:refunds. Idempotent.
  Returns  {"bookingId", id, "refundStatus", "succeeded"}   Errors NOTFOUND, STATE <status>
]]

local DEFAULT_REFUND_POLICY = {{beforeSeconds = 7200, percent = 100},
    {beforeSeconds = 1800, percent = 50}}

-- The refund percentage for 'left_ms' before the show under the show's meta 'extra' JSON.
local function refund_percent(extra, left_ms)
    local policy = DEFAULT_REFUND_POLICY
    if extra and extra ~= '' then
        local ok, x = pcall(cjson.decode, extra)
        if ok and type(x) == 'table' and type(x.refundPolicy) == 'table' then
            policy = x.refundPolicy
        end
    end
    local tiers = {}
    for _, tier in ipairs(policy) do
        local before, pct = tonumber(tier.beforeSeconds), tonumber(tier.percent)
        if before and pct then
            tiers[#tiers + 1] = {before, pct}
        end
    end
    table.sort(tiers, function(a, b) return a[1] > b[1] end)
    for _, tier in ipairs(tiers) do
        if left_ms >= tier[1] * 1000 then
            return math.max(0, math.min(100, math.floor(tier[2])))
        end
    end
    return 0
end

local function cancel(keys, args)
    local owner = args[2] or ''
    local p, booking_id, bk, b = load_booking(keys, args, owner)
    if not p then
        return booking_id -- the error reply
    end
    if b.status == 'CANCELLED' then
        return {'bookingId', booking_id, 'status', 'CANCELLED', 'refund', b.refund,
            'version', b.cancelVersion, 'paymentRef', b.paymentRef or '',
            'refundStatus', b.refundStatus or ''}
    end
    if b.status ~= 'CONFIRMED' then
        return fail('STATE', b.status)
    end
    if b.members then -- a group payment: each show's booking is cancelled by its own policy
        return fail('STATE', 'PAYMENT')
    end
    local now = now_ms()
    local refund, percent
    if args[3] == 'policy' then
        local starts = tonumber(redis.call('HGET', keys[1], 'startsAt') or '0') or 0
        percent = refund_percent(redis.call('HGET', keys[1], 'extra'), starts - now)
        refund = math.floor((tonumber(b.amount) or 0) * percent / 100)
    else
        refund = tonumber(args[3])
        if not refund or refund < 0 or refund ~= math.floor(refund) then
            return fail('INVAL', 'refund')
        end
        percent = ''
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    local seats, bits = seats_bits(b.seatIds, b.bits)
    for k, seat in ipairs(seats) do
        local i = bits[k]
        if i and redis.call('SETBIT', p .. ':booked', i, 0) == 1 then
            changes[#changes + 1] = {seat, freed_status(p, i)}
        end
    end
    areas_give_back(p, b.areas, changes)
    kept_give_back(p, b.kept, changes)
    redis.call('HINCRBY', p .. ':user:' .. b.owner, 'booked', -(#seats + area_places(b.areas)))
    local v = flush(p, changes)
    local refund_status = 'none'
    if refund > 0 then
        refund_status = 'pending'
        redis.call('ZADD', p .. ':refunds', now, booking_id)
    end
    local rtext = string.format('%d', refund)
    redis.call('HSET', bk, 'status', 'CANCELLED', 'refund', rtext, 'refundPercent',
        tostring(percent), 'cancelledAt', now, 'cancelVersion', v, 'refundStatus', refund_status)
    redis.call('XADD', p .. ':bookings', '*', 'type', 'booking.cancelled',
        'bookingId', booking_id, 'showId', b.showId, 'owner', b.owner, 'seatIds', b.seatIds,
        'areas', b.areas or '', 'refund', rtext, 'version', v, 'at', now)
    return {'bookingId', booking_id, 'status', 'CANCELLED', 'refund', rtext,
        'version', tostring(v), 'paymentRef', b.paymentRef or '', 'refundStatus', refund_status}
end

local function refund_done(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local booking_id = args[1] or ''
    local bk = p .. ':booking:' .. booking_id
    local st = redis.call('HGET', bk, 'status')
    if not st then
        return fail('NOTFOUND', booking_id)
    end
    if st ~= 'CANCELLED' then
        return fail('STATE', st)
    end
    if redis.call('HGET', bk, 'refundStatus') ~= 'succeeded' then
        redis.call('HSET', bk, 'refundStatus', 'succeeded', 'refundRef', args[2] or '',
            'refundedAt', now_ms())
    end
    redis.call('ZREM', p .. ':refunds', booking_id)
    return {'bookingId', booking_id, 'refundStatus', 'succeeded'}
end

redis.register_function{function_name='seatd_cancel', callback=cancel}
redis.register_function{function_name='seatd_refund_done', callback=refund_done}
