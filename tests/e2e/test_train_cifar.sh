#!/usr/bin/env bash
# tests/e2e/test_train_cifar.sh - issue 16: nas train on data other than
# Fashion-MNIST. A tiny synthetic CIFAR-10 (data_lib.sh cifar_synth) ->
# nas run (2 cell trials, data.augment, data.valid as a fraction) ->
# nas export --best --format json (the JSON carries format, files, the
# fraction, the augmentation, shape and normalisation) -> nas train of the
# JSON a few steps on the same CIFAR reader (3x32x32, 10 classes, its own
# test batch), and nas train --proxy reproduces the trial's validation
# accuracy exactly (ref backend: the same split, normalisation,
# augmentation and batches as the search).
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
mkdir cifar
cifar_synth "$TMP/cifar" 40 30
data_conf c.conf cifar 'format = "cifar"; dir = "cifar"; train_subset = 96; valid = 0.2; augment = "crop4,flip,cutout8";'
sed -i -e 's/trials = 3/trials = 2/' c.conf
run 0 "$NAS" run c.conf --db "$TMP/c.db"
expect_eq "done trials" "$(sql "$TMP/c.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 2
run 0 "$NAS" export --db "$TMP/c.db" --best --format json -o best.json
"$PY" - best.json "$TMP/cifar" <<'PYEOF' || fail "JSON export"
import json, os, sys
a = json.load(open(sys.argv[1]))
pd = a["proxy_data"]
assert a["input"]["shape"] == [3, 32, 32] and a["classes"] == 10, a
assert pd["format"] == "cifar" and os.path.samefile(pd["dir"], sys.argv[2]), pd
assert pd["valid"] == 0.2 and pd["train_subset"] == 96, pd
assert a["recipe"]["augment"] == "crop4,flip,cutout8", a["recipe"]
PYEOF
note "full training: 2 steps of 64 on the same CIFAR reader"
run 0 "$NAS" train best.json --epochs 1 --subset 128 --batch-size 64 --backend ref --threads 1 \
    --checkpoint none --augment crop,flip
grep_in "full training, C=4 N=1, ref backend" "$TMP/out"
grep_in "128 train images, batch 64" "$TMP/out"
grep_in "augment crop4,flip" "$TMP/out"
grep_in "waiting for data" "$TMP/out"
grep_in "(30 test images)" "$TMP/out"
grep -q "loading Fashion-MNIST" "$TMP/err" && fail "read Fashion-MNIST instead of the CIFAR files"
note "$(grep 'test accuracy' "$TMP/out")"
note "--proxy: the trial again, its val_accuracy to the digit"
best=$(sql "$TMP/c.db" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
want=$(sql "$TMP/c.db" "SELECT printf('%.6f', val_accuracy) FROM result WHERE trial_id = $best")
run 0 "$NAS" train best.json --proxy --checkpoint none
grep_in "augment crop4,flip,cutout8" "$TMP/out"
grep_in "96 train images" "$TMP/out"
grep_in "val_accuracy $want  (trial $best recorded $want, difference 0)" "$TMP/out"
note "a JSON whose data files are gone: exit 1 naming the file"
mv cifar cifar.gone
run 1 "$NAS" train best.json --epochs 1 --checkpoint none
grep_in "cifar" "$TMP/err"
echo "PASS"
