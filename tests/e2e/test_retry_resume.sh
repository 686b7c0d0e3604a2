#!/usr/bin/env bash
# tests/e2e/test_retry_resume.sh - retry counts survive a controller
# restart (issue 4). A 4-trial random search (table evaluator on a
# generated fixture, 1 worker, max_retries = 2) whose trial 1 crashes its
# worker on every attempt (NAS_FAULT crash@1):
#  1. kill -9: the controller is killed right after trial 1's first crash
#     (its first retry is running). The resumed run must give trial 1 only
#     the one retry left: exactly 1 + max_retries = 3 crashes in all, the
#     resumed run announces "retry 2 of workers.max_retries = 2", and
#     trial 1 ends failed with attempt 4 (3 crashes + the start the kill
#     cut short). Without the persisted count it would get 2 fresh retries
#     (4 crashes, attempt 5).
#  2. Ctrl-C (SIGINT) right after the first crash, while the retry waits:
#     the resumed run again grants only the retry left.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/r.conf" "$TMP/t.csv" 4 1 "heartbeat_s = 1; max_retries = 2;"

# wait_for PATTERN FILE PID: until PATTERN is in FILE (20 s at most, the
# process must stay alive meanwhile).
wait_for() {
    for _ in $(seq 400); do
        grep -q -- "$1" "$2" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { cat "$2"; fail "the run ended before '$1'"; }
        sleep 0.05
    done
    cat "$2"
    fail "no '$1' within 20 s"
}

crashes() { grep -c "signal 11" "$@" | awk -F: '{ s += $NF } END { print s + 0 }'; }

# ---- 1. kill -9 during the first retry ----------------------------------------
DB=$TMP/k.db
note "kill -9 the controller after trial 1's first crash"
# each job first sleeps 700 ms: the retry is still running when the kill lands
NAS_FAULT="crash@1,sleep_ms=700" "$NAS" run "$TMP/r.conf" --db "$DB" >"$TMP/run1.out" 2>"$TMP/run1.err" &
RUN_PID=$!
wait_for "RETRY" "$TMP/run1.err" "$RUN_PID"
kill -9 "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
RUN_PID=
grep_in "retry 1 of workers.max_retries = 2" "$TMP/run1.err"
expect_eq "trial 1 after the kill" "$(sql "$DB" "SELECT status || ' ' || attempt FROM trial WHERE id = 1")" "running 2"
expect_eq "stored retry count" \
    "$(sql "$DB" "SELECT CAST(blob AS TEXT) FROM strategy_state WHERE name = 'controller.retries'")" '{"1":1}'
sleep 0.3 # the orphaned worker dies with its controller (PR_SET_PDEATHSIG)

note "resume: trial 1 gets the one retry left"
NAS_FAULT="crash@1,sleep_ms=20" run 0 "$NAS" run "$TMP/r.conf" --db "$DB"
cp "$TMP/err" "$TMP/run2.err"
grep_in "1 of workers.max_retries = 2 retries used before" "$TMP/run2.err"
expect_eq "retries in the resumed run" "$(grep -c 'RETRY' "$TMP/run2.err")" 1
grep_in "retry 2 of workers.max_retries = 2" "$TMP/run2.err"
expect_eq "crashes over both runs (1 + max_retries)" "$(crashes "$TMP/run1.err" "$TMP/run2.err")" 3
expect_eq "trial 1" "$(sql "$DB" "SELECT status || ' ' || attempt FROM trial WHERE id = 1")" "failed 4"
sql "$DB" "SELECT error FROM trial WHERE id = 1" | grep -q "signal 11" || fail "trial 1: $(sql "$DB" "SELECT error FROM trial WHERE id = 1")"
expect_eq "other trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE id <> 1 AND status = 'done' AND attempt = 1")" 3
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" 4
expect_eq "integrity" "$(sql "$DB" "PRAGMA integrity_check")" ok
expect_eq "stored retry count" \
    "$(sql "$DB" "SELECT CAST(blob AS TEXT) FROM strategy_state WHERE name = 'controller.retries'")" '{"1":2}'

# ---- 2. Ctrl-C while the retry waits ---------------------------------------------
DB=$TMP/i.db
note "SIGINT right after trial 1's first crash"
NAS_FAULT="crash@1,sleep_ms=700" "$NAS" run "$TMP/r.conf" --db "$DB" >"$TMP/run3.out" 2>"$TMP/run3.err" &
RUN_PID=$!
wait_for "RETRY" "$TMP/run3.err" "$RUN_PID"
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" != 0 ] || fail "the interrupted run exited 0"
expect_eq "trial 1 after Ctrl-C" "$(sql "$DB" "SELECT status FROM trial WHERE id = 1")" interrupted
NAS_FAULT="crash@1,sleep_ms=20" run 0 "$NAS" run "$TMP/r.conf" --db "$DB"
cp "$TMP/err" "$TMP/run4.err"
# On a loaded machine the retry may have crashed too before the signal
# landed: the resumed run gets what is left of max_retries = 2, either way.
used=$(grep -c 'RETRY' "$TMP/run3.err")
expect_eq "retries in the resumed run (2 - $used used before)" "$(grep -c 'RETRY' "$TMP/run4.err")" $((2 - used))
expect_eq "crashes over both runs (1 + max_retries)" "$(crashes "$TMP/run3.err" "$TMP/run4.err")" 3
expect_eq "trial 1" "$(sql "$DB" "SELECT status FROM trial WHERE id = 1")" failed
expect_eq "trials done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 3
expect_eq "integrity" "$(sql "$DB" "PRAGMA integrity_check")" ok
sleep 0.2
pgrep -f "$TMP/r.conf" >/dev/null && fail "worker processes left running"
echo "PASS"
