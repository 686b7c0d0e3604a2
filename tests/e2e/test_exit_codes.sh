#!/usr/bin/env bash
# tests/e2e/test_exit_codes.sh - issue 22, point 4:
#   - a search in which every trial failed exits 1 and says so;
#   - a partial failure exits 0 with a warning that counts the failures;
#   - a diverged trial (here NAS_FAULT diverge: train_loss 1.1e10,
#     val_accuracy 0.125) stays done but is flagged: the trial.flag
#     column, a warning, `nas query`, `nas show` and the report.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
mk() { # NAME TRIALS
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 4;
search: { strategy = "random"; trials = $2; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 1; };
CONF
}
note "every trial failed: exit 1"
mk allfail 2
NAS_FAULT="nan@1,nan@2" run 1 "$NAS" run allfail.conf --db "$TMP/a.db"
grep_in "every trial failed" "$TMP/err"
note "resuming it changes nothing: still exit 1"
run 1 "$NAS" run allfail.conf --db "$TMP/a.db"
grep_in "every trial failed" "$TMP/err"

note "a partial failure: exit 0 and a warning"
mk partial 4
NAS_FAULT="nan@2" run 0 "$NAS" run partial.conf --db "$TMP/p.db"
grep_in "warning: 1 of 4 trials failed" "$TMP/err"

note "a diverged trial is flagged"
mk div 4
NAS_FAULT="diverge@3" run 0 "$NAS" run div.conf --db "$TMP/d.db"
grep_in "warning: 1 done trial diverged" "$TMP/err"
expect_eq "flags" "$(sql "$TMP/d.db" "SELECT group_concat(id || ':' || status || ':' || coalesce(flag, '-'), ' ') FROM trial")" \
    "1:done:- 2:done:- 3:done:diverged 4:done:-"
grep_in "diverged: train_loss" "$TMP/err"
run 0 "$NAS" query --db "$TMP/d.db"
grep -E "^ +[0-9]+ +3 +diverged " "$TMP/out" >/dev/null || { cat "$TMP/out"; fail "query does not flag trial 3"; }
grep_in "1 diverged" "$TMP/out"
run 0 "$NAS" query --db "$TMP/d.db" --format csv
grep_in ",diverged" "$TMP/out"
run 0 "$NAS" show --db "$TMP/d.db" 3
grep -E "^flag +diverged" "$TMP/out" >/dev/null || { cat "$TMP/out"; fail "show does not flag trial 3"; }
run 0 "$NAS" report --db "$TMP/d.db" -o "$TMP/r.html"
grep_in 'class="diverged" data-trial="3"' "$TMP/r.html"
grep_in "1 diverged" "$TMP/r.html"
echo "PASS"
