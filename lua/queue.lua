--[[
queue.lua - the waiting room of a queued show (issue 15): join, status, advance.

A show created with "queue" carries in its meta queueOpensAt (ms), queueMax (concurrent
shoppers), queueAdmitMs (the admission window) and queueSeats (seats expected per shopper);
create_show.lua writes them. Its waiting room lives in the show's slot:

  {s}:queue    zset  user -> rank key. Joins before opensAt get the random key the worker
                     drew (uniform in [0, 2^50)): the order at the opening is a uniform random
                     permutation of everyone who came early. Later joins get 2^50 + an arrival
                     counter: first come, first served, after every early one.
  {s}:qticket  hash  user -> ticket: one place per user (a second join answers the same).
  {s}:qadmit   zset  user -> admission deadline (ms): the shoppers admitted and not expired.
  {s}:qpend    zset  the same, only those who have not held yet (hold.lua removes them).
  {s}:qstate   hash  admitted (how many left the queue for an admission: a waiter's number
                     is admitted + its rank + 1), seq (arrival counter), firstAt (first
                     admission, ms), pub ("<admitted>|<state>" last published).

Admission (advance, run by every join, every status read and every worker's sweeper tick, so
a quiet queue still moves): from opensAt until sales close, expired admissions are dropped,
then with
  available = seatCount - held seats - booked seats + the free places of its standing areas
  expected  = queueSeats x (admitted shoppers who have not held yet)
the next waiters are admitted while available - expected > 0 (counting each newcomer) and the
admitted shoppers stay under queueMax; at most ADMIT_BATCH per call. available = 0 and no seat
held (with areas: no live hold at all, as a held place has no bit): SOLD_OUT (nobody is admitted; every waiter is told); seats that come back (a hold
released or expired, a booking cancelled) reopen it. Each change of (admitted, state) is
published once on the show's channel {s}:ch as {"q":1,"a":admitted,"s":state,"w":waiting}.
States: PENDING (before opensAt), OPEN, SOLD_OUT, CLOSED (sales closed).

seatd_queue_join
  KEYS[1]  {s:<id>}:meta
  ARGV[1]  ticket (fresh "<id>-q<hex>", used unless the user has one)
  ARGV[2]  user (JWT sub)
  ARGV[3]  the random rank key for a join before the opening (integer in [0, 2^50))
  A user whose admission lapsed (state EXPIRED) joins again at the back, same ticket.
  Returns  the status fields (below) plus "joined", "1" (a new place) | "0" (the same one),
           and "admitted", k (admitted by this call's advance)
  Errors   NOSHOW, NO_QUEUE (the show has no waiting room), SALES_CLOSED <ms>, INVAL

seatd_queue_status
  KEYS[1]  {s:<id>}:meta        ARGV[1] ticket   ARGV[2] user
  Runs advance, then answers the user's place.
  Returns  {"ticket", t, "state", WAITING|ADMITTED|EXPIRED|SOLD_OUT|CLOSED, "position", n
            (1-based among the waiting; 0 when not waiting), "number", admitted + position,
            "admittedThrough", admitted, "queueState", PENDING|OPEN|SOLD_OUT|CLOSED,
            "opensAt", ms, "expiresAt", ms (ADMITTED), "waiting", n, "available", n,
            "rate", admissions per second so far (text, "" before the first), "salesCloseAt", ms,
            "admitted", k (admitted by this call's advance)}
  Errors   NOSHOW, NO_QUEUE, NOTFOUND (no such ticket for this user)

seatd_queue_advance
  KEYS[1]  {s:<id>}:meta
  Returns  {"admittedThrough", n, "queueState", s, "admitted", k (this call), "waiting", n,
            "available", n, "active", n, "salesCloseAt", ms}
  Errors   NOSHOW, NO_QUEUE
]]

local RANK_EARLY = 1125899906842624 -- 2^50: early keys are below, later arrivals above
local ADMIT_BATCH = 1000            -- admissions per advance call at most

-- The queue settings of a show, or nil (no waiting room). 'meta' is the meta key.
local function queue_meta(meta)
    local m = redis.call('HMGET', meta, 'queueOpensAt', 'queueMax', 'queueAdmitMs', 'queueSeats',
        'seatCount', 'startsAt', 'salesCloseAt', 'holdTtlMs')
    if not m[8] then
        return nil, 'NOSHOW'
    end
    local opens = tonumber(m[1])
    if not opens then
        return nil, 'NO_QUEUE'
    end
    return {opens = opens, max = tonumber(m[2]) or 1, admit_ms = tonumber(m[3]) or 60000,
        seats = tonumber(m[4]) or 1, seat_count = tonumber(m[5]) or 0,
        close = sales_close(m[6], m[7])}
end

-- Drops expired admissions, admits what the inventory allows, publishes a change. Returns
-- admitted (total), state, admitted now, available.
local function advance(p, q, now)
    local st = redis.call('HMGET', p .. ':qstate', 'admitted', 'pub')
    local admitted = tonumber(st[1]) or 0
    local state, k = 'OPEN', 0
    local held = redis.call('BITCOUNT', p .. ':held')
    local available = q.seat_count - held - redis.call('BITCOUNT', p .. ':booked')
    -- places in standing areas are sold like seats: their free count is left to sell too
    local m = redis.call('HMGET', p .. ':meta', 'areas', 'channels')
    local defs = parse_areas(m[1] or '')
    if defs then
        local free = areas_free(p, defs, defs[0], m[2], nil)
        for _, id in ipairs(defs[0]) do
            available = available + free[id]
        end
        -- a held place is not a held bit: anything held at all is a live hold
        held = held + redis.call('ZCARD', p .. ':expiry')
    end
    if q.close and now >= q.close then
        state = 'CLOSED'
    elseif now < q.opens then
        state = 'PENDING'
    else
        redis.call('ZREMRANGEBYSCORE', p .. ':qadmit', '-inf', now)
        redis.call('ZREMRANGEBYSCORE', p .. ':qpend', '-inf', now)
        if available <= 0 and held == 0 then
            state = 'SOLD_OUT'
        else
            local pending = redis.call('ZCARD', p .. ':qpend')
            local active = redis.call('ZCARD', p .. ':qadmit')
            -- newcomer i (0-based) is admitted while available - seats * (pending + i) > 0
            local room = available - q.seats * pending
            if room > 0 then
                k = math.floor((room + q.seats - 1) / q.seats)
            end
            k = math.min(k, q.max - active, ADMIT_BATCH)
            if k > 0 then
                local popped = redis.call('ZPOPMIN', p .. ':queue', k)
                k = #popped / 2
                local deadline = now + q.admit_ms
                for i = 1, #popped, 2 do
                    redis.call('ZADD', p .. ':qadmit', deadline, popped[i])
                    redis.call('ZADD', p .. ':qpend', deadline, popped[i])
                end
                if k > 0 then
                    admitted = admitted + k
                    redis.call('HSET', p .. ':qstate', 'admitted', admitted)
                    redis.call('HSETNX', p .. ':qstate', 'firstAt', now)
                end
            else
                k = 0
            end
        end
    end
    local pub = admitted .. '|' .. state
    if pub ~= st[2] then
        redis.call('HSET', p .. ':qstate', 'pub', pub)
        redis.call('PUBLISH', p .. ':ch', '{"q":1,"a":' .. admitted .. ',"s":"' .. state ..
            '","w":' .. redis.call('ZCARD', p .. ':queue') .. '}')
    end
    return admitted, state, k, available
end

-- The status fields of 'user' (holding 'ticket').
local function status_of(p, q, now, ticket, user, admitted, state, available)
    local out = {'ticket', ticket}
    local ustate, position, expires = 'EXPIRED', 0, ''
    local exp = tonumber(redis.call('ZSCORE', p .. ':qadmit', user))
    local rank = redis.call('ZRANK', p .. ':queue', user)
    if exp and exp > now then
        ustate, expires = 'ADMITTED', tostring(exp)
    elseif rank then
        position = rank + 1
        ustate = 'WAITING'
        if state == 'SOLD_OUT' or state == 'CLOSED' then
            ustate = state
        end
    end
    local rate = ''
    local first = tonumber(redis.call('HGET', p .. ':qstate', 'firstAt'))
    if first and admitted > 0 then
        rate = string.format('%.3f', admitted * 1000 / math.max(1000, now - first))
    end
    local rest = {'state', ustate, 'position', tostring(position),
        'number', tostring(position > 0 and admitted + position or 0),
        'admittedThrough', tostring(admitted), 'queueState', state,
        'opensAt', string.format('%d', q.opens), 'expiresAt', expires,
        'waiting', tostring(redis.call('ZCARD', p .. ':queue')),
        'available', tostring(available), 'rate', rate,
        'salesCloseAt', q.close and string.format('%d', q.close) or ''}
    for _, v in ipairs(rest) do
        out[#out + 1] = v
    end
    return out
end

-- The show's key prefix and queue settings for KEYS[1] ({s:<id>}:meta), or nil, nil and the
-- error to answer (a bad key, no show, no queue).
local function queued_show(meta_key)
    local p = show_prefix(meta_key)
    if not p then
        return nil, nil, fail('INVAL', 'bad show key')
    end
    local q, why = queue_meta(meta_key)
    if not q then
        return nil, nil, fail(why, meta_key)
    end
    return p, q
end

local function queue_join(keys, args)
    local p, q, err = queued_show(keys[1])
    if not p then
        return err
    end
    local ticket, user, early = args[1] or '', args[2] or '', tonumber(args[3] or '')
    if ticket == '' or user == '' or not early or early < 0 or early >= RANK_EARLY
        or early ~= math.floor(early) then
        return fail('INVAL', 'ticket, user and rank key')
    end
    local now = now_ms()
    if q.close and now >= q.close then
        return fail('SALES_CLOSED', string.format('%d', q.close))
    end

    ------------------------------------------------------------------ effects (cannot fail)
    local joined = '0'
    local have = redis.call('HGET', p .. ':qticket', user)
    if have then
        ticket = have
        local exp = tonumber(redis.call('ZSCORE', p .. ':qadmit', user))
        local waiting = redis.call('ZSCORE', p .. ':queue', user)
        if not waiting and not (exp and exp > now) then
            -- the admission lapsed: a place at the back
            local seq = redis.call('HINCRBY', p .. ':qstate', 'seq', 1)
            redis.call('ZADD', p .. ':queue', RANK_EARLY + seq, user)
            joined = '1'
        end
    else
        local score = early
        if now >= q.opens then
            score = RANK_EARLY + redis.call('HINCRBY', p .. ':qstate', 'seq', 1)
        end
        redis.call('ZADD', p .. ':queue', score, user)
        redis.call('HSET', p .. ':qticket', user, ticket)
        joined = '1'
    end
    local admitted, state, k, available = advance(p, q, now)
    local out = status_of(p, q, now, ticket, user, admitted, state, available)
    out[#out + 1] = 'joined'
    out[#out + 1] = joined
    out[#out + 1] = 'admitted' -- by this call's advance (the workers count admissions)
    out[#out + 1] = tostring(k)
    return out
end

local function queue_status(keys, args)
    local p, q, err = queued_show(keys[1])
    if not p then
        return err
    end
    local ticket, user = args[1] or '', args[2] or ''
    if ticket == '' or redis.call('HGET', p .. ':qticket', user) ~= ticket then
        return fail('NOTFOUND', ticket)
    end
    local now = now_ms()

    ------------------------------------------------------------------ effects (cannot fail)
    local admitted, state, k, available = advance(p, q, now)
    local out = status_of(p, q, now, ticket, user, admitted, state, available)
    out[#out + 1] = 'admitted' -- by this call's advance (the workers count admissions)
    out[#out + 1] = tostring(k)
    return out
end

local function queue_advance(keys, args)
    local p, q, err = queued_show(keys[1])
    if not p then
        return err
    end
    local now = now_ms()

    ------------------------------------------------------------------ effects (cannot fail)
    local admitted, state, k, available = advance(p, q, now)
    return {'admittedThrough', tostring(admitted), 'queueState', state, 'admitted', tostring(k),
        'waiting', tostring(redis.call('ZCARD', p .. ':queue')), 'available', tostring(available),
        'active', tostring(redis.call('ZCARD', p .. ':qadmit')),
        'salesCloseAt', q.close and string.format('%d', q.close) or ''}
end

redis.register_function{function_name='seatd_queue_join', callback=queue_join}
redis.register_function{function_name='seatd_queue_status', callback=queue_status}
redis.register_function{function_name='seatd_queue_advance', callback=queue_advance}
