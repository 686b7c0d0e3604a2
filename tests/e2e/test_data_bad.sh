#!/usr/bin/env bash
# tests/e2e/test_data_bad.sh - issue 16: bad data is refused before any
# trial starts: exit 2, a message naming the file, nothing written to the
# database (no experiment row, no trial). One case each: a truncated idx
# file, a wrong magic number, a label at or above the class count
# (CIFAR-10), image and label counts that differ, an npy of an unsupported
# dtype (float64), a truncated npy, data.mean/std of another
# channel count than the images', and float32 images holding a NaN or an
# infinite pixel (which would make every loss NaN: each trial reported as
# diverged); a NaN test image stops nas train and nas export --logits.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
"$PY" - "$TMP" <<'PYEOF'
import gzip, sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
img = rng.integers(0, 256, (40, 8, 8), dtype=np.uint8)
lab = (np.arange(40) % 4).astype(np.uint8)
def idx(path, magic, arr, gz=False, cut=0):
    data = np.array([magic] + list(arr.shape), ">u4").tobytes() + arr.tobytes()
    data = data[:len(data) - cut]
    (gzip.open if gz else open)(path, "wb").write(data)
idx(f"{d}/ok-images.idx", 0x803, img)
idx(f"{d}/ok-labels.idx.gz", 0x801, lab, gz=True)
idx(f"{d}/trunc-images.idx.gz", 0x803, img, gz=True, cut=100)
idx(f"{d}/magic-images.idx", 0x804, img)
idx(f"{d}/short-labels.idx", 0x801, lab[:39])
np.save(f"{d}/f64-images.npy", img.astype(np.float64))
np.save(f"{d}/labels.npy", lab.astype(np.int64))
np.save(f"{d}/trunc-images.npy", img)
with open(f"{d}/trunc-images.npy", "r+b") as f:
    f.truncate(200)
f32 = img.astype(np.float32) / 255
nan = f32.copy(); nan[5, 2, 3] = np.nan
np.save(f"{d}/nan-images.npy", nan)
inf = f32.copy(); inf[3, 0, 7] = -np.inf
np.save(f"{d}/inf-images.npy", inf)
np.save(f"{d}/f32-images.npy", f32)
import os
os.mkdir(f"{d}/cifar")
for b in range(1, 6):
    rec = np.zeros((4, 3073), np.uint8)
    rec[:, 0] = [0, 1, 2, 3]
    if b == 4:
        rec[2, 0] = 10            # CIFAR-10 has classes 0..9
    rec.tofile(f"{d}/cifar/data_batch_{b}.bin")
PYEOF
# case NAME FILE-NAMED-IN-MESSAGE EXPECTED-PHRASE DATA-GROUP-BODY
case_() {
    local name=$1 file=$2 phrase=$3
    data_conf "$name.conf" "$name" "$4 valid = 8;"
    run 2 "$NAS" run "$name.conf" --db "$TMP/$name.db"
    grep_in "$file" "$TMP/err"
    grep_in "$phrase" "$TMP/err"
    if [ -f "$TMP/$name.db" ]; then
        expect_eq "$name: experiments" "$(sql "$TMP/$name.db" "SELECT count(*) FROM experiment")" 0
        expect_eq "$name: trials" "$(sql "$TMP/$name.db" "SELECT count(*) FROM trial")" 0
    fi
    note "$name: $(grep "nas run:" "$TMP/err" | head -1)"
}
case_ truncated "$TMP/trunc-images.idx.gz" "truncated" \
    'format = "idx"; train_images = "trunc-images.idx.gz"; train_labels = "ok-labels.idx.gz";'
case_ magic "$TMP/magic-images.idx" "bad magic number" \
    'format = "idx"; train_images = "magic-images.idx"; train_labels = "ok-labels.idx.gz";'
case_ label "$TMP/cifar/data_batch_4.bin" "label 10 of record 2 is out of range" \
    'format = "cifar"; dir = "cifar";'
case_ count "$TMP/short-labels.idx" "has 39 labels but" \
    'format = "idx"; train_images = "ok-images.idx"; train_labels = "short-labels.idx";'
case_ dtype "$TMP/f64-images.npy" "dtype '<f8' are not supported" \
    'format = "npy"; train_images = "f64-images.npy"; train_labels = "labels.npy";'
case_ npy_truncated "$TMP/trunc-images.npy" "truncated" \
    'format = "npy"; train_images = "trunc-images.npy"; train_labels = "labels.npy";'
case_ channels "$TMP/ok-images.idx" "have 1 channel(s)" \
    'format = "idx"; train_images = "ok-images.idx"; train_labels = "ok-labels.idx.gz"; mean = [0.5, 0.5, 0.5]; std = [0.2, 0.2, 0.2];'
case_ nan "$TMP/nan-images.npy" "image 5 has a pixel that is NaN (channel 0, row 2, column 3)" \
    'format = "npy"; train_images = "nan-images.npy"; train_labels = "labels.npy";'
case_ inf "$TMP/inf-images.npy" "image 3 has a pixel that is infinite (channel 0, row 0, column 7)" \
    'format = "npy"; train_images = "inf-images.npy"; train_labels = "labels.npy"; mean = [0.5]; std = [0.25];'
note "a NaN test image: nas train and nas export --logits name it (the search reads no test images)"
data_conf f32.conf f32 'format = "npy"; train_images = "f32-images.npy"; train_labels = "labels.npy";
  test_images = "nan-images.npy"; test_labels = "labels.npy"; valid = 8;'
sed -i 's/stages = 2/stages = 1/; s/trials = 3/trials = 1/' f32.conf
run 0 "$NAS" run f32.conf --db "$TMP/f32.db"
run 0 "$NAS" export --db "$TMP/f32.db" --best --format json -o f32.json
run 1 "$NAS" train f32.json --epochs 1 --checkpoint none
grep_in "$TMP/nan-images.npy: image 5 has a pixel that is NaN" "$TMP/err"
run 1 "$NAS" export --db "$TMP/f32.db" --best --format onnx -o f32.onnx --logits f32-logits.npz
grep_in "$TMP/nan-images.npy: image 5 has a pixel that is NaN" "$TMP/err"
[ -e f32.onnx ] && fail "a failed --logits left f32.onnx"
note "the good files do train, with the mean and std given in space.conf"
data_conf good.conf good 'format = "idx"; train_images = "ok-images.idx"; train_labels = "ok-labels.idx.gz"; valid = 8; mean = [0.5]; std = [0.25];'
sed -i 's/stages = 2/stages = 1/; s/trials = 3/trials = 1/' good.conf
run 0 "$NAS" run good.conf --db "$TMP/good.db"
expect_eq "data line" "$(sql "$TMP/good.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')" \
    '# data: input = [1, 8, 8]; classes = 4; pixels = "uint8"; mean = [0.5]; std = [0.25];'
echo "PASS"
