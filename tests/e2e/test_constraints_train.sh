#!/usr/bin/env bash
# tests/e2e/test_constraints_train.sh - issue 6 with real proxy training
# (tiny Fashion-MNIST subset, plain-C "ref" backend: no JIT start-up per
# trial): a first run with a loose latency limit measures this machine's
# latencies and MACs; a second run limits latency and MACs to the probe's
# median. Every trained trial must satisfy both (its recorded latency is the
# pre-training measurement that admitted it), every stored trial fits the
# MACs limit (over-limit cells are never stored), every rejected one is
# over the latency limit, untrained and outside the budget (exactly
# `trials` cells are trained). The table-evaluator half is
# test_constraints.sh.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
mk_train() { # NAME TRIALS CONSTRAINTS
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 3;
data: { dataset = "fashion-mnist"; dir = "$FMNIST"; train_subset = 64; valid = 32; };
space: { channels = 4; stages = 3; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 32; threads = 1; backend = "ref"; };
search: { strategy = "evolution"; trials = $2; population = 4; sample_size = 2; };
evaluator: { kind = "train"; latency_runs = 5; latency_warmup = 1; };
objectives = ( { metric = "val_accuracy"; goal = "max"; }, { metric = "latency_ms"; goal = "min"; } );
constraints = { $3 };
workers: { count = 1; };
CONF
}
note "training: a first run to learn this machine's latencies and MACs"
mk_train probe 3 "latency_ms = 10000.0;"
run 0 "$NAS" run probe.conf --db "$TMP/probe.db"
L=$(sql "$TMP/probe.db" "SELECT latency_ms FROM result ORDER BY latency_ms LIMIT 1 OFFSET 1")
M=$(sql "$TMP/probe.db" "SELECT macs / 1e6 FROM result ORDER BY macs LIMIT 1 OFFSET 1")
[ -n "$L" ] && [ -n "$M" ] || fail "probe run stored no latencies"
note "training with constraints.latency_ms = $L, mmacs = $M"
mk_train cons 2 "latency_ms = $L; mmacs = $M;"
run 0 "$NAS" run cons.conf --db "$TMP/cons.db"
DB=$TMP/cons.db
check() { expect_eq "$1" "$(sql "$DB" "$2")" "$3"; }
check "trained trials" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id
    WHERE t.status = 'done' AND r.val_accuracy IS NOT NULL" 2
check "failed trials" "SELECT count(*) FROM trial WHERE status <> 'done'" 0
check "trained trials over a constraint" "SELECT count(*) FROM result WHERE val_accuracy IS NOT NULL
    AND (latency_ms IS NULL OR latency_ms > $L OR macs > $M * 1e6 OR score IS NULL)" 0
check "stored trials over the MACs limit" "SELECT count(*) FROM result WHERE macs > $M * 1e6" 0
check "rejected trials not over the latency limit, trained, or without a reason" \
    "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id WHERE r.val_accuracy IS NULL
     AND (r.latency_ms <= $L OR r.epochs IS NOT NULL OR r.score IS NOT NULL
          OR t.error NOT LIKE 'infeasible%latency%not trained%')" 0
nrej=$(sql "$DB" "SELECT count(*) FROM result WHERE val_accuracy IS NULL")
nlog=$(grep -c "reject .* not counted" "$TMP/err")
expect_eq "rejections logged" "$nlog" "$nrej"
note "$nrej candidate(s) rejected by latency before training"
# issue 22: progress lines are labelled by trial id, never one label for two trials
expect_eq "reject lines name the rejected trials" \
    "$(sed -n 's/^\[trial \([0-9]*\), rejection [0-9]*\] reject .*/\1/p' "$TMP/err" | sort -n | tr '\n' ' ')" \
    "$(sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE r.val_accuracy IS NULL ORDER BY t.id" | tr '\n' ' ')"
expect_eq "one start line per trial id" \
    "$(grep -c '^\[trial [0-9]*, [0-9]*/2\] train ' "$TMP/err")" \
    "$(grep '^\[trial [0-9]*, [0-9]*/2\] train ' "$TMP/err" | cut -d, -f1 | sort -u | wc -l)"
expect_eq "start lines" "$(grep -c '^\[trial [0-9]*, [0-9]*/2\] train ' "$TMP/err")" \
    "$(sql "$DB" "SELECT count(*) FROM trial")"
if [ "$nrej" -gt 0 ]; then # the closing summary counts them too
    grep_in "rejected: $nrej architecture" "$TMP/out"
elif grep -q "rejected:" "$TMP/out"; then
    fail "the summary reports rejections that the store does not have"
fi
run 0 "$NAS" report --db "$DB" -o "$TMP/report.html"
grep_in "finished: 2 done, 0 failed" "$TMP/report.html"
if [ "$nrej" -gt 0 ]; then
    grep_in "$nrej rejected by constraints.latency_ms before training" "$TMP/report.html"
fi
note "resume: the finished experiment has nothing to do"
run 0 "$NAS" run cons.conf --db "$TMP/cons.db"
grep_in "nothing to do" "$TMP/err"
echo "PASS"
