# deploy/lib.sh - shared by deploy/up, deploy/down and the test harness. Source it.
# Derives every port and path of one stack from SEATD_PORT, so two stacks run side by side.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SEATD_PORT="${SEATD_PORT:-8080}"
SEATD_WORKERS="${SEATD_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
SEATD_RUN_DIR="${SEATD_RUN_DIR:-$ROOT/run/$SEATD_PORT}"
SEATD_BUILD_DIR="${SEATD_BUILD_DIR:-$ROOT/build}"
SEATD_REDIS_PORT="${SEATD_REDIS_PORT:-$((SEATD_PORT + 1000))}"
SEATD_GATEWAY_PORT="${SEATD_GATEWAY_PORT:-$((SEATD_PORT + 2000))}"
# Worker N's metrics listener (GET /metrics, /healthz only) is 127.0.0.1:SEATD_METRICS_PORT+N-1.
SEATD_METRICS_PORT="${SEATD_METRICS_PORT:-$((SEATD_PORT + 3000))}"
SEATD_BASE="http://127.0.0.1:$SEATD_PORT"

stack_pids() { # every pid file of this stack
    ls "$SEATD_RUN_DIR"/*.pid 2>/dev/null || true
}

wait_for() { # wait_for <seconds> <command…>: polls until the command succeeds
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

redis_admin() { # redis_admin <args…>: redis-cli as this stack's admin (the default user)
    if [ -s "$SEATD_RUN_DIR/redis-admin.pass" ]; then
        REDISCLI_AUTH="$(cat "$SEATD_RUN_DIR/redis-admin.pass")" redis-cli --no-auth-warning \
            -p "$SEATD_REDIS_PORT" "$@"
    else
        redis-cli -p "$SEATD_REDIS_PORT" "$@"
    fi
}

worker_listening() { # worker_listening N: worker N of this stack accepts requests
    local listen; listen="$(cat "$SEATD_RUN_DIR/worker-$1.listen" 2>/dev/null)" || return 1
    case "$listen" in
        unix:*) test -S "${listen#unix:}" ;;
        *) [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$listen/healthz")" != 000 ] ;;
    esac
}

# node_addr <port>: the loopback address of the cluster node on <port> (deploy/up, cluster mode):
# 127.1.<port / 256>.<port % 256>. Each node listens there (and on 127.0.0.1), announces it to
# the cluster and sends its replication and cluster-bus traffic from it, so that one node's
# links to the others can be cut on their own (tests/faults/run partition) while workers and
# tools, which connect from 127.0.0.1, still reach it.
node_addr() { echo "127.1.$(($1 / 256)).$(($1 % 256))"; }

redis_nodes() { # every Redis port of this stack: one, or each node of its cluster
    if [ -s "$SEATD_RUN_DIR/redis-nodes" ]; then
        tr ',' '\n' < "$SEATD_RUN_DIR/redis-nodes" | sed 's/.*://'
    else
        echo "$SEATD_REDIS_PORT"
    fi
}
