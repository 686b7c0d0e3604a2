#!/usr/bin/env bash
# tests/e2e/test_export_moved_data.sh - `nas export` of a search whose data
# directory (data.dir: CIFAR batches, an image folder) moved after the search:
#  1. --logits without --data is refused (exit 1) naming the search's
#     data.dir, saying it no longer exists and suggesting --data (it said
#     the directory "holds neither CIFAR-10 nor CIFAR-100" files, or, for a
#     folder, that the data has no test/ folder), and writes nothing;
#  2. --format pytorch --data NEWDIR writes a module whose DATA_DIR is
#     NEWDIR, absolute (it kept the search's old directory), and the JSON's
#     proxy_data.dir too; with torch installed, the module's load_data()
#     reads NEWDIR and reproduces the --logits images and logits;
#  3. without --data a PyTorch export still works, with a warning that its
#     DATA_DIR is gone; a --data that is not a directory is refused;
#  4. `nas train ARCH.json` on the moved folder names proxy_data.dir and
#     suggests --data (it said the directory "holds no train/ folder"),
#     and trains with --data; on npy data, which names its files, --data
#     is not used and a warning says so (it was ignored silently); a
#     folder without test/ is named as such (it asked for
#     data.test_images and data.test_labels, keys of idx and npy data).
. "$(dirname "$0")/export_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"

mkdir data && cifar_synth data 20 16
data_conf c.conf c 'format = "cifar"; dir = "data"; valid = 20;'
sed -i 's/trials = 3;/trials = 1;/' c.conf
run 0 "$NAS" run c.conf --db c.db
mv data moved

note "1. --logits on a data.dir that moved: named, --data suggested, nothing written"
for fmt in onnx pytorch; do
    run 1 "$NAS" export --db c.db --best --format $fmt -o "x.$fmt" --logits x-logits.npz
    grep_in "its data directory $TMP/data (data.dir of the search) no longer exists: if the data \
moved, give its new place with --data DIR" "$TMP/err"
    left=$(ls x.* x-logits.npz 2>/dev/null)
    [ -z "$left" ] || fail "the refused --format $fmt export left $left"
done

note "2. --data NEWDIR: the module's DATA_DIR and the JSON's proxy_data.dir are NEWDIR"
run 0 "$NAS" export --db c.db --best --format pytorch -o m.py --data moved --logits m-logits.npz
grep_in "^DATA_DIR = \"$TMP/moved\"" m.py
grep -q "$TMP/data\"" m.py && fail "m.py still names the old data directory: $(grep -n DATA_DIR m.py)"
run 0 "$NAS" export --db c.db --best --format json -o m.json --data "$TMP/moved"
grep_in "\"dir\": \"$TMP/moved\"" m.json
if "$PY" -c "import torch" 2>/dev/null; then
    "$PY" - <<'PYEOF' || fail "m.py does not read its DATA_DIR as nas's --logits did"
import numpy as np, torch, m
z = np.load("m-logits.npz")
n = z["images"].shape[0]
x, y = m.load_data("test", limit=n)
assert float(np.abs(x.numpy() - z["images"]).max()) == 0.0, "load_data() images differ"
assert (y.numpy() == z["labels"]).all(), "labels differ"
net = m.TinyNetwork()
net.load_state_dict(m.load_weights("m.npz"))
net.eval()
with torch.no_grad():
    d = float(np.abs(net(x).numpy() - z["logits"]).max())
assert d <= 1e-4, "logits differ by %g" % d
PYEOF
else
    note "SKIP (part): $PY cannot import torch, m.py not run"
fi

note "3. no --data: a PyTorch module with a warning; --data not a directory: refused"
run 0 "$NAS" export --db c.db --best --format pytorch -o w.py
grep_in "warning: the experiment's data directory $TMP/data (data.dir of the search) no longer \
exists" "$TMP/err"
run 1 "$NAS" export --db c.db --best --format onnx -o n.onnx --data nope --logits n.npz
grep_in "\-\-data nope: No such file or directory" "$TMP/err"
run 1 "$NAS" export --db c.db --best --format onnx -o n.onnx --data c.conf
grep_in "\-\-data c.conf: Not a directory" "$TMP/err"
[ -e n.onnx ] && fail "a refused --data wrote n.onnx"

note "1b. a folder's data.dir that moved (it said the data has no test/ folder)"
"$PY" - <<'PYEOF'
import os, struct, zlib, numpy as np
rng = np.random.default_rng(1)
def png(path, g):  # 8-bit grey PNG
    rows = b"".join(b"\x00" + g[y].tobytes() for y in range(len(g)))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", g.shape[1], g.shape[0], 8, 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
                + chunk(b"IEND", b""))
for split, n in (("train", 10), ("test", 3)):
    for k in range(2):
        os.makedirs(f"imgs/{split}/c{k}", exist_ok=True)
        for i in range(n):
            png(f"imgs/{split}/c{k}/{i}.png",
                np.clip(k * 120 + rng.normal(0, 30, (8, 8)), 0, 255).astype(np.uint8))
PYEOF
data_conf f.conf f 'format = "folder"; dir = "imgs"; valid = 6;'
sed -i 's/trials = 3;/trials = 1;/; s/stages = 2;/stages = 1;/' f.conf
run 0 "$NAS" run f.conf --db f.db
mv imgs imgs2
run 1 "$NAS" export --db f.db --best --format onnx -o f.onnx --logits f-logits.npz
grep_in "its data directory $TMP/imgs (data.dir of the search) no longer exists" "$TMP/err"
run 0 "$NAS" export --db f.db --best --format onnx -o f.onnx --logits f-logits.npz --data imgs2
[ -s f-logits.npz ] || fail "no logits from --data imgs2"

note "4. nas train on a data.dir that moved suggests --data; --data on npy says it is not used"
run 0 "$NAS" export --db f.db --best --format json -o f.json
run 1 "$NAS" train f.json --epochs 1 --checkpoint none --augment none
grep_in "the data directory $TMP/imgs (proxy_data.dir of f.json) no longer exists: if the data \
moved, give its new place with --data DIR" "$TMP/err"
run 0 "$NAS" train f.json --epochs 1 --checkpoint none --augment none --data imgs2
grep_in "test accuracy" "$TMP/out"
mv imgs2/test imgs2-test
run 2 "$NAS" train f.json --epochs 1 --checkpoint none --augment none --data imgs2
grep_in "f.json: the data (format folder) has no test images (no test/ folder in data.dir)" "$TMP/err"
mv imgs2-test imgs2/test
"$PY" -c "import numpy as np; np.save('x.npy', np.zeros((20, 8, 8), np.uint8)); \
np.save('y.npy', np.arange(20) % 2)"
data_conf n.conf n 'format = "npy"; train_images = "x.npy"; train_labels = "y.npy";
  test_images = "x.npy"; test_labels = "y.npy"; valid = 4;'
sed -i 's/trials = 3;/trials = 1;/; s/stages = 2;/stages = 1;/' n.conf
run 0 "$NAS" run n.conf --db n.db
run 0 "$NAS" export --db n.db --best --format json -o n.json
run 0 "$NAS" train n.json --epochs 1 --checkpoint none --augment none --data imgs2
grep_in "warning: --data imgs2 is not used: the data (format npy) names its files, n.json's \
proxy_data.train_images" "$TMP/err"
echo "PASS"
