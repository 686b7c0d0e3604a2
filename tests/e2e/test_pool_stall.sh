#!/usr/bin/env bash
# tests/e2e/test_pool_stall.sh - a stalled controller kills no healthy
# worker and discards no result (issue 20, defect 2). A 4-trial random
# search (table evaluator on a generated fixture, 2 workers) in which:
#  1. another process holds `BEGIN IMMEDIATE` on the database for 4.5 s
#     while both workers train 1-second trials with trial_timeout_s = 3:
#     the controller waits for the lock with a result in hand while the
#     other result sits in its socket; no trial may fail ("timed out");
#  2. the whole process group is stopped for 5 s (SIGSTOP, as Ctrl-Z does,
#     then SIGCONT) during 2-second trials with heartbeat_s = 1: no worker
#     may be declared hung ("no heartbeat").
# Both searches must end with 4 trials done on their first attempt.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
command -v setsid >/dev/null 2>&1 || skip "setsid not found (util-linux)"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"

# wait_running DB: until both workers train (10 s at most)
wait_running() {
    for _ in $(seq 200); do
        [ "$(sql "$1" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" = 2 ] && return 0
        kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/run.err"; fail "the run ended early"; }
        sleep 0.05
    done
    fail "two trials never ran at once"
}

# check DB: the run exited 0 and all 4 trials are done at attempt 1
check() {
    wait "$RUN_PID"
    local code=$?
    RUN_PID=
    [ "$code" = 0 ] || { cat "$TMP/run.err"; fail "the run exited $code"; }
    expect_eq "failures" "$(sql "$1" "SELECT group_concat(id || ': ' || error, '; ') FROM trial WHERE status <> 'done'")" ""
    expect_eq "trials done on the first attempt" "$(sql "$1" "SELECT count(*) FROM trial WHERE status = 'done' AND attempt = 1")" 4
    expect_eq "RETRY lines" "$(grep -c RETRY "$TMP/run.err")" 0
    expect_eq "integrity" "$(sql "$1" "PRAGMA integrity_check")" ok
}

note "1. the database is locked by another process for 4.5 s (trial_timeout_s = 3, 1 s trials)"
write_conf "$TMP/a.conf" "$TMP/t.csv" 4 2 "trial_timeout_s = 3; heartbeat_s = 1;"
NAS_FAULT="sleep_ms=1000" "$NAS" run "$TMP/a.conf" --db "$TMP/a.db" >"$TMP/run.out" 2>"$TMP/run.err" &
RUN_PID=$!
wait_running "$TMP/a.db"
printf 'BEGIN IMMEDIATE;\n.shell sleep 4.5\nCOMMIT;\n' | sqlite3 -batch "$TMP/a.db" ||
    fail "could not hold the database lock"
check "$TMP/a.db"

note "2. the process group is stopped for 5 s (heartbeat_s = 1, 2 s trials)"
write_conf "$TMP/b.conf" "$TMP/t.csv" 4 2 "heartbeat_s = 1;"
NAS_FAULT="sleep_ms=2000" setsid "$NAS" run "$TMP/b.conf" --db "$TMP/b.db" >"$TMP/run.out" 2>"$TMP/run.err" &
RUN_PID=$!
wait_running "$TMP/b.db"
[ "$(ps -o pgid= -p "$RUN_PID" | tr -d ' ')" = "$RUN_PID" ] || fail "nas run is not a group leader"
sleep 0.5
kill -STOP -- "-$RUN_PID"
sleep 5
kill -CONT -- "-$RUN_PID"
check "$TMP/b.db"
echo "PASS"
