#!/usr/bin/env bash
# tests/e2e/test_experiments_list.sh - issue 22, points 2 and 3:
#   - a run that fails its checks (a missing data directory) leaves no
#     experiment row;
#   - `nas experiments` lists every experiment (id, name, status, trials
#     done/failed/budget, best, created);
#   - query, report and export default to the most recent experiment with
#     a done trial (not a newer one where every trial failed) and say which;
#   - progress lines carry the database trial id (what `nas show` takes)
#     and the budget progress, also in a database with several experiments.
# Table evaluator on a generated table: seconds, no data set needed.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
DB=$TMP/list.db
mk() { # NAME TRIALS
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 4;
search: { strategy = "random"; trials = $2; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 1; };
CONF
}

note "a missing data directory: no experiment row"
cat >"$TMP/nodata.conf" <<CONF
experiment = "nodata";
data: { dir = "$TMP/no-such-dir"; train_subset = 64; valid = 32; };
search: { trials = 2; };
CONF
run 2 "$NAS" run nodata.conf --db "$DB" # bad data: exit 2 (issue 28)
grep_in "no-such-dir" "$TMP/err"
[ ! -e "$DB" ] || fail "the failed run left $DB behind" # the run made it: removed (issue 28)

note "two experiments; progress lines name the database trial ids"
mk alpha 5
run 0 "$NAS" run alpha.conf --db "$DB"
for k in 1 2 3 4 5; do grep_in "\[trial $k, $k/5\] done" "$TMP/err"; done
mk beta 3
NAS_FAULT="nan@6,nan@7,nan@8" run 1 "$NAS" run beta.conf --db "$DB"
for k in 1 2 3; do grep_in "\[trial $((k + 5)), $k/3\] FAILED" "$TMP/err"; done
run 0 "$NAS" show --db "$DB" 7
grep_in "beta" "$TMP/out"

note "nas experiments lists both"
run 0 "$NAS" experiments --db "$DB"
cat "$TMP/out"
grep_in "alpha" "$TMP/out"
grep_in "beta" "$TMP/out"
grep -E "^ *1 +alpha +done +5 +0 +5 " "$TMP/out" >/dev/null || { cat "$TMP/out"; fail "alpha's row"; }
grep -E "^ *2 +beta +done +0 +3 +3 " "$TMP/out" >/dev/null || { cat "$TMP/out"; fail "beta's row"; }
best=$(sql "$DB" "SELECT printf('%.4f (trial %d)', r.val_accuracy, t.id) FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 1 ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
grep_in "$best" "$TMP/out"
run 0 "$NAS" experiments --db "$DB" --format csv
expect_eq "csv header" "$(head -1 "$TMP/out")" "id,name,status,done,failed,diverged,budget,best_val_accuracy,best_trial,created_at,default,rejected"
expect_eq "csv rows" "$(tail -n +2 "$TMP/out" | cut -d, -f1,2,11 | tr '\n' ' ')" "1,alpha,1 2,beta,0 "
run 0 "$NAS" experiments --db "$DB" --format json
grep_in '"name": "beta"' "$TMP/out"

note "the default experiment is the most recent with a done trial, and it is named"
run 0 "$NAS" query --db "$DB"
grep_in "experiment 'alpha' (id 1" "$TMP/out"
run 0 "$NAS" query --db "$DB" --experiment beta
grep_in "experiment 'beta' (id 2" "$TMP/out"
run 0 "$NAS" report --db "$DB" -o "$TMP/r.html"
grep_in "experiment 'alpha'" "$TMP/out"
run 0 "$NAS" export --db "$DB" --best --format json --weights init -o "$TMP/best.json"
grep_in "of 'alpha'" "$TMP/err"
echo "PASS"
