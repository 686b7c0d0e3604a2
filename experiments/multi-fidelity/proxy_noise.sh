#!/usr/bin/env bash
# experiments/multi-fidelity/proxy_noise.sh - how much of a proxy trial's
# accuracy is its architecture and how much its training seed (issue 17).
#
#   experiments/multi-fidelity/proxy_noise.sh            # 10 genotypes x 3 seeds: about 6 min
#   GENOTYPES=6 SEEDS=2 experiments/multi-fidelity/proxy_noise.sh
#   BN_RECALIBRATE=0 experiments/multi-fidelity/proxy_noise.sh  # as before issue 30
#
# Trains GENOTYPES random cells of the study's space (`nas space --samples
# GENOTYPES --seed 1`) with training seeds 1..SEEDS each, by `nas train
# --genotype` with the study's proxy recipe (run.sh: 8 channels, one cell per
# stage, 2,000 training images, MAX = 9 epochs, batch 64, lr 0.05, cosine,
# no augmentation, one thread per process, two processes), and measures the
# test accuracy on 5,000 test images (so evaluation noise is small next to
# run.sh's 1,000 validation images), after BN recalibration over
# BN_RECALIBRATE batches (issue 30, `nas train --bn-recalibrate`; default
# 10, as nas's proxy.bn_recalibrate; 0: none, as before issue 30). Writes
# results/noise-recalN-genotypes.txt, results/noise-recalN.txt (genotype
# index, seed, accuracy) and prints, also into
# results/noise-recalN-summary.txt (for N = 0: noise-genotypes.txt,
# noise.txt and noise-summary.txt, the run of issue 17), each genotype's
# accuracies, then
#   within_sd=W between_sd=B seed_spearman=R
# W: the mean over genotypes of the standard deviation over seeds; B: the
# standard deviation of the genotypes' mean accuracies; R: the mean over
# pairs of seeds of Spearman's rank correlation of the genotypes'
# accuracies. A search can only rank architectures as well as R allows, at
# any fidelity (docs/multi-fidelity.md, "The study").
set -euo pipefail
study=proxy_noise
. "$(dirname "$0")/study_env.sh"
ngeno=${GENOTYPES:-10}
nseed=${SEEDS:-3}
subset=${TRAIN_SUBSET:-2000}
epochs=${MAX:-9}
recal=${BN_RECALIBRATE:-10}
tag=$([ "$recal" = 0 ] || echo "-recal$recal")
out=$results
mkdir -p "$out"
export OMP_WAIT_POLICY=passive

"$nas" space "$src/examples/fashion-cells.conf" --samples "$ngeno" --seed 1 --enumerate 0 |
    awk '/^ +[0-9.]+ +[0-9]+ +\|/ {print $3}' >"$out/noise$tag-genotypes.txt"
[ "$(wc -l <"$out/noise$tag-genotypes.txt")" -eq "$ngeno" ] || { echo "proxy_noise: could not sample $ngeno genotypes" >&2; exit 1; }

train() { # INDEX SEED GENOTYPE -> "INDEX SEED ACCURACY"
    local acc
    acc=$("$nas" train --genotype "$3" --subset "$subset" --epochs "$epochs" --batch-size 64 \
        --lr 0.05 --augment none --channels 8 --cells 1 --threads 1 --seed "$2" --bn-recalibrate "$recal" \
        --test-subset 5000 --progress 0 2>&1 | awk '/^test accuracy/ {print $3}')
    [ -n "$acc" ] || { echo "proxy_noise: training genotype $1 with seed $2 failed" >&2; return 1; }
    echo "$1 $2 $acc"
}
export -f train
export nas subset epochs recal
awk -v s="$nseed" '{for (k = 1; k <= s; k++) print NR, k, $0}' "$out/noise$tag-genotypes.txt" |
    xargs -P2 -L1 bash -c 'train "$0" "$1" "$2"' >"$out/noise$tag.txt"
/usr/bin/python3 - "$out/noise$tag.txt" "$here" <<'PY' | tee "$out/noise$tag-summary.txt"
import itertools, statistics as st, sys
acc = {}
for line in open(sys.argv[1]):
    g, s, a = line.split()
    acc.setdefault(int(g), {})[int(s)] = float(a)
sys.path.insert(0, sys.argv[2])
from rank_corr import spearman  # noqa: E402
seeds = sorted({s for v in acc.values() for s in v})
for g in sorted(acc):
    print(f"genotype {g}: " + " ".join(f"{acc[g][s]:.4f}" for s in seeds))
within = st.mean(st.stdev(v.values()) for v in acc.values())
between = st.stdev(st.mean(v.values()) for v in acc.values())
rho = st.mean(spearman([acc[g][a] for g in sorted(acc)], [acc[g][b] for g in sorted(acc)])
              for a, b in itertools.combinations(seeds, 2))
print(f"within_sd={within:.4f} between_sd={between:.4f} seed_spearman={rho:.2f}")
PY
