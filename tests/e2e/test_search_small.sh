#!/usr/bin/env bash
# tests/e2e/test_search_small.sh - a tiny real search through the nas binary:
# 4 trials of the NAS-Bench-201 cell space (16 channels), a few hundred
# Fashion-MNIST images, 1 epoch. Checks the database with sqlite3 (counts,
# statuses, one trial per arch key, results in range), `nas query` in
# table/csv/json, `nas show`, and that a rerun of the finished experiment
# trains nothing.
. "$(dirname "$0")/search_lib.sh"
need_fmnist

cat >"$TMP/small.conf" <<CONF
# e2e: tiny search
experiment = "e2e-small";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 16; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "evolution"; trials = 4; population = 2; sample_size = 2; };
evaluator: { latency_runs = 3; latency_warmup = 1; };
workers: { count = 1; };
CONF
DB=$TMP/small.db
cd "$TMP" || fail "cd"

note "nas run (4 trials)"
run 0 "$NAS" run small.conf --db "$DB"
grep_in "\[trial 1, 1/4\]" "$TMP/err"
grep_in "\[trial 4, 4/4\]" "$TMP/err"
grep_in "val_acc" "$TMP/err"
grep_in "complete: 4 trials" "$TMP/out"
grep_in "nas query --db $DB" "$TMP/out"

note "database contents"
expect_eq "experiments" "$(sql "$DB" "SELECT count(*) FROM experiment")" 1
expect_eq "experiment status" "$(sql "$DB" "SELECT status FROM experiment")" done
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" 4
expect_eq "finished" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('done','failed')")" 4
expect_eq "attempts" "$(sql "$DB" "SELECT min(attempt) || ' ' || max(attempt) FROM trial")" "1 1"
expect_eq "user_version" "$(sql "$DB" "PRAGMA user_version")" 10  # schema 10: tables supernet_epoch, finalist (issue 32)
# issue 7: each trained trial records the device that ran it (the CPU model)
cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
if [ -n "$cpu_model" ]; then
    expect_eq "device_name of done trials" \
        "$(sql "$DB" "SELECT DISTINCT device_name FROM trial WHERE status = 'done'")" "$cpu_model"
fi
expect_eq "device_cc of CPU trials" "$(sql "$DB" "SELECT count(device_cc) FROM trial")" 0
check_db_consistent "$DB"
ndone=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")
[ "$ndone" -ge 1 ] || fail "no trial succeeded"
# Each genotype is a 6-edge NAS-Bench-201 string.
expect_eq "malformed genotypes" \
    "$(sql "$DB" "SELECT count(*) FROM trial WHERE genotype NOT GLOB '|*~0|+|*~0|*~1|+|*~0|*~1|*~2|'")" 0

note "nas query (table)"
run 0 "$NAS" query --db "$DB"
grep_in "e2e-small" "$TMP/out"
for col in trial genotype status val_acc macs params latency_ms train_s; do
    grep_in "$col" "$TMP/out"
