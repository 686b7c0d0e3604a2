#!/usr/bin/env bash
# tests/e2e/test_experiment_identity.sh - issue 22, point 1: an experiment is
# its name in the database plus its defining settings; the budget and the
# workers are running settings.
#   - a finished 20-trial search extended to 30 keeps its 20 trials (not
#     re-run: same rows, attempt 1, same started_at) and proposes the same 30
#     cells as a fresh 30-trial search with that seed;
#   - another workers.count is a running setting: same experiment, a note;
#   - search.trials below the finished trials: nothing to do, the budget
#     stays what they are (never "34 of 25"), query still reads it;
#   - a changed defining setting under the same name is refused (exit 2),
#     naming the keys (old -> new) and the ways to start a new experiment;
#     nothing is written;
#   - --new starts NAME-2, --experiment NAME starts or resumes NAME.
# Table evaluator on a generated table (faults_lib.sh): seconds, no data.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
mk() { # FILE TRIALS COUNT SEED POPULATION
    cat >"$TMP/$1" <<CONF
experiment = "ident";
seed = $4;
search: { strategy = "evolution"; trials = $2; population = $5; sample_size = 3; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = $3; };
CONF
}
DB=$TMP/id.db
mk a20.conf 20 0 5 8
mk a30.conf 30 0 5 8
note "a finished 20-trial search"
run 0 "$NAS" run a20.conf --db "$DB"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" 20
sql "$DB" "SELECT id, genotype, attempt, started_at FROM trial ORDER BY id" >"$TMP/first20"

note "extended to 30: the first 20 are kept, 10 are added"
run 0 "$NAS" run a30.conf --db "$DB"
grep_in "extending experiment 'ident' (id 1)" "$TMP/err"
grep_in "search.trials: 20 -> 30" "$TMP/err"
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 1
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE experiment_id = 1 AND status = 'done'")" 30
expect_eq "budget" "$(sql "$DB" "SELECT trials_budget || ' ' || status FROM experiment")" "30 done"
expect_eq "the first 20 trials, unchanged (not re-run)" \
    "$(sql "$DB" "SELECT id, genotype, attempt, started_at FROM trial WHERE id <= 20 ORDER BY id")" \
    "$(cat "$TMP/first20")"
expect_eq "trials run by the extension" "$(grep -c '\] done ' "$TMP/err")" 10
note "the extended search is the search a fresh 30-trial run makes"
run 0 "$NAS" run a30.conf --db "$TMP/fresh.db"
expect_eq "same 30 cells in the same order" \
    "$(sql "$DB" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial ORDER BY id)")" \
    "$(sql "$TMP/fresh.db" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial ORDER BY id)")"

note "workers.count is a running setting: same experiment, and the run says so"
mk a30w2.conf 30 2 5 8
run 0 "$NAS" run a30w2.conf --db "$DB"
grep_in "nothing to do" "$TMP/err"
grep_in "workers.count: 0 -> 2" "$TMP/err"
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 1
mk a34w2.conf 34 2 5 8
run 0 "$NAS" run a34w2.conf --db "$DB"
grep_in "note: this run has 2 worker(s)" "$TMP/err"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 34
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 1

note "search.trials lowered below the finished trials: nothing to do, the budget is what they are"
mk a25w2.conf 25 2 5 8
run 0 "$NAS" run a25w2.conf --db "$DB"
grep_in "search.trials = 25 is below the 34 trials experiment 'ident' (id 1)" "$TMP/err"
grep_in "already has its 34 trials; nothing to do" "$TMP/err"
grep_in "complete: 34 trials (34 done, 0 failed)" "$TMP/out"
if grep -q "of 25\|its 25 trials" "$TMP/err" "$TMP/out"; then
    cat "$TMP/err" "$TMP/out"; fail "a lowered search.trials is reported as the budget"
fi
expect_eq "budget" "$(sql "$DB" "SELECT trials_budget || ' ' || status FROM experiment")" "34 done"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 34
run 0 "$NAS" query --db "$DB"
grep_in "34 of 34 trials finished" "$TMP/out"
run 0 "$NAS" run a34w2.conf --db "$DB" # back to 34: not an extension
grep_in "resuming experiment 'ident' (id 1) in $DB: 34 done, 0 failed of 34" "$TMP/err"

note "lowered below the finished trials, a trial a killed run left 'running' is marked interrupted"
# as kill -9 leaves it: the trial 'running' without a result, the experiment 'running'
sql "$DB" "UPDATE trial SET status = 'running' WHERE id = 34; DELETE FROM result WHERE trial_id = 34;
           UPDATE experiment SET status = 'running'"
run 0 "$NAS" run a25w2.conf --db "$DB"
grep_in "its budget is 33 trials; its unfinished trials are not run" "$TMP/err"
grep_in "1 trial(s) were left 'running' .* they are marked interrupted, not run" "$TMP/err"
expect_eq "trial 34 and the experiment" \
    "$(sql "$DB" "SELECT t.status || ' ' || e.status FROM trial t JOIN experiment e
                  ON e.id = t.experiment_id WHERE t.id = 34")" "interrupted done"
run 0 "$NAS" run a34w2.conf --db "$DB" # raised again: it runs
grep_in "1 unfinished trial(s) to re-run" "$TMP/err"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 34

note "a changed defining setting is refused with the keys and the way out"
mk b.conf 34 2 6 12
before=$(sql "$DB" "SELECT count(*) FROM trial")
run 2 "$NAS" run b.conf --db "$DB"
grep_in "experiment 'ident' (id 1)" "$TMP/err"
grep_in "seed: 5 -> 6" "$TMP/err"
grep_in "search.population: 8 -> 12" "$TMP/err"
grep_in "\-\-new" "$TMP/err"
grep_in "\-\-experiment NAME" "$TMP/err"
if grep -q "search.trials\|workers.count" "$TMP/err"; then
    cat "$TMP/err"; fail "the refusal lists running settings as differences"
fi
expect_eq "nothing written" "$(sql "$DB" "SELECT count(*) FROM trial") $(sql "$DB" "SELECT count(*) FROM experiment")" "$before 1"

note "--new starts ident-2; --experiment NAME starts or resumes NAME"
run 0 "$NAS" run b.conf --db "$DB" --new
grep_in "experiment 'ident-2'" "$TMP/err"
grep_in "\-\-experiment ident-2" "$TMP/err"
expect_eq "ident-2" "$(sql "$DB" "SELECT id || ' ' || trials_budget FROM experiment WHERE name = 'ident-2'")" "2 34"
run 0 "$NAS" run b.conf --db "$DB" --experiment ident-2
grep_in "nothing to do" "$TMP/err"
run 0 "$NAS" run b.conf --db "$DB" --experiment other
expect_eq "experiments" "$(sql "$DB" "SELECT group_concat(name, ' ') FROM experiment")" "ident ident-2 other"
run 2 "$NAS" run a30.conf --db "$DB" --experiment ident-2
grep_in "seed: 6 -> 5" "$TMP/err"
echo "PASS"
