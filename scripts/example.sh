#!/usr/bin/env bash
# scripts/example.sh - README command 1: install what is missing, build,
# and run the shipped example search on Fashion-MNIST (about 5 minutes on
# 2 cores). Results land in example.db; query them with build/nas query.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh core
bash scripts/build.sh
exec build/nas run examples/fashion-cells.conf --db example.db "$@"
