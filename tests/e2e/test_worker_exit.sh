#!/usr/bin/env bash
# tests/e2e/test_worker_exit.sh - a worker that dies right after sending
# its result is replaced; the search goes on (issue 20, defect 5). A
# 3-trial random search (table evaluator on a generated fixture, 1 worker,
# 1-second trials): the controller is stopped (SIGSTOP) while trial 1
# trains, the worker finishes it (the RESULT waits in the socket), the
# worker is killed with SIGKILL, and the controller continues (SIGCONT).
# It must record trial 1, replace the worker and finish all 3 trials
# (exit 0), never stop with "cannot send a job to worker 0: Broken pipe".
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/w.conf" "$TMP/t.csv" 3 1 "max_retries = 0;"
DB=$TMP/w.db

NAS_FAULT="sleep_ms=1000" "$NAS" run "$TMP/w.conf" --db "$DB" >"$TMP/run.out" 2>"$TMP/run.err" &
RUN_PID=$!
for _ in $(seq 200); do
    [ "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" = 1 ] && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/run.err"; fail "the run ended early"; }
    sleep 0.05
done
sleep 0.2
kill -STOP "$RUN_PID"
worker=$(pgrep -P "$RUN_PID" | head -1)
[ -n "$worker" ] || fail "no worker process found"
sleep 1.5 # trial 1 (1 s) finishes; its RESULT waits in the socket
kill -9 "$worker"
sleep 0.2
kill -CONT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/run.err"; fail "the run exited $code"; }
grep -q "Broken pipe" "$TMP/run.err" && fail "the controller met a broken pipe"
expect_eq "trials done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 3
expect_eq "trial 1" "$(sql "$DB" "SELECT status || ' ' || attempt FROM trial WHERE id = 1")" "done 1"
expect_eq "integrity" "$(sql "$DB" "PRAGMA integrity_check")" ok
echo "PASS"
