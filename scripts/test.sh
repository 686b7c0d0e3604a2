#!/usr/bin/env bash
# scripts/test.sh - README command 2: install what is missing, build, and
# run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
bash scripts/build.sh
cd build
ctest --output-on-failure -j2 "$@"
