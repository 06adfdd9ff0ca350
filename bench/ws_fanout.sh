#!/usr/bin/env bash
# bench/ws_fanout.sh - the live seat map's fan-out benchmark (issue 4), under a minute:
# a private redis-server and ONE seatd worker on loopback, then bench/ws_fanout.c: 5,000
# WebSocket clients on one 2,000-seat show over 4 client processes while 400 holds run at
# 50/s through the HTTP API. Prints delta delivery latency p50/p99 (hold request sent ->
# client received the delta with that seat), deltas expected/received, and the worker's RSS
# per connection. Figures are reported, never asserted.
#
# Environment: SEATD_BUILD_DIR (build-ws-rel: configured RelWithDebInfo and built here when
# the binaries are missing), WSF_CLIENTS (5000), WSF_PROCS (4), WSF_HOLDS (400), WSF_RATE (50).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SEATD_BUILD_DIR:-$ROOT/build-ws-rel}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
if [ ! -x "$BUILD/seatd" ] || [ ! -x "$BUILD/bench/seatd_ws_fanout" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" -j2 --target seatd seatd_ws_fanout >/dev/null
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
CLIENTS="${WSF_CLIENTS:-5000}"
[ "$(ulimit -n)" -gt $((CLIENTS + 1000)) ] || { echo "ws_fanout: ulimit -n $(ulimit -n) is too low" >&2; exit 1; }

RUN="$(mktemp -d /tmp/seatd-wsf.XXXXXX)"
RPORT=$((21000 + RANDOM % 2000)); HPORT=$((RPORT + 2000))
export SEATD_JWT_SECRET="ws-fanout-secret-ws-fanout-secret-0123456789"
cleanup() {
    [ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null || true
    redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$RUN"
}
trap cleanup EXIT
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$RUN" --logfile "$RUN/redis.log" --maxmemory-policy noeviction >/dev/null
for _ in $(seq 50); do [ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
"$BUILD/seatd" --listen "127.0.0.1:$HPORT" --redis "127.0.0.1:$RPORT" --log-level warn \
    --max-connections 20000 --max-body 1048576 > "$RUN/worker.log" 2>&1 &
WPID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$HPORT/healthz" >/dev/null && break; sleep 0.1; done
echo "ws_fanout: commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(basename "$BUILD")"
"$BUILD/bench/seatd_ws_fanout" --port "$HPORT" --worker-pid "$WPID" --clients "$CLIENTS" \
    --procs "${WSF_PROCS:-4}" --holds "${WSF_HOLDS:-400}" --rate "${WSF_RATE:-50}" --seats 2000
status=$?
grep -i "slow\|error" "$RUN/worker.log" | head -5 || true
exit $status
