#!/usr/bin/env bash
# tests/e2e/test_augment_size.sh - a crop or cutout that can leave nothing
# of the data's images is refused with a message, not trained on. On
# 16x20 images (H x W) crop16 can shift the window off the image (an
# all-black image) and cutout20 can cover all of it (a blank image): `nas
# run` exits 2 before any trial, naming data.augment's line and the
# largest N that fits, and leaves no database; a recipe choice list with
# such a policy likewise. crop15,flip,cutout19 runs. `nas train --augment`
# is checked the same way (exit 2, no usage text), and nas train's default
# augmentation (crop,flip) on 4x4 images says to give --augment.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
"$PY" - <<'PYEOF'
import numpy as np
rng = np.random.default_rng(9)
for name, shape in (("r", (3, 16, 20)), ("t", (4, 4))):
    lab = np.arange(48) % 3
    np.save(f"{name}-x.npy", rng.integers(0, 256, (48,) + shape, dtype=np.uint8))
    np.save(f"{name}-y.npy", lab.astype(np.int64))
PYEOF
[ -f r-x.npy ] || fail "could not write the test data"

# conf FILE NAME PREFIX STAGES AUGMENT: one trial on PREFIX-x.npy (tested on itself)
conf() {
    cat >"$1" <<CONF
experiment = "$2";
seed = 3;
data: { format = "npy"; train_images = "$3-x.npy"; train_labels = "$3-y.npy";
        test_images = "$3-x.npy"; test_labels = "$3-y.npy"; valid = 12;
        augment = $5; };
space: { channels = 4; stages = $4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 16; backend = "ref"; threads = 1; };
search: { strategy = "random"; trials = 1; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
}

note "nas run refuses a crop or cutout that can leave nothing of 16x20 images"
for case in 'crop16|"crop16"|cropN with N at most 15' 'cutout20|"cutout20"|cutoutN with N at most 19' \
            'choice|["flip", "crop4", "crop20,flip"]|choice = "crop20,flip": crop20'; do
    IFS='|' read -r name aug want <<<"$case"
    conf "$name.conf" "aug-$name" r 2 "$aug"
    run 2 "$NAS" run "$name.conf" --db "$name.db"
    grep_in "$name.conf:5: data.augment" "$TMP/err"
    grep_in "$want" "$TMP/err"
    grep_in "the images are 16x20 (H x W)" "$TMP/err"
    [ -e "$name.db" ] && fail "$name: a refused run left $name.db"
done

note "crop15,flip,cutout19 fits 16x20 images"
conf ok.conf aug-ok r 2 '"crop15,flip,cutout19"'
run 0 "$NAS" run ok.conf --db ok.db --quiet
expect_eq "done trials" "$(sql ok.db "SELECT count(*) FROM trial WHERE status = 'done'")" 1
run 0 "$NAS" export --db ok.db --best --format json -o ok.json

note "nas train --augment is checked against the data's images"
run 2 "$NAS" train ok.json --epochs 1 --checkpoint none --augment crop16
grep_in "nas train: checking the augmentation: --augment crop16: crop16 shifts" "$TMP/err"
grep_in "expected cropN with N at most 15" "$TMP/err"
grep -q "^usage:" "$TMP/err" && fail "a refused --augment printed the usage text"
run 2 "$NAS" train ok.json --epochs 1 --checkpoint none --augment flip,cutout20
grep_in "expected cutoutN with N at most 19" "$TMP/err"
run 0 "$NAS" train ok.json --epochs 1 --checkpoint none --augment crop15,cutout19
grep_in "test accuracy" "$TMP/out"

note "nas train's default crop,flip on 4x4 images says to give --augment"
conf tiny.conf aug-tiny t 1 '"flip"'
run 0 "$NAS" run tiny.conf --db tiny.db --quiet
run 0 "$NAS" export --db tiny.db --best --format json -o tiny.json
run 2 "$NAS" train tiny.json --epochs 1 --checkpoint none
grep_in "default augmentation (crop,flip): crop4 shifts the image by up to 4 pixels" "$TMP/err"
grep_in "give --augment" "$TMP/err"
run 0 "$NAS" train tiny.json --epochs 1 --checkpoint none --augment flip
grep_in "augment flip" "$TMP/out"
note "ok"
