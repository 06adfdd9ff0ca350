--[[
hold.lua - seatd_hold: holds a set of seats, all or nothing.

  KEYS[1]  {s:<id>}:meta
  KEYS[2]  optional {s:<id>}:qadmit: present when the worker verified the request's signed
           admission (worker/domain/admission.h) for this owner and show. A queued show (meta
           queueOpensAt, queue.lua) refuses a hold without it, or whose owner's admission is
           no longer live on Redis's clock: QUEUE_REQUIRED, checked after sales close and
           before any write; a hold made removes the owner from {s}:qpend.
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
  not even reaping); lazy reaping of the show's due holds; conflict (and orphan) checks;
  reaping of the owner's own due holds, the limit check, the hold id's freshness; then the
  effects: SET NX PXAT per seat, held bits, hold record (with 'bits', aligned with 'seats'),
  expiry set, user hash, idempotency record (24 h), version, delta. A refusal thus costs as
  few calls as it can: it is most of the answers when a show opens.
  The hold expires at now + ttl, or at the sales close if that comes first (a hold can never
  outlive the sales); its seat keys carry PXAT expiresAt - 1 (lib.lua: expired AT expiresAt).

  Returns  {"holdId", id, "showId", id, "expiresAt", ms, "version", v, "seatIds", "A1,A2",
            "replayed", "0"|"1"}
  Errors   NOSHOW, SALES_CLOSED <ms>, QUEUE_REQUIRED, EMPTY, TOOMANY, DUPSEAT <seat>, UNKNOWN_SEAT <seat>, IDEM_MISMATCH,
           CONFLICT <seat> <seat>…, LIMIT <have>+<asked>><max>, INVAL <why> (layout mismatch,
           bad bit, …)
  A rejected request changes nothing, except that expired holds may have been reaped.

seatd_hold_sell - the same hold, with the box-office rules (issue 13): best available, no
orphan seats, alternatives. Everything seatd_hold does, in the same order, plus:

  ARGV[1…6]  as seatd_hold
  ARGV[7]    the request: "named", or "best:<count>:<tier or ->:<0|1 accessible>" (also the
             idempotency fingerprint of a best-available hold: a replay answers the seats the
             first call chose), optionally followed by ";" and places in standing areas
             (issue 30), "FLOOR:2,BALC:1": area ids sorted, each count >= 1, each an area of
             the show's meta 'areas' (lib.lua, parse_areas; else UNKNOWN_AREA <id>)
  ARGV[8]    P, the number of seat/bit pairs that follow (named: >= 1, or 0 with places;
             best: 0)
  ARGV[9…]   P pairs as seatd_hold's, then the candidates written by worker/domain/best.c, each one
             argument "<kind>|<tier>|<id:bit,…>|<left id:bit,…>|<right id:bit,…>" (kinds: b
             whole block, p piece of a split, n run of a named hold; left and right are the up
             to 2 nearest seats of the same row segment, nearest first)

  A seat is taken when its booked bit is set, its seat key exists, or this hold takes it.
  With the show's orphanRule "block" (meta, from create_show), a hold strands a seat when the
  seat next to one of its runs is free and the seat beyond it is taken or does not exist (a
  row end or an aisle): such a hold is refused (named: ORPHAN_SEAT <seat…>; best: that
  candidate is skipped).
  Best available: the first "b" block wholly free (and stranding none) is held; else the first
  free "p" piece of the larger size and then the first free "p" piece of the other size (the
  same size when N is even) in the same tier, disjoint from it; else NO_BLOCK.
  Refusals of a named hold (CONFLICT, ORPHAN_SEAT) are a reply, not an error: they carry the
  show's held and booked bitmaps as this script leaves them (after reaping), so the worker can
  propose alternatives that were free when the script ran (worker/domain/best.c) without the script
  judging blocks one by one (that was three quarters of its time under contention):
           {"refused", "CONFLICT <seat…>" | "ORPHAN_SEAT <seat…>", "asked", "A1,A2",
            "orphanRule", "0"|"1", "booked", <bitmap>, "held", <bitmap>}

  Places in areas are held with the seats, all or nothing: once the seats are known to be
  free, every area asked must have its count free (capacity - {s}:areas <id>, which counts
  places held and booked), else AREA_SOLD_OUT <id> <free> <every area "id:capacity:free,…">,
  nothing written. The places add to {s}:areas, count against the per-user limit like seats,
  are kept in the hold record as 'areas' and published in the delta ("a":{"FLOOR":4862}).
  Returns  as seatd_hold, plus "split", "0"|"1", and "areas", the places held ("" for none)
  Errors   as seatd_hold, plus NO_BLOCK <count> (a named hold's CONFLICT and ORPHAN_SEAT are
           the refusal above), UNKNOWN_AREA <id>, AREA_SOLD_OUT <id> <free> <areas>
]]


