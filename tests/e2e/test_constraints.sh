#!/usr/bin/env bash
# tests/e2e/test_constraints.sh - issue 6: a constrained search never trains
# (nor stores) an infeasible candidate, and a space with no feasible
# candidate stops with a clear error and a non-zero exit.
#   1. table evaluator (skipped when the NAS-Bench-201 table is absent):
#      constraints.mmacs/params with evolution, random and NAO; every stored
#      trial fits, the budget is met, the same seed without constraints
#      does go over (so the constraint binds); the progress line's Pareto
#      front size equals `nas query --pareto` and a brute-force SQL front.
#   2. no feasible cell (mmacs, then params): exit 1, "no feasible
#      architecture: ...", nothing stored.
# Real proxy training with latency constraints: test_constraints_train.sh.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
cd "$TMP" || fail "cd"
ran_any=0

# front size from SQL, brute force: done feasible trials nobody dominates
# (objectives val_accuracy max, macs min).
# sql_front DB [LAST]: among trials 1..LAST (default: all).
sql_front() {
    sql "$1" "WITH d AS (SELECT t.id, r.val_accuracy v, r.macs m FROM trial t JOIN result r
              ON r.trial_id = t.id WHERE t.status = 'done' AND r.score IS NOT NULL
              AND r.val_accuracy IS NOT NULL AND r.macs IS NOT NULL AND t.id <= ${2:-t.id})
              SELECT count(*) FROM d a WHERE NOT EXISTS (SELECT 1 FROM d b WHERE
              b.v >= a.v AND b.m <= a.m AND (b.v > a.v OR b.m < a.m))"
}

if [ -f "$TABLE" ]; then
    ran_any=1
    for strat in evolution random nao; do
        for cons in "" "mmacs = 15.0; params = 150000;"; do
            tag=$strat${cons:+-c}
            cline=""
            [ -n "$cons" ] && cline="constraints = { $cons };"
            cat >"$TMP/$tag.conf" <<CONF
experiment = "cons-$tag";
seed = 11;
search: { strategy = "$strat"; trials = 30; population = 10; sample_size = 3;
          nao: { seed_archs = 10; batch_per_round = 5; epochs = 5; }; };
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; table_scale = 0.01; };
objectives = ( { metric = "val_accuracy"; goal = "max"; }, { metric = "macs"; goal = "min"; } );
$cline
workers: { count = 0; };
CONF
            note "table, $strat, constraints: ${cons:-none}"
            run 0 "$NAS" run "$tag.conf" --db "$TMP/$tag.db"
        done
        DB=$TMP/$strat-c.db
        expect_eq "$strat: trials stored" "$(sql "$DB" "SELECT count(*) FROM trial")" 30
        expect_eq "$strat: done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 30
        expect_eq "$strat: trials over the constraints" \
            "$(sql "$DB" "SELECT count(*) FROM result WHERE macs IS NULL OR macs > 15000000 OR params > 150000")" 0
        over=$(sql "$TMP/$strat.db" "SELECT count(*) FROM result WHERE macs > 15000000 OR params > 150000")
        [ "$over" -gt 0 ] || fail "$strat: the unconstrained run never exceeds the limits; the test proves nothing"
        logged=$(grep -o "Pareto front [0-9]*" "$TMP/err" | tail -1 | awk '{print $3}')
        # every done line counts the front with its own trial (it lagged one
        # trial behind: "[trial 1, 1/30] done ... Pareto front 0")
        sed -n 's/^\[trial \([0-9]*\), [0-9]*\/30\] done .*Pareto front \([0-9]*\).*/\1 \2/p' \
            "$TMP/err" >"$TMP/fronts"
        run 0 "$NAS" query --db "$DB" --pareto --format csv
        queried=$(($(wc -l <"$TMP/out") - 1))
        expect_eq "$strat: progress-line front = nas query --pareto" "$logged" "$queried"
        expect_eq "$strat: nas query --pareto = brute-force front" "$queried" "$(sql_front "$DB")"
        expect_eq "$strat: done lines with a front" "$(wc -l <"$TMP/fronts")" 30
        while read -r id size; do
            expect_eq "$strat: front after trial $id" "$size" "$(sql_front "$DB" "$id")"
        done <"$TMP/fronts"
    done

    note "no feasible cell: mmacs"
    sed 's/mmacs = 15.0; params = 150000;/mmacs = 1.0;/; s/cons-evolution-c/cons-none/' \
        "$TMP/evolution-c.conf" >"$TMP/none.conf"
    run 1 "$NAS" run none.conf --db "$TMP/none.db"
    grep_in "no feasible architecture: constraints.mmacs = 1 but the smallest candidate seen has" "$TMP/err"
    expect_eq "trials stored" "$(sql "$TMP/none.db" "SELECT count(*) FROM trial")" 0
    note "no feasible cell: params"
    sed 's/mmacs = 15.0; params = 150000;/params = 1000;/; s/cons-evolution-c/cons-none-p/' \
        "$TMP/evolution-c.conf" >"$TMP/nonep.conf"
    run 1 "$NAS" run nonep.conf --db "$TMP/nonep.db"
    grep_in "no feasible architecture: constraints.params = 1000 but the smallest candidate seen has" "$TMP/err"
fi

[ "$ran_any" = 1 ] || skip "NAS-Bench-201 table not found at $TABLE"
echo "PASS"
