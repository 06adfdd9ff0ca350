# tests/faults/lib/checks.sh - sourced by tests/faults/run: a scenario's outcome. begin (a fresh
# show or group, the counters), fail_core / fail_target / note, finish (recovery, the workers,
# payments settled, then the checks and the audit), the checks (check_charges, check_places,
# check_acked, check_groups, check_answers) and report (the "fault <name>:" figure line and the
# verdict, counted in PASSED / FAILED).
# shellcheck shell=bash
# Outcomes of a scenario: core checks always fail it; target checks (the issue-9 fixes being
# made) fail it when strict, and are reported as KNOWN otherwise.
# begin <name> [group]: a fresh show ($SHOW), or with "group" a fresh group of two ($GROUP of
# $SHOW and $SHOW2: see new_group) whose group holds the checks follow too (check_groups).
begin() {
    NAME="$1"; LOG="$W/$NAME.log"; GROUP=""; SHOW2=""
    if [ "${2:-}" = group ]; then new_group; else SHOW="$(new_show)"; fi
    SHOW_RP="$(show_port "$SHOW")"
    : >"$LOG"
    CORE=""; TARGET=""; NOTES=""; RECOVER="-"; EXTRA=""
    PIDS0="$(worker_pids)"
    [ -n "$SHOW" ] || CORE+=" could-not-create-a-show;"
    if [ "${2:-}" = group ] && { [ -z "$GROUP" ] || [ -z "$SHOW2" ]; }; then
        CORE+=" could-not-create-a-group;"
    fi
    say "--- $NAME (show $SHOW${GROUP:+, group $GROUP of $SHOW and $SHOW2})"
}
fail_core() { CORE+=" $*;"; say "  FAIL: $*"; }
fail_target() { TARGET+=" $*;"; say "  TARGET: $*"; }
note() { NOTES+=" $*;"; say "  note: $*"; }

# redis_lines <file>: runs the commands of <file> (one a line) and prints one reply a line.
redis_lines() { rcli <"$1" 2>/dev/null; }

# finish [pids-may-change]: the checks after every scenario, then the figure line.
finish() {
    local may_restart="${1:-}" p deadline out rc
    SHOW_RP="$(show_port "$SHOW")" # (a failover may have moved it)
    # The stack recovered: a hold succeeds again (30 s deadline).
    deadline=$((SECONDS + 30))
    until [ "$(probe_hold)" = 201 ]; do
        [ "$SECONDS" -ge "$deadline" ] && { fail_core "no hold succeeded within 30 s after the fault"; break; }
        sleep 0.2
    done
    # Workers: the same processes (or, where the scenario restarts them, all alive).
    if [ -n "$may_restart" ]; then
        workers_alive || fail_core "a worker is not running"
        EXTRA+=" workers=restarted-by-scenario"
    elif [ "$(worker_pids)" != "$PIDS0" ] || ! workers_alive; then
        fail_core "worker pids changed or a worker died ($PIDS0 -> $(worker_pids))"
    else
        EXTRA+=" workers=same"
    fi
    # Payments settle: nothing pending or awaiting a refund (reconciler, 30 s deadline).
    deadline=$((SECONDS + 30))
    until [ "$(rcli ZCARD "{s:$SHOW}:pending")" = 0 ] && [ "$(rcli ZCARD "{s:$SHOW}:refunds")" = 0 ]; do
        [ "$SECONDS" -ge "$deadline" ] && { fail_core "bookings still pending 30 s after the load"; break; }
        sleep 0.2
    done
    check_charges
    check_acked
    check_answers
    # A scenario's own checks on the settled state ($FINISH_CHECK, a function name).
    [ -n "${FINISH_CHECK:-}" ] && "$FINISH_CHECK"
    # The invariant, settled.
    out="$W/$NAME.audit"
    "$AUDIT" --redis "127.0.0.1:$SHOW_RP" --show "$SHOW" --settle >"$out" 2>&1
    rc=$?
    AUDIT_RC=$rc
    AUDIT_V="$(sed -n 's/.*violations=\([0-9]*\).*/\1/p' "$out" | tail -1)"
    if [ "$rc" -ne 0 ]; then
        fail_core "audit: rc=$rc $(grep -m3 '^VIOLATION\|audit:' "$out" | tr '\n' ' ')"
    fi
    # The group's other show (same slot, same node), settled the same way.
    if [ -n "${SHOW2:-}" ]; then
        "$AUDIT" --redis "127.0.0.1:$SHOW_RP" --show "$SHOW2" --settle >"$out.2" 2>&1
        rc=$?
        AUDIT_V="${AUDIT_V:-?}+$(sed -n 's/.*violations=\([0-9]*\).*/\1/p' "$out.2" | tail -1)"
        [ "$rc" -eq 0 ] || { AUDIT_RC=$rc; fail_core "audit of show $SHOW2: rc=$rc $(grep -m3 '^VIOLATION\|audit:' "$out.2" | tr '\n' ' ')"; }
    fi
    report
}

