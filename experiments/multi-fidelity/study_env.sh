# experiments/multi-fidelity/study_env.sh - the set-up run.sh,
# proxy_noise.sh and low_rungs.sh share (sourced, not run): checks for
# Fashion-MNIST (exit 77, "skipped", when it is absent), builds nas in
# BUILD_DIR (default build-study: Release, no CUDA) and sets
#   here     this directory          src      the project root
#   fmnist   the data directory      nas      the binary
#   results  OUT, or here/results
# OPENBLAS_NUM_THREADS=1: every process trains on one thread.
# `study`, set before sourcing, names the script in messages.
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fmnist=${FMNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$fmnist/train-images-idx3-ubyte.gz" ] || {
    echo "${study:-multi-fidelity}: Fashion-MNIST not found in $fmnist (Debian package dataset-fashion-mnist)" >&2
    exit 77
}
build=${BUILD_DIR:-$src/build-study}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNAS_CUDA=OFF >/dev/null
cmake --build "$build" -j2 --target nas_cli >/dev/null
nas=$build/nas
results=${OUT:-$here/results}
export OPENBLAS_NUM_THREADS=1
