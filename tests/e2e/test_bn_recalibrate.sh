#!/usr/bin/env bash
# tests/e2e/test_bn_recalibrate.sh - issue 30, items 3 and 4: BN
# recalibration (proxy.bn_recalibrate) on a 24-step proxy (the review's
# finding: train_subset = 1500, batch 64, one epoch), on the MobileNet-style
# chain example, whose BN running averages lag the weights after so few
# steps:
#   - without recalibration every trial scores near chance in eval mode and
#     one is flagged diverged (the reason says that recalibration is off);
#   - with 20 batches the same trials (same seed: same genotypes and
#     training) score well above chance and none is flagged;
#   - ARCH.json carries recipe.bn_recalibrate, and `nas train --proxy`
#     reproduces the trial's val_accuracy from it;
#   - the exported PyTorch module's logits (kept weights: recalibrated
#     statistics) equal nas's;
#   - in a multi-fidelity search every rung is evaluated after
#     recalibration, but the training a promotion continues is untouched:
#     the rung losses equal those without recalibration.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
mk() { # NAME BATCHES
    sed -e 's/train_subset = 6000;/train_subset = 1500; valid = 2000;/' -e 's/trials = 24;/trials = 4;/' \
        -e "s/^experiment = .*/experiment = \"$1\";/" \
        -e "s|dir = \"/usr/share/datasets/fashion-mnist\";|dir = \"$FMNIST\";|" \
        -e "s/backend = \"cpu\";/backend = \"cpu\"; threads = 2; bn_recalibrate = $2;/" \
        -e 's/threads = 1;//' -e 's/count = 2;/count = 1;/' \
        "$SRC/examples/fashion-mobile.conf" >"$TMP/$1.conf"
}
accs() { sql "$1" "SELECT group_concat(printf('%.4f', r.val_accuracy), ' ') FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY t.id"; }

note "without recalibration: near chance, one flagged diverged"
mk stale 0
run 0 "$NAS" run stale.conf --db "$TMP/stale.db" --quiet
note "val_accuracy: $(accs "$TMP/stale.db")"
expect_eq "trials above 0.25" "$(sql "$TMP/stale.db" "SELECT count(*) FROM result WHERE val_accuracy > 0.25")" 0
expect_eq "diverged" "$(sql "$TMP/stale.db" "SELECT count(*) FROM trial WHERE flag = 'diverged'")" 1
sql "$TMP/stale.db" "SELECT error FROM trial WHERE flag = 'diverged'" >"$TMP/why"
grep_in "without BN recalibration: proxy.bn_recalibrate = N tells stale BN statistics after a short proxy from divergence" "$TMP/why"

note "with 20 batches of recalibration: the same trials well above chance"
mk fresh 20
run 0 "$NAS" run fresh.conf --db "$TMP/fresh.db" --quiet
note "val_accuracy: $(accs "$TMP/fresh.db")"
expect_eq "same genotypes" "$(sql "$TMP/fresh.db" "SELECT group_concat(genotype) FROM trial ORDER BY id")" \
    "$(sql "$TMP/stale.db" "SELECT group_concat(genotype) FROM trial ORDER BY id")"
expect_eq "same training" "$(sql "$TMP/fresh.db" "SELECT group_concat(printf('%.6f', train_loss)) FROM result ORDER BY trial_id")" \
    "$(sql "$TMP/stale.db" "SELECT group_concat(printf('%.6f', train_loss)) FROM result ORDER BY trial_id")"
expect_eq "trials at or below 0.45" "$(sql "$TMP/fresh.db" "SELECT count(*) FROM result WHERE val_accuracy <= 0.45")" 0
expect_eq "diverged" "$(sql "$TMP/fresh.db" "SELECT count(*) FROM trial WHERE flag IS NOT NULL")" 0

