#!/usr/bin/env bash
# tests/e2e/test_best_rule.sh - issue 29, defect 5: one rule ranks trials
# everywhere - the primary objective at the trial's highest stored
# fidelity (store/store_impl.h NAS__STORE_RANK). With objectives =
# params (min), the run summary and `nas export --best` picked the
# smallest trial while `nas experiments` (store.c BEST_TRIAL) and `nas
# report` ranked by val_accuracy. Every place must name the same trial:
# the done trial with the fewest parameters (ties by id).
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
cat >"$TMP/p.conf" <<CONF
experiment = "params";
seed = 8;
data: { dir = "$FMNIST"; train_subset = 128; valid = 64; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 6; };
objectives = ({ metric = "params"; goal = "min"; });
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
run 0 "$NAS" run p.conf --db p.db
WANT=$(sql p.db "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.params, t.id LIMIT 1")
BYVAL=$(sql p.db "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
[ "$WANT" != "$BYVAL" ] || fail "the fixture must tell the two rules apart (trial $WANT for both)"
grep_in "best:    trial $WANT," "$TMP/out"
run 0 "$NAS" experiments --db p.db
grep_in "(trial $WANT) " "$TMP/out"
run 0 "$NAS" export --db p.db --best --format json -o best.json
grep_in "best trial of 'params' by params (min): $WANT$" "$TMP/err"
run 0 "$NAS" query --db p.db
expect_eq "nas query's first rank" "$(awk '$1 == "1" { print $2; exit }' "$TMP/out")" "$WANT"
# and its help says so (it said "ranked by validation accuracy")
run 0 "$NAS" query --help
grep_in "list trials ranked by the first objective (highest fidelity first)" "$TMP/out"
run 0 "$NAS" report --db p.db -o report.html
grep -q "<dt>best</dt><dd>trial $WANT," report.html || fail "nas report's best is not trial $WANT"
echo "PASS"
