#!/usr/bin/env bash
# scripts/test-sanitize.sh [BUILD_DIR] [CTEST_REGEX] - build nas with
# AddressSanitizer + UndefinedBehaviorSanitizer (-DNAS_SANITIZE=ON) and run
# the unit and e2e tests under it (CTEST_REGEX narrows them, e.g.
# 'pool|search|faults|kill|readers|mpi'). Forked workers and MPI ranks run
# sanitized too. LeakSanitizer stays on: a leak fails the test.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build-sanitize}
R=${2:-}
cmake -S "$SRC" -B "$B" -DNAS_WERROR=ON -DNAS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
cmake --build "$B" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$B"
if [ -n "$R" ]; then
    ctest -L 'unit|e2e' -R "$R" --output-on-failure
else
    ctest -L 'unit|e2e' --output-on-failure
fi
