--[[
groups.lua - event groups (issue 30): shows sold together (a season, a festival pass, a combi
ticket), held all or nothing in one Function call.

A group lives in its first show's slot: {s:<first>}:group:<groupId>, groupId
"<first showId>-g<20 hex>". On a Redis Cluster every show of a group must share that slot (a
show is created "groupWith" another to get an id there: worker/domain/keys.h), so that the
Function that holds across them touches one slot; on one Redis node any shows may be grouped.

seatd_group_create
  KEYS[1]  {s:<first>}:group:<groupId>    KEYS[2…] {s:<id>}:meta of each show, in order
  ARGV[1]  title   ARGV[2…] the show ids, in the order of KEYS[2…] (2..GROUP_MAX, each once)
  Returns  {"groupId", id, "title", t, "showIds", "42,43", "createdAt", ms}
  Errors   NOSHOW <key> (a show that does not exist), EXISTS, INVAL

seatd_group_get (no-writes)
  KEYS[1]  the group key   Returns as seatd_group_create   Errors NOTFOUND

seatd_group_hold
  KEYS[1]  the group key   KEYS[2…] {s:<id>}:meta of each show held (a subset of the group's)
  ARGV[1]  the group hold id ("<first>-m<20 hex>")   ARGV[2] owner   ARGV[3] ttl (ms; 0: each
           show's own)   ARGV[4] max per user (per show)   ARGV[5] the request, as
           seatd_hold_sell's ARGV[7] ("named", with ";<places>;<channels>")   ARGV[6] the
           buyer's idempotency key ("": none): {s:<first>}:gidem:<owner>:<key> keeps the
           answer and the request's fingerprint (the shows, their seats, the places) for 24 h;
           the same key again answers it with "replayed" 1, another request IDEM_MISMATCH
  then for each show in the order of KEYS[2…]: its hold id, layoutHash, P, and P seat/bit pairs
  Every show is decided exactly as seatd_hold_sell decides a named hold (lua/hold.lua), and
  only when every one passed are their holds made, one per show, each its own version and
  delta: a buyer never has part of a group. A refusal names the show first:
  "<WORD> show=<id> <detail>" (CONFLICT, NOT_FOR_SALE, AREA_SOLD_OUT, LIMIT, …), nothing held.
  The group hold {s:<first>}:ghold:<id> lists its holds (owner, holds "42:<holdId>,…").
  Returns  {"groupHoldId", id, "groupId", g, "hold", "<showId>|<holdId>|<expiresAt>|<version>|
            <seatIds ;-joined>|<places>", …}
  Errors   NOTFOUND (no such group), INVAL (a show not in the group, the shape), and each
           show's refusal as above

seatd_group_release
  KEYS[1]  {s:<first>}:ghold:<id>   ARGV[1] owner
  (Its shows' keys are not declared: the worker does not know them, and they share the
  group hold's slot on a cluster.)
  Releases every hold of the group hold still HELD (lib.lua end_hold), each show its version
  and delta. Returns {"released", n}.  Errors NOTFOUND (missing, or another owner's)
]]

local GROUP_MAX = 20

local function group_prefix(key, word)
    local show, id = string.match(key or '', '^{s:(%d+)}:' .. word .. ':(%d+%-%a%x+)$')
    return show, id
end

local function group_create(keys, args)
    local first, gid = group_prefix(keys[1], 'group')
    local n = #keys - 1
    if not first or n < 2 or n > GROUP_MAX or #args ~= n + 1 or args[2] ~= first
        or (args[1] or '') == '' then
        return fail('INVAL', 'group')
    end
    local seen = {}
    for i = 2, #keys do
        local _, id = show_prefix(keys[i])
        if id ~= args[i] or seen[id] then
            return fail('INVAL', 'group shows')
        end
        seen[id] = true
        if redis.call('EXISTS', keys[i]) == 0 then
            return fail('NOSHOW', keys[i])
        end
    end
    if redis.call('EXISTS', keys[1]) == 1 then
        return fail('EXISTS', gid)
    end
    local ids = table.concat(args, ',', 2)
    local now = now_ms()
    redis.call('HSET', keys[1], 'title', args[1], 'showIds', ids, 'createdAt', now)
    return {'groupId', gid, 'title', args[1], 'showIds', ids, 'createdAt', tostring(now)}
end

local function group_get(keys, args)
    local _, gid = group_prefix(keys[1], 'group')
    local g = gid and hgetall(keys[1])
    if not g then
        return fail('NOTFOUND', gid or '?')
    end
    return {'groupId', gid, 'title', g.title or '', 'showIds', g.showIds or '',
        'createdAt', g.createdAt or ''}
end

-- A group hold request's idempotency fingerprint: the request text (places; not the token's
-- channels: a retry with a refreshed token is the same request), then each show and its seats
-- in show order (a retry may list showIds in another order), from the per-show blocks of
-- seatd_group_hold's arguments (ARGV[7…]). "" if malformed (the hold then refuses the shape).
local function group_fingerprint(args, request)
    local shows = {}
    local at = 6
    while at < #args do
        local np = num(args[at + 3] or '')
        local show = string.match(args[at + 1] or '', '^(%d+)%-')
        if not np or np < 0 or np ~= math.floor(np) or at + 3 + 2 * np > #args or not show then
            return ''
        end
        local seats = {}
        for k = 1, np do
            seats[k] = args[at + 3 + 2 * k - 1]
        end
        shows[#shows + 1] = show .. ':' .. table.concat(seats, ',')
        at = at + 3 + 2 * np
    end
    table.sort(shows)
    return (string.match(request, '^[^;]*;?[^;]*') or request) .. '|' .. table.concat(shows, '|')
end

local function group_hold(keys, args)
    local first, gid = group_prefix(keys[1], 'group')
    local ids = first and redis.call('HGET', keys[1], 'showIds')
    if not ids then
        return fail('NOTFOUND', gid or '?')
    end
    local member = {}
    for id in string.gmatch(ids, '[^,]+') do
        member[id] = true
    end
    local mid, owner, request, idem = args[1] or '', args[2] or '', args[5] or '', args[6] or ''
    if not string.match(mid, '^' .. first .. '%-m%x+$') or owner == ''
        or not string.match(request, '^named') then
        return fail('INVAL', 'group hold')
    end
    if redis.call('EXISTS', '{s:' .. first .. '}:ghold:' .. mid) == 1 then
        return fail('INVAL', 'group hold id in use')
    end
    local idem_key = idem ~= '' and '{s:' .. first .. '}:gidem:' .. owner .. ':' .. idem
    local fp
    if idem_key then
        fp = group_fingerprint(args, request)
        if fp == '' then
            return fail('INVAL', 'group hold shape')
        end
        local rec = redis.call('GET', idem_key)
        if rec then
            local r = cjson.decode(rec)
            if r.fp ~= fp then
                return fail('IDEM_MISMATCH', idem)
            end
            r.out[#r.out + 1] = 'replayed'
            r.out[#r.out + 1] = '1'
            return r.out
        end
    end
    -- Each show decided in turn, nothing made until all passed.
    local pending, at = {}, 6
    -- A refusal after some shows were decided: their reaping is published, then the error.
    local function give_up(err)
        for _, q in ipairs(pending) do
            q.abandon()
        end
        return err
    end
    for i = 2, #keys do
        local _, show = show_prefix(keys[i])
        if not show or not member[show] then
            return give_up(fail('INVAL', 'not a show of the group'))
        end
        member[show] = false -- each show once: a second decision would not see the first's
                             -- deferred effects
        local np = num(args[at + 3] or '')
        if not np or np < 0 or np ~= math.floor(np) or at + 3 + 2 * np > #args then
            return give_up(fail('INVAL', 'group hold shape'))
        end
        -- seatd_hold_sell's arguments for this show, copied out: hold id, owner, ttl, max,
        -- no idempotency key, layoutHash, the request, P, the pairs
        local a = {args[at + 1], owner, args[3], args[4], '', args[at + 2], request,
            tostring(np)}
        for k = 1, 2 * np do
            a[8 + k] = args[at + 3 + k]
        end
        at = at + 3 + 2 * np
        local r = hold_sell({keys[i]}, a, {defer = true, group = true, p = false,
            show_id = false, meta = false, now = false, now_text = false, reaped = false}, 0, #a)
        if type(r) ~= 'table' or not r.apply then
            if type(r) == 'table' and r.err then
                local word, rest = string.match(r.err, '^(%S+)%s*(.*)$')
                return give_up(redis.error_reply((word or 'INTERNAL') .. ' show=' .. show .. ' '
                    .. (rest or '')))
            end
            return give_up(fail('INTERNAL', 'group hold'))
        end
        pending[#pending + 1] = r
        pending[#pending].show = show
    end
    if at ~= #args or #pending == 0 then
        return give_up(fail('INVAL', 'group hold shape'))
    end
    local out, members = {'groupHoldId', mid, 'groupId', gid}, {}
    for _, q in ipairs(pending) do
        local h = q.apply()
        local f = {}
        for k = 1, #h, 2 do
            f[h[k]] = h[k + 1]
        end
        members[#members + 1] = q.show .. ':' .. f.holdId
        out[#out + 1] = 'hold'
        out[#out + 1] = table.concat({q.show, f.holdId, f.expiresAt, f.version,
            string.gsub(f.seatIds, ',', ';'), f.areas}, '|')
    end
    redis.call('HSET', '{s:' .. first .. '}:ghold:' .. mid, 'owner', owner, 'groupId', gid,
        'holds', table.concat(members, ','))
    redis.call('PEXPIRE', '{s:' .. first .. '}:ghold:' .. mid, IDEM_TTL_MS)
    if idem_key then
        redis.call('SET', idem_key, cjson.encode({fp = fp, out = out}), 'PX', IDEM_TTL_MS)
    end
    return out
end

local function group_release(keys, args)
    local first, mid = group_prefix(keys[1], 'ghold')
    local g = first and hgetall(keys[1])
    if not g or g.owner ~= args[1] then
        return fail('NOTFOUND', mid or '?')
    end
    local n = 0
    -- (the shows' keys are not declared: they share the group hold's slot, see the header)
    for show, hold_id in string.gmatch(g.holds or '', '(%d+):([^,]+)') do
        local p = '{s:' .. show .. '}'
        local h = hgetall(p .. ':hold:' .. hold_id)
        if h and h.status == 'HELD' then
            local changes = {}
            end_hold(p, hold_id, h, 'RELEASED', changes)
            flush(p, changes)
            n = n + 1
        end
    end
    return {'released', tostring(n)}
end

redis.register_function{function_name='seatd_group_create', callback=group_create}
redis.register_function{function_name='seatd_group_get', callback=group_get,
    flags={'no-writes'}}
redis.register_function{function_name='seatd_group_hold', callback=group_hold}
redis.register_function{function_name='seatd_group_release', callback=group_release}
