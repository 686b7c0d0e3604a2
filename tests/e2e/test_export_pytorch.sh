#!/usr/bin/env bash
# tests/e2e/test_export_pytorch.sh - `nas export --format pytorch` is
# faithful: the generated module (readable code, a two-line usage note on
# top) loads its .npz with load_state_dict(strict) using nothing but numpy
# and torch, has the parameter count nas reports, and gives logits within
# 1e-4 of nas's own forward pass; for genotypes covering every op (fresh
# weights) and for a tiny search's trained weights (tests/e2e/check_pytorch.py);
# its data helper load_data() reads the test images exactly as nas does.
. "$(dirname "$0")/export_lib.sh"
need_fmnist
need_py numpy torch
cd "$TMP" || fail "cd"

params_of() { sed -n 's/^parameters: \([0-9]*\).*/\1/p' "$TMP/out"; }
triples=()
i=0
for g in "${GENOS[@]}"; do
    i=$((i + 1))
    run 0 "$NAS" export --genotype "$g" --channels 4 --seed $i --format pytorch -o "g$i.py" \
        --logits "g$i.npz.logits" --logits-batch 8
    grep_in "g$i.py + g$i.npz" "$TMP/out"
    [ -f "g$i.npz" ] || fail "no weights g$i.npz next to g$i.py"
    triples+=("g$i.py" "g$i.npz.logits" "$(params_of)")
done
run 0 "$NAS" export --genotype "${GENOS[2]}" --channels 8 --cells 2 --format pytorch -o wide.py \
    --logits wide.logits --logits-batch 8
triples+=(wide.py wide.logits "$(params_of)")

note "trained proxy weights of a tiny search"
tiny_search "$TMP/s.db" ref 2
best=$(sql "$TMP/s.db" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
run 0 "$NAS" export --db "$TMP/s.db" --best --format pytorch -o best.py --logits best.logits
grep_in "trial $best of 'e2e-export'" "$TMP/out"
stored=$(sql "$TMP/s.db" "SELECT params FROM result WHERE trial_id = $best")
expect_eq "parameters nas reports" "$(params_of)" "$stored"
triples+=(best.py best.logits "$stored")
grep -q "^import numpy as np" best.py || fail "best.py does not import numpy"
grep -q "class TinyNetwork(nn.Module)" best.py || fail "best.py defines no TinyNetwork"

note "checking $((${#triples[@]} / 3)) modules with PyTorch"
"$PY" "$HERE/check_pytorch.py" "${triples[@]}" || fail "an exported PyTorch module differs from nas"
note "the module runs as a script and reports its parameter count"
(cd "$TMP" && "$PY" best.py >"$TMP/py.out" 2>&1) || { cat "$TMP/py.out"; fail "python3 best.py failed"; }
grep_in "parameters: $stored" "$TMP/py.out"

note "the module's data helper reads Fashion-MNIST normalised as nas does (issue 22)"
(cd "$TMP" && "$PY" - "$FMNIST" best.logits >"$TMP/data.out" 2>&1 <<'PYEOF') ||
import sys, numpy as np, torch
from best import TinyNetwork, load_weights, load_data, preprocess, MEAN, STD
ref = np.load(sys.argv[2])
n = ref["images"].shape[0]
x, y = load_data("test", data_dir=sys.argv[1], limit=n)
assert x.dtype == torch.float32 and tuple(x.shape) == ref["images"].shape, x.shape
assert np.array_equal(y.numpy(), ref["labels"]), "labels differ from nas's"
d = float(np.max(np.abs(x.numpy() - ref["images"])))
assert d <= 1e-6, "images differ from nas's by %g" % d
assert abs(MEAN - 0.2860) < 1e-9 and abs(STD - 0.3530) < 1e-9
model = TinyNetwork()
model.load_state_dict(load_weights("best.npz"))
model.eval()
with torch.no_grad():
    diff = float(np.max(np.abs(model(x).numpy() - ref["logits"])))
assert diff <= 1e-4, "logits on load_data() images differ by %g" % diff
xt, _ = load_data("train", data_dir=sys.argv[1], limit=3)
assert tuple(xt.shape) == (3, 1, 28, 28)
assert preprocess(np.zeros((2, 28, 28), np.uint8)).shape == (2, 1, 28, 28)
print("-- load_data: %d test images equal nas's (max |diff| %g), logits within %g" % (n, d, diff))
PYEOF
{ cat "$TMP/data.out"; fail "the export's load_data() does not reproduce nas's inputs"; }
cat "$TMP/data.out"
echo "PASS"
