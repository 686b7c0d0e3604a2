#!/usr/bin/env bash
# scripts/deps.sh [core|test] - install the Debian packages nas needs, only
# those missing. "core" builds and runs nas; "test" adds what the test suite
# compares against (PyTorch, ONNX, OpenCV, Open MPI, Chromium), strace (tests
# that count system calls) and the
# fuzzers need (clang with libFuzzer: scripts/fuzz.sh).
set -euo pipefail
group=${1:-core}
core=(build-essential cmake pkg-config libsqlite3-dev libconfig-dev zlib1g-dev
      libcmocka-dev libdnnl-dev libopenblas-dev libjansson-dev libzip-dev sqlite3
      dataset-fashion-mnist libprotobuf-c-dev protobuf-c-compiler libonnx-dev
      libopenmpi-dev openmpi-bin libpng-dev libjpeg62-turbo-dev)
test_extra=(python3-torch python3-onnx python3-opencv python3-numpy chromium clang libclang-rt-14-dev
            strace)
pkgs=("${core[@]}")
[ "$group" = test ] && pkgs+=("${test_extra[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "nas: installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
