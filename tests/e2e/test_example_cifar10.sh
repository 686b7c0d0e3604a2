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
# the chain trial's PyTorch export carries the data's preprocessing, as a
# cell trial's does: 3 per-channel means and a preprocess() for [N,H,W,C]
run 0 "$NAS" export --db "$TMP/m.db" --best --format pytorch -o m.py
grep_in '^MEAN = \[.*, .*, .*\]$' m.py
grep_in '^def preprocess(pixels)' m.py
if "$PY" -c "import torch, numpy" 2>/dev/null; then
    "$PY" -c "
import numpy as np, m
x = m.preprocess(np.full((2, 32, 32, 3), 128, np.uint8))
assert tuple(x.shape) == (2, 3, 32, 32), x.shape
want = (128 / 255 - np.array(m.MEAN)) / np.array(m.STD)
assert np.allclose(x[0, :, 0, 0].numpy(), want, atol=1e-5), (x[0, :, 0, 0], want)
m.ChainNetwork().load_state_dict(m.load_weights('m.npz'))" || fail "the chain export's preprocess()"
else
    note "SKIPPED the preprocess() call: $PY lacks torch or numpy"
fi
echo "PASS"