# check_charges: every succeeded charge of the show (and of $SHOW2: a group's show holds are
# booked per show) is a CONFIRMED (or CANCELLED) booking, or refunded in full; every CONFIRMED
# booking has its charge.
check_charges() {
    local s charges=0 unmapped=0 main="$SHOW"
    for s in $SHOW ${SHOW2:-}; do
        SHOW="$s"
        check_charges_show
        charges=$((charges + CHARGES)); unmapped=$((unmapped + UNMAPPED))
    done
    SHOW="$main"; CHARGES="$charges"; UNMAPPED="$unmapped"
}
check_charges_show() {
    local led="$W/$NAME.charges" cmds="$W/$NAME.cmds" n unmapped
    node "$HERE/ledger.js" "$RUN/gateway-ledger.jsonl" "$SHOW-b" >"$led" ||
        { fail_core "could not read the gateway ledger"; return; }
    awk -v s="$SHOW" '{ print "HGET {s:" s "}:booking:" $1 " status" }' "$led" >"$cmds"
    redis_lines "$cmds" | paste -d' ' "$led" - >"$led.st"
    CHARGES="$(awk '$2 == "succeeded"' "$led.st" | wc -l)"
    unmapped="$(awk '$2 == "succeeded" && !(($5 == "CONFIRMED" && $4 == 0) || $5 == "CANCELLED" || $4 >= $3)' "$led.st")"
    UNMAPPED="$(printf '%s' "$unmapped" | grep -c . || true)"
    [ "$UNMAPPED" -gt 0 ] &&
        fail_core "$UNMAPPED charge(s) with no CONFIRMED booking and no refund: $(printf '%s' "$unmapped" | head -3 | tr '\n' ',')"
    # CONFIRMED bookings with a refunded or missing charge (a group payment's show bookings
    # have none of their own: 'paidBy' names the payment that is charged, checked here too).
    rcli --scan --pattern "{s:$SHOW}:booking:*" >"$W/$NAME.bkeys"
    sed 's/^/HMGET /; s/$/ status paidBy/' "$W/$NAME.bkeys" >"$cmds"
    redis_lines "$cmds" | paste -d' ' - - | paste -d' ' "$W/$NAME.bkeys" - |
        awk '$2 == "CONFIRMED" && $3 == "" { sub(/.*:booking:/, "", $1); print $1 }' >"$W/$NAME.confirmed"
    n="$(awk 'NR == FNR { if ($2 == "succeeded" && $4 == 0) ok[$1] = 1; next } !($1 in ok)' "$led" "$W/$NAME.confirmed" | wc -l)"
    # CONFIRMED bookings whose client got neither 201 nor 202 (an answer lost or a 5xx).
    EXTRA+=" confirmed_unanswered${SHOW2:+_$SHOW}=$(awk 'NR == FNR { if ($2 == "book" && $3 >= 200 && $3 < 300) a[$6] = 1; next } !($1 in a)' "$LOG" "$W/$NAME.confirmed" | wc -l)"
    [ "$n" -gt 0 ] && fail_core "$n CONFIRMED booking(s) without a standing charge"
}