note "ARCH.json carries it; nas train --proxy reproduces the trial"
run 0 "$NAS" export --db "$TMP/fresh.db" --best --format json -o "$TMP/best.json"
grep_in '"bn_recalibrate": 20' "$TMP/best.json"
run 0 "$NAS" train "$TMP/best.json" --proxy --checkpoint none --test-subset 500
grep_in "BN recalibration: 20 batches of 64 training images" "$TMP/out"
diff=$(sed -n 's/.*recorded [0-9.]*, difference \([-0-9.e]*\)).*/\1/p' "$TMP/out")
[ -n "$diff" ] || { cat "$TMP/out"; fail "no val_accuracy difference line"; }
awk -v d="$diff" 'BEGIN { exit !(d < 0.002 && d > -0.002) }' || fail "nas train --proxy: val_accuracy differs by $diff"
# fewer training images than 20 batches: all of them, and it says so (it said 20 batches)
run 0 "$NAS" train "$TMP/best.json" --epochs 1 --subset 200 --batch-size 64 --bn-recalibrate 20 \
    --checkpoint none --test-subset 100
grep_in "BN recalibration: 4 batches of 64 training images (all there are)" "$TMP/out"
note "without it (--bn-recalibrate 0) the same training scores lower"
run 0 "$NAS" train "$TMP/best.json" --proxy --checkpoint none --test-subset 500 --bn-recalibrate 0
grep -q "BN recalibration" "$TMP/out" && fail "--bn-recalibrate 0 recalibrated"
low=$(sed -n 's/^val_accuracy \([0-9.]*\).*/\1/p' "$TMP/out")
awk -v v="$low" 'BEGIN { exit !(v < 0.3) }' || fail "--bn-recalibrate 0: val_accuracy $low, expected near chance"

note "the PyTorch export carries the recalibrated statistics"
if /usr/bin/python3 -c 'import numpy, torch' 2>/dev/null; then
    run 0 "$NAS" export --db "$TMP/fresh.db" --best --format pytorch -o "$TMP/best.py" --logits "$TMP/best.logits"
    params=$(sed -n 's/^parameters: \([0-9]*\).*/\1/p' "$TMP/out")
    run 0 /usr/bin/python3 "$SRC/tests/e2e/check_pytorch.py" "$TMP/best.py" "$TMP/best.logits" "$params"
    cat "$TMP/out"
else
    note "skipped: /usr/bin/python3 lacks numpy or torch"
fi

note "multi-fidelity: rungs continue the same training"
fid() { # NAME BATCHES
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; bn_recalibrate = $2; };
search: { strategy = "evolution"; trials = 6; population = 3; sample_size = 2;
  fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 2; latency_warmup = 1; };
workers: { count = 1; };
CONF
    run 0 "$NAS" run "$1.conf" --db "$TMP/$1.db" --quiet
}
fid fid0 0
fid fid2 2
# Recalibration changes what a rung measures, not what it trains: the
# rung-1 trainings of the first (random) trials have the same losses, and
# their accuracies differ. Which trials are promoted follows the
# accuracies, so it may differ too; a trial promoted to rung 3 in both
# continued the same training (the same loss).
rung1_losses() { sql "$TMP/$1.db" "SELECT group_concat(printf('%d:%.6f', trial_id, loss), ' ') FROM (SELECT * FROM rung WHERE trial_id <= 3 AND fidelity = 1 ORDER BY trial_id)"; }
rung1_acc() { sql "$TMP/$1.db" "SELECT group_concat(printf('%d:%.4f', trial_id, val_accuracy), ' ') FROM (SELECT * FROM rung WHERE trial_id <= 3 AND fidelity = 1 ORDER BY trial_id)"; }
expect_eq "rung-1 losses of the first (random) trials" "$(rung1_losses fid2)" "$(rung1_losses fid0)"
[ "$(rung1_acc fid2)" != "$(rung1_acc fid0)" ] || fail "recalibration changed no rung-1 accuracy: $(rung1_acc fid2)"
top2=$(sql "$TMP/fid2.db" "SELECT group_concat(trial_id, ' ') FROM rung WHERE fidelity = 3")
[ -n "$top2" ] || fail "no trial reached rung 3 with recalibration"
for t in $top2; do
    l0=$(sql "$TMP/fid0.db" "SELECT printf('%.6f', loss) FROM rung WHERE trial_id = $t AND fidelity = 3")
    [ -z "$l0" ] || expect_eq "trial $t's rung-3 loss" \
        "$(sql "$TMP/fid2.db" "SELECT printf('%.6f', loss) FROM rung WHERE trial_id = $t AND fidelity = 3")" "$l0"
done
echo "ok"
