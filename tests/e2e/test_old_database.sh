#!/usr/bin/env bash
# tests/e2e/test_old_database.sh - issue 22: a database written before
# experiments were identified by name (tests/data/db-v2-99f4266.sql: nas at
# commit 99f4266, schema 2, two experiments 'old-table' of 6 and 8 trials,
# made by running one table config with search.trials = 6 and then 8) still
# opens read-only as it is, is listed by `nas experiments`, and can be
# extended: the same config with search.trials = 12 continues the most
# recent 'old-table' (8 -> 12; its 8 trials not re-run), migrates the file
# to the current schema and says so (once), and proposes what a fresh
# 12-trial search proposes. A refused run (a changed defining setting,
# a missing table) leaves the file byte for byte as it was.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
DB=$TMP/old.db
sed "s#@TABLE@#$TMP/table.csv#g" "$SRC/tests/data/db-v2-99f4266.sql" | sqlite3 -batch "$DB" ||
    fail "cannot load the fixture"
expect_eq "fixture schema" "$(sql "$DB" "PRAGMA user_version")" 2
mk() { # TRIALS
    cat >"$TMP/old.conf" <<CONF
experiment = "old-table";
seed = 3;
search: { strategy = "evolution"; trials = $1; population = 4; sample_size = 2; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
}
note "read-only commands read it as it is"
run 0 "$NAS" experiments --db "$DB"
grep_in "old-table" "$TMP/out"
expect_eq "listed" "$(grep -c "old-table" "$TMP/out")" 2
run 0 "$NAS" query --db "$DB"
grep_in "experiment 'old-table' (id 2" "$TMP/out"
expect_eq "still schema 2" "$(sql "$DB" "PRAGMA user_version")" 2

note "a refused run leaves the old file as it was (not migrated)"
md5() { md5sum "$DB" | cut -d' ' -f1; }
sum0=$(md5)
mk 12
sed -i 's/^seed = 3;/seed = 4;/' "$TMP/old.conf" # a defining setting differs
run 2 "$NAS" run old.conf --db "$DB"
grep_in "seed: 3 -> 4" "$TMP/err"
expect_eq "file after a refusal in the checks of the stored experiment" "$(md5)" "$sum0"
mk 12
sed -i "s#$TMP/table.csv#$TMP/missing.csv#" "$TMP/old.conf" # the evaluator cannot start
run 1 "$NAS" run old.conf --db "$DB"
expect_eq "file after a refusal in the checks of the data" "$(md5)" "$sum0"
expect_eq "not migrated" "$(grep -c "migrated" "$TMP/err")" 0

note "extended from 8 to 12 trials"
sql "$DB" "SELECT id, genotype, attempt, started_at FROM trial WHERE experiment_id = 2 ORDER BY id" >"$TMP/before"
mk 12
run 0 "$NAS" run old.conf --db "$DB"
grep_in "extending experiment 'old-table' (id 2)" "$TMP/err"
# the migration is announced, once
grep_in "migrated $DB from schema version 2 to 10" "$TMP/err"
expect_eq "schema" "$(sql "$DB" "PRAGMA user_version")" 10
# schema 6: the table trials' loss and latency, recorded as 0 by the old
# nas, are unknown (NULL), old and new trials alike
expect_eq "table trials with a loss or latency" \
    "$(sql "$DB" "SELECT count(*) FROM result r JOIN trial t ON t.id = r.trial_id WHERE t.device = 'table' AND (r.train_loss IS NOT NULL OR r.latency_ms IS NOT NULL)")" 0
# schema 7 (issue 29): so is their train_seconds (the old nas wrote 0), and
# `nas query` shows it as unknown, "-", not "0.0"
expect_eq "table trials with a train_seconds" \
    "$(sql "$DB" "SELECT count(*) FROM result r JOIN trial t ON t.id = r.trial_id WHERE t.device = 'table' AND r.train_seconds IS NOT NULL")" 0
run 0 "$NAS" query --db "$DB" --experiment old-table --format csv
expect_eq "train_seconds in nas query --format csv" \
    "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "train_seconds") c = i; next } { print $c }' "$TMP/out" | sort -u)" ""
expect_eq "table trials of experiment 2" "$(sql "$DB" "SELECT count(*) FROM trial WHERE device = 'table' AND status = 'done' AND experiment_id = 2")" 12
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 2
expect_eq "trials of experiment 2" "$(sql "$DB" "SELECT count(*) FROM trial WHERE experiment_id = 2 AND status = 'done'")" 12
expect_eq "its first 8 trials, unchanged" \
    "$(sql "$DB" "SELECT id, genotype, attempt, started_at FROM trial WHERE experiment_id = 2 AND id <= 14 ORDER BY id")" \
    "$(cat "$TMP/before")"
run 0 "$NAS" run old.conf --db "$TMP/fresh.db"
expect_eq "the search a fresh 12-trial run makes" \
    "$(sql "$DB" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial WHERE experiment_id = 2 ORDER BY id)")" \
    "$(sql "$TMP/fresh.db" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial ORDER BY id)")"
run 0 "$NAS" experiments --db "$DB"
grep_in "12" "$TMP/out"
run 0 "$NAS" run old.conf --db "$DB"
expect_eq "a migrated file is not announced again" "$(grep -c "migrated" "$TMP/err")" 0
expect_eq "duplicate arch keys" \
    "$(sql "$DB" "SELECT count(*) FROM (SELECT experiment_id, arch_key FROM trial GROUP BY 1, 2 HAVING count(*) > 1)")" 0
echo "PASS"
