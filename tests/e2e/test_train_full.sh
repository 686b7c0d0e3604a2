#!/usr/bin/env bash
# tests/e2e/test_train_full.sh - issue 22, point 6: `nas train` defaults.
#  - ARCH.json without --proxy trains with the documented full recipe
#    (lr 0.1, batch 128, cosine, crop+flip, every core), not the proxy's;
#  - --channels, --cells, --lr (and the other recipe options) are accepted
#    with ARCH.json and with --genotype alike, and reach the run;
#  - progress within an epoch (epoch, step, loss, ETA) is printed when
#    stderr is not a terminal too (--progress 0: every step);
#  - the "resumed from" line is printed when resuming starts, before the
#    epochs that follow.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
G='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
run 0 "$NAS" export --genotype "$G" --channels 4 --format json -o a.json
small=(--subset 256 --test-subset 100 --epochs 1 --checkpoint none)

note "ARCH.json: the full recipe by default, on every core"
run 0 "$NAS" train a.json "${small[@]}" --progress 0
ncpu=$(getconf _NPROCESSORS_ONLN)
grep_in "full training, C=4 N=1, cpu backend, fp32, $ncpu threads, 256 train images, batch 128, lr 0.1, cosine schedule, 1 epochs, seed 0, augment crop4,flip" "$TMP/out"
note "progress within the epoch, without a terminal"
grep_in "epoch 1/1  step 1/2  loss [0-9.]*  ETA epoch" "$TMP/err"
grep_in "epoch 1/1  step 2/2  loss" "$TMP/err"

note "--channels, --cells, --lr, --momentum, --weight-decay, --schedule with ARCH.json"
run 0 "$NAS" train a.json "${small[@]}" --channels 6 --cells 2 --lr 0.02 --momentum 0.5 \
    --weight-decay 0 --schedule constant --augment none --threads 1 --batch-size 64
grep_in "full training, C=6 N=2, cpu backend, fp32, 1 threads, 256 train images, batch 64, lr 0.02, constant schedule, 1 epochs, seed 0, augment none" "$TMP/out"
p6=$(sed -n 's/^params \([0-9]*\),.*/\1/p' "$TMP/out")
run 0 "$NAS" export --genotype "$G" --channels 6 --cells 2 --format json -o b.json
expect_eq "params of C=6 N=2" "$p6" "$(sed -n 's/.*"params": \([0-9]*\).*/\1/p' b.json)"

note "the same options with --genotype"
run 0 "$NAS" train --genotype "$G" "${small[@]}" --channels 6 --cells 2 --lr 0.02 --threads 1 \
    --batch-size 64 --augment none --db "$TMP/g.db"
grep_in "full training, C=6 N=2, cpu backend, fp32, 1 threads, 256 train images, batch 64, lr 0.02, cosine schedule" "$TMP/out"
expect_eq "params, --genotype = ARCH.json" "$(sed -n 's/^params \([0-9]*\),.*/\1/p' "$TMP/out")" "$p6"
grep_in "^test accuracy" "$TMP/out"
expect_eq "final_training row of a --genotype run" \
    "$(sql "$TMP/g.db" "SELECT count(*) FROM final_training WHERE trial_id IS NULL AND recipe LIKE '%lr=0.02 %channels=6 cells=2%'")" 1
run 2 "$NAS" train --genotype "$G" --proxy
grep_in "needs ARCH.json" "$TMP/err"
run 2 "$NAS" train a.json --lr -1
grep_in "--lr needs a positive number" "$TMP/err"

note "resume: 'resumed from' comes before the remaining epochs"
opts=(--subset 128 --test-subset 64 --epochs 2 --batch-size 64 --threads 1 --augment none)
run 130 "$NAS" train a.json "${opts[@]}" --stop-after 1
ck=a.full-e2-s0-b64-n128.ckpt.npz
[ -f "$ck" ] || fail "no checkpoint $ck"
run 0 "$NAS" train a.json "${opts[@]}"
r=$(grep -n "^resumed from $ck after epoch 1 of 2" "$TMP/out" | cut -d: -f1)
e=$(grep -n "^epoch 2/2" "$TMP/out" | cut -d: -f1)
[ -n "$r" ] && [ -n "$e" ] || { cat "$TMP/out"; fail "no resume line or no epoch 2"; }
[ "$r" -lt "$e" ] || { cat "$TMP/out"; fail "the resume line comes after training"; }
echo "PASS"
