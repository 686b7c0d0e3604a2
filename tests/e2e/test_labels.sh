#!/usr/bin/env bash
# tests/e2e/test_labels.sh - issue 22, point 8: honest labels.
#  - a table search prints `lookup` (not `train`), no latency and no
#    "backend ... thread(s)" line; `nas query` shows the recorded test
#    accuracy;
#  - NAO labels its uniform seed cells proposed_by = 'nao-seed' (model
#    proposals 'nao') and prints one line per model round with the model's
#    training loss, Kendall's tau on held-back results and the candidates
#    decoded;
#  - an old NAO database (seed cells stored as 'nao') keeps its values and
#    resumes to the same search.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
cd "$TMP" || fail "cd"

cat >"$TMP/nao.conf" <<CONF
experiment = "e2e-labels";
seed = 4;
search: { strategy = "nao"; trials = 30; nao: { seed_archs = 10; epochs = 10; batch_per_round = 2; }; };
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; test_column = "cifar10-test"; };
workers: { count = 0; };
CONF

note "a table search says lookup, shows no latency and no backend"
run 0 "$NAS" run nao.conf --db "$TMP/a.db"
grep_in "^\[trial 1, 1/30\] lookup " "$TMP/err"
grep -q "\] train " "$TMP/err" && fail "a table search prints 'train'"
grep -q " ms |" "$TMP/err" && fail "a table search prints a latency"
grep -q "backend cpu with" "$TMP/err" && fail "a table search names a backend"
grep_in "table look-ups" "$TMP/err"

note "NAO: proposed_by and one line per round"
expect_eq "seed cells" "$(sql "$TMP/a.db" "SELECT group_concat(DISTINCT proposed_by) FROM trial WHERE id <= 10")" "nao-seed"
expect_eq "model proposals" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial WHERE id > 10 AND proposed_by IN ('nao', 'nao-random')")" 20
expect_eq "any nao-seed after the seeds" "$(sql "$TMP/a.db" "SELECT count(*) FROM trial WHERE id > 10 AND proposed_by = 'nao-seed'")" 0
rounds=$(grep -c "^\[nao round [0-9]*\] model trained on [0-9]* results, loss [0-9.]* | Kendall tau " "$TMP/err")
[ "$rounds" -ge 5 ] || { cat "$TMP/err"; fail "expected a line per NAO round, got $rounds"; }
grep_in "^\[nao round 1\] model trained on 10 results" "$TMP/err"
grep_in "Kendall tau [-0-9.]* on [0-9]* held-back result(s) | [0-9]* candidate(s) decoded, [0-9]* queued" "$TMP/err"

note "nas query shows the recorded test accuracy"
run 0 "$NAS" query --db "$TMP/a.db" --limit 1
grep_in "test_acc" "$TMP/out"
best=$(sql "$TMP/a.db" "SELECT t.id || ' ' || printf('%.4f', r.test_accuracy) FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
row=$(sed -n 3p "$TMP/out")
echo "$row" | grep -q " ${best#* } " || { cat "$TMP/out"; fail "query row lacks test accuracy ${best#* }"; }

note "an old NAO database (seed cells labelled 'nao') resumes to the same search"
cp "$TMP/a.db" "$TMP/old.db"
sql "$TMP/old.db" "DELETE FROM result WHERE trial_id > 20; DELETE FROM trial WHERE id > 20; UPDATE trial SET proposed_by = 'nao'; UPDATE experiment SET status = 'interrupted'; DELETE FROM strategy_state;"
run 0 "$NAS" run nao.conf --db "$TMP/old.db"
grep_in "resuming experiment" "$TMP/err"
grep -q "replayed proposals differed" "$TMP/err" && fail "the replay of the old database differs"
expect_eq "same genotypes as the uninterrupted search" \
    "$(sql "$TMP/old.db" "SELECT group_concat(genotype) FROM (SELECT genotype FROM trial ORDER BY id)")" \
    "$(sql "$TMP/a.db" "SELECT group_concat(genotype) FROM (SELECT genotype FROM trial ORDER BY id)")"
expect_eq "old labels kept" "$(sql "$TMP/old.db" "SELECT count(*) FROM trial WHERE id <= 20 AND proposed_by = 'nao'")" 20
expect_eq "new trials labelled" "$(sql "$TMP/old.db" "SELECT group_concat(DISTINCT proposed_by) FROM trial WHERE id > 20")" \
    "$(sql "$TMP/a.db" "SELECT group_concat(DISTINCT proposed_by) FROM trial WHERE id > 20")"
echo "PASS"
