#!/usr/bin/env bash
# tests/e2e/test_export_pytorch.sh - `nas export --format pytorch` is
# faithful: the generated module (readable code, a two-line usage note on
# top) loads its .npz with load_state_dict(strict) using nothing but numpy
# and torch, has the parameter count nas reports, and gives logits within
# 1e-4 of nas's own forward pass; for genotypes covering every op (fresh
# weights) and for a tiny search's trained weights (tests/e2e/check_pytorch.py).
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
echo "PASS"
