#!/usr/bin/env bash
# tests/e2e/test_bad_data_exit.sh - issue 28, defect 8: bad data exits 2
# whatever the data's format, and a run that made its database and then
# failed on the data leaves nothing behind (no DB, DB.lock, -wal, -shm).
#   - a wrong data.dir for the Fashion-MNIST shorthand (it exited 1, where
#     npy and folder paths exit 2, and left an empty DB and DB.lock);
#   - a missing npy file;
#   - a database that was there before the run is never removed: its
#     experiment stays.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
nothing_left() { # DB
    local f
    for f in "$1" "$1.lock" "$1-wal" "$1-shm" "$1-journal"; do
        [ ! -e "$f" ] || { ls -la "$TMP"; fail "the failed run left $f behind"; }
    done
}
sed "s|dir = \"/usr/share/datasets/fashion-mnist\";|dir = \"$TMP/no-such-dir\";|" \
    "$SRC/examples/fashion-cells.conf" >baddir.conf
grep -q no-such-dir baddir.conf || fail "baddir.conf has no wrong dir"
run 2 "$NAS" run baddir.conf --db "$TMP/f.db"
grep_in "baddir.conf: bad data: cannot open $TMP/no-such-dir/train-images" "$TMP/err"
nothing_left "$TMP/f.db"

cat >npy.conf <<CONF
experiment = "npy";
data: { format = "npy"; train_images = "missing-images.npy"; train_labels = "missing-labels.npy"; valid = 8; };
space: { channels = 4; stages = 2; cells_per_stage = 1; };
search: { strategy = "random"; trials = 2; };
CONF
run 2 "$NAS" run npy.conf --db "$TMP/n.db"
grep_in "missing-images.npy" "$TMP/err"
nothing_left "$TMP/n.db"

note "an existing database is kept"
write_table "$TMP/table.csv"
cat >table.conf <<CONF
experiment = "kept";
seed = 4;
search: { strategy = "random"; trials = 2; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 1; };
CONF
run 0 "$NAS" run table.conf --db "$TMP/k.db"
run 2 "$NAS" run baddir.conf --db "$TMP/k.db"
[ -f "$TMP/k.db" ] || fail "the existing database was removed"
expect_eq "experiments kept" "$(sql "$TMP/k.db" "SELECT name FROM experiment")" kept
echo "PASS"
