#!/usr/bin/env bash
# tests/e2e/test_stop_group.sh - a stop costs no retry and fails no trial
# (issue 20, defects 1 and 7a). A 6-trial random search (table evaluator on
# a generated fixture, 2 workers, every job slowed to 3 s by
# NAS_FAULT=sleep_ms=3000) runs in a process group of its own (setsid),
# and is stopped while both workers train:
#  1. SIGTERM to the whole process group (as `timeout`, `kill -- -PGID`,
#     Slurm or systemd send it), max_retries = 0: exit 130, both running
#     trials `interrupted` (none `failed`), the summary's count is the
#     database's;
#  2. the same with max_retries = 1: no retry is spent (no RETRY line, no
#     stored retry count);
#  3. a worker dies while the stop is under way (the controller is stopped
#     with SIGSTOP, one worker is killed with SIGKILL, then SIGTERM and
#     SIGCONT reach the controller): both trials `interrupted`, no retry
#     spent, and the summary says "2 interrupted" like the database;
#  4. `timeout 2 nas run` (timeout signals the group it leads): no trial
#     `failed`.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
command -v setsid >/dev/null 2>&1 || skip "setsid not found (util-linux)"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
export NAS_FAULT="sleep_ms=3000"

# start CONF DB: nas run in a new process group (its pid is the group id)
start() {
    setsid "$NAS" run "$1" --db "$2" >"$TMP/run.out" 2>"$TMP/run.err" &
    RUN_PID=$!
    for _ in $(seq 200); do
        [ "$(sql "$2" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" = 2 ] && break
        kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/run.err"; fail "the run ended early"; }
        sleep 0.05
    done
    [ "$(ps -o pgid= -p "$RUN_PID" | tr -d ' ')" = "$RUN_PID" ] || fail "nas run is not a group leader"
    sleep 0.3 # both jobs are in the workers' hands
}

# finish DB: wait for the run; exit 130, nothing failed, no retry spent,
# two trials interrupted and the summary says so.
finish() {
    wait "$RUN_PID"
    local code=$?
    RUN_PID=
    [ "$code" = 130 ] || { cat "$TMP/run.err"; fail "the stopped run exited $code, expected 130"; }
    expect_eq "failed trials" "$(sql "$1" "SELECT count(*) FROM trial WHERE status = 'failed'")" 0
    expect_eq "interrupted trials" "$(sql "$1" "SELECT count(*) FROM trial WHERE status = 'interrupted'")" 2
    expect_eq "stored retry counts" "$(sql "$1" "SELECT count(*) FROM strategy_state WHERE name = 'controller.retries'")" 0
    expect_eq "RETRY lines" "$(grep -c RETRY "$TMP/run.err")" 0
    grep_in ", 2 interrupted" "$TMP/run.out"
}

note "1. SIGTERM to the process group, max_retries = 0"
write_conf "$TMP/a.conf" "$TMP/t.csv" 6 2 "max_retries = 0;"
start "$TMP/a.conf" "$TMP/a.db"
kill -TERM -- "-$RUN_PID"
finish "$TMP/a.db"

note "2. SIGTERM to the process group, max_retries = 1"
write_conf "$TMP/b.conf" "$TMP/t.csv" 6 2 "max_retries = 1;"
start "$TMP/b.conf" "$TMP/b.db"
kill -TERM -- "-$RUN_PID"
finish "$TMP/b.db"

note "3. a worker dies while the stop is under way"
start "$TMP/b.conf" "$TMP/c.db"
kill -STOP "$RUN_PID"
victim=$(pgrep -P "$RUN_PID" | head -1)
[ -n "$victim" ] || fail "no worker process found"
kill -9 "$victim"
sleep 0.3
kill -TERM "$RUN_PID"
kill -CONT "$RUN_PID"
finish "$TMP/c.db"

note "4. timeout 2 nas run"
write_conf "$TMP/d.conf" "$TMP/t.csv" 6 2 "max_retries = 0;"
timeout 2 "$NAS" run "$TMP/d.conf" --db "$TMP/d.db" >"$TMP/run.out" 2>"$TMP/run.err"
code=$?
[ "$code" = 124 ] || { cat "$TMP/run.err"; fail "timeout 2 nas run exited $code, expected 124"; }
expect_eq "failed trials after timeout" "$(sql "$TMP/d.db" "SELECT count(*) FROM trial WHERE status = 'failed'")" 0
expect_eq "trials left running after timeout" "$(sql "$TMP/d.db" "SELECT count(*) FROM trial WHERE status IN ('running','pending')")" 0
check_db_consistent "$TMP/d.db"
sleep 0.2
pgrep -f "$TMP/[a-d].conf" >/dev/null && fail "worker processes left running"
echo "PASS"
