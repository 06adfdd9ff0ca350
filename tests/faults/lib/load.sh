# tests/faults/lib/load.sh - sourced by tests/faults/run: the shows and the load. A fresh show
# (new_show) or group of two (new_group), the load's share with places (AREA_LOAD) and with
# group holds (group_load), the load generator in the background (start_load, wait_load), a
# probe hold through nginx (probe_hold) and the time to recover after a fault (first_win_after).
# shellcheck shell=bash
# new_show: a fresh 2,000-seat show with a standing area FLOOR of 100,000 places (never sold
# out by a scenario), hold TTL 4 s (POST /v1/shows, else straight in Redis).
new_show() {
    local id
    id="$("$LOADGEN" --target "127.0.0.1:$SEATD_PORT" --create-only --hold-ttl 4 \
        --area-capacity 100000 2>>"$W/create.err" | sed -n 's/^show id=//p')"
    [ -n "$id" ] || id="$("$LOADGEN" --direct --redis "127.0.0.1:$RP" --create-only --hold-ttl 4 \
        --area-capacity 100000 | sed -n 's/^show id=//p')"
    echo "$id"
}
# The load's share with places (start_load's extra arguments in the kill/restart scenarios):
# half the holds ask for 2 FLOOR places too, a third of those for the places alone.
AREA_LOAD=(--areas FLOOR:2 --areas-pct 50 --areas-only-pct 33)

# new_group: a fresh group of two such shows, the second created "groupWith" the first (so both
# share its hash slot), and POST /v1/groups; sets SHOW (the first), SHOW2 and GROUP.
new_group() {
    local line
    line="$("$LOADGEN" --target "127.0.0.1:$SEATD_PORT" --create-only --group 2 --hold-ttl 4 \
        --area-capacity 100000 2>>"$W/create.err" | grep '^group id=')"
    GROUP="$(echo "$line" | sed -n 's/^group id=\([^ ]*\) .*/\1/p')"
    SHOW="$(echo "$line" | sed -n 's/.* shows=\([0-9]*\),\([0-9]*\)$/\1/p')"
    SHOW2="$(echo "$line" | sed -n 's/.* shows=\([0-9]*\),\([0-9]*\)$/\2/p')"
}
# group_load: start_load's extra arguments in a grouped scenario (begin <name> group): 30 % of
# the holds are group holds over the group of $SHOW and $SHOW2 (the same seats and places in
# both, all or nothing), the rest named holds on $SHOW.
group_load() { [ -n "${GROUP:-}" ] && echo "--group 2 --group-id $GROUP --group-pct 30"; }

# start_load <seconds> [loadgen args…]: the hold+booking load on $SHOW, in the background,
# logging every outcome to $LOG (see bench/loadgen.c --log).
start_load() {
    local dur="$1"; shift
    "$LOADGEN" --target "127.0.0.1:$SEATD_PORT" --show "$SHOW" --procs 1 --conns 16 \
        --rate "$RATE" --duration "$dur" --book-pct 10 --release-pct 40 --idem --log "$LOG" "$@" \
        >"$W/$NAME.out" 2>"$W/$NAME.err" &
    LOAD_PID=$!
}
wait_load() {
    wait "$LOAD_PID" || note "the load generator exited non-zero ($(tail -1 "$W/$NAME.err"))"
    LOAD_PID=""
}

# probe_hold: one 1-seat hold through nginx on a seat the load rarely asks for (rows AK-AN);
# prints the status; a won probe is released at once.
probe_hold() {
    local seat body code id
    seat="A$(printf '%s' KLMN | cut -c$((RANDOM % 4 + 1)))$((RANDOM % 50 + 1))"
    body="$(curl -s -m 5 -w '\n%{http_code}' -X POST "$BASE/v1/shows/$SHOW/holds" \
        -H "Authorization: Bearer $PROBE_TOKEN" -H 'Content-Type: application/json' \
        -d "{\"seatIds\":[\"$seat\"]}" 2>/dev/null)"
    code="${body##*$'\n'}"
    id="$(printf '%s' "$body" | sed -n 's/.*"holdId":"\([^"]*\)".*/\1/p')"
    [ -n "$id" ] && curl -s -m 5 -o /dev/null -X DELETE "$BASE/v1/holds/$id" \
        -H "Authorization: Bearer $PROBE_TOKEN"
    echo "${code:-0}"
}

# first_win_after <ms>: ms from <ms> (taken right after the fault was injected) to the answer
# of the first hold sent after it and answered 201 in $LOG, or
# (no such answer: the load had ended) from <ms> to a probe hold that succeeds (30 s deadline).
first_win_after() {
    local t="$1" d deadline
    d="$(awk -v t="$t" '$2 == "hold" && $3 == 201 && $1 - $9 / 1000 >= t { if (m == "" || $1 < m) m = $1 }
        END { if (m != "") print m - t }' "$LOG")"
    if [ -z "$d" ]; then
        deadline=$((SECONDS + 30))
        until [ "$(probe_hold)" = 201 ]; do
            [ "$SECONDS" -ge "$deadline" ] && { echo "never"; return; }
            sleep 0.1
        done
        d=$(( $(now_ms) - t ))
    fi
    echo "$d"
}