local HOLD_FIELDS = {'holdId', 'showId', 'expiresAt', 'version', 'seatIds', 'replayed', 'split',
    'areas'}

-- The places a request asks for (its text after ';', "FLOOR:2,BALC:1", sorted by id, each
-- count >= 1) checked against the show's areas 'defs': returns the list ({{id, n}…}) and the
-- number of places, or nil and the error reply. An empty text asks for none.
local function check_area_request(text, defs)
    local list = area_counts(text)
    local places, back = 0, 0
    for _, _ in string.gmatch(text, '[^,]+') do
        back = back + 1
    end
    if back ~= #list then
        return nil, fail('INVAL', 'areas')
    end
    for i, a in ipairs(list) do
        if not (defs and defs[a[1]]) then
            return nil, fail('UNKNOWN_AREA', a[1])
        end
        if a[2] < 1 or (i > 1 and not (list[i - 1][1] < a[1])) then
            return nil, fail('INVAL', 'areas')
        end
        places = places + a[2]
    end
    return list, places
end

-- The first area of 'list' ({{id, n}…}) without n places free for a buyer with channels
-- 'allowed' (a set, or nil), and its free count; nil when every one has them.
local function area_short(p, list, defs, channels, allowed)
    if #list == 0 then
        return nil
    end
    local ids = {}
    for i, a in ipairs(list) do
        ids[i] = a[1]
    end
    local free = areas_free(p, defs, ids, channels, allowed)
    for _, a in ipairs(list) do
        if free[a[1]] < a[2] then
            return a[1], free[a[1]]
        end
    end
    return nil
end

