--[[
accounts.lua - accounts, refresh-token families and the per-user indexes (issue 14).

Every key of one user carries the hash tag {u:<userId>} (keys.h), so a user's functions are
single-slot; the email index "seatd:email:<email>" is a key of its own slot, claimed first
(SET NX) when an account is registered.

seatd_email_claim    KEYS[1] seatd:email:<email>  ARGV[1] user id
  SET NX: {"userId", id}; taken -> EMAIL_TAKEN.
seatd_email_release  KEYS[1] seatd:email:<email>  ARGV[1] user id
  Deletes the claim only if it still names that user (a registration that failed after its
  claim): {"removed", "1"|"0"}.
seatd_email_get (no-writes)  KEYS[1] seatd:email:<email> -> {"userId", id or ""}.

seatd_user_create  KEYS[1] {u:<id>}:user  ARGV email, name, encoded hash, admin ("1"|"0")
  -> the user's fields; an existing record -> EXISTS.
seatd_user_get (no-writes)  KEYS[1] {u:<id>}:user -> userId, email, name, hash, admin,
  createdAt; NOTFOUND.

Refresh-token families. A login starts a family {u:<id>}:fam:<familyId> (hash: current token
hash, createdAt, expiresAt; PEXPIREAT expiresAt, the family's absolute lifetime). Each token
of the family is {u:<id>}:rt:<sha256 of the token> (hash: fam, used "0"|"1"), expiring with
the family. Redis never sees a token, only its SHA-256.
seatd_session_start    KEYS[1] {u:<id>}:user  ARGV family id, token hash, lifetime (ms)
  -> user fields + familyId, expiresAt; NOTFOUND (no such user).
seatd_session_refresh  KEYS[1] {u:<id>}:user  ARGV old token hash, new token hash
  The one atomic check-and-rotate: the old token must be live (known, not used, its family
  alive): it is marked used, the new one joins the family -> user fields + familyId,
  expiresAt. A token already used (a replay: someone kept a copy) deletes the family, so
  every token descended from that login is dead, and answers TOKEN replayed. Unknown,
  expired or revoked -> TOKEN. Of N concurrent refreshes of one token exactly one finds it
  unused.
seatd_session_revoke   KEYS[1] {u:<id>}:user  ARGV token hash
  Deletes the token's family (logout): {"revoked", "1"|"0"}.

Per-user indexes, written by the worker (a show's script cannot write another slot) before
it acknowledges a hold (after making it) or begins a booking: {u:<sub>}:holds and
{u:<sub>}:bookings, zsets id -> ms added.
seatd_me_add   KEYS[1] the index  ARGV id, retention ms (0: for ever)
  ZADD NX with Redis's clock (an id filed again keeps its place, so that a page boundary
  never moves under a reader); entries older than the retention are trimmed -> {"score", ms}
  of the id's entry.
seatd_me_remove   KEYS[1] the index  ARGV ids (1 to 64)
  ZREM: entries of holds no longer live (released, expired, booked), so that the newest
  entries /v1/me/holds looks at are live ones -> {"removed", "1"|"0"}.
seatd_idem_claim   KEYS[1] {u:<sub>}:idem:<route>:<key>  ARGV fingerprint, ttl ms
  The idempotency record of a request without one of its own in a show's slot (a booking:
  one booking per hold is its idempotency, but the IETF draft's key also refuses the same key
  for another request): SET NX PX. A new key, or the same fingerprint again -> {} (a replay:
  the caller goes on and finds the first request's outcome), or {"outcome", <text>} when
  seatd_idem_settle recorded one; another fingerprint -> IDEM_MISMATCH.
seatd_idem_release KEYS[1] as seatd_idem_claim  ARGV fingerprint
  Deletes the record if it is still the unsettled claim of that fingerprint: the request was
  refused before it did anything (no booking began), and a refused request records nothing,
  so the key may be used again, with this body or another. A settled record, or another
  fingerprint's, is left alone. -> {}
seatd_idem_settle  KEYS[1] as seatd_idem_claim  ARGV fingerprint, outcome
  Records the outcome of the request that claimed the key with that fingerprint (a booking
  whose card was declined: its id, so that a replay answers that 402 rather than trying the
  card again), keeping the record's expiry; a record of another fingerprint, or none, is left
  as it is -> {}.
seatd_me_list (no-writes)  KEYS[1] the index  ARGV after, limit -> "id" and "score" once per
  entry, newest first (equal scores: ids in descending byte order, as Redis orders them),
  then "more" "1"|"0". 'after' is "" (from the newest), "<score>.<id>" (the entries after
  that one: the cursor of a page, exact even when entries share a millisecond) or "<score>"
  (the entries with a lower score).
]]

local USER_FIELDS = {'userId', 'email', 'name', 'hash', 'admin', 'createdAt'}

-- "{u:<id>}:user" -> "{u:<id>}", "<id>"; nil when KEYS[1] is not a user's record key.
local function user_prefix(key)
    local id = string.match(key or '', '^{u:([^{}]+)}:user$')
    if not id then
        return nil, nil
    end
    return '{u:' .. id .. '}', id
end

local function user_reply(id, u, extra)
    u.userId = id
    local out = reply_fields(u, USER_FIELDS)
    for i = 1, #(extra or {}) do
        out[#out + 1] = extra[i]
    end
    return out
end

local function email_claim(keys, args)
    if (args[1] or '') == '' then
        return fail('INVAL', 'user id')
    end
    if not redis.call('SET', keys[1], args[1], 'NX') then
        return fail('EMAIL_TAKEN', '-')
    end
    return {'userId', args[1]}
end

local function email_release(keys, args)
    if redis.call('GET', keys[1]) == args[1] then
        redis.call('DEL', keys[1])
        return {'removed', '1'}
    end
    return {'removed', '0'}
end

local function email_get(keys, args)
    return {'userId', redis.call('GET', keys[1]) or ''}
end

local function user_create(keys, args)
    local p, id = user_prefix(keys[1])
    if not p or (args[1] or '') == '' or (args[3] or '') == '' then
        return fail('INVAL', 'user')
    end
    if redis.call('EXISTS', keys[1]) == 1 then
        return fail('EXISTS', id)
    end
    local u = {email = args[1], name = args[2] or '', hash = args[3],
               admin = args[4] == '1' and '1' or '0', createdAt = tostring(now_ms())}
    redis.call('HSET', keys[1], 'email', u.email, 'name', u.name, 'hash', u.hash, 'admin',
               u.admin, 'createdAt', u.createdAt)
    return user_reply(id, u)
end

local function user_get(keys, args)
    local p, id = user_prefix(keys[1])
    if not p then
        return fail('INVAL', 'user key')
    end
    local u = hgetall(keys[1])
    if not u then
        return fail('NOTFOUND', id)
    end
    return user_reply(id, u)
end

local function session_start(keys, args)
    local p, id = user_prefix(keys[1])
    local ttl = tonumber(args[3])
    if not p or (args[1] or '') == '' or (args[2] or '') == '' or not ttl or ttl < 1 then
        return fail('INVAL', 'session')
    end
    local u = hgetall(keys[1])
    if not u then
        return fail('NOTFOUND', id)
    end
    local now = now_ms()
    local exp = now + ttl
    local fk, rk = p .. ':fam:' .. args[1], p .. ':rt:' .. args[2]
    redis.call('HSET', fk, 'current', args[2], 'createdAt', tostring(now), 'expiresAt',
               tostring(exp))
    redis.call('PEXPIREAT', fk, exp)
    redis.call('HSET', rk, 'fam', args[1], 'used', '0')
    redis.call('PEXPIREAT', rk, exp)
    return user_reply(id, u, {'familyId', args[1], 'expiresAt', tostring(exp)})
end

local function session_refresh(keys, args)
    local p, id = user_prefix(keys[1])
    if not p or (args[1] or '') == '' or (args[2] or '') == '' or args[1] == args[2] then
        return fail('INVAL', 'refresh')
    end
    local rk = p .. ':rt:' .. args[1]
    local t = redis.call('HMGET', rk, 'fam', 'used')
    if not t[1] then
        return fail('TOKEN', 'unknown')
    end
    local fk = p .. ':fam:' .. t[1]
    local exp = tonumber(redis.call('HGET', fk, 'expiresAt'))
    if not exp then
        return fail('TOKEN', 'revoked')
    end
    if t[2] ~= '0' then
        -- A replay: the token was rotated already. Whoever holds the family now may be the
        -- thief or the owner: end it for both (every token of the family checks it).
        redis.call('DEL', fk)
        return fail('TOKEN', 'replayed')
    end
    local u = hgetall(keys[1])
    if not u then
        redis.call('DEL', fk)
        return fail('TOKEN', 'no user')
    end
    local nk = p .. ':rt:' .. args[2]
    redis.call('HSET', rk, 'used', '1')
    redis.call('HSET', nk, 'fam', t[1], 'used', '0')
    redis.call('PEXPIREAT', nk, exp)
    redis.call('HSET', fk, 'current', args[2], 'rotatedAt', tostring(now_ms()))
    return user_reply(id, u, {'familyId', t[1], 'expiresAt', tostring(exp)})
end

local function session_revoke(keys, args)
    local p = user_prefix(keys[1])
    if not p or (args[1] or '') == '' then
        return fail('INVAL', 'revoke')
    end
    local fam = redis.call('HGET', p .. ':rt:' .. args[1], 'fam')
    if fam and redis.call('DEL', p .. ':fam:' .. fam) == 1 then
        return {'revoked', '1'}
    end
    return {'revoked', '0'}
end

local function me_add(keys, args)
    local retain = tonumber(args[2])
    if not string.match(keys[1] or '', '^{u:[^{}]+}:[a-z]+$') or (args[1] or '') == '' or
        not retain or retain < 0 then
        return fail('INVAL', 'index')
    end
    local now = now_ms()
    local score = tostring(now)
    if redis.call('ZADD', keys[1], 'NX', now, args[1]) == 0 then
        score = redis.call('ZSCORE', keys[1], args[1])
    end
    if retain > 0 then
        redis.call('ZREMRANGEBYSCORE', keys[1], '-inf', '(' .. (now - retain))
    end
    return {'score', score}
end

local function me_remove(keys, args)
    if not string.match(keys[1] or '', '^{u:[^{}]+}:[a-z]+$') or #args < 1 or #args > 64 then
        return fail('INVAL', 'index')
    end
    local n = redis.call('ZREM', keys[1], unpack(args))
    return {'removed', n > 0 and '1' or '0'}
end

-- An idempotency record is "<fingerprint>" or, once settled, "<fingerprint>\n<outcome>"
-- (a fingerprint is a hold id and a payment token: never a newline).
local IDEM_KEY = '^{u:[^{}]+}:idem:[a-z]+:[%w_%.%-]+$'

local function idem_claim(keys, args)
    local ttl = tonumber(args[2])
    local fp = args[1] or ''
    if not string.match(keys[1] or '', IDEM_KEY) or fp == '' or string.find(fp, '\n', 1, true)
        or not ttl or ttl < 1 then
        return fail('INVAL', 'idem')
    end
    if redis.call('SET', keys[1], fp, 'NX', 'PX', ttl) then
        return {}
    end
    local v = redis.call('GET', keys[1]) or ''
    local nl = string.find(v, '\n', 1, true)
    if (nl and string.sub(v, 1, nl - 1) or v) ~= fp then
        return fail('IDEM_MISMATCH', 'idem')
    end
    return nl and {'outcome', string.sub(v, nl + 1)} or {}
end

local function idem_settle(keys, args)
    local fp, outcome = args[1] or '', args[2] or ''
    if not string.match(keys[1] or '', IDEM_KEY) or fp == '' or outcome == ''
        or string.find(fp .. outcome, '\n', 1, true) then
        return fail('INVAL', 'idem')
    end
    if redis.call('GET', keys[1]) == fp then
        redis.call('SET', keys[1], fp .. '\n' .. outcome, 'KEEPTTL')
    end
    return {}
end

local function idem_release(keys, args)
    local fp = args[1] or ''
    if not string.match(keys[1] or '', IDEM_KEY) or fp == '' then
        return fail('INVAL', 'idem')
    end
    if redis.call('GET', keys[1]) == fp then
        redis.call('DEL', keys[1])
    end
    return {}
end

-- a < b in byte order (Redis's order of members with equal scores; Lua's own string
-- comparison follows the server's locale).
local function bytes_before(a, b)
    for i = 1, math.min(#a, #b) do
        local x, y = string.byte(a, i), string.byte(b, i)
        if x ~= y then
            return x < y
        end
    end
    return #a < #b
end

local function me_list(keys, args)
    local limit = tonumber(args[2])
    if not limit or limit < 1 or limit > 1000 then
        return fail('INVAL', 'limit')
    end
    local top, skip = '+inf', 0
    local after = args[1] or ''
    if after ~= '' then
        local score, id = string.match(after, '^(%d+)%.([%w_%-]+)$')
        if score and #score <= 20 and #id <= 64 then
            -- The entries of that score listed up to and including 'id' were on the page
            -- before: skip them (a handful at most: one buyer's bookings of one millisecond).
            top = score
            local ties = redis.call('ZRANGE', keys[1], score, score, 'BYSCORE', 'REV')
            for _, m in ipairs(ties) do
                if not bytes_before(m, id) then
                    skip = skip + 1
                end
            end
        elseif string.match(after, '^%d+$') and #after <= 20 then
            top = '(' .. after
        else
            return fail('INVAL', 'cursor')
        end
    end
    local r = redis.call('ZRANGE', keys[1], top, '-inf', 'BYSCORE', 'REV', 'LIMIT', skip,
                         limit + 1, 'WITHSCORES')
    local out = {}
    local n = math.min(#r / 2, limit)
    for i = 1, n do
        out[#out + 1] = 'id'
        out[#out + 1] = r[2 * i - 1]
        out[#out + 1] = 'score'
        out[#out + 1] = r[2 * i]
    end
    out[#out + 1] = 'more'
    out[#out + 1] = (#r / 2 > limit) and '1' or '0'
    return out
end

redis.register_function{function_name='seatd_me_remove', callback=me_remove}
redis.register_function{function_name='seatd_idem_claim', callback=idem_claim}
redis.register_function{function_name='seatd_idem_settle', callback=idem_settle}
redis.register_function{function_name='seatd_idem_release', callback=idem_release}
redis.register_function{function_name='seatd_email_claim', callback=email_claim}
redis.register_function{function_name='seatd_email_release', callback=email_release}
redis.register_function{function_name='seatd_email_get', callback=email_get, flags={'no-writes'}}
redis.register_function{function_name='seatd_user_create', callback=user_create}
redis.register_function{function_name='seatd_user_get', callback=user_get, flags={'no-writes'}}
redis.register_function{function_name='seatd_session_start', callback=session_start}
redis.register_function{function_name='seatd_session_refresh', callback=session_refresh}
redis.register_function{function_name='seatd_session_revoke', callback=session_revoke}
redis.register_function{function_name='seatd_me_add', callback=me_add}
redis.register_function{function_name='seatd_me_list', callback=me_list, flags={'no-writes'}}
