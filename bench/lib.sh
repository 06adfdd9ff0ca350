# bench/lib.sh - shell helpers shared by bench/run and the anchor scripts (sourced, not run).
# Every process started here is bounded in time and stopped by its pid.

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"

say() { echo "bench: $*" >&2; }
die() { echo "bench: FAIL: $*" >&2; exit 1; }

# free_port: prints a loopback TCP port nobody listens on.
# Below the kernel's ephemeral range: a port there can be the local end of some client's
# connection (the bench's own thousands) without anything listening on it, and a server
# then cannot bind it (PostgreSQL failed so once).
free_port() {
    local p i lo
    lo="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)"
    [ "${lo:-0}" -gt 12000 ] || lo=32768
    for i in $(seq 1 200); do
        p=$(( 10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000) ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}

# wait_port <port> <seconds>: waits until something accepts on 127.0.0.1:<port>.
wait_port() {
    local i
    for i in $(seq 1 $(( $2 * 10 ))); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# stop_pid <pid>: TERM, then KILL after 5 s; quiet if already gone.
stop_pid() {
    local pid="$1" i
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

# ratio <a> <b>: a/b with two decimals, "n/a" when b is 0 or missing.
ratio() { awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }

# need <command> <debian package>: installs the package when root and the command is missing.
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    [ -x "$1" ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing $2"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                 --no-install-recommends "$2" >/dev/null; }
    fi
    command -v "$1" >/dev/null 2>&1 || [ -x "$1" ] || die "$1 missing (Debian package $2)"
}

# lua_library: prints the seatd Functions library as the worker embeds and loads it
# (cmake/embed_lua.cmake): lua/*.lua in the order of SEATD_LUA_FILES in CMakeLists.txt, each
# followed by a newline, and after the first one the limits of SEATD_LUA_CONSTS' headers as
# Lua locals ("#define SEATD_X 12 /* lua: X */" -> "local X = 12").
lua_library() {
    local f h first=1
    for f in $(sed -n '/set(SEATD_LUA_FILES/,/)/p' "$ROOT/CMakeLists.txt" | grep -o 'lua/[a-z_]*\.lua'); do
        cat "$ROOT/$f"
        echo
        if [ "$first" = 1 ]; then
            first=0
            for h in $(sed -n 's/^set(SEATD_LUA_CONSTS \(.*\))$/\1/p' "$ROOT/CMakeLists.txt" |
                       grep -o 'worker/[a-z_/]*\.h'); do
                sed -n 's|^#define SEATD_[A-Z0-9_]* *\([0-9][0-9]*\) */\* lua: \([A-Z0-9_]*\) .*|local \2 = \1|p' "$ROOT/$h"
            done
        fi
    done
}

# start_redis <dir>: starts a private redis-server configured like production (noeviction,
# AOF everysec) on a free loopback port in <dir>; prints the port. Stop with stop_redis <dir>.
start_redis() {
    local dir="$1" port
    port="$(free_port)"
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize yes \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' \
        --appendonly yes --appendfsync everysec --maxmemory-policy noeviction \
        --protected-mode no >/dev/null || return 1
    wait_port "$port" 10 || return 1
    echo "$port"
}
stop_redis() { [ -f "$1/redis.pid" ] && stop_pid "$(cat "$1/redis.pid")"; return 0; }

# load_library <port>: FUNCTION LOAD REPLACE of the library into the (private, password-less)
# redis at <port>.
load_library() {
    lua_library | env -u REDISCLI_AUTH redis-cli -p "$1" -x FUNCTION LOAD REPLACE >/dev/null
}
