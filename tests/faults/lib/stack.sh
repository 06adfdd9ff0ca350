# tests/faults/lib/stack.sh - sourced by tests/faults/run: the private stack. Logging (say),
# the clock, redis-cli on the show's node and finding a slot's primary (cluster), the cleanup
# on exit (the load, iptables rules, deploy/down, the runtime folder) and its traps, starting
# the stack (deploy/up, the admin password, the JWT secret, the probe's token), and the
# stack's processes: worker and Redis pids, whether one is gone, whether a port is closed.
# Sourcing it starts the stack; it needs run's environment (ROOT, RUN, RP, CLUSTER…) set.
# shellcheck shell=bash
say() { echo "faults: $*" >&2; }
now_ms() { date +%s%3N; }
# rcli: redis-cli as the admin, on the node that owns the scenario's show (SHOW_RP, set by
# begin and finish: on a cluster, the primary of the show's slot; every command here is about
# one show, so one slot).
rcli() { redis-cli -p "${SHOW_RP:-$RP}" "$@"; }
# any_node: the port of a node that answers (the first one may be the primary a scenario
# killed).
any_node() {
    local n
    for n in $(redis_nodes); do
        [ "$(redis-cli -p "$n" PING 2>/dev/null)" = PONG ] && { echo "$n"; return; }
    done
    echo "$RP"
}
# show_port <show>: the port of the primary that owns the show's slot (the stack's only Redis
# when not a cluster): where SCAN and seatd_audit must look.
show_port() {
    [ "$CLUSTER" = 1 ] || { echo "$RP"; return; }
    local slot; slot="$(redis-cli -p "$(any_node)" CLUSTER KEYSLOT "{s:$1}:meta")"
    slot_owner "$slot"
}
# slot_owner <slot>: the port of the primary serving <slot>, from CLUSTER NODES.
slot_owner() {
    local n
    for n in $(redis_nodes); do
        redis-cli -p "$n" CLUSTER NODES 2>/dev/null | awk -v s="$1" '
            $3 ~ /master/ && $3 !~ /fail/ { for (i = 9; i <= NF; i++) { if ($i ~ /^\[/) continue
                split($i, r, "-"); if (r[2] == "") r[2] = r[1]
                if (s + 0 >= r[1] + 0 && s + 0 <= r[2] + 0) { split($2, a, "[:@]"); print a[2]; exit } } }' |
            grep . && return
    done
}

# The iptables rules a scenario added (partition), each as its arguments after -I/-D: removed
# one by one (iptables -D) when the cut heals and by cleanup, never by a flush.
IPT_RULES=()
cleanup() {
    # (the load generator's load processes are its children)
    [ -n "$LOAD_PID" ] && { pkill -TERM -P "$LOAD_PID" 2>/dev/null; kill "$LOAD_PID" 2>/dev/null; }
    [ -n "${POLL_PID:-}" ] && kill "$POLL_PID" 2>/dev/null
    [ "${#IPT_RULES[@]}" -gt 0 ] && heal_cut
    # A scenario interrupted mid-fault: Redis must be running for deploy/down.
    [ -f "$RUN/redis.pid" ] && kill -CONT "$(cat "$RUN/redis.pid")" 2>/dev/null
    "$ROOT/deploy/down" >/dev/null 2>&1 || true
    if [ "${KEEP_FAULTS_RUN:-0}" != 1 ]; then rm -rf "$RUN"; else say "kept $RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for b in "$LOADGEN" "$AUDIT" "$SEATD_BUILD_DIR/seatd" "$SEATD_BUILD_DIR/seatctl"; do
    [ -x "$b" ] || { say "missing $b (build the tree, including bench/, first)"; exit 1; }
done
"$ROOT/deploy/up" >"$RUN/up.log" 2>&1 || { cat "$RUN/up.log"; tail -20 "$RUN"/logs/*.log; exit 1; }
# Redis has a password (deploy/up): redis-cli and seatd_audit act as its admin.
[ -s "$RUN/redis-admin.pass" ] && { REDISCLI_AUTH="$(cat "$RUN/redis-admin.pass")"; export REDISCLI_AUTH; }
export SEATD_JWT_SECRET="$(cat "$RUN/jwt_secret")"
PROBE_TOKEN="$("$SEATD_BUILD_DIR/seatctl" token --sub fault-probe --ttl 3600)"
say "stack on $BASE (redis $RP, gateway $SEATD_GATEWAY_PORT, $SEATD_WORKERS workers), strict=$STRICT"

worker_pids() { cat "$RUN"/worker-*.pid 2>/dev/null | tr '\n' ' '; }
workers_alive() {
    local f
    for f in "$RUN"/worker-*.pid; do kill -0 "$(cat "$f")" 2>/dev/null || return 1; done
}
redis_pid() { cat "$RUN/redis.pid"; }
redis_up() { [ "$(rcli PING 2>/dev/null)" = PONG ]; }
# gone <pid>: the process has exited (a zombie nobody reaped counts as gone).
gone() { case "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" in ""|Z|X) return 0 ;; esac; return 1; }
# port_closed <port>: nothing accepts on 127.0.0.1:<port>. A killed process's main thread can
# be a zombie while its other threads still exit holding its files, the listening socket
# among them: a restart in that moment fails with "Address already in use".
port_closed() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
