#!/usr/bin/env bash
# scripts/test.sh - README command 2: install what is missing, build, and
# run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
bash scripts/build.sh
# ctest runs two tests at once on this 2-core machine: OpenMP threads that
# spin while waiting would then steal each other's cores (oneDNN uses OpenMP).
export OMP_WAIT_POLICY=passive
cd build
ctest --output-on-failure -j2 "$@"
