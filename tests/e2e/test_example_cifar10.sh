#!/usr/bin/env bash
# tests/e2e/test_example_cifar10.sh - issue 16: the CIFAR-10 examples
# (examples/cifar10-cells.conf, examples/cifar10-mobile.conf) against a
# synthetic CIFAR-10 laid out where the README puts the real one
# (data/cifar-10-batches-bin/ beside examples/): `nas space` parses each,
# and the mobile example, cut down to one trial on 64 images (sed on a
# copy: trials, train_subset, workers, latency runs), trains a chain
# network on 3x32x32 inputs with its augmentation and fractional valid.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
mkdir -p examples data/cifar-10-batches-bin
cifar_synth "$TMP/data/cifar-10-batches-bin" 40 20
for ex in cifar10-cells cifar10-mobile; do
    cp "$SRC/examples/$ex.conf" examples/ || fail "no examples/$ex.conf"
    run 0 "$NAS" space "examples/$ex.conf"
done
grep -q 'augment = "crop4,flip"' examples/cifar10-mobile.conf || fail "the mobile example lost its augmentation"
sed -i -e 's/trials = 24;/trials = 1;/' -e 's/train_subset = 10000;/train_subset = 64;/' \
    -e 's/count = 2;/count = 1;/' -e 's/latency_runs = 10;/latency_runs = 1;/' \
    -e 's/valid = 0.1;/valid = 0.2;/' examples/cifar10-mobile.conf
run 0 "$NAS" run examples/cifar10-mobile.conf --db "$TMP/m.db"
expect_eq "done trials" "$(sql "$TMP/m.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 1
grep_in "20% as validation images" "$TMP/err"
sql "$TMP/m.db" "SELECT conf_canonical FROM experiment" >canon.txt
grep_in '^# data: input = \[3, 32, 32\]; classes = 10;' canon.txt
grep_in '^data.augment = "crop4,flip";' canon.txt
grep_in '^data.valid = 0.2;' canon.txt
echo "PASS"
