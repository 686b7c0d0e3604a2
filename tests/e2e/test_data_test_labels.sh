#!/usr/bin/env bash
# tests/e2e/test_data_test_labels.sh - a test label at or above the
# training data's class count, in an npy or idx label file, is refused by
# `nas train ARCH.json` and `nas export --logits` with a message naming the
# label file (it named the test images file, which holds no labels); and
# a training label at or above the experiment's class count (training
# data that gained a class since the search) is refused by `nas train`
# naming the training label file (it named the training images file).
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
"$PY" - <<'PYEOF'
import gzip, struct, numpy as np
rng = np.random.default_rng(4)
x = rng.integers(0, 256, (60, 8, 8), dtype=np.uint8)
np.save("x.npy", x)
np.save("y.npy", (np.arange(60) % 3).astype(np.int64))
np.save("tx.npy", x[:10])
np.save("ty.npy", np.full(10, 7, np.int64))          # 7: the data has 3 classes
with gzip.open("x.idx.gz", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 60, 8, 8)); f.write(x.tobytes())
with gzip.open("y.idx.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 60)); f.write((np.arange(60) % 3).astype(np.uint8).tobytes())
with gzip.open("tx.idx.gz", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 10, 8, 8)); f.write(x[:10].tobytes())
with gzip.open("ty.idx.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 10)); f.write(np.full(10, 7, np.uint8).tobytes())
PYEOF
for fmt in npy idx; do
    ext=$fmt; [ $fmt = idx ] && ext=idx.gz
    note "$fmt: a test label out of range names the label file"
    data_conf $fmt.conf $fmt "format = \"$fmt\"; train_images = \"x.$ext\"; train_labels = \"y.$ext\";
      test_images = \"tx.$ext\"; test_labels = \"ty.$ext\"; valid = 12;"
    sed -i 's/trials = 3;/trials = 1;/' $fmt.conf
    run 0 "$NAS" run $fmt.conf --db $fmt.db
    run 0 "$NAS" export --db $fmt.db --best --format json -o $fmt.json
    run 1 "$NAS" train $fmt.json --epochs 1 --checkpoint none
    grep_in "ty.$ext: label 7 of test image 0 is out of range 0..2" "$TMP/err"
    run 1 "$NAS" export --db $fmt.db --best --format onnx -o $fmt.onnx --logits $fmt-l.npz
    grep_in "ty.$ext: label 7 of test image 0 is out of range 0..2" "$TMP/err"
done
"$PY" - <<'PYEOF'
import gzip, struct, numpy as np
y = (np.arange(60) % 3).astype(np.int64)
y[5] = 3                                              # a class the search never saw
np.save("y.npy", y)
with gzip.open("y.idx.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 60)); f.write(y.astype(np.uint8).tobytes())
PYEOF
for fmt in npy idx; do
    ext=$fmt; [ $fmt = idx ] && ext=idx.gz
    note "$fmt: a training label out of range names the training label file"
    run 1 "$NAS" train $fmt.json --epochs 1 --checkpoint none
    grep_in "/y.$ext: label 3 of image 5 is out of range 0..2: the experiment's network has 3" \
        "$TMP/err"
done
note "ok"
