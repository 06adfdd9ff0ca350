# deploy/lib.sh - shared by deploy/up, deploy/down and the test harness. Source it.
# Derives every port and path of one stack from SEATD_PORT, so two stacks run side by side.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SEATD_PORT="${SEATD_PORT:-8080}"
SEATD_WORKERS="${SEATD_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
SEATD_RUN_DIR="${SEATD_RUN_DIR:-$ROOT/run/$SEATD_PORT}"
SEATD_BUILD_DIR="${SEATD_BUILD_DIR:-$ROOT/build}"
# The ports below given explicitly in the environment: they stay put when SEATD_PORT changes.
SEATD_FIXED_PORTS=""
for _v in SEATD_REDIS_PORT SEATD_GATEWAY_PORT SEATD_METRICS_PORT; do
    [ -z "${!_v:-}" ] || SEATD_FIXED_PORTS+=" $_v"
done
unset _v
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

# --- the stack's shape and ports ------------------------------------------------------------
# stack_shape: SHARDS (0: one Redis node), REPLICAS and NODES (Redis processes), as deploy/up
# runs them for SEATD_REDIS_SHARDS / SEATD_REDIS_REPLICAS.
stack_shape() {
    SHARDS="${SEATD_REDIS_SHARDS:-0}"
    REPLICAS="${SEATD_REDIS_REPLICAS:-0}"
    [ "$SHARDS" -le 1 ] && SHARDS=0
    NODES=1
    [ "$SHARDS" -eq 0 ] || NODES=$((SHARDS * (1 + REPLICAS)))
}

# stack_ports: every TCP port deploy/up's stack binds (with this environment), one a line:
#   <port> <addresses> <moves> <kind> <what it is for…>
# addresses: comma-separated; "node:P" is the cluster node P's own address (node_addr P).
# moves: 1 when the port follows SEATD_PORT, 0 when it was set explicitly (SEATD_REDIS_PORT…).
stack_ports() {
    stack_shape
    local k p a i host hosts rm=1 gm=1 mm=1
    case " $SEATD_FIXED_PORTS " in *" SEATD_REDIS_PORT "*) rm=0 ;; esac
    case " $SEATD_FIXED_PORTS " in *" SEATD_GATEWAY_PORT "*) gm=0 ;; esac
    case " $SEATD_FIXED_PORTS " in *" SEATD_METRICS_PORT "*) mm=0 ;; esac
    read -r -a hosts <<< "${SEATD_WORKER_HOSTS:-}"
    echo "$SEATD_PORT 127.0.0.1 1 nginx nginx (the API)"
    for ((k = 0; k < NODES; k++)); do
        p=$((SEATD_REDIS_PORT + k))
        if [ "$SHARDS" -eq 0 ]; then
            echo "$p 127.0.0.1 $rm redis redis"
        else
            a="127.0.0.1,node:$p"
            echo "$p $a $rm redis redis cluster node $((k + 1)) of $NODES"
            echo "$((p + 10000)) $a $rm bus the cluster bus of redis node $((k + 1)) (its port + 10000)"
        fi
    done
    echo "$SEATD_GATEWAY_PORT 127.0.0.1 $gm gateway the payment gateway"
    for ((i = 1; i <= SEATD_WORKERS; i++)); do
        host=127.0.0.1
        if [ "${#hosts[@]}" -gt 0 ]; then
            host="${hosts[$(( (i - 1) % ${#hosts[@]} ))]}"
            echo "$((SEATD_PORT + 3500 + i)) $host 1 worker worker $i"
        fi
        echo "$((SEATD_METRICS_PORT + i - 1)) $host $mm metrics worker $i's metrics listener"
    done
}

# ports_summary: stack_ports in one line ("nginx 8080, redis 9080, …") and, in a second line,
# which other SEATD_PORTs can run a stack beside this one.
ports_summary() {
    stack_ports | awk -v base="$SEATD_PORT" -v hosts="${SEATD_WORKER_HOSTS:-}" '
        { if (!($4 in first)) { order[++n] = $4; first[$4] = $1; moves[$4] = $3 }
          last[$4] = $1; count[$4]++ }
        END {
            name["bus"] = "cluster bus"; name["worker"] = "workers"; name["metrics"] = "worker metrics"
            widest = 1
            for (i = 1; i <= n; i++) {
                k = order[i]; w = (k in name) ? name[k] : k
                line = line (i > 1 ? ", " : "") w " " first[k] (last[k] != first[k] ? "-" last[k] : "")
                offs = offs (i > 1 ? ", " : "") (moves[k] ? "+" first[k] - base : "fixed")
                if (count[k] > widest) widest = count[k]
            }
            # Two stacks share a port when their SEATD_PORTs differ by less than a block of
            # consecutive ports (workers, nodes), or by about the gap between two blocks
            # (1000; 500 with workers on TCP at +3500): 10 to 990 apart never collide.
            k = 10 * int((widest + 9) / 10); gap = (hosts != "") ? 500 : 1000
            printf "ports: %s (SEATD_PORT %s)\n", line, offs
            printf "       a stack beside this one needs a SEATD_PORT %d to %d away, e.g. %d (SEATD_PORTs 1000, 2000, 3000… apart share ports)\n", k, gap - k, base + k
        }'
}

