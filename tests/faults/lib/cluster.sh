# tests/faults/lib/cluster.sh - sourced by tests/faults/run (SEATD_FAULTS_CLUSTER=1): the
# cluster's helpers (shows on three shards, a node's role and replica, the cluster's state,
# cutting a node off with iptables and healing the cut, seats CONFIRMED twice) and the cluster
# scenarios: partition, replica-kill, primary-kill and reshard.
# shellcheck shell=bash
# shows_on_shards: creates shows until three sit on three different primaries; prints
# "<show> <port of its primary>", one a line.
shows_on_shards() {
    local id p seen="" out="" tries=0
    while [ "$(printf '%s' "$out" | grep -c .)" -lt 3 ] && [ "$tries" -lt 40 ]; do
        tries=$((tries + 1))
        id="$(new_show)"; [ -n "$id" ] || continue
        p="$(show_port "$id")"
        case " $seen " in *" $p "*) ;; *) seen+=" $p"; out+="$id $p"$'\n' ;; esac
    done
    printf '%s' "$out"
}

# longest_gap <log> <from ms> <to ms>: the longest time in [from, to] without a hold answered
# 201 in <log> (ms): how long that show could not sell.
longest_gap() {
    awk -v a="$2" -v b="$3" '$2 == "hold" && $3 == 201 && $1 >= a && $1 <= b { print $1 }' "$1" |
        sort -n | awk -v a="$2" -v b="$3" 'BEGIN { p = a; g = 0 }
            { if ($1 - p > g) g = $1 - p; p = $1 } END { if (b - p > g) g = b - p; print int(g) }'
}

cluster_ok() {
    local n
    for n in $(redis_nodes); do
        redis-cli -p "$n" CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
}

# replica_port <primary port>: the port of its (first) replica, from INFO replication.
replica_port() {
    redis-cli -p "$1" INFO replication 2>/dev/null | tr -d '\r' |
        sed -n 's/^slave0:.*port=\([0-9]*\).*/\1/p'
}
# role_is <port> master|slave: the node's ROLE.
role_is() { [ "$(redis-cli -p "$1" ROLE 2>/dev/null | head -1)" = "$2" ]; }
# rejoined <port>: the node is a replica with its link to its primary up.
rejoined() {
    local info
    info="$(redis-cli -p "$1" INFO replication 2>/dev/null | tr -d '\r')"
    case "$info" in *role:slave*master_link_status:up*) return 0 ;; esac
    return 1
}
# redis_log_ms <line of a Redis log>: its time stamp in ms ("pid:R 14 Mar 2025 10:00:00.123 …").
redis_log_ms() { date -d "$(printf '%s\n' "$1" | awk '{ print $2, $3, $4, $5 }')" +%s%3N 2>/dev/null; }
# statuses <log> <from ms> <to ms>: the answers in [from, to] by status, "{201:N,503:N,…}".
statuses() {
    echo "{$(awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b { print $3 }' "$1" | sort -n | uniq -c |
        awk '{ printf "%s%s:%s", (NR > 1 ? "," : ""), $2, $1 }')}"
}

# ------------------------------------------------------------------ network partition

# can_reach <from address> <to address> <port>: a TCP connection from one loopback address to
# another opens within 1 s.
can_reach() {
    /usr/bin/python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(1); s.bind((sys.argv[1], 0))
try: s.connect((sys.argv[2], int(sys.argv[3])))
except OSError: sys.exit(1)' "$1" "$2" "$3"
}

