#!/usr/bin/env bash
# tests/e2e/test_final_training.sh - issue 22, point 7: a `nas train
# ARCH.json --db` result (table final_training) is visible where a user
# looks: `nas show TRIAL`, `nas query` (a final_test column in the table,
# final_test_accuracy / final_runs in csv and json) and `nas report` (a
# "Final training" section); `nas query` also shows test_acc.
. "$(dirname "$0")/export_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
DB=$TMP/s.db
tiny_search "$DB" cpu 2

note "before any final training: no column, an empty report section"
run 0 "$NAS" query --db "$DB"
grep -q final_test "$TMP/out" && fail "final_test column without final trainings"
grep_in "test_acc" "$TMP/out"
# issue 22: the last column (where the trial ran) has a header
if [ -n "$(sql "$DB" "SELECT device_name FROM trial WHERE device_name != '' LIMIT 1")" ]; then
    grep_in "genotype  *device$" "$TMP/out"
fi
run 0 "$NAS" report --db "$DB" -o r0.html
grep_in 'id="no-final"' r0.html

note "a full training of the best trial, recorded with --db"
run 0 "$NAS" export --db "$DB" --best --format json -o best.json
best=$(sed -n 's/.*"trial_id": \([0-9]*\).*/\1/p' best.json)
run 0 "$NAS" train best.json --subset 256 --test-subset 100 --epochs 1 --threads 1 \
    --checkpoint none --db "$DB"
acc=$(sql "$DB" "SELECT printf('%.4f', test_accuracy) FROM final_training WHERE trial_id = $best")
[ -n "$acc" ] || fail "no final_training row for trial $best"

note "nas show"
run 0 "$NAS" show --db "$DB" "$best"
grep_in "^final_training 1: test_accuracy $acc (full, 1 epoch(s), 256 train images, augment crop4,flip" "$TMP/out"
grep_in "^weights .*trial-$best.npz" "$TMP/out"
other=$(sql "$DB" "SELECT min(id) FROM trial WHERE id != $best")
run 0 "$NAS" show --db "$DB" "$other"
grep_in "^final_training -$" "$TMP/out"

note "nas query: table, csv, json"
run 0 "$NAS" query --db "$DB"
grep_in "final_test" "$TMP/out"
row=$(awk -v t="$best" '$2 == t' "$TMP/out")
echo "$row" | grep -q " $acc " || { cat "$TMP/out"; fail "the query row of trial $best lacks $acc"; }
run 0 "$NAS" query --db "$DB" --format csv
# (issue 17 appended the fidelity column after them)
expect_eq "csv header tail" "$(head -1 "$TMP/out" | awk -F, '{print $(NF-2) "," $(NF-1) "," $NF}')" "final_test_accuracy,final_runs,fidelity"
acc_csv=$(sql "$DB" "SELECT printf('%.10g', test_accuracy) FROM final_training WHERE trial_id = $best")
expect_eq "csv final of trial $best" "$(awk -F, -v t="$best" '$2 == t {print $(NF-2) "," $(NF-1)}' "$TMP/out")" "$acc_csv,1"
run 0 "$NAS" query --db "$DB" --format json
expect_eq "json final of trial $best" \
    "$(sql ":memory:" "SELECT printf('%.4f', value ->> 'final_test_accuracy') || ',' || (value ->> 'final_runs') FROM json_each(readfile('$TMP/out')) WHERE value ->> 'trial' = $best")" "$acc,1"

note "nas report"
run 0 "$NAS" report --db "$DB" -o r1.html
grep_in 'id="final-training"' r1.html
grep_in "<td>$acc</td><td>full</td><td>1</td><td>256</td>" r1.html
echo "PASS"
