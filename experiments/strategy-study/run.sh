#!/usr/bin/env bash
# experiments/strategy-study/run.sh - build the strategy study and run it.
#
#   experiments/strategy-study/run.sh                 # the default study
#   experiments/strategy-study/run.sh --seeds 10      # any strategy_study option
#
# Builds strategy_study in $BUILD_DIR (default <repo>/build-study), runs it
# with one OpenBLAS thread per process (seeds run in parallel processes,
# --jobs, default 2) and writes table.md, summary.csv, best_so_far.svg,
# runs.csv (one row per run and budget) and summary.txt into
# experiments/strategy-study/results/. Exit 77 when the NAS-Bench-201 table
# is not in ../shared.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$src/build-study}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target strategy_study >/dev/null
export OPENBLAS_NUM_THREADS=1
out=$here/results
mkdir -p "$out"
start=$(date +%s)
set +e
"$build/experiments/strategy_study" --out "$out" --dump "$out/runs.csv" "$@" >"$out/summary.txt"
rc=$?
set -e
cat "$out/summary.txt"
[ "$rc" -eq 0 ] && echo "strategy-study: $(( $(date +%s) - start )) s; results in $out" >&2
exit "$rc"