# cut_node <port>: drops every packet between that node's address and every other node's,
# both ways (deploy/up: each node sends its replication and cluster-bus traffic from its own
# address). In INPUT only: a packet on lo passes INPUT on its way in, so that drops it
# silently, as a network that splits does (a DROP in OUTPUT would fail the sender's
# connect() at once instead). The workers' and tools' connections come from 127.0.0.1 and
# are left alone.
cut_node() {
    local va n na
    va="$(node_addr "$1")"
    for n in $(redis_nodes); do
        [ "$n" = "$1" ] && continue
        na="$(node_addr "$n")"
        ipt_add INPUT -i lo -s "$va" -d "$na" -j DROP
        ipt_add INPUT -i lo -s "$na" -d "$va" -j DROP
    done
}
ipt_add() {
    if iptables -w -I "$@"; then IPT_RULES+=("$*"); else fail_core "iptables -I $* failed"; fi
}
# heal_cut: deletes exactly the rules cut_node added (never a flush: other rules stay).
heal_cut() {
    local r
    for r in "${IPT_RULES[@]}"; do
        # shellcheck disable=SC2086
        iptables -w -D $r || say "could not delete the iptables rule: $r"
    done
    IPT_RULES=()
}

# poll_node <port> <file>: every ~100 ms, "<ms> <NOREPLICAS errors> <CLUSTERDOWN errors>" of
# the node so far (INFO errorstats), until killed.
poll_node() {
    while :; do
        redis-cli -p "$1" INFO errorstats 2>/dev/null | tr -d '\r' |
            awk -v t="$(now_ms)" '/^errorstat_NOREPLICAS:/ { sub(/.*count=/, ""); nr = $0 }
                /^errorstat_CLUSTERDOWN:/ { sub(/.*count=/, ""); cd = $0 }
                END { print t, nr + 0, cd + 0 }' >>"$2"
        sleep 0.1
    done
}

# unsettled_charges: how many succeeded charges of the show are neither a CONFIRMED (or
# CANCELLED) booking nor refunded in full, now (check_charges' count, without its verdict).
unsettled_charges() {
    local led="$W/$NAME.charges.now"
    node "$HERE/ledger.js" "$RUN/gateway-ledger.jsonl" "$SHOW-b" >"$led" || { echo 0; return; }
    awk -v s="$SHOW" '{ print "HGET {s:" s "}:booking:" $1 " status" }' "$led" >"$led.cmds"
    redis_lines "$led.cmds" | paste -d' ' "$led" - |
        awk '$2 == "succeeded" && !(($5 == "CONFIRMED" && $4 == 0) || $5 == "CANCELLED" || $4 >= $3)' | wc -l
}

# confirmed_twice: seats told CONFIRMED to two buyers: two different bookings, each answered
# 201 CONFIRMED in the load log (its hold's seats from the log) or CONFIRMED in Redis once
# settled (its seats from Redis), that share a seat. Sets TWICE (seats) and fails on any.
confirmed_twice() {
    local cmds="$W/$NAME.cmds" f="$W/$NAME.sold"
    awk '$2 == "book" && ($3 == 201 || $3 == 200) && $8 == "CONFIRMED" && $10 != "-" { print $6, $10 }' "$LOG" >"$f"
    rcli --scan --pattern "{s:$SHOW}:booking:*" >"$W/$NAME.bkeys2"
    sed 's/^/HMGET /; s/$/ status seatIds/' "$W/$NAME.bkeys2" >"$cmds"
    redis_lines "$cmds" | paste -d' ' - - | paste -d' ' "$W/$NAME.bkeys2" - |
        awk '$2 == "CONFIRMED" { sub(/.*:booking:/, "", $1); print $1, $3 }' >>"$f"
    awk '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (!(($1, a[i]) in seen)) {
            seen[$1, a[i]] = 1; by[a[i]] = by[a[i]] " " $1; cnt[a[i]]++ } }
        END { for (s in cnt) if (cnt[s] > 1) print s by[s] }' "$f" >"$W/$NAME.twice"
    TWICE="$(wc -l <"$W/$NAME.twice")"
    [ "$TWICE" -gt 0 ] &&
        fail_core "$TWICE seat(s) told CONFIRMED to two buyers: $(head -3 "$W/$NAME.twice" | tr '\n' ',')"
}

