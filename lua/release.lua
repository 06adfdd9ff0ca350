--[[
release.lua - seatd_release: the owner gives a HELD hold back; its seats become AVAILABLE.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  hold id
  ARGV[2]  owner
  ARGV[3]  optional "unclaimed": refuse (STATE CLAIMED, nothing changes) a hold that an
           idempotent replay already gave to a client (hold.lua marks it "claimed")
  Returns  {"holdId", id, "status", "RELEASED", "version", v}; releasing again answers the same
  Errors   NOTFOUND (missing, or another owner's), STATE <status> (PENDING_PAYMENT, BOOKED),
           EXPIRED (the deadline passed first)
]]

local function release(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local hold_id, owner = args[1] or '', args[2] or ''
    local h = hgetall(p .. ':hold:' .. hold_id)
    if not h or h.owner ~= owner then
        return fail('NOTFOUND', args[1] or '?')
    end
    local now = now_ms()
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    reap_hold(p, hold_id, now, changes)
    h.status = redis.call('HGET', p .. ':hold:' .. hold_id, 'status')
    if h.status == 'RELEASED' then
        local v = flush(p, changes)
        return {'holdId', hold_id, 'status', 'RELEASED', 'version', tostring(v)}
    end
    if h.status == 'EXPIRED' then
        return fail_flush(p, changes, 'EXPIRED', hold_id)
    end
    if h.status ~= 'HELD' then
        return fail_flush(p, changes, 'STATE', h.status)
    end
    if args[3] == 'unclaimed' and h.claimed == '1' then
        return fail_flush(p, changes, 'STATE', 'CLAIMED')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    end_hold(p, hold_id, h, 'RELEASED', changes)
    local v = flush(p, changes)
    return {'holdId', hold_id, 'status', 'RELEASED', 'version', tostring(v)}
end

redis.register_function{function_name='seatd_release', callback=release}
