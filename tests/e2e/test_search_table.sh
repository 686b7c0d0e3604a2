#!/usr/bin/env bash
# tests/e2e/test_search_table.sh - a search with the table evaluator (no
# training): 40 trials of regularized evolution looked up in the
# NAS-Bench-201 12-epoch table. Every stored val_accuracy must equal the
# table's value for that genotype (times table_scale), no cell twice; an
# in-process and a forked-worker run with one seed propose the same
# sequence. Skips when the table is absent.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
cd "$TMP" || fail "cd"

for count in 0 1; do
    cat >"$TMP/table$count.conf" <<CONF
experiment = "e2e-table";
seed = 5;
search: { strategy = "evolution"; trials = 40; population = 10; sample_size = 3; };
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; test_column = "cifar10-test"; table_scale = 0.01; };
workers: { count = $count; };
CONF
    note "nas run, workers.count = $count"
    run 0 "$NAS" run "table$count.conf" --db "$TMP/t$count.db"
    DB=$TMP/t$count.db
    expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" 40
    expect_eq "done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 40
    expect_eq "duplicate keys" "$(sql "$DB" "SELECT count(*) - count(DISTINCT arch_key) FROM trial")" 0
done

note "stored accuracies are the table's"
DB=$TMP/t0.db
sqlite3 -batch "$DB" ".import --csv $TABLE nb" 2>/dev/null ||
    { cp "$DB" "$TMP/copy.db"; fail "cannot import the table into sqlite3"; }
expect_eq "genotypes found in the table" \
    "$(sql "$DB" "SELECT count(*) FROM trial t JOIN nb ON nb.cellstr = t.genotype")" 40
expect_eq "val_accuracy = table value x 0.01" \
    "$(sql "$DB" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id JOIN nb ON nb.cellstr = t.genotype WHERE abs(r.val_accuracy - nb.\"cifar10-val\" * 0.01) > 1e-9")" 0
expect_eq "test_accuracy = table value x 0.01" \
    "$(sql "$DB" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id JOIN nb ON nb.cellstr = t.genotype WHERE abs(r.test_accuracy - nb.\"cifar10-test\" * 0.01) > 1e-9")" 0

note "in-process and forked runs propose the same sequence"
expect_eq "same genotypes" "$(sql "$TMP/t0.db" "SELECT group_concat(genotype) FROM trial ORDER BY id")" \
    "$(sql "$TMP/t1.db" "SELECT group_concat(genotype) FROM trial ORDER BY id")"

note "nas query ranks by val_accuracy"
run 0 "$NAS" query --db "$TMP/t0.db" --format csv --limit 1
expect_eq "best trial" "$(tail -1 "$TMP/out" | cut -d, -f2)" \
    "$(sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY r.val_accuracy DESC, t.id LIMIT 1")"
echo "PASS"
