--[[
book_fail.lua - seatd_book_fail: the payment failed; the hold goes back to HELD.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  booking id
  ARGV[2]  reason (short text)
  ARGV[3]  optional: amount refunded (integer, minor units) when a charge was given back
  ARGV[4]  optional: the refund's reference at the gateway
  ARGV[5]  optional: minimum age (ms since the booking began, Redis clock): a younger
           PENDING_PAYMENT booking is left as it is (the charge horizon of reconciliation: a
           charge the gateway does not know yet may still land) and answered unchanged
  Booking PENDING_PAYMENT -> FAILED (reason, failedAt). Unless a refund is recorded (the
  charge is known) or ARGV[5] is given (failed past the charge horizon: no charge can land
  any more), the booking moves from {s}:pending to {s}:failed (bookingId -> ms it began):
  its charge may still land, so reconciliation asks the gateway about it once the charge
  horizon has passed (seatd_pending_due; seatd_late_charge or seatd_late_clear end the
  watch). If its hold is still PENDING_PAYMENT for this booking: back to HELD with bookingId
  cleared and its seat keys' deadline restored to heldUntil; if heldUntil has come (or is 1 ms
  away) the hold ends EXPIRED instead (seat keys that still name it deleted, bits cleared,
  delta). The booking leaves {s}:pending; a refund is
  recorded as refund, refundRef, refundStatus "succeeded". Failing again answers the same,
  except that a refund given for an already FAILED booking (a charge that landed late) is
  recorded once (and the booking leaves {s}:refunds and {s}:failed, see seatd_late_charge).
  Returns  {"bookingId", id, "status", "FAILED", "holdStatus", "HELD"|"EXPIRED"|…}
  A group payment (lib.lua, payment_members) fails every member PENDING_PAYMENT with it (each
  show's hold HELD again); the refund and the watch are the payment's.
  Errors   NOTFOUND, STATE <status> (CONFIRMED, CANCELLED)
]]

-- Fails PENDING_PAYMENT booking 'b' (record key 'bk') of show 'p' with 'reason' and, when
-- 'refund' is given, its refund (reference 'refund_ref'); 'watch': its charge may still land,
-- so it enters {s}:failed (a group payment's member never: its payment is watched). Its hold,
-- if still PENDING_PAYMENT for it, is HELD again (or EXPIRED at its deadline). Cannot fail.
-- Returns the hold's status.
local function fail_apply(p, bk, booking_id, b, o, now, changes)
    redis.call('HSET', bk, 'status', 'FAILED', 'reason', o.reason, 'failedAt', now)
    redis.call('ZREM', p .. ':pending', booking_id)
    if o.refund and o.refund ~= '' then
        redis.call('HSET', bk, 'refund', o.refund, 'refundRef', o.refund_ref,
            'refundStatus', 'succeeded')
    elseif o.watch then
        -- Its charge may still be on its way: watched until the charge horizon has passed.
        redis.call('ZADD', p .. ':failed', tonumber(b.createdAt or '0') or 0, booking_id)
    end
    local hk = p .. ':hold:' .. (b.holdId or '')
    local h = hgetall(hk)
    if h and h.status == 'PENDING_PAYMENT' and h.bookingId == booking_id then
        local held_until = tonumber(h.heldUntil or h.expiresAt)
        -- Restored only if its seat keys can still live a millisecond (a PEXPIREAT at or
        -- before now deletes the key at once): at held_until - 1 the hold ends here.
        if seat_deadline(held_until) > now then
            for _, seat in ipairs(split_commas(h.seats)) do
                local sk = p .. ':seat:' .. seat
                if redis.call('GET', sk) == b.holdId then
                    redis.call('PEXPIREAT', sk, seat_deadline(held_until))
                end
            end
            redis.call('ZADD', p .. ':expiry', held_until, b.holdId)
            redis.call('HSET', hk, 'status', 'HELD', 'bookingId', '', 'expiresAt', held_until)
            h.status = 'HELD'
        else
            end_hold(p, b.holdId, h, 'EXPIRED', changes)
            h.status = 'EXPIRED'
        end
    end
    return (h and h.status) or ''
end

local function book_fail(keys, args)
    local p, booking_id, bk, b = load_booking(keys, args)
    if not p then
        return booking_id -- the error reply
    end
    local hk = p .. ':hold:' .. b.holdId
    if b.status == 'FAILED' then
        -- A charge that landed after the booking had already failed was refunded: record
        -- it once (the late-charge path of the worker), so the booking says why.
        local late = args[3]
        if late and late ~= '' and tonumber(late) and tonumber(late) >= 0 and not b.refund then
            redis.call('HSET', bk, 'refund', late, 'refundRef', args[4] or '',
                'refundStatus', 'succeeded', 'reason', (b.reason or '') .. '+charged_late_refunded')
        end
        if late and tonumber(late) and tonumber(late) >= 0 then -- recorded (now or before)
            redis.call('ZREM', p .. ':refunds', booking_id)
            redis.call('ZREM', p .. ':failed', booking_id)
        end
        return {'bookingId', booking_id, 'status', 'FAILED',
            'holdStatus', redis.call('HGET', hk, 'status') or ''}
    end
    if b.status ~= 'PENDING_PAYMENT' then
        return fail('STATE', b.status)
    end
    if (b.paidBy or '') ~= '' then -- settled only with its payment, all shows at once
        return fail('INVAL', 'a group payment\'s booking: settle ' .. b.paidBy)
    end
    local refund = args[3]
    if refund and refund ~= '' and (not tonumber(refund) or tonumber(refund) < 0) then
        return fail('INVAL', 'refund')
    end
    local min_age = tonumber(args[5] or '')
    if min_age and now_ms() - tonumber(b.createdAt or '0') < min_age then
        return {'bookingId', booking_id, 'status', 'PENDING_PAYMENT',
            'holdStatus', redis.call('HGET', hk, 'status') or ''}
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local now = now_ms()
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    local status = fail_apply(p, bk, booking_id, b, {reason = args[2] or '', refund = refund,
        refund_ref = args[4] or '', watch = not min_age}, now, changes)
    flush(p, changes)
    -- A group payment's members fail with it: each show's hold HELD again.
    for _, m in ipairs(payment_members(b)) do
        local mb = hgetall(m.bk)
        if mb and mb.status == 'PENDING_PAYMENT' then
            local mchanges = {}
            reap_due(m.p, now, REAP_BATCH, mchanges)
            fail_apply(m.p, m.bk, m.id, mb, {reason = args[2] or ''}, now, mchanges)
            flush(m.p, mchanges)
        end
    end
    return {'bookingId', booking_id, 'status', 'FAILED', 'holdStatus', status}
end

redis.register_function{function_name='seatd_book_fail', callback=book_fail}
