#!/usr/bin/env bash
# tests/e2e/test_readers.sh - readers never see "database is locked"
# during a run (issue 4). A 120-trial random search (table evaluator on a
# generated fixture, 2 workers, trials slowed to 100 ms each by
# NAS_FAULT=sleep_ms=100) writes the database while a loop runs
# `nas query` (read-only open, 10 s busy timeout) and plain `sqlite3 DB
# 'select count(*) from trial'` (no busy timeout at all: WAL readers do not
# wait for the writer) and `sqlite3 -cmd '.timeout 5000'`. Every reader
# must succeed and none may print "locked" or "busy".
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/r.conf" "$TMP/t.csv" 120 2 ""
DB=$TMP/r.db
NAS_FAULT="sleep_ms=100" "$NAS" run "$TMP/r.conf" --db "$DB" --quiet >"$TMP/run.out" 2>"$TMP/run.err" &
RUN_PID=$!
# wait for the experiment row: a reader racing the creation of the file,
# or the checks that come before the row (nas query then says "has no
# experiments yet"), is not what this test is about
for _ in $(seq 200); do
    [ "$(sqlite3 "$DB" 'select count(*) from experiment' 2>/dev/null)" = 1 ] && break
    sleep 0.05
done
reads=0 errors=0 counts=""
while kill -0 "$RUN_PID" 2>/dev/null; do
    "$NAS" query --db "$DB" --limit 3 >"$TMP/q.out" 2>"$TMP/q.err" || { cat "$TMP/q.err"; errors=$((errors + 1)); }
    c1=$(sqlite3 "$DB" 'select count(*) from trial' 2>"$TMP/s.err") || { cat "$TMP/s.err"; errors=$((errors + 1)); }
    c2=$(sqlite3 -cmd '.timeout 5000' "$DB" "select count(*) from trial where status = 'done'" 2>>"$TMP/s.err") ||
        { cat "$TMP/s.err"; errors=$((errors + 1)); }
    cat "$TMP/q.err" "$TMP/s.err" | grep -qiE "locked|busy" && errors=$((errors + 1))
    reads=$((reads + 3))
    counts="$counts $c1"
done
wait "$RUN_PID"; code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/run.err"; fail "nas run exited $code"; }
note "$reads reads during the run, $errors failed; trial counts seen:$(echo "$counts" | tr ' ' '\n' | sort -nu | head -5 | tr '\n' ' ')..."
expect_eq "reader errors" "$errors" 0
[ "$reads" -ge 6 ] || fail "only $reads reads during the run (too fast to test)"
distinct=$(echo "$counts" | tr ' ' '\n' | sed '/^$/d' | sort -u | wc -l)
[ "$distinct" -ge 2 ] || fail "the readers never saw the search progress"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 120
echo "PASS"
