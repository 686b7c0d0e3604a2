#!/usr/bin/env bash
# tests/e2e/test_kill.sh - the controller survives kill -9 (issue 4).
# 1. While a `nas run` is active, a second one on the same database
#    refuses with a clear message (the DB.lock fcntl lock); readers show
#    the experiment running, and once the run is killed, interrupted (the
#    file still says "running": a killed run marks nothing).
# 2. A 80-trial random search (table evaluator on a generated fixture,
#    2 workers, each trial slowed to 120 ms by NAS_FAULT=sleep_ms=120) is
#    killed with SIGKILL at a random moment KILLS times (default 22), and
#    run again each time. Before every rerun the finished trials (id,
#    genotype, status, result, finished_at) are recorded; after it they
#    must all still be there, unchanged, and no genotype may appear twice.
#    At the end: exactly 80 trials, all finished, no genotype twice,
#    PRAGMA integrity_check ok. (On a fast machine the search may finish
#    before KILLS kills: it is checked and a fresh one takes over.)
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
KILLS=${NAS_TEST_KILLS:-22}
TRIALS=80
write_table "$TMP/t.csv"
write_conf "$TMP/k.conf" "$TMP/t.csv" $TRIALS 2 "heartbeat_s = 1;"
DB=$TMP/k.db
export NAS_FAULT="sleep_ms=120"

snapshot() {
    sql "$DB" "SELECT t.id, t.genotype, t.status, t.finished_at, r.val_accuracy FROM trial t LEFT JOIN result r ON r.trial_id = t.id WHERE t.status IN ('done','failed') ORDER BY t.id" 2>/dev/null
}

note "a second nas run on an active database refuses"
"$NAS" run "$TMP/k.conf" --db "$DB" --quiet >"$TMP/first.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 50); do [ -s "$DB.lock" ] && break; sleep 0.05; done
"$NAS" run "$TMP/k.conf" --db "$DB" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" != 0 ] || fail "the second nas run succeeded"
grep_in "is in use by another \`nas run\` (pid $RUN_PID" "$TMP/err"
note "while it runs, readers show it running; once killed, interrupted (the file says running)"
for _ in $(seq 100); do
    [ "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" -gt 0 ] 2>/dev/null && break
    sleep 0.05
done
run 0 "$NAS" experiments --db "$DB" --format csv
grep -q ",running," "$TMP/out" || fail "an active run not shown running: $(cat "$TMP/out")"
kill -9 "$RUN_PID"; wait "$RUN_PID" 2>/dev/null
sleep 0.3 # its workers die with it (PR_SET_PDEATHSIG) and drop their share of the lock
expect_eq "stored experiment status" "$(sql "$DB" "SELECT status FROM experiment")" running
[ "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'running'")" -gt 0 ] ||
    fail "no trial was stored running when the run was killed"
run 0 "$NAS" experiments --db "$DB" --format csv
grep -q ",interrupted," "$TMP/out" || fail "a killed run shown as: $(cat "$TMP/out")"
run 0 "$NAS" query --db "$DB" --format csv --limit 0
grep -q "running" "$TMP/out" && fail "a killed run's trials shown running: $(cat "$TMP/out")"
run 0 "$NAS" query --db "$DB"
grep_in "(id 1, interrupted," "$TMP/out"

# final_checks: the search in $DB is complete and consistent.
final_checks() {
    expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" $TRIALS
    expect_eq "finished trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('done','failed')")" $TRIALS
    expect_eq "failed trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'failed'")" 0
    expect_eq "duplicate genotypes" "$(sql "$DB" "SELECT count(*) - count(DISTINCT arch_key) FROM trial")" 0
    expect_eq "done trials without a result" \
        "$(sql "$DB" "SELECT count(*) FROM trial t LEFT JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' AND r.val_accuracy IS NULL")" 0
    expect_eq "integrity_check" "$(sql "$DB" "PRAGMA integrity_check")" ok
}

note "kill -9 the controller $KILLS times at random moments"
kills=0 finished_at_kill="" searches=1
while [ $kills -lt $KILLS ]; do
    before=$(snapshot)
    "$NAS" run "$TMP/k.conf" --db "$DB" --quiet >"$TMP/run.out" 2>"$TMP/run.err" &
    RUN_PID=$!
    # anywhere from start-up (opening the store, replay) to mid-search
    ms=$(( 150 + RANDOM % 1200 ))
    sleep "$(( ms / 1000 )).$(printf '%03d' $(( ms % 1000 )))"
    if kill -9 "$RUN_PID" 2>/dev/null; then
        wait "$RUN_PID" 2>/dev/null
        kills=$((kills + 1))
    else
        wait "$RUN_PID"; code=$?
        [ "$code" = 0 ] || { cat "$TMP/run.err"; fail "a rerun exited $code"; }
    fi
    RUN_PID=
    after=$(snapshot)
    # every trial finished before this run is still there, unchanged
    lost=$(comm -23 <(printf '%s\n' "$before" | sed '/^$/d' | sort) <(printf '%s\n' "$after" | sort) | wc -l)
    [ "$lost" = 0 ] || fail "after kill $kills: $lost finished trial(s) changed or lost"
    n=$(printf '%s\n' "$after" | sed '/^$/d' | wc -l)
    finished_at_kill="$finished_at_kill $n"
    # (a kill before the schema exists leaves a database without tables)
    dup=$(sql "$DB" "SELECT count(*) - count(DISTINCT arch_key) FROM trial" 2>/dev/null || echo 0)
    expect_eq "duplicate genotypes after kill $kills" "$dup" 0
    if [ "$n" -ge $TRIALS ] && [ $kills -lt $KILLS ]; then
        # this machine is fast: check this search, start another one
        final_checks
        searches=$((searches + 1))
        DB=$TMP/k$searches.db
        finished_at_kill="$finished_at_kill |"
    fi
done
note "kills: $kills over $searches search(es); finished trials after each:$finished_at_kill"

note "final run to completion"
before=$(snapshot)
run 0 "$NAS" run "$TMP/k.conf" --db "$DB"
after=$(snapshot)
lost=$(comm -23 <(printf '%s\n' "$before" | sed '/^$/d' | sort) <(printf '%s\n' "$after" | sort) | wc -l)
expect_eq "finished trials lost or changed by the final run" "$lost" 0
final_checks
sleep 0.2
pgrep -f "$TMP/k.conf" >/dev/null && fail "worker processes outlived their controller"
echo "PASS ($kills kills)"
