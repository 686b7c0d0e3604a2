#!/usr/bin/env bash
# tests/e2e/test_labels_own_data.sh - issue 28, defect 6: labels written for
# Fashion-MNIST and the cell space do not leak into an experiment on other
# data with a chain space (3x32x32 npy images, 5 classes):
#   - the report's "Ops in the best architectures" counts the chain's ops
#     (it listed the five cell ops at 0%);
#   - its MACs caption names the experiment's image size (it said "per
#     28x28 image"), its "Final training" caption the experiment's test
#     images (it said "the Fashion-MNIST test images");
#   - the canonical settings carry no data.dir (it listed Fashion-MNIST's
#     /usr/share/datasets/fashion-mnist for npy data);
#   - no output of run, query, show, experiments, report or the help of
#     nas export names Fashion-MNIST or a 28x28 image.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
"$PY" - "$TMP" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(9)
for split, n in (("train", 120), ("test", 20)):
    lab = np.arange(n) % 5
    img = np.clip(lab[:, None, None, None] * 40 + rng.normal(0, 30, (n, 3, 32, 32)), 0, 255).astype(np.uint8)
    np.save(f"{d}/{split}-images.npy", img)
    np.save(f"{d}/{split}-labels.npy", lab.astype(np.int64))
PYEOF
cat >own.conf <<CONF
experiment = "own";
seed = 3;
data: { format = "npy"; train_images = "train-images.npy"; train_labels = "train-labels.npy";
        test_images = "test-images.npy"; test_labels = "test-labels.npy"; valid = 20; };
space: {
  type = "chain";
  input = [3, 32, 32];
  classes = 5;
  stem = { kernel = 3; channels = 4; stride = 2; activation = "relu"; };
  stages = ( { channels = 8; stride = 2; layers = 2; ops = ["mb3_k3", "conv_k3", "skip"]; } );
  head = { activation = "relu"; pool = "avg"; };
};
proxy: { epochs = 1; batch_size = 32; backend = "ref"; threads = 1; keep_weights = true; };
search: { strategy = "random"; trials = 3; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
DB=$TMP/own.db
run 0 "$NAS" run own.conf --db "$DB"
cat "$TMP/out" "$TMP/err" >all.txt
for cmd in "query" "experiments" "show 1"; do
    run 0 "$NAS" $cmd --db "$DB"
    cat "$TMP/out" "$TMP/err" >>all.txt
done
# a final training row, as `nas train ARCH.json --db` records it
sql "$DB" "INSERT INTO final_training(experiment_id, trial_id, genotype, epochs, recipe, augment,
    backend, train_images, test_accuracy, created_at) SELECT 1, 1, genotype, 1, 'r', 'none', 'ref',
    100, 0.5, '2026-01-01T00:00:00Z' FROM trial WHERE id = 1" ||
    fail "cannot add a final_training row"
run 0 "$NAS" report --db "$DB" -o r.html
cat "$TMP/out" "$TMP/err" r.html >>all.txt
run 0 "$NAS" help export # --logits: the experiment's test images, whatever the data
cat "$TMP/out" "$TMP/err" >>all.txt

grep_in "MACs count convolutions and the classifier per 3x32x32 image" r.html
grep_in "test accuracy on the experiment's test images" r.html
grep_in 'data-op="conv_k3"' r.html
grep_in "share of the chain's layers" r.html
if grep -q 'data-op="nor_conv_3x3"' r.html; then fail "the report counts cell ops for a chain"; fi
grep -A200 'id="config-canonical"' r.html >canon.txt
if grep -q "^data.dir = " canon.txt; then grep "data.dir" canon.txt; fail "npy settings list data.dir"; fi
if grep -n -i "fashion\|mnist\|28x28\|28 x 28" all.txt; then
    fail "an output of an npy experiment names Fashion-MNIST or a 28x28 image"
fi
echo "PASS"
