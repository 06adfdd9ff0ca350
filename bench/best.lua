-- bench/best.lua - wrk script of bench/best: POST /v1/shows/<show>/holds as random users,
-- named seats (a block of 1-4 adjacent seats at a random place) or best available (count
-- 1-4), 40/40/10/10 % as bench/run's blockbuster. Counts the answers by status per thread.
-- Arguments (after --): <tokens file> <named|best> <show id> <rows> <seats per row>
local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

local tokens, mode, show, rows, per_row
counts = {} -- global: done() reads it from each thread (thread:get)

function init(args)
    tokens = {}
    for line in io.lines(args[1]) do
        tokens[#tokens + 1] = line
    end
    mode, show, rows, per_row = args[2], args[3], tonumber(args[4]), tonumber(args[5])
    local addr = tostring({}):match("0x(%x+)") or "0"
    math.randomseed(os.time() + tonumber(addr:sub(-6), 16))
    wrk.method = "POST"
    wrk.path = "/v1/shows/" .. show .. "/holds"
end

local sizes = {1, 1, 1, 1, 2, 2, 2, 2, 3, 4}

function request()
    local n = sizes[math.random(#sizes)]
    local body
    if mode == "best" then
        body = '{"best":{"count":' .. n .. '}}'
    else
        local r, s = math.random(rows), math.random(per_row - n + 1)
        local ids = {}
        for k = 0, n - 1 do
            ids[#ids + 1] = '"R' .. r .. '-' .. (s + k) .. '"'
        end
        body = '{"seatIds":[' .. table.concat(ids, ',') .. ']}'
    end
    local headers = {["Content-Type"] = "application/json",
        ["Authorization"] = "Bearer " .. tokens[math.random(#tokens)]}
    return wrk.format(nil, nil, headers, body)
end

function response(status, headers, body)
    counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
    local total = {}
    for _, t in ipairs(threads) do
        local c = t:get("counts")
        for k, v in pairs(c) do
            total[k] = (total[k] or 0) + v
        end
    end
    local parts = {}
    for k, v in pairs(total) do
        parts[#parts + 1] = k .. "=" .. v
    end
    table.sort(parts)
    io.write(string.format("RESULT attempts_per_s=%.0f p50_ms=%.2f p99_ms=%.2f codes=%s\n",
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
        latency:percentile(99) / 1000, table.concat(parts, ",")))
end
