#!/usr/bin/env bash
# tests/e2e/test_export_own_data.sh - issue 28 defects 2, 3 and 6 (the
# exports' part): a PyTorch export reads and normalises the experiment's
# own data, and `nas export --logits` runs on it.
#   idx + mean/std   --logits holds the experiment's test images normalised
#                    with data.mean = [0.5] / data.std = [0.5] (it held
#                    Fashion-MNIST's with Fashion-MNIST's normalisation), the
#                    module's preprocess(raw) and load_data() give exactly
#                    those, the logits match; the module names no
#                    Fashion-MNIST (a cell module's docstring did).
#   cifar            --logits runs on the CIFAR test batch (it exited 1
#                    after writing the .onnx); load_data() = its images.
#   folder, no test/ --logits fails and leaves no .onnx, .py or .npz.
#   grey folder      grey+alpha and 16-bit PNGs, grey JPEGs: load_data() =
#                    the --logits images (1 channel, as nas reads them).
#   chain on the Fashion-MNIST shorthand: the module carries MEAN, STD,
#                    preprocess() and load_data() (it had only DATA_DIR).
. "$(dirname "$0")/export_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_fmnist
need_py numpy torch cv2
cd "$TMP" || fail "cd"

# check_module KIND CLASS LOAD-ARGS: KIND.py's load_data(LOAD-ARGS) and
# preprocess() reproduce KIND-logits.npz's images, CLASS its logits.
check_module() {
    "$PY" - "$1" "$2" "$3" <<'PYEOF' || fail "$1: the PyTorch module does not reproduce nas's --logits"
import importlib, sys, numpy as np, torch
kind, cls, args = sys.argv[1], sys.argv[2], sys.argv[3]
m = importlib.import_module(kind)
z = np.load(kind + "-logits.npz")
n = z["images"].shape[0]
x, y = eval("m.load_data(%s, limit=%d)" % (args, n))
d = float(np.abs(x.numpy() - z["images"]).max())
assert d == 0.0, "load_data() images differ from --logits' by %g" % d
assert (y.numpy() == z["labels"]).all(), "labels differ"
net = getattr(m, cls)()
net.load_state_dict(m.load_weights(kind + ".npz"))
net.eval()
with torch.no_grad():
    diff = float(np.abs(net(torch.from_numpy(z["images"])).numpy() - z["logits"]).max())
assert diff <= 1e-4, "logits differ by %g" % diff
print("-- %s: load_data() = the --logits images; logits within %.2g" % (kind, diff))
PYEOF
}

note "idx with data.mean = [0.5], data.std = [0.5]"
fmnist_subset "$TMP" 400 100
data_conf idx.conf idx 'format = "idx"; train_images = "train-images.idx.gz";
  train_labels = "train-labels.idx.gz"; test_images = "test-images.idx.gz";
  test_labels = "test-labels.idx.gz"; train_subset = 200; valid = 100; mean = [0.5]; std = [0.5];'
run 0 "$NAS" run idx.conf --db idx.db
run 0 "$NAS" export --db idx.db --best --format pytorch -o idx.py --logits idx-logits.npz
"$PY" - <<'PYEOF' || fail "idx: --logits images are not the experiment's, normalised with its mean and std"
import numpy as np, idx
raw = np.load("test-images.npy")[:16]
want = (raw.astype(np.float32) * np.float32(1 / 255.0) - np.float32(0.5)) * np.float32(2.0)
got = np.load("idx-logits.npz")["images"]
assert got.shape == (16, 1, 28, 28), got.shape
assert float(np.abs(got[:, 0] - want).max()) == 0.0, float(np.abs(got[:, 0] - want).max())
assert float(np.abs(idx.preprocess(raw).numpy() - got).max()) == 0.0
PYEOF
check_module idx TinyNetwork '"test"'
if grep -n -i "fashion" idx.py; then fail "idx.py names Fashion-MNIST"; fi