# check_places: an acknowledged hold or CONFIRMED booking with places (the log's 11th field)
# that still exists carries exactly those places in its record's 'areas' (a lost record is
# check_acked's; the area's counter is the audit's).
check_places() {
    local cmds="$W/$NAME.pcmds" bad
    # (a group payment's places are its show bookings', named in the 12th field)
    awk '$11 != "" && $11 != "-" && (($2 == "book" && ($3 == 201 || $3 == 200) && $8 == "CONFIRMED") || ($2 == "hold" && $3 == 201)) {
            if ($2 == "book" && $12 != "") { n = split($12, l, ","); for (i = 1; i <= n; i++) print $2, l[i], $11 }
            else print $2, $6, $11 }' \
        "$LOG" >"$W/$NAME.placed"
    # (the record's show is its id's prefix: a group's bookings are in its other show too)
    awk '{ split($2, a, "-"); print "HMGET {s:" a[1] "}:" ($1 == "book" ? "booking" : "hold") ":" $2 " status areas" }' \
        "$W/$NAME.placed" >"$cmds"
    # (HMGET answers two lines per record: its status, then its places)
    redis_lines "$cmds" | paste -d' ' - - | paste -d' ' "$W/$NAME.placed" - >"$W/$NAME.placed.st"
    PLACED_H="$(awk '$1 == "hold"' "$W/$NAME.placed" | wc -l)"
    PLACED_B="$(awk '$1 == "book"' "$W/$NAME.placed" | wc -l)"
    EXTRA+=" place_holds_acked=$PLACED_H place_bookings_acked=$PLACED_B"
    bad="$(awk '$4 != "" && $5 != $3' "$W/$NAME.placed.st")"
    [ -n "$bad" ] &&
        fail_core "$(printf '%s\n' "$bad" | wc -l) acknowledged record(s) whose places changed: $(printf '%s' "$bad" | head -3 | tr '\n' ',')"
}

# check_acked: acknowledged holds and bookings (201 in the load log) still exist; for a Redis
# kill, $ACK_WINDOW (ms) names how far before $KILL_MS an acknowledged write may be lost.
check_acked() {
    local cmds="$W/$NAME.cmds" late
    check_places
    # (an acknowledged group payment: the payment and each show's booking of its 12th field)
    awk '($2 == "book" && ($3 == 201 || $3 == 200) && $8 == "CONFIRMED") || ($2 == "hold" && $3 == 201) { print $1, $2, $6
            if ($2 == "book" && $12 != "") { n = split($12, l, ","); for (i = 1; i <= n; i++) print $1, $2, l[i] } }' "$LOG" >"$W/$NAME.acked"
    awk '{ split($3, a, "-") } $2 == "book" { print "HGET {s:" a[1] "}:booking:" $3 " status" }
        $2 == "hold" { print "EXISTS {s:" a[1] "}:hold:" $3 }' "$W/$NAME.acked" >"$cmds"
    redis_lines "$cmds" | paste -d' ' "$W/$NAME.acked" - >"$W/$NAME.acked.st"
    ACKED_B="$(awk '$2 == "book"' "$W/$NAME.acked" | wc -l)"
    awk '($2 == "book" && $4 != "CONFIRMED" && $4 != "CANCELLED") || ($2 == "hold" && $4 != 1)' \
        "$W/$NAME.acked.st" >"$W/$NAME.lost"
    LOST_B="$(awk '$2 == "book"' "$W/$NAME.lost" | wc -l)"
    LOST_H="$(awk '$2 == "hold"' "$W/$NAME.lost" | wc -l)"
    [ -n "${GROUP:-}" ] && check_groups
    [ "$LOST_B$LOST_H" = 00 ] && return
    # With WAIT (cluster scenarios), an acknowledged booking is on a replica: never lost.
    [ -n "${NO_LOST_BOOKINGS:-}" ] && [ "$LOST_B" -gt 0 ] &&
        fail_core "$LOST_B acknowledged booking(s) lost although acknowledged after WAIT: $(awk '$2 == "book"' "$W/$NAME.lost" | head -3 | tr '\n' ',')"
    if [ -n "${KILL_MS:-}" ] && [ -n "${ACK_WINDOW:-}" ]; then
        late="$(awk -v k="$KILL_MS" -v w="$ACK_WINDOW" '$1 < k - w' "$W/$NAME.lost" | wc -l)"
        [ "$late" -gt 0 ] &&
            fail_core "$late acknowledged write(s) lost that were acknowledged more than ${ACK_WINDOW} ms before the kill"
        [ "$ACK_WINDOW" = 0 ] || note "lost, acknowledged within ${ACK_WINDOW} ms before the fault or after it: $LOST_B booking(s), $LOST_H hold(s)"
    else
        fail_core "acknowledged writes lost: $LOST_B booking(s), $LOST_H hold(s): $(head -3 "$W/$NAME.lost" | tr '\n' ',')"
    fi
}

