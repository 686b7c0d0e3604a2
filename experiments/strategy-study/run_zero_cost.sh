#!/usr/bin/env bash
# experiments/strategy-study/run_zero_cost.sh - issue 31, item 6: the
# strategies with and without a zero-cost warm-up (search.warmup) and,
# for evolution, move proposal, on the NAS-Bench-201 table, reading a
# cached synflow column instead of scoring (the proxy scores are not
# trials: only look-ups are charged).
#
#   experiments/strategy-study/run_zero_cost.sh [STEP...]
#
# The synflow column: `nas space CONF --list --zero-cost synflow` of
# NAS-Bench-201's own network at 3x32x32 (tests/data/conf/nb201_cifar.conf,
# seed 1, evaluator.kind = "table"), about 5.5 min on 2 cores; computed
# once into $ZC (default build/zc/nb201_synflow.csv, outside git) when
# absent. Steps (default: all, in this order):
#   nas-unseen    seeds 1001-1100, budgets 25/50/100, protocol nas
#   nb201-unseen  the same under protocol nb201 (NAO's rows equal nas's:
#                 it never proposes a duplicate or an invalid cell)
#   tune          seeds 1-100, NAO's warm-up N in {100, 500} with K = 10
#                 (GRID=... for others; rows marked tuned). Each NAO
#                 variant costs about 250 s of CPU per 100 seeds.
#   nas-unseen-tuned  the tuning's winner, NAO + warm-up N 500, K 10, on
#                 seeds 1001-1100
# Exit 77 when the NAS-Bench-201 table is not in ../shared.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$src/build}
table=${TABLE:-$src/../shared/data/nb201/nb201_mini_accs.csv}
[ -f "$table" ] || { echo "SKIPPED: no NAS-Bench-201 table at $table"; exit 77; }
cmake --build "$build" -j2 --target strategy_study nas_cli >/dev/null
export OPENBLAS_NUM_THREADS=1
study=$build/experiments/strategy_study
ZC=${ZC:-$build/zc/nb201_synflow.csv}
if [ ! -s "$ZC" ]; then
    mkdir -p "$(dirname "$ZC")"
    { cat "$src/tests/data/conf/nb201_cifar.conf"
      echo "evaluator: { kind = \"table\"; table = \"$table\"; column = \"cifar10-val\"; };"; } \
        >"$(dirname "$ZC")/nb201.conf"
    "$build/nas" space "$(dirname "$ZC")/nb201.conf" --list --zero-cost synflow >"$ZC.part"
    mv "$ZC.part" "$ZC"
fi
out=$here/results
seeds=${SEEDS:-100}
jobs=${JOBS:-2}
WARM=${WARM:-synflow:100:10}
common=(--jobs "$jobs" --quiet --scores "$ZC" --warmup "$WARM" --move-proposal synflow:10
        --table "$table" --budgets 25,50,100)
step() { # dir, then options
    local dir=$out/$1
    shift
    mkdir -p "$dir"
    local t0=$(date +%s)
    "$study" "${common[@]}" --out "$dir" --dump "$dir/runs.csv" "$@" >"$dir/stdout.txt"
    echo "strategy-study: $(basename "$dir"): $(( $(date +%s) - t0 )) s" >&2
}
steps=${*:-nas-unseen nb201-unseen tune}
for s in $steps; do
    case $s in
    nas-unseen)
        step zc-nas-unseen --protocol nas --seeds "$seeds" --seed0 1001 --strategies \
            random,random+w,evolution,evolution+w,evolution+m,evolution:50:25,evolution:50:25+w,evolution:50:25+m,nao,nao+w ;;
    nb201-unseen)
        step zc-nb201-unseen --protocol nb201 --seeds "$seeds" --seed0 1001 --strategies \
            random,random+w,evolution,evolution+w,evolution+m,evolution:50:25,evolution:50:25+w,evolution:50:25+m ;;
    nas-unseen-tuned)
        step zc-nas-unseen-tuned --protocol nas --seeds "$seeds" --seed0 1001 --warmup synflow:500:10 \
            --strategies nao+w:500:10 ;;
    tune)
        grid=${GRID:-nao+w:100:10,nao+w:500:10}
        step zc-tune --protocol nas --seeds "$seeds" --seed0 1 --strategies "$grid" \
            --tuned "$grid" ;;
    *) echo "run_zero_cost.sh: unknown step '$s'" >&2; exit 2 ;;
    esac
done
