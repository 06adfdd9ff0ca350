-- bench/login.lua - wrk script for bench/accounts: POST /v1/auth/login with the right password,
-- cycling over the users bench/accounts registered (<prefix>-<i>@example.com, i in 0..users-1).
--
--   SEATD_BENCH_USERS=200 SEATD_BENCH_EMAIL_PREFIX=lb SEATD_BENCH_PASSWORD=… \
--       wrk -t2 -c16 -d20s --timeout 30s -s bench/login.lua http://127.0.0.1:PORT
--
-- Prints (done()):
--   login_status ok=… throttled=… other=…        (200, 429, anything else)
--   login requests=… duration_s=… per_s=… p50_ms=… p90_ms=… p99_ms=… max_ms=… errors=… (socket errors, timeouts)
-- per_s counts 200s only (every one of them cost one argon2id verify).

local users = tonumber(os.getenv("SEATD_BENCH_USERS") or "200")
local prefix = os.getenv("SEATD_BENCH_EMAIL_PREFIX") or "lb"
local password = os.getenv("SEATD_BENCH_PASSWORD") or "bench-login-password-1"
local threads = {}
local nthreads = 0

function setup(thread)
    thread:set("tid", nthreads)
    nthreads = nthreads + 1
    table.insert(threads, thread)
end

function init(args)
    n, ok, throttled, other = 0, 0, 0, 0
    -- each thread starts at its own offset so the threads do not walk the users in step
    n = tid * 7919
end

local headers = { ["Content-Type"] = "application/json" }

function request()
    local i = n % users
    n = n + 1
    local body = string.format('{"email":"%s-%d@example.com","password":"%s"}', prefix, i, password)
    return wrk.format("POST", "/v1/auth/login", headers, body)
end

function response(status, hdrs, body)
    if status == 200 then
        ok = ok + 1
    elseif status == 429 then
        throttled = throttled + 1
    else
        other = other + 1
    end
end

function done(summary, latency, requests)
    local o, t, x = 0, 0, 0
    for _, th in ipairs(threads) do
        o = o + th:get("ok")
        t = t + th:get("throttled")
        x = x + th:get("other")
    end
    local secs = summary.duration / 1e6
    local e = summary.errors
    io.write(string.format("login_status ok=%d throttled=%d other=%d\n", o, t, x))
    io.write(string.format(
        "login requests=%d duration_s=%.2f per_s=%.1f p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f errors=%d\n",
        summary.requests, secs, o / secs, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
        latency:percentile(99) / 1000, latency.max / 1000, e.connect + e.read + e.write + e.timeout))
end
