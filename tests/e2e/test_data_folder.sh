#!/usr/bin/env bash
# tests/e2e/test_data_folder.sh - issue 16 acceptance for data.format =
# "folder": a PNG folder written from Fashion-MNIST images trains
# bit-identically (same trials, accuracies, losses, weights) to an npy
# file holding the same images in the folder reader's documented order
# (classes sorted by name, then files sorted by name, byte order: the
# test names files img0.png .. img599.png, so img10 comes before img9).
# Then the decode cache: it is written beside the database (DB.data/),
# holds exactly those pixels, is read instead of decoding on the next run
# (a PNG overwritten with garbage but its size and mtime kept goes
# unnoticed), and is rebuilt when the folder changes (the same file with a
# new mtime is decoded again and refused: exit 2 naming it, nothing
# written). The test/ split, grey-to-RGB and the decoders themselves are
# in tests/unit/test_folder_reader.c.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_fmnist
need_numpy
"$PY" -c 'import cv2' 2>/dev/null || skip "$PY with OpenCV (python3-opencv) is needed to write the PNGs"
cd "$TMP" || fail "cd"
fmnist_subset "$TMP" 600 200
"$PY" - "$TMP" <<'PYEOF'
import os, sys, cv2, numpy as np
d = sys.argv[1]
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
         "ankle-boot"]  # byte order: Bag, Coat, Dress, Pullover, Sandal, Shirt, Sneaker, T-shirt, Trouser, ankle-boot
rank = {n: k for k, n in enumerate(sorted(names))}
for split in ("train", "test"):
    img = np.load(f"{d}/{split}-images.npy")
    lab = np.load(f"{d}/{split}-labels.npy")
    order = []  # (class name, file name, index)
    for i in range(len(img)):
        cdir = f"{d}/imgs/{split}/{names[lab[i]]}"
        os.makedirs(cdir, exist_ok=True)
        fn = f"img{i}.png"
        assert cv2.imwrite(f"{cdir}/{fn}", img[i])
        order.append((names[lab[i]], fn, i))
    order.sort()  # what the reader documents: class names, then file names, by bytes
    idx = [i for _, _, i in order]
    np.save(f"{d}/{split}-folder-order.npy", np.ascontiguousarray(img[idx]))
    np.save(f"{d}/{split}-folder-labels.npy", np.array([rank[c] for c, _, _ in order], np.int64))
PYEOF
data_conf folder.conf same 'format = "folder"; dir = "imgs"; train_subset = 400; valid = 150;'
data_conf npy.conf same 'format = "npy"; train_images = "train-folder-order.npy"; train_labels = "train-folder-labels.npy"; test_images = "test-folder-order.npy"; test_labels = "test-folder-labels.npy"; train_subset = 400; valid = 150;'
run 0 "$NAS" run folder.conf --db "$TMP/folder.db"
run 0 "$NAS" run npy.conf --db "$TMP/npy.db"
q="SELECT t.genotype, r.val_accuracy, r.train_loss, r.macs, r.params FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY t.id"
a=$(sql "$TMP/folder.db" "$q") b=$(sql "$TMP/npy.db" "$q")
[ "$(echo "$a" | wc -l)" = 3 ] || fail "expected 3 results, got: $a"
expect_eq "results folder vs npy" "$a" "$b"
note "$(echo "$a" | head -1)"
for w in "$TMP"/folder.db.weights/*.npz; do # the arrays, bit for bit
    "$PY" -c '
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(b.files), "members differ"
for k in a.files:
    assert a[k].tobytes() == b[k].tobytes(), k
' "$w" "$TMP/npy.db.weights/$(basename "$w")" || fail "weights differ: $(basename "$w")"
done
[ "$(ls "$TMP"/folder.db.weights/*.npz | wc -l)" = 3 ] || fail "expected 3 weight files"
line=$(sql "$TMP/folder.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')
expect_eq "data line folder vs npy" "$line" "$(sql "$TMP/npy.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')"
echo "$line" | grep -q 'input = \[1, 28, 28\]; classes = 10;' || fail "bad data line: $line"
sql "$TMP/folder.db" "SELECT conf_canonical FROM experiment" | grep -q '^data.size = 0;$' ||
    fail "no data.size line in the canonical text"

note "the cache: beside the database, the same pixels and labels as the npy files"
ls folder.db.data/ >"$TMP/ls"
[ "$(grep -c -- '-train-.*-images\.npy$' "$TMP/ls")" = 1 ] || { cat "$TMP/ls"; fail "no train cache"; }
"$PY" - "$TMP" <<'PYEOF' || fail "the cache does not hold the folder's images in the documented order"
import glob, sys, numpy as np
d = sys.argv[1]
img = np.load(glob.glob(f"{d}/folder.db.data/*-train-*-images.npy")[0])
lab = np.load(glob.glob(f"{d}/folder.db.data/*-train-*-labels.npy")[0])
assert img.dtype == np.uint8 and img.shape == (600, 1, 28, 28), img.shape
assert (img[:, 0] == np.load(f"{d}/train-folder-order.npy")).all()
assert (lab == np.load(f"{d}/train-folder-labels.npy")).all()
PYEOF

note "a second run maps the cache: a PNG whose pixel data is overwritten with garbage, size and mtime kept, goes unnoticed"
victim=imgs/train/Bag/$(ls imgs/train/Bag | head -1)
cp -p "$victim" keep.png
size=$(stat -c %s "$victim")
{ head -c 60 keep.png; head -c $((size - 60)) /dev/urandom; } >"$victim" # signature and IHDR kept
touch -r keep.png "$victim"
sed 's/trials = 3/trials = 4/' folder.conf >folder4.conf
run 0 "$NAS" run folder4.conf --db "$TMP/folder.db"
expect_eq "trials" "$(sql "$TMP/folder.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 4

note "a changed folder (new mtime) is decoded again: the garbage is refused, exit 2, nothing written"
touch "$victim"
sed 's/trials = 3/trials = 5/' folder.conf >folder5.conf
run 2 "$NAS" run folder5.conf --db "$TMP/folder.db"
grep_in "$TMP/$victim: corrupt PNG" "$TMP/err"
expect_eq "trials" "$(sql "$TMP/folder.db" "SELECT count(*) FROM trial")" 4
note "$(grep 'nas run' "$TMP/err" | head -1)"
cp -p keep.png "$victim" && touch "$victim"
run 0 "$NAS" run folder5.conf --db "$TMP/folder.db"
expect_eq "trials" "$(sql "$TMP/folder.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 5
[ "$(ls folder.db.data | grep -c -- '-train-.*-images\.npy$')" = 1 ] || { ls folder.db.data; fail "stale cache files left"; }
echo "PASS"