# stack_live_pids: the running processes of this runtime folder's stack (from its pid files).
stack_live_pids() {
    local f pid
    for f in "$SEATD_RUN_DIR"/*.pid; do
        pid=""
        [ -f "$f" ] && read -r pid < "$f" 2>/dev/null
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
    done
    return 0
}

# stack_of_pid <pid>: sets STACK_RUN to the runtime folder of the seatd stack that process
# belongs to (a folder with a pid file holding that pid, looked for beside the files its
# command line names and in its working directory) and STACK_PORT to that stack's SEATD_PORT
# (its nginx.conf's listen); returns 1 when it is none. Without a fork: deploy/up answers a
# taken port within 2 s, and a fork can take 50 ms on a busy machine.
stack_of_pid() {
    local pid="$1" d f w p line words cands=()
    STACK_RUN="" STACK_PORT=""
    # (nginx rewrites its command line into one string: the words, not just the arguments.)
    while IFS= read -r -d '' f; do
        read -r -a words <<< "$f"
        for w in "${words[@]}"; do
            w="${w#unix:}"; w="${w#--*=}"
            case "$w" in /*/*) cands+=("${w%/*}" "${w%/*/*}") ;; esac
        done
    done 2>/dev/null < "/proc/$pid/cmdline"
    # Redis runs in <runtime folder>/redis (a cluster node: <runtime folder>/redis/node-<port>).
    cands+=("/proc/$pid/cwd" "/proc/$pid/cwd/.." "/proc/$pid/cwd/../..")
    for d in "${cands[@]}"; do
        for f in "$d"/*.pid; do
            p=""; [ -f "$f" ] && read -r p 2>/dev/null < "$f"
            [ "$p" = "$pid" ] || continue
            STACK_RUN="$d"
            # The folder's own name, and the stack's port, from its nginx.conf.
            while read -r line; do
                case "$line" in
                    "pid "*/nginx.pid\;) line="${line#pid }"; STACK_RUN="${line%/nginx.pid;}" ;;
                    "listen 127.0.0.1:"*) line="${line#listen 127.0.0.1:}"; STACK_PORT="${line%% *}"; break ;;
                esac
            done 2>/dev/null < "$d/nginx.conf"
            return 0
        done
    done
    return 1
}

