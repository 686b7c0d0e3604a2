#!/usr/bin/env bash
# tests/e2e/test_chain_arch.sh - a chain-space trial leaves the tool the
# way a cell trial does (issue 15):
#  - `nas export` of a stored chain trial as json, onnx and pytorch, with
#    its kept (trained) weights and with --weights init: the ARCH.json is
#    version 2 and carries the space (space.conf), decisions and layers;
#    the PyTorch module loads its .npz strictly, has nas's parameter count
#    and nas's logits (tests/e2e/check_pytorch.py); the ONNX model passes
#    onnx.checker and gives nas's logits: through OpenCV dnn without SE
#    blocks (tests/e2e/check_onnx.py), through a numpy interpreter of the
#    ONNX operators with them (tests/e2e/onnx_numpy.py: OpenCV 4.6
#    computes SE wrongly);
#  - `nas train ARCH.json --proxy` redoes the trial: the same validation
#    accuracy;
#  - `nas train ARCH.json` killed with kill -9 after an epoch's checkpoint
#    resumes from it and ends exactly where an uninterrupted run ends; the
#    checkpoint is refused for a chain network that differs only in an
#    activation (its fingerprint holds a CRC of the layer list).
# Each Python check skips visibly when /usr/bin/python3 lacks its modules.
. "$(dirname "$0")/export_lib.sh"
. "$(dirname "$0")/chain_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
chain_conf "$TMP/c.conf" chain-arch 5 512 mb6_k5 0.2 0.05 4 \
    "latency_runs = 1; latency_warmup = 0;" "count = 0;" "keep_weights = true;"
DB=$TMP/c.db
run 0 "$NAS" run "$TMP/c.conf" --db "$DB" --quiet
expect_eq "kept weights" "$(sql "$DB" "SELECT count(*) FROM trial_weights")" 4

