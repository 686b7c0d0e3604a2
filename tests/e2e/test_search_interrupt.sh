#!/usr/bin/env bash
# tests/e2e/test_search_interrupt.sh - Ctrl-C and resume. Start a search of
# 4 trials, send SIGINT while a trial trains (after 2 have finished), then
# check: exit code 130, the finished trials kept, the running one marked
# 'interrupted', the resume hint printed. Rerun the same command: it
# completes exactly 4 trials, re-runs the interrupted one (attempt 2) and
# repeats no finished trial.
. "$(dirname "$0")/search_lib.sh"
need_fmnist

TRIALS=4
cat >"$TMP/int.conf" <<CONF
experiment = "e2e-interrupt";
seed = 11;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 16; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "evolution"; trials = $TRIALS; population = 3; sample_size = 2; };
evaluator: { latency_runs = 3; latency_warmup = 1; };
workers: { count = 1; };
CONF
DB=$TMP/int.db
cd "$TMP" || fail "cd"

note "start, wait for 2 finished trials and a running one, then SIGINT"
"$NAS" run int.conf --db "$DB" >"$TMP/run1.out" 2>"$TMP/run1.err" &
RUN_PID=$!
ok=0
for _ in $(seq 1 1200); do
    sleep 0.1
    kill -0 "$RUN_PID" 2>/dev/null || break
    n=$(sql "$DB" "SELECT (SELECT count(*) FROM trial WHERE status IN ('done','failed')) || ' ' || (SELECT count(*) FROM trial WHERE status = 'running')" 2>/dev/null)
    if [ "$n" = "2 1" ]; then ok=1; break; fi
done
[ "$ok" = 1 ] || { cat "$TMP/run1.err"; fail "the search never had 2 finished trials and 1 running"; }
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/run1.err"; fail "interrupted run exited $code, expected 130"; }
grep_in "stopped" "$TMP/run1.out"
grep_in "resume:  nas run int.conf --db $DB" "$TMP/run1.out"
grep_in "interrupted" "$TMP/run1.err"

finished_before=$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('done','failed')")
[ "$finished_before" -ge 2 ] && [ "$finished_before" -lt "$TRIALS" ] ||
    fail "after Ctrl-C: $finished_before finished trials"
expect_eq "interrupted trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'interrupted'")" 1
expect_eq "running trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('running','pending')")" 0
grep -q "interrupted by signal 2" <<<"$(sql "$DB" "SELECT error FROM trial WHERE status = 'interrupted'")" ||
    fail "the interrupted trial does not say why"
expect_eq "experiment status" "$(sql "$DB" "SELECT status FROM experiment")" interrupted
check_db_consistent "$DB"
kept=$(sql "$DB" "SELECT group_concat(id || ' ' || genotype || ' ' || finished_at || ' ' || ifnull(r.val_accuracy, 'x'), ';') FROM trial t LEFT JOIN result r ON r.trial_id = t.id WHERE status IN ('done','failed') ORDER BY id")
int_id=$(sql "$DB" "SELECT id FROM trial WHERE status = 'interrupted'")
int_geno=$(sql "$DB" "SELECT genotype FROM trial WHERE status = 'interrupted'")
# No worker process is left behind.
sleep 0.2
if pgrep -f "$NAS run int.conf" >/dev/null 2>&1; then fail "a worker survived the interrupted run"; fi

note "rerun: resume to exactly $TRIALS trials"
run 0 "$NAS" run int.conf --db "$DB"
grep_in "resuming experiment 'e2e-interrupt'" "$TMP/err"
grep_in "re-run" "$TMP/err"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" "$TRIALS"
expect_eq "finished" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('done','failed')")" "$TRIALS"
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 1
expect_eq "experiment status" "$(sql "$DB" "SELECT status FROM experiment")" done
check_db_consistent "$DB"
expect_eq "previously finished trials unchanged" \
    "$(sql "$DB" "SELECT group_concat(id || ' ' || genotype || ' ' || finished_at || ' ' || ifnull(r.val_accuracy, 'x'), ';') FROM trial t LEFT JOIN result r ON r.trial_id = t.id WHERE t.id IN (SELECT id FROM trial ORDER BY id LIMIT $finished_before) ORDER BY id")" \
    "$kept"
expect_eq "re-run trial keeps its row" "$(sql "$DB" "SELECT genotype || ' ' || attempt FROM trial WHERE id = $int_id")" "$int_geno 2"
expect_eq "attempts of the others" \
    "$(sql "$DB" "SELECT count(*) FROM trial WHERE id != $int_id AND attempt != 1")" 0
echo "PASS"