# One show's primary cut off from every other node (its replica and the other primaries) but
# not from the workers, under a hold+booking load, for longer than the node timeout: the
# majority promotes its replica; then the cut heals and the old primary rejoins as a replica,
# dropping what it took alone. docs/design.md, "When the network splits".
PARTITION_S="${SEATD_FAULTS_PARTITION_S:-13}"
scn_partition() {
    begin partition
    local v r va ra rlog rlines tcut theal tback promo promo_ms fence="" lastw201
    v="$SHOW_RP"; r="$(replica_port "$v")"
    va="$(node_addr "$v")"; ra="$(node_addr "${r:-0}")"
    if ! command -v iptables >/dev/null || [ -z "$r" ]; then
        fail_core "no iptables, or the show's primary ($v) has no replica"; HOLDS=0; report; return
    fi
    can_reach "$ra" "$va" $((v + 10000)) || fail_core "before the cut: $ra cannot reach $va:$((v + 10000))"
    say "  cutting off the primary $va:$v (replica $ra:$r) for ${PARTITION_S} s"
    rlog="$RUN/logs/redis-$r.log"; rlines="$(wc -l <"$rlog")"
    # ~20 bookings/s: a quarter of the won holds booked.
    start_load $((PARTITION_S + 14)) --book-pct 25
    sleep 5
    poll_node "$v" "$W/$NAME.poll" &
    POLL_PID=$!
    sleep 0.3
    tcut="$(now_ms)"
    KILL_MS="$tcut"
    cut_node "$v"
    # The cut holds: replication and the cluster bus both ways, not the workers' side.
    can_reach "$va" "$ra" $((r + 10000)) && fail_core "the cut let $va reach $ra's cluster bus"
    can_reach "$ra" "$va" "$v" && fail_core "the cut let $ra reach $va:$v"
    [ "$(redis-cli -h "$va" -p "$v" PING 2>/dev/null)" = PONG ] ||
        fail_core "the cut also cut 127.0.0.1 (workers, tools) from $va:$v"
    while [ "$(now_ms)" -lt $((tcut + PARTITION_S * 1000)) ]; do sleep 0.1; done
    theal="$(now_ms)"
    heal_cut
    can_reach "$ra" "$va" "$v" || fail_core "after the heal $ra still cannot reach $va:$v"
    # The old primary rejoins as a replica of the promoted one, and the cluster is whole.
    if wait_for 60 rejoined "$v" && wait_for 60 cluster_ok; then
        tback="$(now_ms)"
    else
        fail_core "the old primary did not rejoin as a replica within 60 s of the heal"; tback=""
    fi
    kill "$POLL_PID" 2>/dev/null; wait "$POLL_PID" 2>/dev/null; POLL_PID=""
    wait_load
    # A charge whose booking the heal discarded is refunded by the reconciler's walk of the
    # gateway's ledger after its grace period (--ledger-grace-ms): up to 20 s for it.
    SHOW_RP="$(show_port "$SHOW")"
    local deadline=$((SECONDS + 20))
    until [ "$(unsettled_charges)" -eq 0 ]; do
        [ "$SECONDS" -ge "$deadline" ] && break
        sleep 1
    done
    # When the majority promoted the replica (its log), and when the cut-off primary first
    # refused a write with NOREPLICAS (INFO errorstats on it, from 127.0.0.1, every ~100 ms).
    promo="$(tail -n +$((rlines + 1)) "$rlog" | grep -m1 'Failover election won')"
    promo_ms="$( [ -n "$promo" ] && redis_log_ms "$promo")"
    [ -n "$promo_ms" ] || fail_core "the cut-off primary's replica was not promoted during the ${PARTITION_S} s cut"
    fence="$(awk -v t="$tcut" '$1 <= t { n0 = $2 } $1 > t && $2 > n0 + 0 { print $1 - t; exit }' "$W/$NAME.poll")"
    # The last hold answered 201 before the promotion (only the old primary could take it).
    lastw201="$(awk -v t="$tcut" -v p="${promo_ms:-$theal}" '$2 == "hold" && $3 == 201 && $1 > t && $1 < p { if ($1 > m) m = $1 }
        END { print (m == "" ? "-" : m - t) }' "$LOG")"
    RECOVER="$(first_win_after "$theal")"
    EXTRA+=" window_ms=$((theal - tcut)) promoted_after_ms=$( [ -n "$promo_ms" ] && echo $((promo_ms - tcut)) || echo never)"
    EXTRA+=" rejoined_after_heal_ms=$( [ -n "$tback" ] && echo $((tback - theal)) || echo never)"
    PART_LINE="last_hold_201_before_promotion_ms=$lastw201 noreplicas_after_ms=${fence:-never}"
    PART_LINE+=" promoted_after_ms=$( [ -n "$promo_ms" ] && echo $((promo_ms - tcut)) || echo never)"
    PART_LINE+=" sold_after_heal_ms=$RECOVER"
    local answers n5; answers="$(statuses "$LOG" "$tcut" "$theal")"
    # A primary that refuses (NOREPLICAS, CLUSTERDOWN) or cannot be reached is 503 + Retry-After.
    n5="$(awk '$3 >= 500 && $3 != 503' "$LOG" | wc -l)"
    [ "$n5" -eq 0 ] || fail_core "$n5 answer(s) 5xx other than 503: $(awk '$3 >= 500 && $3 != 503 { c[$2 "/" $3 "/" $8]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$LOG")"
    # Holds acknowledged during the cut may go with the old primary; those acknowledged more
    # than 1 s before it (replication lag) may not; no booking acknowledged (201, after WAIT)
    # may go at all.
    ACK_WINDOW=1000; NO_LOST_BOOKINGS=1
    TWICE=0; FINISH_CHECK=confirmed_twice
    finish
    local audit=clean; [ "${AUDIT_RC:-1}" -eq 0 ] || audit=dirty
    # How long the cut-off primary kept acknowledging writes: the last acknowledged write
    # (check_acked's lost ones) that the heal discarded, answered after the cut.
    local last_write
    last_write="$(awk -v t="$tcut" '$1 > t && $1 > m { m = $1 } END { print (m == "" ? "none" : m - t) }' "$W/$NAME.lost")"
    echo "partition: window_ms=$((theal - tcut)) old_primary_writes_after_cut_ms=$last_write $PART_LINE confirmed_twice=$TWICE acked_bookings_lost=$LOST_B holds_lost=$LOST_H charges_unsettled=$UNMAPPED audit=$audit answers_during=$answers"
}

