#!/usr/bin/env bash
# experiments/example-curves/run.sh - issue 30 item 6: the best-so-far curve
# of the shipped example search (examples/fashion-cells.conf: regularized
# evolution, 30 trials) against random search at equal trials, under the
# old and the new proxy defaults.
#
#   experiments/example-curves/run.sh        # 20 runs of 30 trials: about 45 min idle
#   SEEDS="1 2" experiments/example-curves/run.sh   # fewer seeds
#
# Protocol. Four configurations, each the example as shipped with only
# these keys changed (generated below, written beside each database):
#   old-evolution  data.valid = 2000, proxy.bn_recalibrate = 0: the example
#                  as it was at 0979916, before issue 30
#   new-evolution  data.valid = 5000, proxy.bn_recalibrate = 10: the new
#                  defaults (docs/proxy.md)
#   old-random, new-random: the same with search.strategy = "random"
# and, in all four: seed = S (sampling, mutation, data split, weight init)
# for S in SEEDS (default 1 2 3 4 5), experiment name, data.dir, and
# proxy.keep_weights = false (only the best proxy.keep_top are kept; the
# search does not depend on it). Nothing was tuned, on these seeds or any
# other: the configurations are the example's. The seed also draws the
# validation split, so two seeds score on different validation images.
# The runs go one after the other (each with the example's 2 workers of 1
# thread), seed by seed, in the order old-evolution, new-evolution,
# old-random, new-random, so that a cut run still has balanced seeds.
# A finished database is not run again (delete OUT/db to start over).
#
# Outputs in OUT (default results/ beside this script): db/CONFIG-S.{conf,
# db,log}; trials.csv (config, seed, trial, genotype, val_accuracy, in
# trial-id order = proposal order; failed trials have an empty accuracy);
# then analyse.py writes table.md (best-so-far at trials 10, 20, 30: mean
# over seeds for evolution, median for random) and curves.svg.
set -euo pipefail
study=example-curves
. "$(cd "$(dirname "$0")" && pwd)/../multi-fidelity/study_env.sh"
here=$(cd "$(dirname "$0")" && pwd)
results=${OUT:-$here/results}
export OMP_WAIT_POLICY=passive
seeds=${SEEDS:-1 2 3 4 5}
mkdir -p "$results/db"

conf() { # CONFIG SEED
    local valid recal strategy
    case $1 in
    old-*) valid=2000 recal=0 ;;
    new-*) valid=5000 recal=10 ;;
    esac
    case $1 in
    *-evolution) strategy=evolution ;;
    *-random) strategy=random ;;
    esac
    sed -e "s|^experiment = .*|experiment = \"$1-$2\";|" \
        -e "s|^seed = [0-9]*;|seed = $2;|" \
        -e "s|^  dir = .*|  dir = \"$fmnist\";|" \
        -e "s|^  train_subset = 6000;.*|  train_subset = 6000;\n  valid = $valid;|" \
        -e "s|^proxy: {|proxy: {\n  bn_recalibrate = $recal;|" \
        -e "s|^  keep_weights = true;.*|  keep_weights = false;|" \
        -e "s|^  strategy = \"evolution\";.*|  strategy = \"$strategy\";|" \
        "$src/examples/fashion-cells.conf"
}

configs="old-evolution new-evolution old-random new-random"
for seed in $seeds; do
    for c in $configs; do
        db=$results/db/$c-$seed.db
        if [ -f "$db" ] && [ "$(sqlite3 "$db" "SELECT count(*) FROM trial WHERE status IN ('done','failed')")" -ge 30 ]; then
            continue
        fi
        rm -rf "$db" "$db-wal" "$db-shm" "$db.lock" "$db.weights" "$db.ckpt"
        conf "$c" "$seed" >"$results/db/$c-$seed.conf"
        t0=$(date +%s)
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        "$nas" run "$results/db/$c-$seed.conf" --db "$db" --quiet >"$results/db/$c-$seed.log" 2>&1
        echo "example-curves: $c seed $seed: $(($(date +%s) - t0)) s (load average at start $load)" |
            tee -a "$results/db/runs.log" >&2
    done
done
echo "config,seed,trial,genotype,val_accuracy" >"$results/trials.csv"
for seed in $seeds; do
    for c in $configs; do
        db=$results/db/$c-$seed.db
        [ -f "$db" ] || continue
        sqlite3 -batch -csv "$db" "
            SELECT '$c', $seed, row_number() OVER (ORDER BY t.id), t.genotype, r.val_accuracy
              FROM trial t LEFT JOIN result r ON r.trial_id = t.id
             WHERE t.status IN ('done', 'failed') ORDER BY t.id" >>"$results/trials.csv"
    done
done
/usr/bin/python3 "$here/analyse.py" "$results/trials.csv" "$results"
