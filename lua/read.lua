--[[
read.lua - read-only functions (flags no-writes): they never reap, they report.

seatd_show_get
  KEYS[1] {s:<id>}:meta
  Returns {"showId","title","startsAt","holdTtlMs","priceTiers","seatCount","version",
           "createdAt","extra","layoutHash","salesCloseAt"} as name/value pairs (showId from
           the key; salesCloseAt "" when the show has none: sales close at startsAt).
  Errors: NOSHOW

seatd_layout_get
  KEYS[1] {s:<id>}:meta
  Returns {"layoutHash", hex, "seatCount", n}: which shared layout the show was created with
  (the worker then reads it with seatd_layout_fetch; see create_show.lua).  Errors: NOSHOW

seatd_layout_fetch
  KEYS[1] seatd:layout:<64 hex>
  Returns {"seats", the canonical seats array JSON}     Errors: NOTFOUND

seatd_list_shows
  KEYS[1] seatd:shows   ARGV[1] offset   ARGV[2] count
  Returns {"total", n, "id", id1, "id", id2, …} ordered by startsAt: upcoming shows only
  (startsAt > now, Redis's clock); a show that started is no longer listed

seatd_seatmap
  KEYS[1] {s:<id>}:meta
  Returns {"version", v, "seatCount", n, "held", bytes, "booked", bytes, "areas", text} (one
  atomic read; a missing bitmap is ""; areas: "FLOOR:5000:4862,…", id:capacity:free of each
  standing area for the public, "" for none), "blocked", bytes (seats kept for a channel,
  lib.lua "Channels"; "" for none)                               Errors: NOSHOW

seatd_hold_get
  KEYS[1] {s:<id>}:meta   ARGV[1] hold id   ARGV[2] owner ("" = any owner: operators)
  Returns {"holdId","showId","owner","seatIds","status","expiresAt","createdAt","bookingId",
           "areas"} (areas: the places held in standing areas, "FLOOR:2,…", "" for none)
  A HELD or PENDING_PAYMENT hold at or past its deadline reads as EXPIRED (reaping follows).
  Errors: NOTFOUND (missing, or another owner's: never revealed)

seatd_booking_get
  KEYS[1] {s:<id>}:meta   ARGV[1] booking id   ARGV[2] owner ("" = any owner)
  Returns {"bookingId","showId","holdId","owner","seatIds","amount","currency",
           "paymentMethod","status","paymentRef","createdAt","confirmedAt","reason","refund",
           "cancelledAt","failedAt","refundStatus","refundRef","refundPercent","startsAt",
           "version"}
  (startsAt is the show's, for tickets; version: the show version of the booking's last seat
  change, confirm or cancel, "" before: a client's ?minVersion= for its own change)
  Errors: NOTFOUND (missing, or another owner's)

seatd_bookings_status
  KEYS[1] {s:<id>}:meta   ARGV[1..n] booking ids of that show (n <= STATUSES_MAX, store.h)
  Returns {"status", s1, "status", s2, …}: each booking's status in the order asked, "" for
  one that does not exist (the ledger walk: one call per show for a page of charges, where a
  seatd_booking_get per charge would cost a booking's worth of Redis calls again)
  Errors: NOSHOW (not a show's meta key), INVAL (more than 100 ids)
]]

local function show_get(keys, args)
    local p, id = show_prefix(keys[1])
    local m = p and hgetall(keys[1])
    if not m then
        return fail('NOSHOW', keys[1])
    end
    m.showId = id
    m.version = redis.call('GET', p .. ':ver') or '0'
    return reply_fields(m, {'showId', 'title', 'startsAt', 'holdTtlMs', 'priceTiers',
        'seatCount', 'version', 'createdAt', 'extra', 'layoutHash', 'salesCloseAt'})
end

local function layout_get(keys, args)
    local p = show_prefix(keys[1])
    local m = p and redis.call('HMGET', keys[1], 'layoutHash', 'seatCount')
    if not m or not m[1] then
        return fail('NOSHOW', keys[1])
    end
    return {'layoutHash', m[1], 'seatCount', m[2] or '0'}
end

local function layout_fetch(keys, args)
    local l = string.match(keys[1] or '', '^seatd:layout:%x+$') and redis.call('GET', keys[1])
    if not l then
        return fail('NOTFOUND', keys[1] or '?')
    end
    return {'seats', l}
end

local function list_shows(keys, args)
    local offset = tonumber(args[1]) or 0
    local count = tonumber(args[2]) or 20
    local after = '(' .. tostring(now_ms()) -- upcoming shows only: startsAt > now
    local out = {'total', tostring(redis.call('ZCOUNT', keys[1], after, '+inf'))}
    if count > 0 and offset >= 0 then
        local ids = redis.call('ZRANGE', keys[1], after, '+inf', 'BYSCORE', 'LIMIT', offset,
            count)
        for _, id in ipairs(ids) do
            out[#out + 1] = 'id'
            out[#out + 1] = id
        end
    end
    return out
end

local function seatmap(keys, args)
    local p = show_prefix(keys[1])
    local m = p and redis.call('HMGET', keys[1], 'seatCount', 'areas', 'channels')
    if not m or not m[1] then
        return fail('NOSHOW', keys[1])
    end
    return {'version', redis.call('GET', p .. ':ver') or '0', 'seatCount', m[1],
        'held', redis.call('GET', p .. ':held') or '',
        'booked', redis.call('GET', p .. ':booked') or '',
        'areas', areas_free_text(p, m[2], m[3]),
        'blocked', m[3] and redis.call('GET', p .. ':blocked') or ''}
end

local function hold_get(keys, args)
    local p, id = show_prefix(keys[1])
    local h = p and hgetall(p .. ':hold:' .. (args[1] or ''))
    if not h or (args[2] ~= '' and h.owner ~= args[2]) then
        return fail('NOTFOUND', args[1] or '?')
    end
    if (h.status == 'HELD' or h.status == 'PENDING_PAYMENT')
        and not live_at(h.expiresAt, now_ms()) then
        h.status = 'EXPIRED'
    end
    h.holdId = args[1]
    h.showId = id
    h.seatIds = h.seats
    return reply_fields(h, {'holdId', 'showId', 'owner', 'seatIds', 'status', 'expiresAt',
        'createdAt', 'bookingId', 'areas'})
end

local function booking_get(keys, args)
    local p = show_prefix(keys[1])
    local b = p and hgetall(p .. ':booking:' .. (args[1] or ''))
    if not b or (args[2] ~= '' and b.owner ~= args[2]) then
        return fail('NOTFOUND', args[1] or '?')
    end
    return booking_reply(keys[1], b)
end

local function bookings_status(keys, args)
    local p = show_prefix(keys[1])
    if not p then
        return fail('NOSHOW', keys[1])
    end
    if #args > STATUSES_MAX then
        return fail('INVAL', 'too many booking ids')
    end
    local out = {}
    for i = 1, #args do
        out[#out + 1] = 'status'
        out[#out + 1] = redis.call('HGET', p .. ':booking:' .. args[i], 'status') or ''
    end
    return out
end

redis.register_function{function_name='seatd_show_get', callback=show_get, flags={'no-writes'}}
redis.register_function{function_name='seatd_layout_get', callback=layout_get,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_layout_fetch', callback=layout_fetch,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_list_shows', callback=list_shows,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_seatmap', callback=seatmap, flags={'no-writes'}}
redis.register_function{function_name='seatd_hold_get', callback=hold_get, flags={'no-writes'}}
redis.register_function{function_name='seatd_booking_get', callback=booking_get,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_bookings_status', callback=bookings_status,
    flags={'no-writes'}}
