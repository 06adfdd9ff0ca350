#!/usr/bin/env bash
# bench/queue_sim.sh - the waiting room's on-sale simulation (issue 15), about a minute: a
# private redis-server, the fake payment gateway and ONE seatd worker on loopback, then
# bench/queue_sim.c: a 2,000-seat queued show, 100,000 users queued before the opening, 5,000
# of them waiting on the show's WebSocket, shoppers who hold with their admission and pay
# until the show is sold out. Figures are reported (one line each); the run fails when a
# check fails (see queue_sim.c).
#
# Environment: SEATD_BUILD_DIR (build-ws-rel: configured RelWithDebInfo and built here when
# the binaries are missing), QS_USERS (100000), QS_WATCHERS (5000), QS_PROCS (4),
# QS_SHOPPERS (8), QS_OPEN_IN (25 s: the joins must be done by then), QS_ABANDON (10 %).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SEATD_BUILD_DIR:-$ROOT/build-ws-rel}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
if [ ! -x "$BUILD/seatd" ] || [ ! -x "$BUILD/bench/seatd_queue_sim" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD" -j2 --target seatd seatd_queue_sim >/dev/null
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
WATCHERS="${QS_WATCHERS:-5000}"
[ "$(ulimit -n)" -gt $((WATCHERS + 1000)) ] || { echo "queue_sim: ulimit -n $(ulimit -n) is too low" >&2; exit 1; }

RUN="$(mktemp -d /tmp/seatd-qsim.XXXXXX)"
RPORT=$((23000 + RANDOM % 2000)); HPORT=$((RPORT + 2000)); GPORT=$((RPORT + 4000))
export SEATD_JWT_SECRET="queue-sim-secret-queue-sim-secret-0123456789"
cleanup() {
    [ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null || true
    [ -n "${GPID:-}" ] && kill "$GPID" 2>/dev/null && wait "$GPID" 2>/dev/null || true
    redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$RUN"
}
trap cleanup EXIT
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$RUN" --logfile "$RUN/redis.log" --maxmemory-policy noeviction >/dev/null
for _ in $(seq 50); do [ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
node "$ROOT/deploy/gateway/gateway.js" --port "$GPORT" --ledger "$RUN/ledger.jsonl" > "$RUN/gateway.log" 2>&1 &
GPID=$!
"$BUILD/seatd" --listen "127.0.0.1:$HPORT" --redis "127.0.0.1:$RPORT" --log-level warn \
    --max-connections 20000 --max-body 1048576 --gateway-url "http://127.0.0.1:$GPORT" \
    > "$RUN/worker.log" 2>&1 &
WPID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$HPORT/healthz" >/dev/null && break; sleep 0.1; done
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$GPORT") 2>/dev/null && break; sleep 0.1; done
echo "queue_sim: commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(basename "$BUILD"), $(redis-server --version | awk '{print $3}')"
status=0
"$BUILD/bench/seatd_queue_sim" --port "$HPORT" --redis-port "$RPORT" --worker-pid "$WPID" \
    --users "${QS_USERS:-100000}" --watchers "$WATCHERS" --procs "${QS_PROCS:-4}" \
    --shoppers "${QS_SHOPPERS:-8}" --open-in "${QS_OPEN_IN:-25}" --abandon "${QS_ABANDON:-10}" || status=$?
# The live map's frames: one snapshot per watcher at its connection, deltas after that
# however fast the opening sells (worker/flows/live.c keeps a tick's versions for its delta).
# Issue 31: the opening must cost no Redis call its deadline (seatd_redis_timeouts_total) and
# no 5xx (the simulator's answers_5xx line above).
curl -s -m 2 "http://127.0.0.1:$HPORT/metrics" | awk -v w="$WATCHERS" '
    $1 == "seatd_live_frames_total" { f = $2 } $1 == "seatd_live_snapshots_total" { s = $2 }
    $1 == "seatd_redis_timeouts_total" { t = $2 } $1 == "seatd_live_slow_closed_total" { c = $2 }
    END { printf "queue_sim live_frames=%.0f snapshots=%.0f (first ones: %d) slow_closed=%.0f\n", f, s, w, c
          printf "queue_sim redis_deadline_overruns=%.0f (seatd_redis_timeouts_total)\n", t }'
# Redis's own slow commands (over 10 ms), to tell a slow Redis from a busy worker loop:
# "id,unix time,microseconds,command…,client,name" per entry.
echo "queue_sim redis_slowlog len=$(redis-cli -p "$RPORT" slowlog len 2>/dev/null)" \
    "newest=$(redis-cli -p "$RPORT" --csv slowlog get 3 2>/dev/null | cut -c1-300)"
grep -i "error\|WARN" "$RUN/worker.log" | head -5 || true
exit $status