# kill -9 of the only replica of a show's primary under load; the replica is started again 5 s
# later (as deploy/up starts it). With fencing the primary refuses writes within the bound
# (max-lag + 2 s: Redis counts the lag in whole seconds and its good replicas once a second;
# a killed replica's closed link is seen at once), answered 503 + Retry-After, and the show
# sells again soon after the replica is back.
scn_replica_kill() {
    begin replica-kill
    local v r tkill trest bound late refuse n5 back_ms="" plog plines sync
    v="$SHOW_RP"; r="$(replica_port "$v")"
    if [ -z "$r" ]; then fail_core "the show's primary ($v) has no replica"; HOLDS=0; report; return; fi
    plog="$RUN/logs/redis-$v.log"; plines="$(wc -l <"$plog")"
    say "  killing the replica $r of the show's primary $v"
    start_load 15 --book-pct 25
    sleep 4
    tkill="$(now_ms)"
    KILL_MS="$tkill"
    kill -9 "$(cat "$RUN/redis-$r.pid")"
    wait_for 10 gone "$(cat "$RUN/redis-$r.pid")" || fail_core "the replica did not die"
    wait_for 10 port_closed "$r"
    while [ "$(now_ms)" -lt $((tkill + 5000)) ]; do sleep 0.1; done
    trest="$(now_ms)"
    redis-server "$RUN/redis-$r.conf" || fail_core "the replica did not restart"
    wait_load
    # The replica in sync again: the primary's log.
    sync="$(tail -n +$((plines + 1)) "$plog" | grep -m1 'Synchronization with replica .* succeeded')"
    [ -n "$sync" ] && back_ms=$(( $(redis_log_ms "$sync") - trest ))
    bound=$(( (SEATD_REDIS_MIN_REPLICAS_MAX_LAG + 2) * 1000 ))
    # Holds sent after the kill (+ the bound) and answered 201 before the restart: the primary
    # took writes without its replica.
    late="$(awk -v a=$((tkill + bound)) -v b="$trest" '$2 == "hold" && $3 == 201 && $1 - $9 / 1000 >= a && $1 < b' "$LOG" | wc -l)"
    # The first hold refused (5xx) among those sent after the kill.
    refuse="$(awk -v a="$tkill" '$2 == "hold" && $3 >= 500 && $1 - $9 / 1000 >= a { if (m == "" || $1 < m) m = $1 }
        END { print (m == "" ? "never" : m - a) }' "$LOG")"
    RECOVER="$(first_win_after "$trest")"
    EXTRA+=" replica=$r first_refusal_after_kill_ms=$refuse holds_201_past_bound=$late bound_ms=$bound"
    EXTRA+=" replica_synced_after_restart_ms=${back_ms:-never} sold_after_restart_ms=$RECOVER"
    EXTRA+=" answers_while_down=$(statuses "$LOG" "$tkill" "$trest")"
    if [ "${SEATD_REDIS_MIN_REPLICAS:-1}" -ge 1 ]; then
        [ "$late" -eq 0 ] || fail_core "$late hold(s) sent more than $bound ms after the replica died were answered 201: the primary took writes without a replica"
        [ "$refuse" != never ] || fail_core "no hold was refused while the show's primary had no replica"
    else
        note "SEATD_REDIS_MIN_REPLICAS=0: no fencing to check"
    fi
    [ "$RECOVER" != never ] && [ "$RECOVER" -le 5000 ] ||
        fail_core "the show sold again ${RECOVER} ms after its replica's restart (limit 5000 ms)"
    n5="$(awk '$3 >= 500 && $3 != 503' "$LOG" | wc -l)"
    [ "$n5" -eq 0 ] || fail_core "$n5 answer(s) 5xx other than 503: $(awk '$3 >= 500 && $3 != 503 { c[$2 "/" $3 "/" $8]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$LOG")"
    # Nothing was lost: the primary never stopped.
    NO_LOST_BOOKINGS=1
    finish
    wait_for 30 rejoined "$r" || say "the replica $r did not come back in sync"
}