# check_groups: a group hold is all or nothing, acknowledged or not. Every acknowledged (201)
# group hold of the log (op ghold: its id, and its show holds' ids in the 12th field) has its
# record ({s:<first>}:ghold:<id>) and every show's hold record, or (a write the fault may lose:
# lost ones join check_acked's count, judged by its window) none of them; and every group hold
# record in Redis, acknowledged or not, has all its show holds (never one show held and the
# other not).
check_groups() {
    local cmds="$W/$NAME.gcmds" partial lost
    awk '$2 == "ghold" && $3 == 201 { print $1, $6, $12 }' "$LOG" >"$W/$NAME.gacked"
    # one line per record: the group hold's, then each show hold's (EXISTS answers 0 or 1)
    awk -v s="$SHOW" '{ print "EXISTS {s:" s "}:ghold:" $2; n = split($3, l, ",")
        for (i = 1; i <= n; i++) { split(l[i], a, "-"); print "EXISTS {s:" a[1] "}:hold:" l[i] } }' \
        "$W/$NAME.gacked" >"$cmds"
    redis_lines "$cmds" >"$W/$NAME.gexists"
    awk 'NR == FNR { e[NR] = $1; next } { n = split($3, l, ","); have = 0
            for (i = 0; i <= n; i++) have += e[++k]
            print $1, $2, have, n + 1 }' "$W/$NAME.gexists" "$W/$NAME.gacked" >"$W/$NAME.gacked.st"
    GHOLDS_ACKED="$(wc -l <"$W/$NAME.gacked")"
    # (the log must name both shows' holds: else the check below would have nothing to see)
    partial="$(awk '$4 != 3' "$W/$NAME.gacked.st")"
    [ -n "$partial" ] &&
        fail_core "$(printf '%s\n' "$partial" | wc -l) acknowledged group hold(s) logged without its 2 show holds: $(printf '%s' "$partial" | head -3 | tr '\n' ',')"
    partial="$(awk '$3 > 0 && $3 < $4' "$W/$NAME.gacked.st")"
    [ -n "$partial" ] &&
        fail_core "$(printf '%s\n' "$partial" | wc -l) partial group hold(s) (some of its records there, some not): $(printf '%s' "$partial" | head -3 | tr '\n' ',')"
    awk '$3 == 0 { print $1, "hold", $2, "group-lost" }' "$W/$NAME.gacked.st" >>"$W/$NAME.lost"
    lost="$(awk '$3 == 0' "$W/$NAME.gacked.st" | wc -l)"
    LOST_H=$((LOST_H + lost))
    # every group hold record in Redis: all of its show holds there
    rcli --scan --pattern "{s:$SHOW}:ghold:*" >"$W/$NAME.gkeys"
    sed 's/^/HGET /; s/$/ holds/' "$W/$NAME.gkeys" >"$cmds"
    redis_lines "$cmds" | paste -d' ' "$W/$NAME.gkeys" - >"$W/$NAME.gkeys.st"
    awk '{ n = split($2, l, ","); for (i = 1; i <= n; i++) { split(l[i], a, ":"); print $1, "EXISTS {s:" a[1] "}:hold:" a[2] } }' \
        "$W/$NAME.gkeys.st" >"$W/$NAME.glegs"
    cut -d' ' -f2- "$W/$NAME.glegs" >"$cmds"
    partial="$(redis_lines "$cmds" | paste -d' ' "$W/$NAME.glegs" - | awk '$NF != 1 { print $1 }' | sort -u)"
    [ -n "$partial" ] &&
        fail_core "$(printf '%s\n' "$partial" | wc -l) group hold record(s) missing a show's hold: $(printf '%s' "$partial" | head -3 | tr '\n' ',')"
    # every group payment in Redis (a booking of $SHOW with 'members'): its show bookings all
    # in its state (CONFIRMED: each CONFIRMED or CANCELLED since), never one show paid alone
    rcli --scan --pattern "{s:$SHOW}:booking:*" >"$W/$NAME.pkeys"
    sed 's/^/HMGET /; s/$/ status members/' "$W/$NAME.pkeys" >"$cmds"
    redis_lines "$cmds" | paste -d' ' - - | paste -d' ' "$W/$NAME.pkeys" - |
        awk 'NF == 3 { n = split($3, l, ","); for (i = 1; i <= n; i++) { split(l[i], a, ":"); print $1, $2, "HGET {s:" a[1] "}:booking:" a[2] " status" } }' \
        >"$W/$NAME.pmembers"
    cut -d' ' -f3- "$W/$NAME.pmembers" >"$cmds"
    partial="$(redis_lines "$cmds" | paste -d' ' "$W/$NAME.pmembers" - |
        awk '{ st = $NF } !(st == $2 || ($2 == "CONFIRMED" && st == "CANCELLED")) { print $1, $2, st }')"
    [ -n "$partial" ] &&
        fail_core "$(printf '%s\n' "$partial" | wc -l) group payment(s) with a show booking in another state: $(printf '%s' "$partial" | head -3 | tr '\n' ',')"
    EXTRA+=" group_holds_acked=$GHOLDS_ACKED group_holds_lost=$lost group_records=$(wc -l <"$W/$NAME.gkeys") group_payments=$(cut -d' ' -f1 "$W/$NAME.pmembers" | sort -u | wc -l)"
}

