#!/usr/bin/env bash
# experiments/zero-cost/fashion.sh - issue 31: how well each zero-cost proxy
# ranks Fashion-MNIST cells that were trained, and what it costs against
# training them.
#
#   experiments/zero-cost/fashion.sh          # about 1 min of one core (PROXIES=... for fewer)
#
# Protocol. The cells are every trial of the new-random runs of
# experiments/example-curves (examples/fashion-cells.conf as shipped with
# the new defaults, data.valid = 5000, proxy.bn_recalibrate = 10, random
# search, seeds 1-3, 30 trials each: 90 trials, 90 distinct genotypes),
# read from its results/trials.csv (not trained again). Genotypes
# with one canonical key compute one function: they are merged into one
# cell with the mean of their trained val_accuracy (87 cells). Each cell is
# scored by each proxy with `evaluator.kind = "zero-cost"` on the network
# those runs trained (results/db/new-random-1.conf: cell space, channels
# 16, 3 stages of 1 cell, 1x28x28, 10 classes, seed 1 for the weights and
# the minibatch of proxy.batch_size = 64 training images), the cells given as search.enqueue
# (at most 32 per experiment, so 3 experiments of 29 per proxy), one
# worker of one thread. Nothing was tuned. A proxy's seconds per cell is
# the mean of its trials' finished_at - started_at; training's is the
# same for the first 3 cells trained again here as the runs trained them
# (the example-curves logs' worker-seconds per trial are printed beside).
#
# Outputs in OUT (default results/ beside this script): fashion-cells.csv
# (genotype, key, trials merged, mean val_accuracy), fashion-scores.csv
# (one column per proxy), fashion.md (the table), fashion.db (the runs; not committed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
nas=${NAS:-$src/build/nas}
out=${OUT:-$here/results}
curves=$src/experiments/example-curves/results
conf=$curves/db/new-random-1.conf
proxies=${PROXIES:-synflow naswot snip grad_norm jacob_cov params macs}
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$nas" space "$conf" --list >"$work/list.csv"
/usr/bin/python3 "$here/fashion.py" cells "$curves/trials.csv" "$work/list.csv" >"$out/fashion-cells.csv"
db=$out/fashion.db
rm -rf "$db" "$db.weights"
for p in $proxies; do
    /usr/bin/python3 "$here/fashion.py" chunks "$out/fashion-cells.csv" 29 "$work/chunk"
    for c in "$work"/chunk.*; do
        i=${c##*.}
        n=$(wc -l <"$c")
        {
            sed -e "s|^experiment = .*|experiment = \"fashion-$p-$i\";|" \
                -e "s|^  trials = 30;.*|  trials = $n;|" \
                -e "s|^  kind = \"train\";|  kind = \"zero-cost\";\n  proxy = \"$p\";|" \
                -e "s|^  count = 2;.*|  count = 1;|" \
                -e "s#^search: {#search: {\n  enqueue = [$(sed 's/.*/"&"/' "$c" | paste -sd,)];#" \
                "$conf"
        } >"$work/run.conf"
        "$nas" run "$work/run.conf" --db "$db" --quiet >/dev/null 2>"$work/run.err" || {
            cat "$work/run.err" >&2
            true
        }
    done
done
# The cost of training, on the same clock: the first 3 cells trained as the
# runs trained them (evaluator.kind = "train"), one worker of one thread.
head -n 3 "$work/chunk.0" >"$work/chunk.train"
sed -e "s|^experiment = .*|experiment = \"fashion-train\";|" \
    -e "s|^  trials = 30;.*|  trials = 3;|" \
    -e "s|^  count = 2;.*|  count = 1;|" \
    -e "s#^search: {#search: {\n  enqueue = [$(sed 's/.*/"&"/' "$work/chunk.train" | paste -sd,)];#" \
    "$conf" >"$work/run.conf"
"$nas" run "$work/run.conf" --db "$db" --quiet >/dev/null
# shellcheck disable=SC2086 # one argument per proxy
/usr/bin/python3 "$here/fashion.py" table "$out/fashion-cells.csv" "$db" "$curves/db" \
    "$out/fashion-scores.csv" $proxies >"$out/fashion.md"
cat "$out/fashion.md"