# kill -9 the primary of one show's shard under load on three shows (one per shard).
scn_primary_kill() {
    begin primary-kill
    local pairs vport others o t lim gap n5 pids="" limit
    pairs="$(shows_on_shards)"
    if [ "$(printf '%s' "$pairs" | grep -c .)" != 3 ]; then
        fail_core "could not place one show on each of 3 shards"; HOLDS=0; report; return
    fi
    SHOW="$(printf '%s' "$pairs" | sed -n 1p | cut -d' ' -f1)"; SHOW_RP="$(show_port "$SHOW")"
    vport="$(printf '%s' "$pairs" | sed -n 1p | cut -d' ' -f2)"
    others="$(printf '%s' "$pairs" | sed -n '2,3p' | cut -d' ' -f1 | tr '\n' ' ')"
    say "  victim: show $SHOW on the primary at $vport; other shards: shows $others"
    for o in $others; do
        "$LOADGEN" --target "127.0.0.1:$SEATD_PORT" --show "$o" --procs 1 --conns 8 \
            --rate "$RATE" --duration 16 --book-pct 10 --release-pct 40 --idem \
            --log "$W/$NAME-$o.log" >"$W/$NAME-$o.out" 2>"$W/$NAME-$o.err" &
        pids+=" $!"
    done
    local rport rlog rlines=0 tback="" twrite="" sync
    rport="$(replica_port "$vport")"
    rlog="$RUN/logs/redis-${rport:-none}.log"
    [ -f "$rlog" ] && rlines="$(wc -l <"$rlog")"
    start_load 16
    sleep 5
    KILL_MS="$(now_ms)"
    kill -9 "$(cat "$RUN/redis-$vport.pid")"
    t="$(now_ms)"
    # With fencing (min-replicas-to-write) the promoted replica takes writes only once it has a
    # replica of its own: the old primary is started again (as deploy/up starts it) as soon as
    # its replica is promoted, and rejoins as that one's replica. (Started before the promotion
    # it would come back as the primary, and nothing would fail over.)
    local deadline=$((SECONDS + 30))
    while [ -n "$rport" ] && ! role_is "$rport" master; do
        [ "$SECONDS" -ge "$deadline" ] && { rport=""; break; }
        sleep 0.02
    done
    if [ -n "$rport" ]; then
        wait_for 10 port_closed "$vport"
        tback="$(now_ms)"
        redis-server "$RUN/redis-$vport.conf" || fail_core "the old primary did not restart"
    fi
    wait_load
    for o in $pids; do wait "$o"; done
    RECOVER="$(first_win_after "$t")"
    # Redis's part: the replica's promotion ("Failover election won" in its log). Redis marks a
    # primary failed once a majority of primaries saw no answer for cluster-node-timeout
    # (between 1x and 1.5x the timeout after the kill, the pings being spread over half of
    # it), then the replica waits 0.5-1 s before its election; with fencing, then the old
    # primary's restart and sync as the new one's replica. seatd's part: from the moment the
    # promoted primary takes writes (a replica in sync) to the first sale, under 2 s.
    # (Both times from the promoted replica's log: the election, then its replica in sync.)
    local promo promo_ms
    promo="$(tail -n +$((rlines + 1)) "$rlog" 2>/dev/null | grep -m1 'Failover election won')"
    promo_ms="$( [ -n "$promo" ] && redis_log_ms "$promo")"
    sync="$(tail -n +$((rlines + 1)) "$rlog" 2>/dev/null | sed -n '/Failover election won/,$p' |
        grep -m1 'Synchronization with replica .* succeeded')"
    twrite="$( [ -n "$sync" ] && redis_log_ms "$sync")"
    [ -n "$twrite" ] || twrite="$promo_ms"
    if [ "$RECOVER" = never ] || [ -z "$promo_ms" ]; then
        fail_core "the killed shard's show never sold again (promotion: ${promo:-none})"
    else
        EXTRA+=" redis_failover_ms=$((promo_ms - t)) sale_after_promotion_ms=$((t + RECOVER - promo_ms))"
        [ -n "$tback" ] && EXTRA+=" old_primary_restarted_ms=$((tback - t)) writable_ms=$((twrite - t))"
        EXTRA+=" sale_after_writable_ms=$((t + RECOVER - twrite))"
        [ $((t + RECOVER - twrite)) -le 2000 ] ||
            fail_core "the killed shard's show sold again $((t + RECOVER - twrite)) ms after its new primary could take writes (limit 2000 ms)"
        # This script's own delay in seeing the promotion and starting the old primary (on a
        # busy 2-core machine, a few hundred ms) is not the stack's: it is added to the limit.
        local lag=0
        [ -n "$tback" ] && [ "$tback" -gt "$promo_ms" ] && lag=$((tback - promo_ms))
        limit=$((SEATD_REDIS_NODE_TIMEOUT_MS * 3 / 2 + 3000 + lag))
        EXTRA+=" restart_lag_ms=$lag"
        [ "$RECOVER" -le "$limit" ] ||
            fail_core "the killed shard's show sold again after ${RECOVER} ms (limit: 1.5 x node timeout + 3 s + ${lag} ms of this script's restart lag = $limit ms)"
    fi
    # The other shards kept selling: no second without a win while the shard was down.
    for o in $others; do
        gap="$(longest_gap "$W/$NAME-$o.log" "$t" $((t + ${RECOVER/never/20000})))"
        EXTRA+=" show${o}_longest_gap_ms=$gap"
        [ "$gap" -le 1000 ] || fail_core "show $o (another shard) sold nothing for $gap ms during the failover"
        # ...and answered no 5xx at all: nothing of a hold or a booking on a healthy shard may
        # wait for the dead one (the buyer's index, the per-user counters).
        n5="$(awk '$3 >= 500' "$W/$NAME-$o.log" | wc -l)"
        EXTRA+=" show${o}_5xx=$n5"
        [ "$n5" -eq 0 ] || fail_core "show $o (another shard) answered $n5 5xx during the failover: $(awk '$3 >= 500 { c[$2 "/" $3 "/" $8]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$W/$NAME-$o.log")"
    done
    EXTRA+=" failover_ms=$RECOVER"
    # Holds are acknowledged without WAIT: those in the last second may go with the primary;
    # bookings wait for a replica and must all be there.
    ACK_WINDOW=1000; NO_LOST_BOOKINGS=1
    finish
    # The other two shows get the same end checks (charges, acknowledged writes, audit).
    for o in $others; do
        NAME="primary-kill-other-$o"; SHOW="$o"; LOG="$W/primary-kill-$o.log"
        CORE=""; TARGET=""; NOTES=""; RECOVER="-"; EXTRA=""; NO_LOST_BOOKINGS=1
        finish
    done
    # The old primary is back as a replica of the new one (started above, or here).
    pid_alive "$RUN/redis-$vport.pid" || redis-server "$RUN/redis-$vport.conf"
    wait_for 60 cluster_ok || say "the cluster did not reach cluster_state:ok after the restart"
}

