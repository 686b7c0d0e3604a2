#!/usr/bin/env bash
# tests/e2e/test_fidelity_fronts.sh - the Pareto fronts of a
# multi-fidelity search. 1. The front size on `nas run`'s progress lines of a multi-fidelity search with two objectives is
# the set `nas query --pareto` lists: the feasible trials at the highest
# fidelity one of them reached (docs/multi-fidelity.md). It counted the
# trials the strategy had observed, whatever their fidelity: 0 on the line
# of the first promotion (nothing observed yet), then 1-epoch and 3-epoch
# results mixed (a 1-epoch trial with fewer MACs stayed on it). 2. The
# fronts of the report's accuracy/MACs and accuracy/latency plots hold the
# feasible trials at the highest fidelity as well: they mixed fidelities (a
# trial stopped after 1 epoch, with the lowest latency, was drawn on the
# front beside 3-epoch trials), while the report's own table#front and
# `nas query --pareto` did not. Successive
# halving, 9 trials in 3 brackets (min 1, max 3, eta 3), objectives
# val_accuracy (max) and macs (min).
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf f.conf front 4 "" \
    'objectives = ( { metric = "val_accuracy"; goal = "max"; }, { metric = "macs"; goal = "min"; } );'
run 0 "$NAS" run f.conf --db f.db
cp "$TMP/err" run.err
# the first promotion's line: the only trial at 3 epochs is the front
expect_eq "front on the first promotion's line" \
    "$(grep -m1 '^\[trial [0-9]*, rung 1\] done ' run.err | sed -n 's/.*Pareto front \([0-9]*\).*/\1/p')" 1
# each line against the stored rungs: the front of the trials at the highest
# fidelity stored when the line was written (the rungs are stored in order)
n=0
while read -r line; do
    n=$((n + 1))
    size=$(echo "$line" | sed -n 's/.*Pareto front \([0-9]*\).*/\1/p')
    want=$(sql f.db "WITH k AS (SELECT rowid r, trial_id, fidelity, val_accuracy FROM rung
                     ORDER BY rowid LIMIT $n),
        cur AS (SELECT trial_id, max(fidelity) f FROM k GROUP BY trial_id),
        d AS (SELECT c.trial_id id, k.val_accuracy v, r.macs m, c.f FROM cur c
              JOIN k ON k.trial_id = c.trial_id AND k.fidelity = c.f
              JOIN result r ON r.trial_id = c.trial_id
              WHERE r.score IS NOT NULL AND c.f = (SELECT max(f) FROM cur))
        SELECT count(*) FROM d a WHERE NOT EXISTS (SELECT 1 FROM d b WHERE
              b.v >= a.v AND b.m <= a.m AND (b.v > a.v OR b.m < a.m))")
    expect_eq "front on done line $n (${line:0:60})" "$size" "$want"
done < <(grep '^\[trial [0-9]*, rung [0-9]*\] done ' run.err)
expect_eq "done lines" "$n" "$(sql f.db "SELECT count(*) FROM rung")"
run 0 "$NAS" query --db f.db --pareto --format csv
expect_eq "last line = nas query --pareto" \
    "$(grep '^\[trial [0-9]*, rung [0-9]*\] done ' run.err | tail -1 | sed -n 's/.*Pareto front \([0-9]*\).*/\1/p')" \
    "$(($(wc -l <"$TMP/out") - 1))"

note "the report's plots"
run 0 "$NAS" report --db f.db -o f.html
plot_front() { # SVG_ID: the trial ids drawn as front points, sorted
    awk -v id="id=\"$1\"" 'index($0, id) {on = 1} on && /<\/svg>/ {on = 0} on' f.html |
        grep -o 'class="trial front" data-trial="[0-9]*"' | grep -o '[0-9]*' | sort -n | tr '\n' ' '
}
sql_front() { # COST_COLUMN: the brute-force front at the highest fidelity, sorted
    sql f.db "WITH c AS (SELECT r.trial_id id, r.val_accuracy v, r.$1 m,
                  (SELECT max(fidelity) FROM rung g WHERE g.trial_id = r.trial_id) f
              FROM result r JOIN trial t ON t.id = r.trial_id WHERE t.status = 'done'
              AND r.score IS NOT NULL AND r.val_accuracy IS NOT NULL AND r.$1 > 0),
        d AS (SELECT * FROM c WHERE f = (SELECT max(f) FROM c))
        SELECT id FROM d a WHERE NOT EXISTS (SELECT 1 FROM d b WHERE
              b.v >= a.v AND b.m <= a.m AND (b.v > a.v OR b.m < a.m)) ORDER BY id" | tr '\n' ' '
}
[ "$(sql f.db "SELECT count(DISTINCT fidelity) FROM rung")" = 2 ] || fail "the run has no two fidelities"
expect_eq "accuracy/MACs front" "$(plot_front plot-acc-macs)" "$(sql_front macs)"
expect_eq "accuracy/latency front" "$(plot_front plot-acc-latency)" "$(sql_front latency_ms)"
expect_eq "every trained trial drawn" \
    "$(awk 'index($0, "id=\"plot-acc-macs\"") {on = 1} on && /<\/svg>/ {on = 0} on' f.html |
       grep -c '<circle class="trial ')" \
    "$(sql f.db "SELECT count(*) FROM result WHERE val_accuracy IS NOT NULL")"

note "the op chart's top-k: the highest fidelity first"
# a 1-epoch trial given the best accuracy must not be the top 1: the best
# 3-epoch trial is (it was, ranked by accuracy alone)
cp f.db g.db
LOW=$(sql g.db "SELECT trial_id FROM rung GROUP BY trial_id HAVING max(fidelity) = 1 ORDER BY trial_id LIMIT 1")
sql g.db "UPDATE result SET val_accuracy = 0.99 WHERE trial_id = $LOW"
TOP=$(sql g.db "SELECT r.trial_id FROM result r JOIN rung g ON g.trial_id = r.trial_id
               GROUP BY r.trial_id HAVING max(g.fidelity) = 3
               ORDER BY max(r.val_accuracy) DESC, r.trial_id LIMIT 1")
run 0 "$NAS" report --db g.db -o g.html --top-k 1
geno=$(sql g.db "SELECT genotype FROM trial WHERE id = $TOP")
for op in none skip_connect nor_conv_1x1 nor_conv_3x3 avg_pool_3x3; do
    want=$(echo "$geno" | grep -o "|$op~" | wc -l)
    got=$(grep -o "<title>$op: [0-9]* of 6 edges ([0-9.]*%) in the top 1</title>" g.html |
        sed 's/.*: \([0-9]*\) of .*/\1/')
    expect_eq "top-1 $op edges (trial $TOP)" "$got" "$want"
done
echo "PASS"
