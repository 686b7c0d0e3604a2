#!/usr/bin/env bash
# tests/e2e/test_data_load_line.sh - issue 28, defect 7: `nas run` says
# what it loaded (images, C x H x W, classes, the training / validation
# split, where the test images come from), and warns when a few colour
# files make a folder of grey images 3-channel (one colour PNG among 19
# grey ones made the whole set RGB without a word). An all-grey folder
# loads 1-channel with no warning; npy data gets the same line. CIFAR-100
# names its test.bin (the line said test_batch.bin, CIFAR-10's name), and
# CIFAR data without a test file says none.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
"$PY" -c 'import cv2' 2>/dev/null || skip "$PY with OpenCV (python3-opencv) is needed to write the PNGs"
cd "$TMP" || fail "cd"
"$PY" - "$TMP" <<'PYEOF'
import os, sys, cv2, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(5)
for root, colour in (("mixed", 1), ("grey", 0)):
    for i in range(20):
        cdir = f"{d}/{root}/train/{'ab'[i % 2]}"
        os.makedirs(cdir, exist_ok=True)
        img = rng.integers(0, 256, (8, 8), dtype=np.uint8)
        if colour and i == 7:
            img = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        assert cv2.imwrite(f"{cdir}/img{i:02d}.png", img)
img = rng.integers(0, 256, (30, 8, 8), dtype=np.uint8)
np.save(f"{d}/img.npy", img)
np.save(f"{d}/lab.npy", (np.arange(30) % 3).astype(np.int64))
os.makedirs(f"{d}/c100")
for name, n in (("train", 40), ("test", 10)):  # coarse label, fine label, 3x32x32 pixels
    rec = rng.integers(0, 256, (n, 2 + 3072), dtype=np.uint8)
    rec[:, 1] = np.arange(n) % 100
    rec.tofile(f"{d}/c100/{name}.bin")
PYEOF
one_trial() { data_conf "$1.conf" "$1" "$2"; sed -i 's/trials = 3;/trials = 1;/' "$1.conf"; }
one_trial mixed 'format = "folder"; dir = "mixed"; valid = 4;'
run 0 "$NAS" run mixed.conf --db "$TMP/mixed.db"
grep_in "nas: data: 20 images 3x8x8 (C x H x W), 2 classes: 16 training, 4 validation; test images: none (no $TMP/mixed/test/)" "$TMP/err"
grep_in "nas: warning: 19 of the 20 images in use are grey and 1 colour" "$TMP/err"

one_trial grey 'format = "folder"; dir = "grey"; valid = 4;'
run 0 "$NAS" run grey.conf --db "$TMP/grey.db"
grep_in "nas: data: 20 images 1x8x8 (C x H x W), 2 classes: 16 training, 4 validation" "$TMP/err"
if grep -q "images in use are grey" "$TMP/err"; then cat "$TMP/err"; fail "a grey folder warned"; fi

one_trial npy 'format = "npy"; train_images = "img.npy"; train_labels = "lab.npy"; valid = 6; train_subset = 20;'
run 0 "$NAS" run npy.conf --db "$TMP/npy.db"
grep_in "nas: data: 26 images 1x8x8 (C x H x W), 3 classes: 20 training, 6 validation; test images: none" "$TMP/err"
one_trial c100 'format = "cifar"; dir = "c100"; valid = 8;'
run 0 "$NAS" run c100.conf --db "$TMP/c100.db"
grep_in "nas: data: 40 images 3x32x32 (C x H x W), 100 classes: 32 training, 8 validation; test images: $TMP/c100/test.bin$" "$TMP/err"
rm c100/test.bin
run 0 "$NAS" run c100.conf --db "$TMP/c100b.db"
grep_in "test images: none (no $TMP/c100/test.bin)" "$TMP/err"
echo "PASS"