# The show's slot migrated to another primary while its load runs (CLUSTER SETSLOT
# IMPORTING/MIGRATING, MIGRATE in batches, SETSLOT NODE everywhere), as redis-cli --cluster
# reshard does it, one slot.
scn_reshard() {
    begin reshard
    local slot src dst src_id dst_id keys t0 t1 n500 p99
    slot="$(redis-cli -p "$(any_node)" CLUSTER KEYSLOT "{s:$SHOW}:meta")"
    src="$(show_port "$SHOW")"
    for dst in $(redis_nodes); do
        [ "$dst" != "$src" ] && redis-cli -p "$dst" ROLE | head -1 | grep -q master && break
    done
    src_id="$(redis-cli -p "$src" CLUSTER MYID)"; dst_id="$(redis-cli -p "$dst" CLUSTER MYID)"
    start_load 14
    sleep 4
    t0="$(now_ms)"
    redis-cli -p "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$src_id" >/dev/null
    redis-cli -p "$src" CLUSTER SETSLOT "$slot" MIGRATING "$dst_id" >/dev/null
    while keys="$(redis-cli -p "$src" CLUSTER GETKEYSINSLOT "$slot" 50)"; [ -n "$keys" ]; do
        # shellcheck disable=SC2086
        redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 AUTH2 default "$REDISCLI_AUTH" \
            KEYS $keys >/dev/null || { fail_core "MIGRATE failed"; break; }
        sleep 0.02
    done
    for n in $(redis_nodes); do
        redis-cli -p "$n" ROLE | head -1 | grep -q master &&
            redis-cli -p "$n" CLUSTER SETSLOT "$slot" NODE "$dst_id" >/dev/null
    done
    t1="$(now_ms)"
    wait_load
    [ "$(show_port "$SHOW")" = "$dst" ] || fail_core "the slot did not move ($src -> $dst)"
    n500="$(awk -v a="$t0" -v b="$t1" '$3 >= 500 && $3 != 503 && $1 >= a' "$LOG" | wc -l)"
    [ "$n500" -gt 0 ] && fail_core "$n500 answer(s) 5xx other than 503 during or after the move"
    p99="$(awk -v a="$t0" -v b="$t1" '$2 == "hold" && $1 >= a && $1 <= b { print int($9 / 1000) }' "$LOG" |
        sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.99 + 0.5); if (i < 1) i = 1; print NR ? v[i] : "-" }')"
    EXTRA+=" slot=$slot moved=$src->$dst migrate_ms=$((t1 - t0)) hold_p99_during_ms=$p99"
    EXTRA+=" holds_during=$(awk -v a="$t0" -v b="$t1" '$2 == "hold" && $1 >= a && $1 <= b' "$LOG" | wc -l)"
    EXTRA+=" 503_during=$(awk -v a="$t0" -v b="$t1" '$3 == 503 && $1 >= a && $1 <= b' "$LOG" | wc -l)"
    RECOVER="$(first_win_after "$t1")"
    finish
}
