#!/usr/bin/env bash
# tests/e2e/test_key_migration.sh - a database written by nas before issue 21
# (arch_key = NAS-Bench-201's string, schema 2; tests/data/old-nb201-keys.sql)
# is migrated to the functional key and its interrupted search resumes:
#  - schema 4; every trial kept, with its result; trials whose cells turn
#    out to compute one function keep their rows ("(same function as trial N)");
#  - the replay dedupes the old trials with the old key, so it makes the
#    same proposals (no "replayed proposals differed" note; 13 of 40 differ
#    when the replay uses the new key for them) and re-runs nothing;
#  - new trials never repeat a function already tried;
#  - a second interruption, after new-key trials, resumes like the
#    uninterrupted run.
# Skips when the NAS-Bench-201 table is absent.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
cd "$TMP" || fail "cd"

cat >c3.conf <<CONF
experiment = "keys-v2";
seed = 3;
search: { strategy = "evolution"; trials = 60; population = 10; sample_size = 3; };
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; test_column = "cifar10-test"; table_scale = 0.01; };
workers: { count = 0; };
CONF
sed "s|@TABLE@|$TABLE|g" "$SRC/tests/data/old-nb201-keys.sql" | sqlite3 -batch old.db ||
    fail "cannot load the old database"
expect_eq "old schema" "$(sql old.db "PRAGMA user_version")" 2
OLD_ROWS="SELECT group_concat(id || ' ' || genotype || ' ' || status || ' ' || attempt || ' ' || finished_at || ' ' || val_accuracy, ';') FROM (SELECT * FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.id <= 40 ORDER BY t.id)"
before=$(sql old.db "$OLD_ROWS")

note "migrate and resume"
cp old.db a.db
run 0 "$NAS" run c3.conf --db a.db
grep -q "replayed proposals differed" "$TMP/out" "$TMP/err" &&
    fail "the replay diverged: $(grep -h 'replayed proposals' "$TMP/out" "$TMP/err")"
expect_eq "schema" "$(sql a.db "PRAGMA user_version")" 10
expect_eq "trials" "$(sql a.db "SELECT count(*) FROM trial WHERE status = 'done'")" 60
expect_eq "old trials untouched" "$(sql a.db "$OLD_ROWS")" "$before"
expect_eq "old-key marker" \
    "$(sql a.db "SELECT blob FROM strategy_state WHERE name = 'controller.nb201_keys_until'")" 40
expect_eq "no old key left" "$(sql a.db "SELECT count(*) FROM trial WHERE arch_key LIKE '%@%'")" 0
expect_eq "old trials that share a function" \
    "$(sql a.db "SELECT count(*) FROM trial WHERE arch_key LIKE '% (same function as trial %'")" 4
expect_eq "new trials repeating a function" "$(sql a.db "SELECT count(*) FROM trial t JOIN trial u
    ON u.experiment_id = t.experiment_id AND u.id < t.id AND
       (u.arch_key = t.arch_key OR u.arch_key LIKE t.arch_key || ' (same function as trial %')
    WHERE t.id > 40")" 0

note "interrupted again after new-key trials: resumes like the uninterrupted run"
cp a.db b.db
sql b.db "DELETE FROM result WHERE trial_id > 50; DELETE FROM trial WHERE id > 50;
          UPDATE experiment SET status = 'interrupted'"
run 0 "$NAS" run c3.conf --db b.db
grep -q "replayed proposals differed" "$TMP/out" "$TMP/err" && fail "the second replay diverged"
expect_eq "same trials" "$(sql b.db "SELECT group_concat(genotype, ';') FROM (SELECT genotype FROM trial ORDER BY id)")" \
    "$(sql a.db "SELECT group_concat(genotype, ';') FROM (SELECT genotype FROM trial ORDER BY id)")"
echo "PASS"
