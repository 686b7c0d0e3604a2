#!/usr/bin/env bash
# tests/e2e/test_data_cifar_search.sh - issue 16: a cell search end to end on a
# small synthetic CIFAR-10 (data.format = "cifar": five data batches and a
# test batch, 3x32x32, 10 classes), then its exports carry the data's
# shape, classes and per-channel normalisation: the JSON's input block,
# the ONNX input [N,3,32,32] and output [N,10], the PyTorch module's
# preprocess(). Each class's images are a distinct colour plus noise, so
# a proxy-trained cell learns something.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
mkdir cifar
cifar_synth "$TMP/cifar" 60 50
data_conf c.conf cifar 'format = "cifar"; dir = "cifar"; train_subset = 200; valid = 100;'
sed -i 's/stages = 2/stages = 3/' c.conf
run 0 "$NAS" run c.conf --db "$TMP/c.db"
expect_eq "done trials" "$(sql "$TMP/c.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 3
line=$(sql "$TMP/c.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')
note "$line"
echo "$line" | grep -q 'input = \[3, 32, 32\]; classes = 10; pixels = "uint8"; mean = \[[0-9.]*, [0-9.]*, [0-9.]*\]' ||
    fail "bad data line: $line"
best=$(sql "$TMP/c.db" "SELECT max(val_accuracy) FROM result")
note "best val_accuracy $best (chance 0.1)"
run 0 "$NAS" export --db "$TMP/c.db" --best --format json -o best.json
"$PY" - best.json <<'PYEOF' || fail "JSON export"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["input"]["shape"] == [3, 32, 32], a["input"]
assert a["classes"] == 10
assert len(a["input"]["mean"]) == 3 and len(a["input"]["std"]) == 3, a["input"]
assert a["input"]["pixels"] == "uint8" and a["input"]["format"] == "cifar"
PYEOF
run 0 "$NAS" export --db "$TMP/c.db" --best --format onnx -o best.onnx
if "$PY" -c 'import onnx' 2>/dev/null; then
    "$PY" - best.onnx <<'PYEOF' || fail "ONNX input shape"
import onnx, sys
m = onnx.load(sys.argv[1])
dims = lambda v: [d.dim_value if d.dim_value else d.dim_param for d in v.type.tensor_type.shape.dim]
assert dims(m.graph.input[0])[1:] == [3, 32, 32], dims(m.graph.input[0])
assert dims(m.graph.output[0])[1:] == [10], dims(m.graph.output[0])
PYEOF
else
    note "onnx not installed: ONNX shapes not checked"
fi
run 0 "$NAS" export --db "$TMP/c.db" --best --format pytorch -o best.py
if "$PY" -c 'import torch' 2>/dev/null; then
    "$PY" - "$TMP" <<'PYEOF' || fail "PyTorch export"
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import best
raw = np.fromfile(sys.argv[1] + "/cifar/test_batch.bin", np.uint8).reshape(-1, 3073)
x = best.preprocess(raw[:8, 1:].reshape(8, 3, 32, 32))
assert tuple(x.shape) == (8, 3, 32, 32)
m = best.TinyNetwork(); m.load_state_dict(best.load_weights(sys.argv[1] + "/best.npz")); m.eval()
assert tuple(m(x).shape) == (8, 10)
print("-- pytorch logits of 8 test images:", tuple(m(x).shape))
PYEOF
else
    note "torch not installed: PyTorch export not run"
fi
echo "PASS"