# check_ports [pid…]: every port of stack_ports is free; else it says, on stderr, which port is
# taken, what the stack wanted it for and who holds it (process and pid, from ss), suggests a
# SEATD_PORT whose ports are all free, and returns 1. A port held by one of the given pids
# (this runtime folder's own running stack, which deploy/up stops first) counts as free.
# A port is taken by a listener on its address or on every address (0.0.0.0, or *: an IPv6
# socket that takes IPv4 too), or by an open connection from it (an outgoing connection got
# it as its local port: the bind fails as well).
check_ports() {
    local taken
    taken="$({ stack_ports; echo --; ss -tanpH 2>/dev/null; } | awk -v own="$*" -v base="$SEATD_PORT" '
        function node_addr(p) { return "127.1." int(p / 256) "." (p % 256) }
        # the addresses of wanted port i, had SEATD_PORT moved by d
        function addrs(i, d,    n, a, j, out) {
            n = split(wa[i], a, ","); out = ""
            for (j = 1; j <= n; j++) {
                if (a[j] ~ /^node:/) a[j] = node_addr(substr(a[j], 6) + (wm[i] ? d : 0))
                out = out (j > 1 ? "," : "") a[j]
            }
            return out
        }
        function clash(list, laddr,    n, a, j) {
            if (laddr == "0.0.0.0" || laddr == "*") return 1
            n = split(list, a, ",")
            for (j = 1; j <= n; j++) if (a[j] == laddr) return 1
            return 0
        }
        BEGIN { n = split(own, o, " "); for (i = 1; i <= n; i++) ownpid[o[i]] = 1 }
        sec == 0 && $0 == "--" { sec = 1; next }
        sec == 0 {
            nw++; wp[nw] = $1; wa[nw] = $2; wm[nw] = $3; ww[nw] = $5
            for (i = 6; i <= NF; i++) ww[nw] = ww[nw] " " $i
            next
        }
        $1 != "LISTEN" && $1 != "ESTAB" && $1 != "SYN-SENT" { next }
        {
            if (!match($4, /:[0-9]+$/)) next
            nl++; lp[nl] = substr($4, RSTART + 1) + 0; la[nl] = substr($4, 1, RSTART - 1)
            ls[nl] = $1; lr[nl] = $5
            gsub(/^\[|\]$/, "", la[nl]); sub(/^::ffff:/, "", la[nl])
            # users:(("nginx",pid=12,fd=5),("nginx",pid=11,fd=5)) -> "nginx (pids 12, 11)"
            nn = 0; pids = ""; lo[nl] = 0; s = $0
            split("", names); split("", plist); split("", seen)
            while (match(s, /\("[^"]*",pid=[0-9]+/)) {
                u = substr(s, RSTART + 2, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
                split(u, nv, "\",pid=")
                if (nv[2] in ownpid) lo[nl] = 1
                if (nv[2] in seen) continue
                seen[nv[2]] = 1; pids = pids (pids == "" ? "" : " ") nv[2]
                if (!(nv[1] in plist)) { names[++nn] = nv[1]; plist[nv[1]] = nv[2] }
                else { plist[nv[1]] = plist[nv[1]] ", " nv[2]; multi[nv[1]] = 1 }
            }
            users = ""
            for (k = 1; k <= nn; k++)
                users = users (k > 1 ? ", " : "") names[k] ((names[k] in multi) ? " (pids " : " (pid ") plist[names[k]] ")"
            delete multi
            lu[nl] = users; lpids[nl] = pids
        }
        END {
            # One line per taken port: its listener, else a connection from it.
            for (i = 1; i <= nw; i++) {
                a = addrs(i, 0); best = 0
                for (j = 1; j <= nl; j++)
                    if (!lo[j] && lp[j] == wp[i] && clash(a, la[j]) && (!best || (ls[j] == "LISTEN" && ls[best] != "LISTEN")))
                        best = j
                if (!best) continue
                printf "T\037%s\037%s\037%s\037%s\037%s\037%s\037%s\037%s\n", wp[i], ww[i], la[best], ls[best], lr[best], lu[best], lpids[best], wm[i]
                any = 1; if (!wm[i]) fixed = 1
            }
            if (!any || fixed) exit
            # A SEATD_PORT whose every port is free (own stack included: it keeps running),
            # 10, 20, … above this one, else below.
            for (t = 1; t <= 196; t++) {
                d = (t <= 98) ? 10 * t : -10 * (t - 98)
                ok = 1
                for (i = 1; i <= nw && ok; i++) {
                    p = wp[i] + (wm[i] ? d : 0)
                    if (p < 1024 || p > 65535) { ok = 0; break }
                    a = addrs(i, d)
                    for (j = 1; j <= nl; j++) if (lp[j] == p && clash(a, la[j])) { ok = 0; break }
                }
                if (ok) { print "H\037" base + d; exit }
            }
        }')"
    [ -z "$taken" ] && return 0
    local kind port what laddr state peer users pids moves hint="" fixed=0 n=0 pid p a cmd run root runs=" " it summary
    {
        echo "deploy/up: the stack of SEATD_PORT=$SEATD_PORT cannot start: a port it needs is taken (nothing was started)"
        while IFS=$'\037' read -r kind port what laddr state peer users pids moves; do
            case "$kind" in H) hint="$port"; continue ;; esac
            [ "$moves" = 1 ] || fixed=1
            n=$((n + 1))
            [ -n "$users" ] ||
                users="a process ss cannot name (another user's or another container's: try sudo ss -tanp 'sport = :$port')"
            if [ "$state" = LISTEN ]; then
                echo "  port $port, for $what: taken by $users, listening on $laddr:$port"
            else
                echo "  port $port, for $what: taken by $users, a connection from $laddr:$port to $peer"
            fi
            [ -n "$pids" ] || continue
            # The parent (nginx's master) has the lowest pid, mostly: its command line.
            pid=""
            for p in $pids; do [ -n "$pid" ] && [ "$pid" -le "$p" ] || pid="$p"; done
            cmd=""
            while IFS= read -r -d '' a; do cmd+="$a "; done 2>/dev/null < "/proc/$pid/cmdline"
            cmd="${cmd//[$'\n\t']/ }"; cmd="${cmd%"${cmd##*[! ]}"}" # (Redis pads it with spaces)
            [ -z "$cmd" ] || echo "      pid $pid: ${cmd:0:110}"
            # Another seatd stack: say which, and how to stop it.
            run=""
            for p in $pids; do stack_of_pid "$p" && run="$STACK_RUN" && break; done
            [ -n "$run" ] || continue
            case "$runs" in *" $run "*) echo "      that is the same seatd stack, in $run"; continue ;; esac
            runs+="$run "
            root="${run%/run/*}"
            if [ -n "$STACK_PORT" ] && [ "$run" = "$root/run/$STACK_PORT" ] && [ -x "$root/deploy/down" ]; then
                echo "      that is the seatd stack of SEATD_PORT=$STACK_PORT in $root: stop it with SEATD_PORT=$STACK_PORT $root/deploy/down"
            else
                echo "      that is the seatd stack in $run: stop it with SEATD_PORT=${STACK_PORT:-?} SEATD_RUN_DIR=$run deploy/down"
            fi
        done <<< "$taken"
        it="that port"; [ "$n" -eq 1 ] || it="those ports"
        if [ -n "$hint" ]; then
            echo "Free $it, or run this stack on other ports: SEATD_PORT=$hint deploy/up   (every port of that stack is free now)"
        elif [ "$fixed" = 1 ]; then
            echo "Free $it, or change the port given in the environment (${SEATD_FIXED_PORTS# })."
        else
            echo "Free $it, or run this stack with another SEATD_PORT."
        fi
        summary="$(ports_summary)"; summary="${summary%%$'\n'*}"
        echo "This stack uses: ${summary#ports: }"
    } >&2
    return 1
}