-- Takes the places of 'list' from the quotas of the buyer's channels ('allowed', in name
-- order) first; returns the 'kept' text of what it took ("FLOOR|boxoffice#<kgen>:2,…", "" for
-- none; lib.lua kept_give_back).
local function take_kept(p, list, allowed)
    local names = {}
    for ch in pairs(allowed) do
        names[#names + 1] = ch
    end
    table.sort(names)
    local _, each = kept_places(p)
    local out, gens = {}, {}
    for _, a in ipairs(list) do
        local left = a[2]
        for _, ch in ipairs(names) do
            local k = a[1] .. '|' .. ch
            local n = math.min(left, each[k] or 0)
            if n > 0 then
                if n == each[k] then
                    redis.call('HDEL', p .. ':akept', k) -- (no zero left behind)
                else
                    redis.call('HINCRBY', p .. ':akept', k, -n)
                end
                gens[ch] = gens[ch] or redis.call('HGET', p .. ':kgen', ch) or '0'
                out[#out + 1] = k .. '#' .. gens[ch] .. ':' .. n
                left = left - n
            end
        end
    end
    return table.concat(out, ',')
end

-- "A1:0,A2:1" -> {{'A1', 0}, {'A2', 1}}; nil when a bit is not a seat of the show.
local function parse_items(s, seat_count)
    local out = {}
    for seat, bit in string.gmatch(s, '([^,:]+):(%d+)') do
        bit = tonumber(bit)
        if not bit or bit >= seat_count then
            return nil
        end
        out[#out + 1] = {seat, bit}
    end
    return out
end

-- One candidate argument -> {kind, tier, seats = {{id, bit}…}, left = …, right = …} or nil.
local function parse_block(s, seat_count)
    local kind, tier, seats, left, right =
        string.match(s, '^(%a)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    if not kind then
        return nil
    end
    local b = {kind = kind, tier = tier, seats = parse_items(seats, seat_count),
        left = parse_items(left, seat_count), right = parse_items(right, seat_count)}
    if not b.seats or not b.left or not b.right or #b.seats == 0 then
        return nil
    end
    return b
end

-- The candidate texts of request 'req' (args[req.cfrom .. req.cto]; none when 'req' is nil or
-- has none) parsed; nil when one is malformed.
local function parse_blocks(args, req, seat_count)
    local out = {}
    for i = req and req.cfrom or 1, req and req.cto or 0 do
        local b = parse_block(args[i], seat_count)
        if not b then
            return nil
        end
        out[#out + 1] = b
    end
    return out
end

-- The channels of the hold being decided (hold_generic sets it): nil when the show keeps no
-- seat for a channel, else {allowed = the buyer's channels (a set)}.
local cur_channels = nil

-- Whether seat 'bit' is kept for a channel the buyer does not have (cur_channels).
local function not_for_buyer(p, bit)
    if not cur_channels or redis.call('GETBIT', p .. ':blocked', bit) == 0 then
        return false
    end
    local by = redis.call('HGET', p .. ':keptby', bit)
    local ch = by and string.match(by, '^([^|]+)|')
    return not (ch and cur_channels.allowed[ch])
end

-- Whether seat 'item' ({id, bit}) is taken: in 'mine', booked, held by its seat key, or kept
-- for a channel the buyer does not have.
local function is_taken(p, item, mine)
    if mine[item[1]] then
        return true
    end
    return redis.call('EXISTS', p .. ':seat:' .. item[1]) == 1
        or redis.call('GETBIT', p .. ':booked', item[2]) == 1 or not_for_buyer(p, item[2])
end

local function block_free(p, b, mine)
    for _, it in ipairs(b.seats) do
        if is_taken(p, it, mine) then
            return false
        end
    end
    return true
end

-- Appends to 'out' the seats block 'b' would strand, 'mine' holding every seat of the hold,
-- each once: a seat between two blocks of the hold (A2 of A1 + A3) is the neighbour of both.
-- 'out' also marks the seats appended as its keys.
local function block_orphans(p, b, mine, out)
    for _, side in ipairs({b.left, b.right}) do
        local n1, n2 = side[1], side[2]
        if n1 and not out[n1[1]] and not is_taken(p, n1, mine)
            and (not n2 or is_taken(p, n2, mine)) then
            out[#out + 1] = n1[1]
            out[n1[1]] = true
        end
    end
end

local function mark(mine, b, v)
    for _, it in ipairs(b.seats) do
        mine[it[1]] = v
    end
end

-- Whether 'b' is free and, with the rule on, strands no seat (with 'mine' already taken).
local function block_fits(p, b, mine, orphan_rule)
    if not block_free(p, b, mine) then
        return false
    end
    if not orphan_rule then
        return true
    end
    mark(mine, b, true)
    local o = {}
    block_orphans(p, b, mine, o)
    mark(mine, b, nil)
    return #o == 0
end

-- A named hold of seatd_hold_sell refused with 'word' (CONFLICT or ORPHAN_SEAT) for the seats
-- 'detail' (their ids, space-separated): the reaping done is published first, then the
-- refusal with the seats asked ('asked', their ids joined by commas) and the show's two
-- bitmaps as they are now (see the header).
local function refuse(p, changes, word, detail, asked, orphan_rule, shared)
    if has_changes(changes) then
        flush(p, changes)
    end
    if shared and shared.group then
        -- a show of a group hold: the plain refusal (alternatives are a single show's)
        return fail(word, detail)
    end
    if shared and shared.batch then
        -- seatd_hold_batch answers the maps once, as the batch leaves them, and a refusal as
        -- one text (see there)
        shared.refused = true
        return 'refused ' .. (orphan_rule and '1' or '0') .. '\n' .. word .. ' ' .. detail .. '\n'
            .. asked
    end
    local r = {'refused', word .. ' ' .. detail, 'asked', asked,
        'orphanRule', orphan_rule and '1' or '0'}
    local maps = redis.call('MGET', p .. ':booked', p .. ':held')
    r[#r + 1], r[#r + 2], r[#r + 3], r[#r + 4] = 'booked', maps[1] or '', 'held', maps[2] or ''
    return r
end

-- Best available: the seats (id, bit pairs) of the first fitting block, or of two pieces;
-- nil when nothing fits. Returns pairs, split.
local function choose_best(p, cands, count, orphan_rule)
    for _, b in ipairs(cands) do
        if b.kind == 'b' and #b.seats == count and block_fits(p, b, {}, orphan_rule) then
            return b.seats, false
        end
    end
    local a = math.floor((count + 1) / 2)
    for _, first in ipairs(cands) do
        if first.kind == 'p' and #first.seats == a and block_fits(p, first, {}, orphan_rule) then
            local mine = {}
            mark(mine, first, true)
            for _, second in ipairs(cands) do
                if second.kind == 'p' and #second.seats == count - a and second ~= first
                    and second.tier == first.tier and block_fits(p, second, mine, orphan_rule) then
                    local out = {}
                    for _, it in ipairs(first.seats) do
                        out[#out + 1] = it
                    end
                    for _, it in ipairs(second.seats) do
                        out[#out + 1] = it
                    end
                    return out, true
                end
            end
            -- this first piece has no partner: the next first piece may have one
        end
    end
    return nil, false
end

local function by_seat_id(a, b)
    return a[1] < b[1]
end

-- The shared body of seatd_hold and seatd_hold_sell. 'req' is nil (seatd_hold) or
-- {mode = 'named'|'best', fp = ARGV[7], count, cfrom, cto: its candidate texts are
-- args[cfrom .. cto], none when cfrom > cto};
-- the np seat/bit pairs (named) are args[pair_at], args[pair_at + 1], ...; 'base' (0 but in
-- a batch) is where the request's own ARGV start in 'args'.
local function hold_generic(keys, args, req, pair_at, np, shared, base)
    local p, show_id
    if shared and shared.p then
        p, show_id = shared.p, shared.show_id -- the batch's one show
    else
        p, show_id = show_prefix(keys[1])
        if shared then
            shared.p, shared.show_id = p, show_id
        end
    end
    if not p then
        return fail('INVAL', 'bad show key')
    end
    -- 'shared' (seatd_hold_batch, else nil): what the batch's earlier requests read, for the
    -- later ones (a hold writes none of it; the clock is one instant for the whole batch)
    local meta = shared and shared.meta
    if not meta then
        meta = redis.call('HMGET', keys[1], 'holdTtlMs', 'layoutHash', 'seatCount', 'startsAt',
            'salesCloseAt', 'orphanRule', 'queueOpensAt', 'areas', 'channels')
        if shared then
            shared.meta = meta
        end
    end
    local queued = meta[7] ~= false and meta[7] ~= nil
    local meta_ttl, layout_hash, seat_count = meta[1], meta[2], num(meta[3])
    local close = sales_close(meta[4], meta[5])
    local orphan_rule = meta[6] == 'block'
    if not meta_ttl then
        return fail('NOSHOW', keys[1])
    end
    local hold_id, owner = args[base + 1], args[base + 2]
    if not hold_id or hold_id == '' or not owner or owner == '' then
        return fail('INVAL', 'hold id and owner are required')
    end
    local ttl = num(args[base + 3]) or -1
    if ttl == 0 then
        ttl = num(meta_ttl)
    end
    local max_user = num(args[base + 4]) or -1
    if ttl <= 0 or max_user < 0 then
        return fail('INVAL', 'ttl and max per user')
    end
    local idem = args[base + 5] or ''
    if not layout_hash or args[base + 6] ~= layout_hash or not seat_count then
        return fail('INVAL', 'layout mismatch')
    end
    local best = req and req.mode == 'best'
    -- the places asked for in standing areas (issue 30; a seatd_hold_sell request only)
    local area_text = req and req.areas or ''
    local area_defs = parse_areas(meta[8] or '')
    local area_list, places = check_area_request(area_text, area_defs)
    if not area_list then
        return places -- the error reply
    end
    -- arg: the seats' bits as redis.call arguments (the worker's text when it is the canonical
    -- decimal: a number would be formatted with "%.14g" on every call)
    local seats, arg = {}, {}
    local fingerprint
    if best then
        if req.count < 1 or req.count + places > MAX_SEATS_PER_HOLD then
            return fail('TOOMANY', tostring(req.count + places))
        end
        fingerprint = req.fp
    else
        if np < 1 and places == 0 then
            return fail('EMPTY', 'no seats')
        end
        if np + places > MAX_SEATS_PER_HOLD then
            return fail('TOOMANY', tostring(np + places))
        end
        -- The pairs are read where they are in 'args'; the worker sends them sorted, and only
        -- pairs out of order are copied out and sorted.
        local sorted
        for i = 2, np do
            if not (args[pair_at + 2 * i - 4] < args[pair_at + 2 * i - 2]) then
                sorted = {}
                for k = 1, np do
                    sorted[k] = {args[pair_at + 2 * k - 2], args[pair_at + 2 * k - 1]}
                end
                table.sort(sorted, by_seat_id)
                break
            end
        end
        local bit_seen = np > 8 and {} or nil
        for i = 1, np do
            local seat, btext
            if sorted then
                seat, btext = sorted[i][1], sorted[i][2]
            else
                seat, btext = args[pair_at + 2 * i - 2], args[pair_at + 2 * i - 1]
            end
            local bit = num(btext)
            if i > 1 and seats[i - 1] == seat then
                return fail('DUPSEAT', seat)
            end
            if btext == '-' then
                return fail('UNKNOWN_SEAT', seat)
            end
            if not bit or bit ~= math.floor(bit) or bit < 0 or bit >= seat_count then
                return fail('INVAL', 'bad bit for seat ' .. seat)
            end
            if bit_seen then
                if bit_seen[bit] then
                    return fail('INVAL', 'bad bit for seat ' .. seat)
                end
                bit_seen[bit] = true
            else
                for j = 1, i - 1 do -- a bit twice? (a few seats: no table of those seen)
                    if num(sorted and sorted[j][2] or args[pair_at + 2 * j - 1]) == bit then
                        return fail('INVAL', 'bad bit for seat ' .. seat)
                    end
                end
            end
            seats[i] = seat
            arg[i] = canonical_uint(btext) and btext or bit
        end
        fingerprint = table.concat(seats, ',')
        if area_text ~= '' then
            fingerprint = fingerprint .. ';' .. area_text
        end
    end
    local idem_key = idem ~= '' and p .. ':idem:' .. owner .. ':' .. idem
    if idem_key then
        local rec = redis.call('GET', idem_key)
        if rec then
            local r = cjson.decode(rec)
            if (r.fp or r.seatIds) ~= fingerprint then
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

    -- Sales close on Redis's clock, before any write.
    local now, now_text
    if shared and shared.now then
        now, now_text = shared.now, shared.now_text
    else
        now, now_text = now_ms_text()
        if shared then
            shared.now, shared.now_text = now, now_text
        end
    end
    if close and now >= close then
        return fail('SALES_CLOSED', tostring(close))
    end

    -- A queued show (queue.lua): the worker verified the request's signed admission and then
    -- passes KEYS[2] = {s}:qadmit; the admission must still be live on Redis's clock.
    if queued then
        if keys[2] ~= p .. ':qadmit' then
            return fail('QUEUE_REQUIRED', 'no admission')
        end
        local exp = tonumber(redis.call('ZSCORE', keys[2], owner))
        if not exp or exp <= now then
            return fail('QUEUE_REQUIRED', 'admission expired')
        end
    end

    -- Reaping expired holds is the one write allowed before the last checks. The show's due
    -- holds go first, so that a refusal's bitmaps are current; the owner's own only matter to
    -- the limit check, after the refusals (a refused hold, the common answer in a rush, does
    -- not pay for them).
    local changes = {}
    if not (shared and shared.reaped) then
        -- at one instant, a second pass finds nothing due unless the first stopped at its cap
        local all = reap_due(p, now, REAP_BATCH, changes, now_text) < REAP_BATCH
        if shared then
            shared.reaped = all
        end
        if meta[9] then -- channels whose release time came: everyone's now (shared with a batch)
            meta[9] = channels_release_due(p, meta[9], now, changes)
        end
    end
    -- The buyer's channels: only they may take the seats and places kept for them.
    local allowed
    if meta[9] and meta[9] ~= '' then
        allowed = {}
        for ch in string.gmatch(req and req.channels or '', '[^,]+') do
            allowed[ch] = true
        end
        cur_channels = {allowed = allowed}
    else
        cur_channels = nil
    end

    -- The candidates, parsed only when needed and after reaping, so they are judged on the
    -- live state: best available's at once; a named hold's (its runs, for the orphan rule)
    -- only once its seats are known to be free (a refused named hold, most of the answers
    -- when a show opens, never parses them).
    local cands
    if best then
        cands = parse_blocks(args, req, seat_count)
        if not cands then
            return fail_flush(p, changes, 'INVAL', 'bad candidate')
        end
    end

    local split = false
    if best then
        local chosen
        chosen, split = choose_best(p, cands, req.count, orphan_rule)
        if not chosen then
            return fail_flush(p, changes, 'NO_BLOCK', tostring(req.count))
        end
        for i, it in ipairs(chosen) do
            seats[i] = it[1]
            arg[i] = it[2]
        end
    else
        local taken -- the taken seats' ids, space-separated (most often one: no table)
        for i, seat in ipairs(seats) do
            if redis.call('EXISTS', p .. ':seat:' .. seat) == 1
                or redis.call('GETBIT', p .. ':booked', arg[i]) == 1 then
                taken = taken and taken .. ' ' .. seat or seat
            end
        end
        if taken then
            if req then
                return refuse(p, changes, 'CONFLICT', taken, table.concat(seats, ','),
                    orphan_rule, shared)
            end
            return fail_flush(p, changes, 'CONFLICT', taken)
        end
        local kept -- free seats kept for a channel the buyer does not have
        for i, seat in ipairs(seats) do
            if not_for_buyer(p, arg[i]) then
                kept = kept and kept .. ' ' .. seat or seat
            end
        end
        if kept then
            return fail_flush(p, changes, 'NOT_FOR_SALE', kept)
        end
        if orphan_rule then
            cands = parse_blocks(args, req, seat_count)
            if not cands then
                return fail_flush(p, changes, 'INVAL', 'bad candidate')
            end
            local mine, orphans = {}, {}
            for _, seat in ipairs(seats) do
                mine[seat] = true
            end
            for _, b in ipairs(cands) do
                if b.kind == 'n' then
                    block_orphans(p, b, mine, orphans)
                end
            end
            if #orphans > 0 then
                return refuse(p, changes, 'ORPHAN_SEAT', table.concat(orphans, ' '),
                    table.concat(seats, ','), orphan_rule, shared)
            end
        end
    end
    -- The areas' capacity, once the seats are known to be free: all or nothing with them.
    local short, free = area_short(p, area_list, area_defs, meta[9], allowed)
    if short then
        return fail_flush(p, changes, 'AREA_SOLD_OUT', short .. ' ' .. free .. ' '
            .. areas_free_text(p, meta[8], meta[9]))
    end
    reap_owner(p, owner, now, changes)
    if max_user > 0 then
        local have = 0
        local uh = redis.call('HVALS', p .. ':user:' .. owner)
        for _, v in ipairs(uh) do
            have = have + (tonumber(v) or 0)
        end
        if have + #seats + places > max_user then
            return fail_flush(p, changes, 'LIMIT', have .. '+' .. (#seats + places) .. '>'
                .. max_user)
        end
    end

    -- A fresh id from the worker: checked last, as only a hold about to be made needs it.
    if redis.call('EXISTS', p .. ':hold:' .. hold_id) == 1 then
        return fail_flush(p, changes, 'INVAL', 'hold id in use')
    end

    ------------------------------------------------------------------ effects (cannot fail)
    -- A group hold (seatd_group_hold) decides every show before it changes any: it gets the
    -- effects to run once all its shows passed.
    local function apply()
        local seat_list = table.concat(seats, ',')
        local deadline = now + ttl
        if close and deadline > close then
            deadline = close -- > now: checked above
        end
        for i, seat in ipairs(seats) do
            redis.call('SET', p .. ':seat:' .. seat, hold_id, 'NX', 'PXAT', seat_deadline(deadline))
            redis.call('SETBIT', p .. ':held', arg[i], '1')
            changes[#changes + 1] = {seat, 'held'}
        end
        for _, a in ipairs(area_list) do
            redis.call('HINCRBY', p .. ':areas', a[1], a[2])
            area_touch(changes, a[1])
        end
        local kept_text = ''
        if allowed and next(allowed) and #area_list > 0 then
            kept_text = take_kept(p, area_list, allowed)
        end
        redis.call('HSET', p .. ':hold:' .. hold_id, 'owner', owner, 'showId', show_id,
            'seats', seat_list, 'bits', table.concat(arg, ','), 'status', 'HELD', 'expiresAt', deadline, 'createdAt', now_text,
            'idemKey', idem, 'bookingId', '', 'areas', area_text, 'kept', kept_text)
        redis.call('ZADD', p .. ':expiry', deadline, hold_id)
        redis.call('HSET', p .. ':user:' .. owner, hold_id, #seats + places)
        if queued then
            redis.call('ZREM', p .. ':qpend', owner) -- has held: no longer an expected taker
        end
        local version = flush(p, changes)
        local answer = {holdId = hold_id, showId = show_id, expiresAt = tostring(deadline),
            version = tostring(version), seatIds = seat_list, replayed = '0',
            split = split and '1' or '0', areas = area_text}
        if best or area_text ~= '' then
            answer.fp = fingerprint -- (a named hold's seats alone are its fingerprint)
        end
        if idem_key then
            redis.call('SET', idem_key, cjson.encode(answer), 'PX', IDEM_TTL_MS)
        end
        return reply_fields(answer, HOLD_FIELDS)
    end
    if shared and shared.defer then
        -- 'abandon': another show of the group refused; the reaping done here is published
        return {apply = apply, abandon = function()
            if has_changes(changes) then
                flush(p, changes)
            end
        end}
    end
    return apply()
end

local function hold(keys, args)
    if (#args - 6) % 2 ~= 0 then
        return fail('INVAL', 'seat and bit pairs')
    end
    return hold_generic(keys, args, nil, 7, (#args - 6) / 2, nil, 0)
end

-- 'shared', 'base' and 'nargs': a batch's request is ARGV[base + 1 .. base + nargs] of the
-- batch (no copy); a call of its own has base 0 and nargs #args.
local function hold_sell(keys, args, shared, base, nargs)
    base = base or 0
    nargs = nargs or #args
    if nargs < 8 then
        return fail('INVAL', 'request and pairs')
    end
    local fp = args[base + 7] or ''
    -- "<request>;<places>;<channels>": the places asked for in standing areas and the buyer's
    -- sales channels (see the header)
    local mode_text, areas, channels = fp, '', ''
    local cut = string.find(fp, ';', 1, true)
    if cut then
        mode_text, areas = string.sub(fp, 1, cut - 1), string.sub(fp, cut + 1)
        local cut2 = string.find(areas, ';', 1, true)
        if cut2 then
            areas, channels = string.sub(areas, 1, cut2 - 1), string.sub(areas, cut2 + 1)
        end
        if areas == '' and channels == '' then
            return fail('INVAL', 'request')
        end
    end
    local np = num(args[base + 8] or '')
    if not np or np < 0 or np ~= math.floor(np) or nargs < 8 + 2 * np then
        return fail('INVAL', 'request and pairs')
    end
    -- (every field made at once; the candidates stay where they are in 'args' until a hold
    -- needs them: parse_blocks)
    -- the idempotency fingerprint: the request without the token's channels (a retry with a
    -- refreshed token is the same request)
    local req = {fp = mode_text .. (areas ~= '' and ';' .. areas or ''), mode = 'named', count = false, cfrom = base + 9 + 2 * np,
        cto = base + nargs, areas = areas, channels = channels}
    if mode_text ~= 'named' then
        local count = string.match(mode_text, '^best:(%d+):[^:]+:[01]$')
        if not count or np ~= 0 then
            return fail('INVAL', 'request')
        end
        req.mode, req.count = 'best', num(count)
    end
    return hold_generic(keys, args, req, base + 9, np, shared, base)
end

--[[
seatd_hold_batch - several seatd_hold_sell requests for one show in one call: each is decided
in turn exactly as its own call would be (its own checks, all or nothing, its own version and
delta), and they share what does not change between them: the show's meta fields, Redis's
clock (one instant for the batch) and the reaping of due holds (done once, by the first).
A worker sends the holds that arrive for a show within one turn of its loop together
(worker/store/store.c): a call's fixed cost, paid once per batch instead of once per hold, was most
of Redis's time per refused hold when a show opens.

  KEYS[1]  {s:<id>}:meta
  KEYS[2]  optional {s:<id>}:qadmit (see seatd_hold)
  ARGV[1]  n, the number of requests (1..HOLD_BATCH_MAX)
  then n requests, each: c, its number of arguments; "1" when KEYS[2] applies to it (the
           worker verified its admission), else "0"; its c arguments (seatd_hold_sell's ARGV)
  Returns  an array of n replies in order, each what seatd_hold_sell answers it (an error
           reply element for an error), except that a refusal (CONFLICT, ORPHAN_SEAT) is one
           text, "refused <orphanRule 0|1>\n<WORD> <seat…>\n<the seats asked, comma-joined>"
           (a seven-element array cost Redis and the worker more than the refusal's checks),
           and carries no bitmaps: when any request was refused, one more element follows,
           {"booked", <bitmap>, "held", <bitmap>}, the show's maps as the batch leaves them (a
           2,000-seat show's are 500 bytes, a stadium's 20 KB: once per batch, not once per
           refusal)
  Errors   INVAL (the batch's shape: nothing was decided)
]]
local function hold_batch(keys, args)
    local n = num(args[1])
    if not n or n < 1 or n > HOLD_BATCH_MAX or n ~= math.floor(n) then
        return fail('INVAL', 'batch size')
    end
    -- The shape first: no request is decided unless every one is well formed.
    local starts, counts, at = {}, {}, 2
    for i = 1, n do
        local c = num(args[at])
        if not c or c < 0 or c ~= math.floor(c) or at + 1 + c > #args
            or (args[at + 1] ~= '0' and args[at + 1] ~= '1')
            or (args[at + 1] == '1' and not keys[2]) then
            return fail('INVAL', 'batch request ' .. i)
        end
        starts[i], counts[i] = at, c
        at = at + 2 + c
    end
    if at ~= #args + 1 then
        return fail('INVAL', 'batch length')
    end
    local own, admitted = {keys[1]}, {keys[1], keys[2]}
    -- every field the requests fill, made up front (no rehash as they are set)
    local shared = {batch = true, p = false, show_id = false, meta = false, now = false,
        now_text = false, reaped = false, refused = false}
    local out = {}
    for i = 1, n do
        local s = starts[i]
        out[i] = hold_sell(args[s + 1] == '1' and admitted or own, args, shared, s + 1, counts[i])
    end
    if shared.refused then
        local p = show_prefix(keys[1])
        local maps = redis.call('MGET', p .. ':booked', p .. ':held')
        out[n + 1] = {'booked', maps[1] or '', 'held', maps[2] or ''}
    end
    return out
end

redis.register_function{function_name='seatd_hold', callback=hold}
redis.register_function{function_name='seatd_hold_sell', callback=hold_sell}
redis.register_function{function_name='seatd_hold_batch', callback=hold_batch}

