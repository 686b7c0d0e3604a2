#!/usr/bin/env bash
# tests/e2e/test_run_lock.sh - the single-writer lock of `nas run` follows
# the database file, not the path string (issue 20, defect 6). While a
# 10-trial search (table evaluator on a generated fixture, 1 worker, 400 ms
# trials) runs on a.db, `nas run` on b.db (a symbolic link to a.db), on
# c.db (a hard link to it) and on ./a.db refuses with "is in use by another
# `nas run`" and runs no trial; afterwards the search has exactly 10
# trials, each run once, and a run through the symbolic link works.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/l.conf" "$TMP/t.csv" 10 1 ""
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
done
kill -0 "$RUN_PID" 2>/dev/null || fail "the first run ended before the checks were done"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/first.err"; fail "the first run exited $code"; }
expect_eq "trials" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial")" 10
expect_eq "trials run more than once" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial WHERE attempt <> 1 OR status <> 'done'")" 0
note "once the first run is over, the symbolic link works"
run 0 "$NAS" run "$TMP/l.conf" --db "$TMP/b.db"
grep_in "already has its 10 trials" "$TMP/err"
echo "PASS"