note "export --best as JSON: version 2, the space, decisions, layers"
best=$(sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
run 0 "$NAS" export --db "$DB" --best --format json -o best.json
grep_in "best trial of 'chain-arch' by val_accuracy (max): $best" "$TMP/err"
geno=$(sql "$DB" "SELECT genotype FROM trial WHERE id = $best")
for key in '"version": 2' '"type": "chain"' '"conf": "space: {' "\"genotype\": \"$geno\"" \
    '"decisions": {' '"s1.se": "se_' '"name": "stem.conv"' '"name": "head.linear"' \
    "\"trial_id\": $best" '"train_subset": 512'; do
    grep -qF "$key" best.json || { cat best.json; fail "best.json lacks $key"; }
done

note "every trial as onnx and pytorch, trained and init weights"
params_of() { sed -n 's/^parameters: \([0-9]*\).*/\1/p' "$TMP/out"; }
triples=() pairs=() se_models=()
for t in $(sql "$DB" "SELECT id FROM trial WHERE status = 'done' ORDER BY id"); do
    g=$(sql "$DB" "SELECT genotype FROM trial WHERE id = $t")
    stored=$(sql "$DB" "SELECT params FROM result WHERE trial_id = $t")
    run 0 "$NAS" export --db "$DB" --trial "$t" --format json -o "t$t.json"
    for w in trained init; do
        run 0 "$NAS" export --db "$DB" --trial "$t" --weights $w --format pytorch -o "t$t$w.py" \
            --logits "t$t$w.logits" --logits-batch 8
        grep_in "weights: $w" "$TMP/out"
        expect_eq "parameters of trial $t" "$(params_of)" "$stored"
        triples+=("t$t$w.py" "t$t$w.logits" "$stored")
        run 0 "$NAS" export --db "$DB" --trial "$t" --weights $w --format onnx -o "t$t$w.onnx" \
            --logits "t$t$w.onnx.npz" --logits-batch 8 --backend cpu
        # SE by the network's layers, not the genotype string (a stage with
        # se = true has no se_on token)
        if grep -q '"kind": *"se"' "t$t.json"; then
            se_models+=("t$t$w.onnx" "t$t$w.onnx.npz")
        else
            pairs+=("t$t$w.onnx" "t$t$w.onnx.npz")
        fi
    done
done
note "checking $((${#triples[@]} / 3)) PyTorch modules"
"$PY" "$HERE/check_pytorch.py" "${triples[@]}"
rc=$?
[ $rc = 0 ] || [ $rc = 77 ] || fail "an exported PyTorch module differs from nas"
[ $rc = 77 ] && note "SKIPPED the PyTorch check: $PY lacks torch or numpy"
note "checking $((${#pairs[@]} / 2)) ONNX files without SE with onnx.checker and OpenCV"
if [ ${#pairs[@]} -gt 0 ]; then
    "$PY" "$HERE/check_onnx.py" "${pairs[@]}"
    rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || fail "an exported ONNX model differs from nas"
    [ $rc = 77 ] && note "SKIPPED the OpenCV check: $PY lacks onnx, cv2 or numpy"
fi
if [ ${#se_models[@]} -gt 0 ]; then
    note "$((${#se_models[@]} / 2)) ONNX files with SE: onnx.checker and a numpy ONNX interpreter (OpenCV 4.6 computes SE wrongly)"
    models=()
    for ((i = 0; i < ${#se_models[@]}; i += 2)); do models+=("${se_models[i]}"); done
    if "$PY" -c "import onnx" 2>/dev/null; then
        "$PY" -c "
import onnx, sys
for p in sys.argv[1:]:
    onnx.checker.check_model(onnx.load(p), full_check=True)" "${models[@]}" ||
            fail "onnx.checker refuses an SE model"
    fi
    "$PY" "$HERE/onnx_numpy.py" "${se_models[@]}"
    rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || fail "an exported ONNX model with SE differs from nas"
    [ $rc = 77 ] && note "SKIPPED the numpy ONNX check: $PY lacks onnx or numpy"
fi

note "nas train --proxy redoes the trial"
run 0 "$NAS" train best.json --proxy --test-subset 100 --checkpoint none
want=$(sql "$DB" "SELECT printf('%.6f', val_accuracy) FROM result WHERE trial_id = $best")
grep_in "proxy training, chain network" "$TMP/out"
grep_in "val_accuracy $want  (trial $best recorded $want, difference 0)" "$TMP/out"
run 2 "$NAS" train best.json --channels 32
grep_in "chain network: --channels and --cells" "$TMP/err"

note "nas train: kill -9 after a checkpoint, rerun, same result as an uninterrupted run"
opts=(--subset 4096 --test-subset 500 --epochs 3 --batch-size 64 --threads 1 --backend cpu)
ck=best.full-e3-s5-crop4+flip-b64-cpu-n4096.ckpt.npz
"$NAS" train best.json "${opts[@]}" >"$TMP/t1.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 1200); do
    [ -f "$ck" ] && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.05
done
kill -9 "$RUN_PID" 2>/dev/null
wait "$RUN_PID" 2>/dev/null
RUN_PID=
[ -f "$ck" ] || { cat "$TMP/t1.out"; fail "no checkpoint $ck"; }
grep -q "^test accuracy" "$TMP/t1.out" && fail "training finished before the kill"
run 0 "$NAS" train best.json "${opts[@]}"
grep_in "^resumed from $ck after epoch [12] of 3" "$TMP/out"
resumed=$(grep "^test accuracy" "$TMP/out")
run 0 "$NAS" train best.json "${opts[@]}" --checkpoint none
straight=$(grep "^test accuracy" "$TMP/out")
note "resumed: $resumed; uninterrupted: $straight"
expect_eq "resumed vs uninterrupted" "$resumed" "$straight"

note "a checkpoint of another chain network (same genotype tokens, other head activation) is refused"
sed 's/head = { channels = 32; activation = \\"hswish\\"/head = { channels = 32; activation = \\"relu\\"/' \
    best.json >other.json
grep -qF 'activation = \"relu\"; pool' other.json || fail "could not edit other.json"
run 1 "$NAS" train other.json "${opts[@]}" --checkpoint "$ck"
grep_in "belongs to another run" "$TMP/err"
grep_in "space: crc32:" "$TMP/err"
echo "PASS"