done
best=$(sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
first=$(sed -n 3p "$TMP/out" | awk '{print $2}')
expect_eq "top row of the table" "$first" "$best"

note "nas query --format csv"
run 0 "$NAS" query --db "$DB" --format csv
cp "$TMP/out" "$TMP/q.csv"
expect_eq "csv header" "$(head -1 "$TMP/q.csv" | cut -d, -f1-11)" \
    "rank,trial,genotype,status,val_accuracy,test_accuracy,train_loss,macs,params,latency_ms,train_seconds"
expect_eq "csv rows" "$(($(wc -l <"$TMP/q.csv") - 1))" 4
# Rows are ranked: done trials by val_accuracy, descending.
sorted=$(awk -F, 'NR > 1 && $4 == "done" {print $5}' "$TMP/q.csv")
expect_eq "csv order" "$sorted" "$(echo "$sorted" | sort -g -r)"
# The csv's values are the database's, not rounded to the table's 4
# decimals (trial 1's val_accuracy, train_loss and latency_ms).
v_csv=$(awk -F, '$2 == 1 {print $5, $7, $10}' "$TMP/q.csv")
v_db=$(sql "$DB" "SELECT printf('%.10g %.10g %.10g', val_accuracy, train_loss, latency_ms)
                  FROM result WHERE trial_id = 1")
expect_eq "csv values of trial 1" "$v_csv" "$v_db"
run 0 "$NAS" query --db "$DB" --format csv --limit 2
expect_eq "--limit 2" "$(wc -l <"$TMP/out")" 3

note "nas query --format json"
run 0 "$NAS" query --db "$DB" --format json
cp "$TMP/out" "$TMP/q.json"
expect_eq "json valid" "$(sql ":memory:" "SELECT json_valid(readfile('$TMP/q.json'))")" 1
expect_eq "csv = json (trial 1: val_accuracy, train_loss, latency_ms)" "$v_csv" \
    "$(sql ":memory:" "SELECT printf('%.10g %.10g %.10g', value ->> 'val_accuracy',
           value ->> 'train_loss', value ->> 'latency_ms') FROM json_each(readfile('$TMP/q.json'))
           WHERE value ->> 'trial' = 1")"
expect_eq "json rows" "$(sql ":memory:" "SELECT json_array_length(readfile('$TMP/q.json'))")" 4
expect_eq "json = csv (trial order)" \
    "$(sql ":memory:" "SELECT group_concat(value ->> 'trial', ' ') FROM json_each(readfile('$TMP/q.json'))")" \
    "$(awk -F, 'NR > 1 {printf "%s%s", sep, $2; sep=" "}' "$TMP/q.csv")"
expect_eq "json macs of trial 1" \
    "$(sql ":memory:" "SELECT value ->> 'macs' FROM json_each(readfile('$TMP/q.json')) WHERE value ->> 'trial' = 1")" \
    "$(sql "$DB" "SELECT ifnull(macs, '') FROM result WHERE trial_id = 1")"

note "nas show"
run 0 "$NAS" show --db "$DB" 2
for field in trial experiment genotype arch_key status error proposed_by attempt worker device \
    device_name started_at finished_at val_accuracy macs params latency_ms train_seconds epochs; do
    grep -q "^$field " "$TMP/out" || { cat "$TMP/out"; fail "nas show lacks '$field'"; }
done
expect_eq "show genotype" "$(awk '$1 == "genotype" {print $2}' "$TMP/out")" \
    "$(sql "$DB" "SELECT genotype FROM trial WHERE id = 2")"
run 1 "$NAS" show --db "$DB" 99
grep_in "no trial 99" "$TMP/err"

note "nas query of a database in a read-only directory"
mkdir "$TMP/rodir"
cp "$DB" "$TMP/rodir/copy.db"
chmod 644 "$TMP/rodir/copy.db"
chmod 555 "$TMP/rodir"
chmod 755 "$TMP"
as_user=()
if [ "$(id -u)" = 0 ]; then
    # root ignores permissions: read as nobody when possible
    if command -v setpriv >/dev/null &&
        setpriv --reuid=65534 --regid=65534 --clear-groups "$NAS" --version >/dev/null 2>&1; then
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    else
        echo "SKIP (part): root cannot drop to nobody; read-only directory read as root"
    fi
fi
run 0 "${as_user[@]}" "$NAS" query --db "$TMP/rodir/copy.db" --format csv
expect_eq "rows read from a read-only directory" "$(($(wc -l <"$TMP/out") - 1))" 4
[ -z "$(ls "$TMP/rodir" | grep -v '^copy.db$')" ] || fail "query wrote beside a read-only database"

note "rerun of the finished experiment trains nothing"
before=$(sql "$DB" "SELECT group_concat(id || finished_at) FROM trial")
run 0 "$NAS" run small.conf --db "$DB" --quiet
grep_in "complete: 4 trials" "$TMP/out"
expect_eq "trials after rerun" "$(sql "$DB" "SELECT count(*) FROM trial")" 4
expect_eq "finished trials untouched" "$(sql "$DB" "SELECT group_concat(id || finished_at) FROM trial")" "$before"
echo "PASS"
