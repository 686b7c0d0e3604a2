#!/usr/bin/env bash
# scripts/example.sh - README command 1: install what is missing, build,
# and run the shipped example search on Fashion-MNIST: 8.5 minutes in all
# on a fresh 2-core machine (packages, build and search), 2 minutes where
# the packages and the build were already there (30 trials in 1 min 32 s). Results land in example.db; query them with build/nas query.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh core
bash scripts/build.sh
exec build/nas run examples/fashion-cells.conf --db example.db "$@"
