#!/usr/bin/env bash
# tests/e2e/test_export_onnx.sh - `nas export --format onnx` is faithful:
# for genotypes covering every op of the cell space (fresh weights, two
# widths and two cells per stage) and for the trained proxy weights of a
# tiny real search (--best and --trial), onnx.checker accepts the model and
# OpenCV's dnn module, given the same Fashion-MNIST test images, computes
# logits within 1e-4 of nas's own forward pass (tests/e2e/check_onnx.py).
. "$(dirname "$0")/export_lib.sh"
need_fmnist
need_py numpy onnx cv2
cd "$TMP" || fail "cd"

pairs=()
i=0
for g in "${GENOS[@]}"; do
    i=$((i + 1))
    run 0 "$NAS" export --genotype "$g" --channels 4 --seed $i --format onnx -o "g$i.onnx" \
        --logits "g$i.npz" --logits-batch 8
    grep_in "as onnx to g$i.onnx" "$TMP/out"
    pairs+=("g$i.onnx" "g$i.npz")
done
note "two cells per stage, 8 channels, cpu backend"
run 0 "$NAS" export --genotype "${GENOS[1]}" --channels 8 --cells 2 --format onnx -o wide.onnx \
    --logits wide.npz --logits-batch 8 --backend cpu
pairs+=(wide.onnx wide.npz)

note "trained proxy weights of a tiny search"
tiny_search "$TMP/s.db" ref 2
run 0 "$NAS" export --db "$TMP/s.db" --best --format onnx -o best.onnx --logits best.npz
grep_in "weights: trained from" "$TMP/out"
pairs+=(best.onnx best.npz)
for t in $(sql "$TMP/s.db" "SELECT id FROM trial WHERE status = 'done'"); do
    run 0 "$NAS" export --db "$TMP/s.db" --trial "$t" --format onnx -o "t$t.onnx" --logits "t$t.npz"
    pairs+=("t$t.onnx" "t$t.npz")
done

note "checking ${#pairs[@]} files with onnx.checker and OpenCV"
"$PY" "$HERE/check_onnx.py" "${pairs[@]}" || fail "an exported ONNX model differs from nas"
ops=$("$PY" -c "
import onnx, sys
s = set()
for f in sys.argv[1:]:
    s |= {n.op_type for n in onnx.load(f).graph.node}
print(','.join(sorted(s)))" g*.onnx)
expect_eq "ops used" "$ops" "Add,AveragePool,BatchNormalization,Conv,Flatten,Gemm,GlobalAveragePool,Mul,Relu"
echo "PASS"
