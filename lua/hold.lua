--[[
hold.lua - seatd_hold: holds a set of seats, all or nothing.

  KEYS[1]  {s:<id>}:meta
  ARGV[1]  hold id (fresh, "<showId>-h<hex>", from the worker)
  ARGV[2]  owner (JWT sub)
  ARGV[3]  ttl (ms; 0 = the show's holdTtlMs)
  ARGV[4]  max seats per user on this show, live holds + booked (0 = no limit)
  ARGV[5]  idempotency key ("" = none)
  ARGV[6]  layoutHash: the shared layout the worker took the bits from (see create_show.lua)
  ARGV[7…] pairs: seat id, its bit index in that layout, or "-" when the seat is not in it
           (normalised by the worker: valid, unique, sorted by seat id)

  The worker maps seats to bits (bit i = seat i of the show's frozen layout); before any
  write the script checks that the worker's layoutHash is the show's (a worker holding
  another layout must never write bits: INVAL), and every bit is an integer in
  [0, seatCount), unique. A "-" is answered UNKNOWN_SEAT: the worker knows the seat is not in
  the layout, the script only checks that the layout is the show's.

  Order: show, shape and layout checks; the idempotency record (same seats: the stored
  answer with replayed=1; other seats: IDEM_MISMATCH); sales close (now on Redis's TIME at or
  after the show's salesCloseAt, else its startsAt: SALES_CLOSED <close ms>, nothing written,
  not even reaping); lazy reaping of the show's due holds
  and of the owner's own; conflict and limit checks; then the effects: SET NX PXAT per seat,
  held bits, hold record (with 'bits', aligned with 'seats'), expiry set, user hash, idempotency record (24 h), version, delta.
  The hold expires at now + ttl, or at the sales close if that comes first (a hold can never
  outlive the sales); its seat keys carry PXAT expiresAt - 1 (lib.lua: expired AT expiresAt).

  Returns  {"holdId", id, "showId", id, "expiresAt", ms, "version", v, "seatIds", "A1,A2",
            "replayed", "0"|"1"}
  Errors   NOSHOW, SALES_CLOSED <ms>, EMPTY, TOOMANY, DUPSEAT <seat>, UNKNOWN_SEAT <seat>, IDEM_MISMATCH,
           CONFLICT <seat> <seat>…, LIMIT <have>+<asked>><max>, INVAL <why> (layout mismatch,
           bad bit, …)
  A rejected request changes nothing, except that expired holds may have been reaped.
]]

local HOLD_FIELDS = {'holdId', 'showId', 'expiresAt', 'version', 'seatIds', 'replayed'}

local function hold(keys, args)
    local p, show_id = show_prefix(keys[1])
    if not p then
        return fail('INVAL', 'bad show key')
    end
    local meta = redis.call('HMGET', keys[1], 'holdTtlMs', 'layoutHash', 'seatCount', 'startsAt',
        'salesCloseAt')
    local meta_ttl, layout_hash, seat_count = meta[1], meta[2], tonumber(meta[3])
    local close = sales_close(meta[4], meta[5])
    if not meta_ttl then
        return fail('NOSHOW', keys[1])
    end
    local hold_id, owner = args[1], args[2]
    if not hold_id or hold_id == '' or not owner or owner == '' then
        return fail('INVAL', 'hold id and owner are required')
    end
    local ttl = tonumber(args[3]) or -1
    if ttl == 0 then
        ttl = tonumber(meta_ttl)
    end
    local max_user = tonumber(args[4]) or -1
    if ttl <= 0 or max_user < 0 then
        return fail('INVAL', 'ttl and max per user')
    end
    local idem = args[5] or ''
    if not layout_hash or args[6] ~= layout_hash or not seat_count then
        return fail('INVAL', 'layout mismatch')
    end
    if (#args - 6) % 2 ~= 0 then
        return fail('INVAL', 'seat and bit pairs')
    end
    local pairs_in = {}
    for i = 7, #args, 2 do
        pairs_in[#pairs_in + 1] = {args[i], args[i + 1]}
    end
    if #pairs_in == 0 then
        return fail('EMPTY', 'no seats')
    end
    if #pairs_in > MAX_SEATS_PER_HOLD then
        return fail('TOOMANY', tostring(#pairs_in))
    end
    table.sort(pairs_in, function(a, b) return a[1] < b[1] end)
    local seats, idx, bit_seen = {}, {}, {}
    for i, pair in ipairs(pairs_in) do
        local seat, bit = pair[1], tonumber(pair[2])
        if i > 1 and seats[i - 1] == seat then
            return fail('DUPSEAT', seat)
        end
        if pair[2] == '-' then
            return fail('UNKNOWN_SEAT', seat)
        end
        if not bit or bit ~= math.floor(bit) or bit < 0 or bit >= seat_count
            or bit_seen[bit] then
            return fail('INVAL', 'bad bit for seat ' .. seat)
        end
        bit_seen[bit] = true
        seats[i] = seat
        idx[i] = bit
    end
    local fingerprint = table.concat(seats, ',')
    local idem_key = p .. ':idem:' .. owner .. ':' .. idem
    if idem ~= '' then
        local rec = redis.call('GET', idem_key)
        if rec then
            local r = cjson.decode(rec)
            if r.seatIds ~= fingerprint then
                return fail('IDEM_MISMATCH', idem)
            end
            r.replayed = '1'
            -- A client now has this hold: a compensation of an earlier 5xx answer for it
            -- (release_unclaimed) must leave it alone.
            local hk = p .. ':hold:' .. (r.holdId or '')
            if redis.call('EXISTS', hk) == 1 then
                redis.call('HSET', hk, 'claimed', '1')
            end
            return reply_fields(r, HOLD_FIELDS)
        end
    end
    if redis.call('EXISTS', p .. ':hold:' .. hold_id) == 1 then
        return fail('INVAL', 'hold id in use')
    end

    -- Sales close on Redis's clock, before any write.
    local now = now_ms()
    if close and now >= close then
        return fail('SALES_CLOSED', tostring(close))
    end

    -- Reaping expired holds is the one write allowed before the last checks.
    local changes = {}
    reap_due(p, now, REAP_BATCH, changes)
    reap_owner(p, owner, now, changes)

    local taken = {}
    for i, seat in ipairs(seats) do
        if redis.call('GETBIT', p .. ':booked', idx[i]) == 1
            or redis.call('EXISTS', p .. ':seat:' .. seat) == 1 then
            taken[#taken + 1] = seat
        end
    end
    if #taken > 0 then
        return fail_flush(p, changes, 'CONFLICT', table.concat(taken, ' '))
    end
    if max_user > 0 then
        local have = 0
        local uh = redis.call('HVALS', p .. ':user:' .. owner)
        for _, v in ipairs(uh) do
            have = have + (tonumber(v) or 0)
        end
        if have + #seats > max_user then
            return fail_flush(p, changes, 'LIMIT', have .. '+' .. #seats .. '>' .. max_user)
        end
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local deadline = now + ttl
    if close and deadline > close then
        deadline = close -- > now: checked above
    end
    for i, seat in ipairs(seats) do
        redis.call('SET', p .. ':seat:' .. seat, hold_id, 'NX', 'PXAT', seat_deadline(deadline))
        redis.call('SETBIT', p .. ':held', idx[i], 1)
        changes[#changes + 1] = {seat, 'held'}
    end
    redis.call('HSET', p .. ':hold:' .. hold_id, 'owner', owner, 'showId', show_id,
        'seats', fingerprint, 'bits', table.concat(idx, ','), 'status', 'HELD', 'expiresAt', deadline, 'createdAt', now,
        'idemKey', idem, 'bookingId', '')
    redis.call('ZADD', p .. ':expiry', deadline, hold_id)
    redis.call('HSET', p .. ':user:' .. owner, hold_id, #seats)
    local version = flush(p, changes)
    local answer = {holdId = hold_id, showId = show_id, expiresAt = tostring(deadline),
        version = tostring(version), seatIds = fingerprint, replayed = '0'}
    if idem ~= '' then
        redis.call('SET', idem_key, cjson.encode(answer), 'PX', IDEM_TTL_MS)
    end
    return reply_fields(answer, HOLD_FIELDS)
end

redis.register_function{function_name='seatd_hold', callback=hold}
