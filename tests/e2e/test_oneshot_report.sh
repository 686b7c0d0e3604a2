#!/usr/bin/env bash
# tests/e2e/test_oneshot_report.sh - the views of a one-shot search (issue
# 32 item 5): examples/fashion-mobile.conf shrunk to 12 trials on 1,000
# Fashion-MNIST images with evaluator.kind = "supernet" (a 2-epoch supernet,
# the best 3 retrained: experiments 'os-small' and 'os-small-finalists';
# about 30 s on 2 cores). Asserts:
#   - `nas report` (its default experiment is the finalists one) has the
#     section "One-shot supernet": the supernet curve with one loss and one
#     accuracy point per stored epoch, the scatter with one point per
#     finalist, and Kendall's tau equal to the tau-b of the stored
#     accuracies (computed here); the report of 'os-small' has it too;
#   - `nas query --experiment os-small` marks every trial kind 'supernet'
#     (table and csv) and names the retraining of each finalist;
#   - `nas show` of a finalist names its supernet trial and experiment, and
#     of that supernet trial its retraining.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY not found (needed to compute Kendall's tau)"
cd "$TMP" || fail "cd"
export OMP_WAIT_POLICY=passive
sed -e 's/experiment = "fashion-mobile";/experiment = "os-small";/' \
    -e 's/train_subset = 6000; /train_subset = 1000; valid = 500; /' \
    -e 's/kind = "train";/kind = "supernet";/' -e 's/trials = 24;/trials = 12;/' \
    -e 's/latency_runs = 10;/latency_runs = 2;/' "$SRC/examples/fashion-mobile.conf" >small.conf
echo 'supernet: { epochs = 2; recal_batches = 2; valid = 200; retrain_top = 3; };' >>small.conf
grep -q 'kind = "supernet";' small.conf || fail "examples/fashion-mobile.conf changed: the sed no longer applies"
DB=$TMP/d.db
note "a one-shot search: 12 subnets by inherited weights, the best 3 retrained"
run 0 "$NAS" run small.conf --db "$DB" --quiet
SN=$(sql "$DB" "SELECT id FROM experiment WHERE name = 'os-small'")
FX=$(sql "$DB" "SELECT id FROM experiment WHERE name = 'os-small-finalists'")
[ -n "$SN" ] && [ -n "$FX" ] || fail "experiments: $(sql "$DB" "SELECT id, name FROM experiment")"
EPOCHS=$(sql "$DB" "SELECT count(*) FROM supernet_epoch WHERE experiment_id = $SN")
NFIN=$(sql "$DB" "SELECT count(*) FROM finalist l JOIN result r ON r.trial_id = l.trial_id WHERE r.val_accuracy IS NOT NULL")
expect_eq "stored epochs" "$EPOCHS" 2
expect_eq "finalists retrained" "$NFIN" 3

note "nas report: the default (finalists) experiment's page has the one-shot section"
run 0 "$NAS" report --db "$DB" -o r.html
grep_in "experiment 'os-small-finalists'" "$TMP/out"
grep -q '<section id="oneshot">' r.html || fail "no one-shot section in the finalists' report"
grep -q 'id="plot-supernet-curve"' r.html || fail "no supernet curve"
expect_eq "curve loss points" "$(grep -c 'class="sn-epoch sn-loss"' r.html)" "$EPOCHS"
expect_eq "curve accuracy points" "$(grep -c 'class="sn-epoch sn-acc"' r.html)" "$EPOCHS"
grep -q 'id="plot-supernet-scatter"' r.html || fail "no supernet/stand-alone scatter"
expect_eq "scatter points" "$(grep -c 'class="trial feasible finalist"' r.html)" "$NFIN"
shown=$(sed -n 's/.*<p id="supernet-tau">Kendall.s tau [^<]*<strong>\([-0-9.]*\)<\/strong>.*/\1/p' r.html)
[ -n "$shown" ] || fail "no Kendall's tau: $(grep -o '<p id="supernet-tau">[^/]*' r.html)"
sql "$DB" "SELECT rs.val_accuracy, rf.val_accuracy FROM finalist l JOIN result rf ON rf.trial_id = l.trial_id JOIN result rs ON rs.trial_id = l.supernet_trial_id" >pairs.txt
want=$("$PY" - pairs.txt <<'PY'
import math, sys
p = [tuple(map(float, l.split('|'))) for l in open(sys.argv[1]) if l.strip()]
s = lambda v: (v > 0) - (v < 0)
c = d = ta = tb = 0
for i in range(len(p)):
    for j in range(i + 1, len(p)):
        a, b = s(p[i][0] - p[j][0]), s(p[i][1] - p[j][1])
        ta += a == 0; tb += b == 0
        c += a * b > 0; d += a * b < 0
n0 = len(p) * (len(p) - 1) / 2
print("%.3f" % ((c - d) / math.sqrt((n0 - ta) * (n0 - tb))))
PY
)
expect_eq "Kendall's tau in the report" "$shown" "$want"
run 0 "$NAS" report --db "$DB" --experiment os-small -o s.html
grep -q '<section id="oneshot">' s.html || fail "no one-shot section in the supernet search's report"
expect_eq "scatter points (os-small)" "$(grep -c 'class="trial feasible finalist"' s.html)" "$NFIN"

note "nas query marks the supernet trials"
run 0 "$NAS" query --db "$DB" --experiment os-small
expect_eq "table rows of kind supernet" "$(grep -cE '^ +[0-9]+ +[0-9]+  done .* supernet ' "$TMP/out")" 12
run 0 "$NAS" query --db "$DB" --experiment os-small --format csv
"$PY" - "$TMP/out" <<'PY' || fail "csv: $(head -3 "$TMP/out")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 12, len(rows)
assert all(r["kind"] == "supernet" for r in rows), [r.get("kind") for r in rows]
assert sum(r["retrained_trial"] != "" for r in rows) == 3
PY

note "nas show names a finalist's supernet trial, and the supernet trial's retraining"
F=$(sql "$DB" "SELECT trial_id FROM finalist ORDER BY trial_id LIMIT 1")
S=$(sql "$DB" "SELECT supernet_trial_id FROM finalist WHERE trial_id = $F")
run 0 "$NAS" show --db "$DB" "$F"
grep_in "chosen from supernet trial $S of experiment 'os-small' (supernet accuracy 0\." "$TMP/out"
run 0 "$NAS" show --db "$DB" "$S"
grep_in "retrained as trial $F (val_accuracy 0\." "$TMP/out"
echo "PASS"
