#!/usr/bin/env bash
# tests/e2e/test_run_lock.sh - the single-writer lock of `nas run` follows
# the database file, not the path string (issue 20, defect 6). While a
# 20-trial search (table evaluator on a generated fixture, 1 worker, 400 ms
# trials) runs on a.db, `nas run` on b.db (a symbolic link to a.db), on
# c.db (a hard link to it) and on ./a.db refuses with "is in use by another
# `nas run`" and runs no trial. The first run is then stopped (SIGINT) and
# resumed through the symbolic link: exactly 20 trials, none run twice.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/l.conf" "$TMP/t.csv" 20 1 ""
export NAS_FAULT="sleep_ms=400"

"$NAS" run "$TMP/l.conf" --db "$TMP/a.db" >"$TMP/first.out" 2>"$TMP/first.err" &
RUN_PID=$!
for _ in $(seq 200); do
    [ "$(sql "$TMP/a.db" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" = 1 ] && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/first.err"; fail "the first run ended early"; }
    sleep 0.05
done
ln -s a.db "$TMP/b.db" || fail "ln -s"
ln "$TMP/a.db" "$TMP/c.db" || fail "ln"

for other in "$TMP/b.db" "$TMP/c.db" "./a.db"; do
    note "nas run --db $other while a.db is in use"
    "$NAS" run "$TMP/l.conf" --db "$other" >"$TMP/out" 2>"$TMP/err"
    code=$?
    [ "$code" != 0 ] || { cat "$TMP/err"; fail "a second nas run on $other succeeded"; }
    grep_in "is in use by another \`nas run\`" "$TMP/err"
    grep -q "^\[trial" "$TMP/err" && fail "the refused run on $other ran trials"
done
kill -0 "$RUN_PID" 2>/dev/null || fail "the first run ended before the checks were done"
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/first.err"; fail "the first run exited $code, expected 130"; }
note "once the first run is over, the symbolic link works and resumes it"
unset NAS_FAULT
run 0 "$NAS" run "$TMP/l.conf" --db "$TMP/b.db"
grep_in "complete: 20 trials (20 done, 0 failed)" "$TMP/out"
expect_eq "trials" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial")" 20
expect_eq "duplicate keys" "$(sql "$TMP/a.db" "SELECT count(*) - count(DISTINCT arch_key) FROM trial")" 0
expect_eq "trials run more than twice (the interrupted one runs again)" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial WHERE attempt > 2")" 0
expect_eq "integrity" "$(sql "$TMP/a.db" "PRAGMA integrity_check")" ok
echo "PASS"
