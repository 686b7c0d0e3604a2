#!/usr/bin/env bash
# scripts/build.sh - configure and build nas into build/ (Release-like,
# warnings as errors when CI=true). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -DNAS_WERROR="$werror" "$@" >/dev/null
cmake --build build -j"$(nproc)"
