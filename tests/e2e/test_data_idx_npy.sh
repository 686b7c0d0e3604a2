#!/usr/bin/env bash
# tests/e2e/test_data_idx_npy.sh - issue 16 acceptance: the same
# Fashion-MNIST images read through data.format = "idx" (gzip idx files)
# and through "npy" (the same pixels converted by numpy) train to
# bit-identical weights and accuracies for the same seed; the experiment
# records the data's shape, classes and normalisation (a "# data:" line
# of its canonical text), and resuming with the other format's files is
# refused only when the data itself differs.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_fmnist
need_numpy
cd "$TMP" || fail "cd"
fmnist_subset "$TMP" 600 200
data_conf idx.conf same 'format = "idx"; train_images = "train-images.idx.gz"; train_labels = "train-labels.idx.gz"; test_images = "test-images.idx.gz"; test_labels = "test-labels.idx.gz"; train_subset = 400; valid = 150;'
data_conf npy.conf same 'format = "npy"; train_images = "train-images.npy"; train_labels = "train-labels.npy"; train_subset = 400; valid = 150;'
run 0 "$NAS" run idx.conf --db "$TMP/idx.db"
run 0 "$NAS" run npy.conf --db "$TMP/npy.db"
q="SELECT t.genotype, r.val_accuracy, r.train_loss, r.macs, r.params FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY t.id"
a=$(sql "$TMP/idx.db" "$q") b=$(sql "$TMP/npy.db" "$q")
[ -n "$a" ] || fail "no results"
expect_eq "results idx vs npy" "$a" "$b"
note "$(echo "$a" | head -1)"
for w in "$TMP"/idx.db.weights/*.npz; do # the arrays, bit for bit (the zip holds timestamps)
    "$PY" -c '
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(b.files), "members differ"
for k in a.files:
    assert a[k].tobytes() == b[k].tobytes(), k
' "$w" "$TMP/npy.db.weights/$(basename "$w")" || fail "weights differ: $(basename "$w")"
done
[ "$(ls "$TMP"/idx.db.weights/*.npz | wc -l)" = 3 ] || fail "expected 3 weight files"
canon=$(sql "$TMP/idx.db" "SELECT conf_canonical FROM experiment")
echo "$canon" | grep -q '^data.format = "idx";$' || fail "no data.format in the canonical text"
line=$(echo "$canon" | grep '^# data: ')
note "$line"
echo "$line" | grep -q 'input = \[1, 28, 28\]; classes = 10; pixels = "uint8"; mean = \[0\.' ||
    fail "bad data line: $line"
expect_eq "data line idx vs npy" "$line" "$(sql "$TMP/npy.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')"
note "the Fashion-MNIST MACs of these cells equal the shorthand's"
data_conf fm.conf same 'dataset = "fashion-mnist"; dir = "'"$FMNIST"'"; train_subset = 400; valid = 150;'
sed -i 's/trials = 3/trials = 1/' fm.conf
run 0 "$NAS" run fm.conf --db "$TMP/fm.db"
expect_eq "macs" "$(sql "$TMP/fm.db" "SELECT macs FROM result")" "$(sql "$TMP/idx.db" "SELECT macs FROM result ORDER BY trial_id LIMIT 1")"
sql "$TMP/fm.db" "SELECT conf_canonical FROM experiment" | grep -q '^# data:' && fail "the shorthand's canonical text changed"
note "the files are running settings: the idx experiment continues from copies elsewhere"
mkdir -p moved && cp train-*.idx.gz test-*.idx.gz moved/
sed -e 's|"train-|"moved/train-|g; s|"test-|"moved/test-|g; s/trials = 3/trials = 4/' idx.conf >idx2.conf
run 0 "$NAS" run idx2.conf --db "$TMP/idx.db"
expect_eq "trials after extending" "$(sql "$TMP/idx.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 4
note "other data under the same name is refused (exit 2), nothing written"
fmnist_subset "$TMP/moved" 580 100
run 2 "$NAS" run idx2.conf --db "$TMP/idx.db"
grep_in "the data of experiment 'same' changed" "$TMP/err"
expect_eq "trials" "$(sql "$TMP/idx.db" "SELECT count(*) FROM trial")" 4
echo "PASS"
