#!/usr/bin/env bash
# tests/e2e/test_data_folder_bad.sh - issue 16, data.format = "folder":
# bad image folders are refused before any trial starts, exit 2, a message
# naming the file (or folder), nothing written to the database: an empty
# class folder, a corrupt PNG, a truncated JPEG, images of mixed sizes
# without data.size, a file that is neither PNG nor JPEG. Then the same
# mixed folder with data.size = [12, 10] trains (grey and RGB images
# together: C = 3), and data.size outside the folder format is a config
# error.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
"$PY" -c 'import cv2' 2>/dev/null || skip "$PY with OpenCV (python3-opencv) is needed to write the images"
cd "$TMP" || fail "cd"
"$PY" - "$TMP" <<'PYEOF'
import os, shutil, sys, cv2, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
def folder(name, n=12, side=8):
    for c in ("a", "b", "c"):
        os.makedirs(f"{d}/{name}/train/{c}", exist_ok=True)
        for i in range(n):
            cv2.imwrite(f"{d}/{name}/train/{c}/{i:02d}.png", rng.integers(0, 256, (side, side), np.uint8))
folder("empty"); os.makedirs(f"{d}/empty/train/d")
folder("png")
png = open(f"{d}/png/train/b/03.png", "rb").read()
open(f"{d}/png/train/b/03.png", "wb").write(png[:len(png) // 2])   # cut in the pixel data
folder("jpg")
cv2.imwrite(f"{d}/jpg/train/c/05.jpg", rng.integers(0, 256, (64, 64, 3), np.uint8))  # cut in the scan
jpg = open(f"{d}/jpg/train/c/05.jpg", "rb").read()
open(f"{d}/jpg/train/c/05.jpg", "wb").write(jpg[:len(jpg) * 2 // 3])
folder("mixed")
cv2.imwrite(f"{d}/mixed/train/c/07.png", rng.integers(0, 256, (9, 8), np.uint8))   # 9 rows, 8 columns
cv2.imwrite(f"{d}/mixed/train/a/zz.jpg", rng.integers(0, 256, (16, 20, 3), np.uint8))  # RGB, sorts last in a
folder("text")
open(f"{d}/text/train/a/notes.png", "w").write("not an image\n")
PYEOF
# case NAME FILE-NAMED-IN-MESSAGE EXPECTED-PHRASE DATA-GROUP-BODY
case_() {
    local name=$1 file=$2 phrase=$3
    data_conf "$name.conf" "$name" "$4 valid = 6;"
    sed -i 's/stages = 2/stages = 1/; s/trials = 3/trials = 1/' "$name.conf"
    run 2 "$NAS" run "$name.conf" --db "$TMP/$name.db"
    grep_in "$file" "$TMP/err"
    grep_in "$phrase" "$TMP/err"
    if [ -f "$TMP/$name.db" ]; then
        expect_eq "$name: experiments" "$(sql "$TMP/$name.db" "SELECT count(*) FROM experiment")" 0
        expect_eq "$name: trials" "$(sql "$TMP/$name.db" "SELECT count(*) FROM trial")" 0
    fi
    [ -d "$TMP/$name.db.data" ] && [ -n "$(ls "$TMP/$name.db.data")" ] && fail "$name: a cache was written"
    note "$name: $(grep "nas run:" "$TMP/err" | head -1)"
}
case_ empty "$TMP/empty/train/d" "empty class folder" 'format = "folder"; dir = "empty";'
case_ png "$TMP/png/train/b/03.png" "corrupt PNG" 'format = "folder"; dir = "png";'
case_ jpeg "$TMP/jpg/train/c/05.jpg" "corrupt JPEG" 'format = "folder"; dir = "jpg";'
case_ mixed "$TMP/mixed/train/a/zz.jpg is 16x20 (HxW) but $TMP/mixed/train/a/00.png is 8x8" \
    "set data.size" 'format = "folder"; dir = "mixed";'
case_ text "$TMP/text/train/a/notes.png" "neither a PNG nor a JPEG" 'format = "folder"; dir = "text";'

note "the mixed folder with data.size = [12, 10] trains: grey and RGB give C = 3"
data_conf sized.conf sized 'format = "folder"; dir = "mixed"; size = [12, 10]; valid = 6;'
sed -i 's/stages = 2/stages = 1/; s/trials = 3/trials = 1/' sized.conf
run 0 "$NAS" run sized.conf --db "$TMP/sized.db"
line=$(sql "$TMP/sized.db" "SELECT conf_canonical FROM experiment" | grep '^# data: ')
echo "$line" | grep -q 'input = \[3, 12, 10\]; classes = 3;' || fail "bad data line: $line"
sql "$TMP/sized.db" "SELECT conf_canonical FROM experiment" | grep -q '^data.size = \[12, 10\];$' ||
    fail "no data.size in the canonical text"
ls sized.db.data/*-train-*-images.npy >/dev/null || fail "no cache"
note "$line"

note "data.size is for folders only, and a side of 0 or 9000 is out of range"
data_conf npysize.conf npysize 'format = "npy"; train_images = "a.npy"; train_labels = "b.npy"; size = 8;'
run 2 "$NAS" run npysize.conf --db "$TMP/npysize.db"
grep_in 'data.size resizes the images of data.format = "folder" only' "$TMP/err"
data_conf big.conf big 'format = "folder"; dir = "mixed"; size = [9000, 8];'
run 2 "$NAS" run big.conf --db "$TMP/big.db"
grep_in "data.size = 9000 is out of range" "$TMP/err"
echo "PASS"