note "cifar: --logits on the CIFAR test batch"
mkdir cifar && cifar_synth cifar 60 40
data_conf cifar.conf cifar 'format = "cifar"; dir = "cifar"; train_subset = 200; valid = 60;'
run 0 "$NAS" run cifar.conf --db cifar.db
run 0 "$NAS" export --db cifar.db --best --format pytorch -o cifar.py --logits cifar-logits.npz
check_module cifar TinyNetwork '"test"'
run 0 "$NAS" export --db cifar.db --best --format onnx -o cifar.onnx --logits cifar-onnx.npz
[ -s cifar.onnx ] && [ -s cifar-onnx.npz ] || fail "cifar: no .onnx or logits"

note "folder without test/: --logits fails and writes nothing"
"$PY" - <<'PYEOF'
import os, cv2, numpy as np
rng = np.random.default_rng(2)
for k in range(3):
    os.makedirs(f"imgs/train/c{k}", exist_ok=True)
    for i in range(40):
        assert cv2.imwrite(f"imgs/train/c{k}/{i:02d}.png",
                           np.clip(k * 80 + rng.normal(0, 30, (12, 12)), 0, 255).astype(np.uint8))
PYEOF
data_conf folder.conf folder 'format = "folder"; dir = "imgs"; valid = 30;'
run 0 "$NAS" run folder.conf --db folder.db
for fmt in onnx pytorch json; do
    "$NAS" export --db folder.db --best --format $fmt -o "out.$fmt" --logits out-logits.npz \
        >"$TMP/out" 2>"$TMP/err" && fail "folder: --format $fmt --logits without test images exited 0"
    grep_in "test" "$TMP/err"
    left=$(ls out.* out-logits.npz 2>/dev/null)
    [ -z "$left" ] || fail "folder: the failed --format $fmt export left $left"
done
note "$(cat "$TMP/err")"

note "grey folder: PNG grey+alpha (colour type 4), 16-bit grey PNG, grey JPEG: load_data() = nas"
"$PY" - <<'PYEOF'
import os, struct, zlib, cv2, numpy as np
rng = np.random.default_rng(6)
def png_ga(path, g):  # OpenCV writes no grey+alpha PNG: a minimal one by hand
    rows = b"".join(b"\x00" + np.dstack([g, np.full_like(g, 180)])[y].tobytes() for y in range(len(g)))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", g.shape[1], g.shape[0], 8, 4, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
for split, n in (("train", 90), ("test", 24)):
    for i in range(n):
        k = i % 3
        g = np.clip(k * 80 + rng.normal(0, 30, (14, 14)), 0, 255).astype(np.uint8)
        p = f"grey/{split}/c{k}/{i:03d}"
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if i % 3 == 0:
            png_ga(p + ".png", g)
        elif i % 3 == 1:
            assert cv2.imwrite(p + ".png", g.astype(np.uint16) * 257 + rng.integers(0, 257, g.shape).astype(np.uint16))
        else:
            assert cv2.imwrite(p + ".jpg", g)
PYEOF
data_conf grey.conf grey 'format = "folder"; dir = "grey"; valid = 30;'
run 0 "$NAS" run grey.conf --db grey.db
run 0 "$NAS" export --db grey.db --best --format pytorch -o grey.py --logits grey-logits.npz
check_module grey TinyNetwork '"test"'

note "chain on the Fashion-MNIST shorthand: MEAN, STD, preprocess(), load_data()"
chain_conf chain.conf chain-fmnist "dir = \"$FMNIST\"; train_subset = 256; valid = 128;" "" 1
run 0 "$NAS" run chain.conf --db chain.db
run 0 "$NAS" export --db chain.db --best --format pytorch -o chain.py --logits chain-logits.npz
for w in '^MEAN = 0.2860$' '^STD = 0.3530$' '^def preprocess(pixels)' '^def load_data('; do
    grep_in "$w" chain.py
done
check_module chain ChainNetwork "\"test\", data_dir=\"$FMNIST\""
note "ok"
