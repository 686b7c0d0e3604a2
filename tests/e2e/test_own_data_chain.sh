#!/usr/bin/env bash
# tests/e2e/test_own_data_chain.sh - issue 28 acceptance: a chain search on
# the user's own data all the way through, with no space.input or
# space.classes (they default to the data's), on two data sets:
#   npy     3-channel 32x32 images (N,H,W,C), 5 classes;
#   folder  mixed-size PNG and JPEG images (some grey), 5 classes,
#           resized by data.size = [30, 28].
# For each: `nas space` counts for the data's shape, the search's trials
# all finish, the PyTorch and ONNX exports' logits on the experiment's own
# test images (`--logits`) match nas's, the module's load_data() returns
# exactly the --logits images, `nas train ARCH.json --proxy` reproduces
# the trial's val_accuracy (ref backend: bit for bit) and `--epochs 1`
# runs. Then nothing the npy experiment's exports, `nas report` or the
# CLI print names Fashion-MNIST or a 28x28 image.
. "$(dirname "$0")/export_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_py numpy torch onnx cv2
cd "$TMP" || fail "cd"

"$PY" - "$TMP" <<'PYEOF'
import os, sys, cv2, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(28)
colours = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200], [200, 200, 40], [40, 200, 200]])

def images(lab, h, w):
    base = colours[lab][:, None, None, :]
    return np.clip(base + rng.normal(0, 50, (len(lab), h, w, 3)), 0, 255).astype(np.uint8)

for split, n in (("train", 300), ("test", 40)):
    lab = rng.integers(0, 5, n)
    np.save(f"{d}/{split}-x.npy", images(lab, 32, 32))          # N,H,W,C uint8
    np.save(f"{d}/{split}-y.npy", lab.astype(np.int64))
# the folder: PNG and JPEG of mixed sizes, every fifth image grey
for split, n in (("train", 200), ("test", 30)):
    lab = rng.integers(0, 5, n)
    for i in range(n):
        h, w = int(rng.integers(24, 41)), int(rng.integers(24, 41))
        im = images(lab[i:i + 1], h, w)[0][:, :, ::-1]  # cv2 writes BGR
        if i % 5 == 0:
            im = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY)
        cdir = f"{d}/imgs/{split}/class{lab[i]}"
        os.makedirs(cdir, exist_ok=True)
        ext = "jpg" if i % 2 else "png"
        assert cv2.imwrite(f"{cdir}/im{i:03d}.{ext}", im)
PYEOF
[ -f "$TMP/train-x.npy" ] || fail "could not write the test data"

chain_conf npy.conf own-npy 'format = "npy"; train_images = "train-x.npy"; train_labels = "train-y.npy";
  test_images = "test-x.npy"; test_labels = "test-y.npy"; train_subset = 200; valid = 60;'
chain_conf folder.conf own-folder 'format = "folder"; dir = "imgs"; size = [30, 28]; valid = 50;'

