#!/usr/bin/env bash
# tests/e2e/test_fidelity_store.sh - issue 17, schema 5: rung results in the
# store as `nas query` and `nas export --best` read them. A table search
# writes no rungs (the query's columns and ranking as before); rung rows
# added for some trials (as a multi-fidelity search writes them) give each
# trial its highest fidelity: `nas query` shows it, ranks the highest
# fidelity first and filters with --min-fidelity, and `nas export --best`
# takes the best trial at the highest fidelity, not the best overall.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
cat >"$TMP/t.conf" <<CONF
experiment = "fid";
seed = 5;
search: { strategy = "random"; trials = 6; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
DB=$TMP/f.db
run 0 "$NAS" run t.conf --db "$DB"
expect_eq "schema" "$(sql "$DB" "PRAGMA user_version")" 10
expect_eq "no rungs without a scheduler" "$(sql "$DB" "SELECT count(*) FROM rung")" 0
run 0 "$NAS" query --db "$DB"
if grep -q "fidelity" "$TMP/out"; then fail "a fidelity column without rungs"; fi
BEST=$(sql "$DB" "SELECT trial_id FROM result ORDER BY val_accuracy DESC, trial_id LIMIT 1")
WORST=$(sql "$DB" "SELECT trial_id FROM result ORDER BY val_accuracy, trial_id LIMIT 1")
[ "$BEST" != "$WORST" ] || fail "the table gave every trial the same accuracy"

note "rungs: the worst trial trained furthest"
sql "$DB" "INSERT INTO rung SELECT trial_id, 3, val_accuracy, 1.0, 1.0, 'x' FROM result"
sql "$DB" "INSERT INTO rung VALUES($WORST, 9, 0.1, 1.0, 1.0, 'x')"
run 0 "$NAS" query --db "$DB" --format csv
expect_eq "first row: the highest fidelity" "$(sed -n 2p "$TMP/out" | cut -d, -f2)" "$WORST"
expect_eq "its fidelity" "$(sed -n 2p "$TMP/out" | awk -F, '{print $NF}')" 9
run 0 "$NAS" query --db "$DB" --format csv --min-fidelity 9
expect_eq "rows at fidelity >= 9" "$(($(wc -l <"$TMP/out") - 1))" 1
run 0 "$NAS" query --db "$DB" --min-fidelity 3 --limit 4
grep_in " fidelity  genotype" "$TMP/out"
run 2 "$NAS" query --db "$DB" --min-fidelity x
grep_in "min-fidelity expects a non-negative integer" "$TMP/err"
run 0 "$NAS" export --db "$DB" --best --format json -o best.json
grep_in "best trial of 'fid' by val_accuracy (max): $WORST" "$TMP/err"
run 0 "$NAS" experiments --db "$DB" --format csv
echo "PASS"