# check_answers: 504s, 503s without Retry-After, and holds answered 5xx that were applied.
# ${UNKNOWN_OK:-} set: holds the answer of which may have been lost with its worker (killed
# workers) are reported, not held against the stack.
check_answers() {
    local cmds="$W/$NAME.cmds" applied
    HOLDS="$(awk '$2 == "hold"' "$LOG" | wc -l)"
    WON="$(awk '$2 == "hold" && $3 == 201' "$LOG" | wc -l)"
    N5XX="$(awk '$3 >= 500' "$LOG" | wc -l)"
    N504="$(awk '$3 == 504' "$LOG" | wc -l)"
    NORA="$(awk '$3 == 503 && $7 == "-"' "$LOG" | wc -l)"
    N500="$(awk '$3 == 500' "$LOG" | wc -l)"
    NOANS="$(awk '$3 == 0' "$LOG" | wc -l)"
    [ "$N504" -gt 0 ] && fail_target "$N504 answer(s) 504 (want 503 + Retry-After): $(awk '$3 == 504 { c[$2 "/" $8]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$LOG")"
    [ "$NORA" -gt 0 ] && fail_target "$NORA answer(s) 503 without Retry-After"
    [ "$N500" -gt 0 ] && note "$N500 answer(s) 500: $(awk '$3 == 500 { c[$2 "/" $8]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$LOG")"
    # Holds answered 5xx (not "outcome unknown"): applied if a record with their idempotency
    # key is HELD, PENDING_PAYMENT, BOOKED or EXPIRED (RELEASED = compensated).
    awk '$2 == "hold" && $3 >= 500 && $5 != "-" && $8 !~ /unknown/ { print $4, $5 }' "$LOG" >"$W/$NAME.h5xx"
    H5XX="$(wc -l <"$W/$NAME.h5xx")"
    APPLIED=0
    if [ "$H5XX" -gt 0 ]; then
        awk -v s="$SHOW" '{ print "GET {s:" s "}:idem:" $1 ":" $2 }' "$W/$NAME.h5xx" >"$cmds"
        redis_lines "$cmds" | awk '{ if (match($0, /"holdId":"[^"]*"/)) print substr($0, RSTART + 10, RLENGTH - 11); else print "-" }' >"$W/$NAME.h5xx.ids"
        awk -v s="$SHOW" '$1 != "-" { print "HGET {s:" s "}:hold:" $1 " status" }' "$W/$NAME.h5xx.ids" >"$cmds"
        applied="$(redis_lines "$cmds" | grep -cE '^(HELD|PENDING_PAYMENT|BOOKED|EXPIRED)$' || true)"
        APPLIED="${applied:-0}"
    fi
    if [ "$APPLIED" -gt 0 ]; then
        if [ -n "${UNKNOWN_OK:-}" ]; then
            note "$APPLIED of $H5XX holds answered 5xx exist (their worker was killed: the outcome was unknown)"
        else
            fail_target "$APPLIED of $H5XX holds answered 5xx were applied anyway"
        fi
    fi
}

report() {
    local verdict=PASS why=""
    if [ -n "$CORE" ]; then
        verdict=FAIL; why="$CORE"
    elif [ -n "$TARGET" ]; then
        if [ "$STRICT" = 1 ]; then verdict=FAIL; else verdict=KNOWN; fi
        why="$TARGET"
    fi
    echo "fault $NAME: recover_ms=$RECOVER holds=$HOLDS won=$WON 5xx=$N5XX 504=$N504 503_no_retry_after=$NORA no_answer=$NOANS holds_5xx_applied=$APPLIED/$H5XX bookings_acked=$ACKED_B lost_bookings=$LOST_B lost_holds=$LOST_H charges=$CHARGES unmapped_charges=$UNMAPPED audit_violations=${AUDIT_V:-?}$EXTRA -> $verdict${why:+ (${why# })}"
    if [ "$verdict" = FAIL ]; then
        FAILED=$((FAILED + 1)); FAILED_NAMES+=" $NAME"
    else
        PASSED=$((PASSED + 1))
    fi
    KILL_MS=""; ACK_WINDOW=""; UNKNOWN_OK=""; NO_LOST_BOOKINGS=""; FINISH_CHECK=""
}
