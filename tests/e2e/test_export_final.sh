#!/usr/bin/env bash
# tests/e2e/test_export_final.sh - issue 33, item 3: `nas export --best
# --weights final` (and --trial N) exports the weights of the trial's latest
# full `nas train --db` (its checkpoint, with its --channels) as ONNX,
# PyTorch and JSON; the ONNX model's logits (OpenCV) equal nas's --logits,
# and on the first test images they give exactly the test accuracy and
# loss nas train recorded: it is nas train's model. Without a final
# training the message says which commands make one.
. "$(dirname "$0")/export_lib.sh"
need_fmnist
need_py numpy onnx cv2
cd "$TMP" || fail "cd"
DB=$TMP/s.db
tiny_search "$DB" ref 2
run 0 "$NAS" export --db "$DB" --best --format json -o best.json
best=$(sed -n 's/.*"trial_id": \([0-9]*\).*/\1/p' best.json)

note "no final training yet: say how to make one"
run 1 "$NAS" export --db "$DB" --best --weights final --format onnx -o f.onnx
grep_in "trial $best has no final training in $DB (--weights final exports the weights of \`nas train --db\`): make one with \`nas export --db $DB --trial $best --format json -o trial-$best.json && nas train trial-$best.json --db $DB\`" "$TMP/err"
[ -e f.onnx ] && fail "f.onnx written without a final training"

note "a short full training, wider than the search's network (--channels 6)"
run 0 "$NAS" train best.json --epochs 1 --subset 256 --test-subset 64 --batch-size 64 \
    --threads 1 --backend ref --channels 6 --db "$DB"
read -r acc loss ck < <(sql "$DB" "SELECT test_accuracy, test_loss, checkpoint FROM final_training WHERE trial_id = $best" | tr '|' ' ')
[ -f "$ck" ] || fail "no checkpoint $ck"

note "--best --weights final as ONNX, with nas's logits on the same 64 test images"
run 0 "$NAS" export --db "$DB" --best --weights final --format onnx -o f.onnx --logits f.npz \
    --logits-batch 64
grep_in "weights: final training 1 (test accuracy .*) from $ck" "$TMP/out"
"$PY" "$HERE/check_onnx.py" f.onnx f.npz || fail "the ONNX model's logits differ from nas's"
"$PY" - f.onnx f.npz "$acc" "$loss" <<'PYEOF' || fail "the ONNX model is not nas train's model"
import sys, numpy as np, cv2
net = cv2.dnn.readNetFromONNX(sys.argv[1])
ref = np.load(sys.argv[2])
net.setInput(np.ascontiguousarray(ref["images"], dtype=np.float32))
z = net.forward().astype(np.float64)
y = ref["labels"]
acc = float(np.mean(z.argmax(1) == y))
m = z.max(1, keepdims=True)
loss = float(np.mean(np.log(np.exp(z - m).sum(1)) + m[:, 0] - z[np.arange(len(y)), y]))
want_acc, want_loss = float(sys.argv[3]), float(sys.argv[4])
print("-- ONNX on %d test images: accuracy %.6f loss %.6f; nas train recorded %.6f %.6f"
      % (len(y), acc, loss, want_acc, want_loss))
assert abs(acc - want_acc) < 1e-9 and abs(loss - want_loss) < 1e-4
PYEOF

note "the kept proxy weights give other logits (another network: C=4)"
run 0 "$NAS" export --db "$DB" --best --format onnx -o p.onnx --logits p.npz --logits-batch 64
"$PY" -c "
import sys, numpy as np
a, b = np.load('f.npz')['logits'], np.load('p.npz')['logits']
sys.exit(0 if a.shape == b.shape and not np.allclose(a, b) else 1)" ||
    fail "final and proxy logits are the same"

note "--trial N --weights final as JSON (widths, source.weights) and PyTorch"
run 0 "$NAS" export --db "$DB" --trial "$best" --weights final --format json -o f.json
grep -qF '"channels": 6' f.json || { cat f.json; fail "f.json lacks the final training's width"; }
# issue 30: nas train recalibrates BN (10 batches by default) before testing;
# the tested weights are kept beside the checkpoint, which keeps training's
[ -f "$ck.recal.npz" ] || fail "no $ck.recal.npz beside the checkpoint"
grep -qF "\"weights\": \"$ck.recal.npz\"" f.json || { cat f.json; fail "f.json does not name $ck.recal.npz"; }
if "$PY" -c "import torch" 2>/dev/null; then
    run 0 "$NAS" export --db "$DB" --trial "$best" --weights final --format pytorch -o m.py \
        --logits mp.npz --logits-batch 64
    params=$(sed -n 's/^parameters: \([0-9]*\).*/\1/p' "$TMP/out")
    "$PY" "$HERE/check_pytorch.py" m.py mp.npz "$params" || fail "PyTorch module differs"
    cmp <("$PY" -c "import numpy as np; print(np.load('mp.npz')['logits'].tobytes().hex())") \
        <("$PY" -c "import numpy as np; print(np.load('f.npz')['logits'].tobytes().hex())") ||
        fail "--logits of the PyTorch and ONNX exports differ"
fi

note "--weights final with --genotype: a usage error; a deleted checkpoint: said so"
run 2 "$NAS" export --genotype '|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|' \
    --weights final --format onnx -o g.onnx
grep_in "give --best or --trial ID" "$TMP/err"
rm -f "$ck"
run 1 "$NAS" export --db "$DB" --trial "$best" --weights final --format onnx -o g.onnx
grep_in "its checkpoint $ck (the trained weights) cannot be read" "$TMP/err"
echo "PASS"
