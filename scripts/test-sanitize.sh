#!/usr/bin/env bash
# scripts/test-sanitize.sh [BUILD_DIR] [CTEST_REGEX] - build nas with
# AddressSanitizer + UndefinedBehaviorSanitizer (-DNAS_SANITIZE=ON, Debug,
# in BUILD_DIR, default build-sanitize/) and run the unit, conformance and
# e2e tests under it. Forked workers and MPI ranks run sanitized too;
# LeakSanitizer stays on (a leak fails the test); UBSan halts on the first
# finding. Two tests run at once (ctest -j2), like scripts/test.sh.
#
# Which tests:
#   * CTEST_REGEX given: the tests it matches (e.g.
#     'pool|search|faults|kill|readers|mpi|retry');
#   * CI=true (the CI job, .ci/run): every unit, conformance and e2e test
#     except the five slowest e2e ones, which train on Fashion-MNIST or
#     compare with PyTorch/ONNX and take 1.5-5 minutes each when sanitized:
#       test_export_json test_report test_export_pytorch test_export_onnx
#       test_strategy_study
#     (the rest takes about 7 minutes on 2 cores, build included; these five
#     add about 7 more);
#   * otherwise, or with NAS_SANITIZE_ALL=1: every unit, conformance and
#     e2e test (about 13 minutes on 2 cores).
# NAS_SANITIZE_LABELS overrides the label regex (default unit|conformance|e2e).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build-sanitize}
R=${2:-}
L=${NAS_SANITIZE_LABELS:-unit|conformance|e2e}
SLOW='^(test_export_json|test_report|test_export_pytorch|test_export_onnx|test_strategy_study)$'
cmake -S "$SRC" -B "$B" -DNAS_WERROR=ON -DNAS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$B" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cd "$B"
args=(-L "$L" --output-on-failure -j2)
if [ -n "$R" ]; then
    args+=(-R "$R")
elif [ "${CI:-}" = true ] && [ "${NAS_SANITIZE_ALL:-}" != 1 ]; then
    echo "test-sanitize: CI job: skipping the slowest e2e tests ($SLOW); NAS_SANITIZE_ALL=1 runs them"
    args+=(-E "$SLOW")
fi
ctest "${args[@]}"