# check KIND C H W: the whole path for npy.conf or folder.conf; CLI output in $TMP/$KIND.cli
check() {
    local kind=$1 c=$2 h=$3 w=$4 log="$TMP/$1.cli"
    : >"$log"
    note "$kind: nas space counts for ${c}x${h}x${w} images and 5 classes"
    run 0 "$NAS" space "$kind.conf"
    cat "$TMP/out" "$TMP/err" >>"$log"
    grep -qi "warning" "$TMP/err" && { cat "$TMP/err"; fail "$kind: nas space warned"; }
    grep_in "input ${c}x${h}x${w}, 5 classes" "$TMP/out"

    note "$kind: the search (no space.input, no space.classes)"
    run 0 "$NAS" run "$kind.conf" --db "$kind.db"
    cat "$TMP/out" "$TMP/err" >>"$log"
    expect_eq "$kind: done trials" "$(sql "$kind.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 2

    note "$kind: exports with --logits on the experiment's own test images"
    run 0 "$NAS" export --db "$kind.db" --best --format pytorch -o "$kind.py" --logits "$kind-pt.npz"
    cat "$TMP/out" "$TMP/err" >>"$log"
    run 0 "$NAS" export --db "$kind.db" --best --format onnx -o "$kind.onnx" --logits "$kind-onnx.npz"
    cat "$TMP/out" "$TMP/err" >>"$log"
    run 0 "$NAS" export --db "$kind.db" --best --format json -o "$kind.json"
    cat "$TMP/out" "$TMP/err" >>"$log"
    "$PY" - "$kind" "$c" "$h" "$w" <<'PYEOF' || fail "$kind: the PyTorch module does not reproduce nas"
import importlib, sys, numpy as np, torch
kind, c, h, w = sys.argv[1], *map(int, sys.argv[2:])
m = importlib.import_module(kind)
z = np.load(kind + "-pt.npz")
assert z["images"].shape == (16, c, h, w), z["images"].shape
assert z["logits"].shape == (16, 5), z["logits"].shape
x, y = m.load_data("test", limit=16)
d = float(np.abs(x.numpy() - z["images"]).max())
assert d == 0.0, "load_data() images differ from the --logits images by %g" % d
assert (y.numpy() == z["labels"]).all(), "load_data() labels differ"
net = m.ChainNetwork()
net.load_state_dict(m.load_weights(kind + ".npz"))
net.eval()
with torch.no_grad():
    got = net(torch.from_numpy(z["images"])).numpy()
diff = float(np.abs(got - z["logits"]).max())
assert diff <= 1e-4, "logits differ by %g" % diff
xt, _ = m.load_data("train", limit=3)
assert tuple(xt.shape) == (3, c, h, w), xt.shape
print("-- %s: load_data() = --logits images; PyTorch logits within %.2g" % (kind, diff))
PYEOF
    "$PY" "$HERE/onnx_numpy.py" "$kind.onnx" "$kind-onnx.npz" || fail "$kind: ONNX logits differ"
    cmp -s <("$PY" -c "import numpy as np; print(np.load('$kind-pt.npz')['images'].tobytes().hex())") \
        <("$PY" -c "import numpy as np; print(np.load('$kind-onnx.npz')['images'].tobytes().hex())") ||
        fail "$kind: the two --logits files hold other images"

    note "$kind: nas train ARCH.json --proxy reproduces val_accuracy; --epochs 1 runs"
    run 0 "$NAS" train "$kind.json" --proxy --checkpoint none
    cat "$TMP/out" "$TMP/err" >>"$log"
    local got want
    got=$(sed -n 's/^val_accuracy \([0-9.]*\)  (trial [0-9]* recorded \([0-9.]*\),.*/\1 \2/p' "$TMP/out")
    [ -n "$got" ] || { cat "$TMP/out"; fail "$kind: no val_accuracy line"; }
    want=${got#* }
    expect_eq "$kind: --proxy val_accuracy (recorded $want)" "${got% *}" "$want"
    run 0 "$NAS" train "$kind.json" --epochs 1 --checkpoint none
    cat "$TMP/out" "$TMP/err" >>"$log"
    grep_in "test accuracy" "$TMP/out"
    [ "$kind" = folder ] || return 0
    note "folder: an ARCH.json without proxy_data.size (an older nas) still reads, and says what is missing"
    "$PY" -c "import json; a = json.load(open('folder.json')); del a['proxy_data']['size']
json.dump(a, open('old.json', 'w'))"
    "$NAS" train old.json --proxy --checkpoint none >"$TMP/out" 2>"$TMP/err" && fail "old.json trained"
    grep_in "old.json has no proxy_data.size" "$TMP/err"
}
check npy 3 32 32
check folder 3 30 28

note "npy: nothing names Fashion-MNIST or a 28x28 image"
run 0 "$NAS" report --db npy.db -o npy-report.html
cat "$TMP/out" "$TMP/err" >>npy.cli
for f in npy.py npy.json npy.onnx npy.cli npy-report.html; do
    [ -s "$f" ] || fail "no $f"
    if grep -a -n -i -E "fashion|28x28|28 x 28" "$f"; then
        fail "$f names Fashion-MNIST or a 28x28 image"
    fi
done
note "ok"
