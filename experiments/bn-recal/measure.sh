#!/usr/bin/env bash
# experiments/bn-recal/measure.sh [NAS] [TRIALS] - issue 30: the cost and the
# effect of BN recalibration (proxy.bn_recalibrate) on the recipe of
# examples/fashion-cells.conf (6,000 training images, batch 64, one epoch =
# 94 steps, 1 thread). Runs the example search for TRIALS (default 6) trials
# without recalibration, then retrains each trial with `nas train --proxy`
# (the same training, bit for bit on one thread) with --bn-recalibrate 0, 10,
# 20 and 50, and prints per trial and N: the training seconds, the
# recalibration seconds and the validation accuracy (the trial's 2,000
# images). Output: results.txt beside this script (docs/proxy.md quotes it).
set -eu
NAS=${1:-build/nas}
TRIALS=${2:-6}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
TMP=$(mktemp -d /tmp/nas_bnrecal_XXXXXX)
trap 'rm -rf "$TMP"' EXIT
sed -e "s/trials = 30;/trials = $TRIALS;/" -e 's/count = 2;/count = 1;/' \
    "$SRC/examples/fashion-cells.conf" >"$TMP/c.conf"
"$NAS" run "$TMP/c.conf" --db "$TMP/c.db" --quiet >/dev/null
{
    echo "# trial N train_s recal_s recal_share val_accuracy (examples/fashion-cells.conf recipe, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
    for t in $(seq 1 "$TRIALS"); do
        "$NAS" export --db "$TMP/c.db" --trial "$t" --format json -o "$TMP/t$t.json" >/dev/null 2>&1
        for n in 0 10 20 50; do
            "$NAS" train "$TMP/t$t.json" --proxy --checkpoint none --test-subset 500 \
                --bn-recalibrate "$n" >"$TMP/out" 2>/dev/null
            tr=$(sed -n 's/^training: [0-9]* epochs, \([0-9.]*\) s.*/\1/p' "$TMP/out")
            rs=$(sed -n 's/^BN recalibration: .*, \([0-9.]*\) s$/\1/p' "$TMP/out")
            va=$(sed -n 's/^val_accuracy \([0-9.]*\).*/\1/p' "$TMP/out")
            rs=${rs:-0}
            echo "$t $n $tr $rs $(awk -v a="$rs" -v b="$tr" 'BEGIN { printf "%.3f", a / b }') $va"
        done
    done
} | tee "$HERE/results.txt"
