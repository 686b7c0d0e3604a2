#!/usr/bin/env bash
# experiments/loader-wait/run.sh - issue 16: the share of step time the
# trainer waits for its batches, on every shipped example that trains
# (examples/fashion-cells.conf, fashion-mobile.conf, cifar10-cells.conf,
# cifar10-mobile.conf), with batches prepared in the training thread and
# by one loader thread ahead of it (loader_wait.c). The CIFAR examples read
# data/cifar-10-batches-bin/ when it is there (README), else a synthetic
# CIFAR-10 of the same shape (5 x 2,000 images, written with numpy).
#
#   experiments/loader-wait/run.sh [BUILD_DIR] [--trials K] [--steps S]
#
# Results: experiments/loader-wait/README.md.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
shift || true
BIN=$BUILD/experiments/loader_wait
[ -x "$BIN" ] || { echo "build first: cmake --build $BUILD --target loader_wait" >&2; exit 2; }
TMP=$(mktemp -d /tmp/nas_loader_wait_XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/examples" "$TMP/data"
if [ -f "$SRC/data/cifar-10-batches-bin/data_batch_1.bin" ]; then
    ln -s "$SRC/data/cifar-10-batches-bin" "$TMP/data/cifar-10-batches-bin"
else
    mkdir "$TMP/data/cifar-10-batches-bin"
    /usr/bin/python3 - "$TMP/data/cifar-10-batches-bin" <<'PYEOF'
import sys, numpy as np
rng = np.random.default_rng(3)
for name, n in [(f"data_batch_{b}.bin", 2000) for b in range(1, 6)] + [("test_batch.bin", 1000)]:
    lab = rng.integers(0, 10, n, dtype=np.uint8)
    px = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    np.concatenate([lab[:, None], px], 1).tofile(f"{sys.argv[1]}/{name}")
PYEOF
    echo "# synthetic CIFAR-10 (10,000 training images): no data/cifar-10-batches-bin"
fi
for ex in fashion-cells fashion-mobile cifar10-cells cifar10-mobile; do
    cp "$SRC/examples/$ex.conf" "$TMP/examples/"
    "$BIN" "$TMP/examples/$ex.conf" --subset 4000 "$@"
done
echo "# the cell example again with crop4,flip,cutout16 (the most work per image)"
"$BIN" "$TMP/examples/cifar10-cells.conf" --subset 4000 --augment crop4,flip,cutout16 "$@"
