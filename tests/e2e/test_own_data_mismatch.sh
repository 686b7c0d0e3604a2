#!/usr/bin/env bash
# tests/e2e/test_own_data_mismatch.sh - own data that does not fit what the
# config or the exported architecture says (found by a fresh-eyes test):
#  1. a chain space whose space.input or space.classes is not the data's:
#     `nas run` exits 2 before any trial, naming the config's line, and
#     leaves no database (it used to run every trial and fail each one);
#     a cell space the same (it used to ignore both keys silently and
#     train networks at the data's shape and class count), and a zero-cost
#     search or `nas space --zero-cost` with a proxy that reads the data;
#     a cell experiment an older nas stored with such a key resumes once
#     the key is left out (it shaped no network: a running setting);
#  2. `nas train ARCH.json` on training data that gained a class since the
#     search: refused when the data is read, naming the label file and the class
#     count (it used to fail in the first training step's softmax);
#  3. a search with 2 classes and 4 validation images, where 1/2 + 3
#     standard errors is above 1: no trial is flagged diverged at "chance
#     level" (every one was, a perfect score too);
#  4. data keys whose fit only the data's files tell (data.valid, data.train_subset,
#     data.mean) are refused naming the key's file:line, and an unset
#     data.valid whose default (5000) is too many says so.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"

# NAME CLASSES N: 3x16x16 uint8 npy images and int64 labels 0..CLASSES-1
"$PY" - "$TMP" <<'PYEOF' || fail "writing the data"
import sys, numpy as np
rng = np.random.default_rng(5)
def write(name, k, n):
    y = np.arange(n) % k
    x = rng.integers(0, 50, (n, 16, 16, 3)).astype(np.uint8)
    for i in range(n):
        x[i, 4 * y[i]:4 * y[i] + 4] += 150
    np.save(f"{sys.argv[1]}/{name}-x.npy", x)
    np.save(f"{sys.argv[1]}/{name}-y.npy", y.astype(np.int64))
write("k3", 3, 60)
write("k3test", 3, 12)
write("k4", 4, 60)
write("k2", 2, 24)
PYEOF
npy() { # IMAGES-LABELS-NAME [TEST-NAME]
    echo "format = \"npy\"; train_images = \"$TMP/$1-x.npy\"; train_labels = \"$TMP/$1-y.npy\";" \
         "${2:+test_images = \"$TMP/$2-x.npy\"; test_labels = \"$TMP/$2-y.npy\";}"
}

note "1. chain space.input not the data's: exit 2 at its line, no database"
chain_conf "$TMP/in.conf" in "$(npy k3) valid = 12;" "input = [1, 28, 28];"
line=$(grep -n "input = \[1, 28, 28\]" "$TMP/in.conf" | cut -d: -f1)
run 2 "$NAS" run "$TMP/in.conf" --db "$TMP/in.db"
grep_in "in.conf:$line: space.input = \[1, 28, 28\] is not the data's shape \[3, 16, 16\]" \
    "$TMP/err"
[ -e "$TMP/in.db" ] && fail "nas run left in.db behind"
grep -q "FAILED" "$TMP/err" && fail "trials ran: $(cat "$TMP/err")"

note "1b. chain space.classes not the data's"
chain_conf "$TMP/cl.conf" cl "$(npy k3) valid = 12;" "classes = 10;"
line=$(grep -n "classes = 10;" "$TMP/cl.conf" | cut -d: -f1)
run 2 "$NAS" run "$TMP/cl.conf" --db "$TMP/cl.db"
grep_in "cl.conf:$line: space.classes = 10 is not the data's 3 classes" "$TMP/err"
[ -e "$TMP/cl.db" ] && fail "nas run left cl.db behind"

note "1c. both set to the data's: the search runs"
chain_conf "$TMP/ok.conf" ok "$(npy k3 k3test) valid = 12;" "input = [3, 16, 16]; classes = 3;"
run 0 "$NAS" run "$TMP/ok.conf" --db "$TMP/ok.db"

# cell_keys FILE KEYS: data_conf's cell space with KEYS on a line of their own
cell_keys() { sed -i "s/^space: { \(.*\) };\$/space: { \1\n  $2 };/" "$1"; }

note "1d. cell space.input not the data's: exit 2 at its line, no database"
data_conf "$TMP/cin.conf" cin "$(npy k3) valid = 12;"
cell_keys "$TMP/cin.conf" "input = [1, 28, 28];"
line=$(grep -n "input = \[1, 28, 28\]" "$TMP/cin.conf" | cut -d: -f1)
run 2 "$NAS" run "$TMP/cin.conf" --db "$TMP/cin.db"
grep_in "cin.conf:$line: space.input = \[1, 28, 28\] is not the data's shape \[3, 16, 16\]" \
    "$TMP/err"
[ -e "$TMP/cin.db" ] && fail "nas run left cin.db behind"

note "1e. cell space.classes not the data's (fewer, more)"
for k in 2 10; do
    data_conf "$TMP/ccl$k.conf" ccl$k "$(npy k3) valid = 12;"
    cell_keys "$TMP/ccl$k.conf" "classes = $k;"
    line=$(grep -n "classes = $k;" "$TMP/ccl$k.conf" | cut -d: -f1)
    run 2 "$NAS" run "$TMP/ccl$k.conf" --db "$TMP/ccl$k.db"
    grep_in "ccl$k.conf:$line: space.classes = $k is not the data's 3 classes" "$TMP/err"
    [ -e "$TMP/ccl$k.db" ] && fail "nas run left ccl$k.db behind"
done

note "1f. zero-cost (naswot reads a minibatch): the same refusal, in nas run and nas space"
data_conf "$TMP/zc.conf" zc "$(npy k3) valid = 12;"
cell_keys "$TMP/zc.conf" "classes = 10;"
sed -i 's/^evaluator: {/evaluator: { kind = "zero-cost"; proxy = "naswot";/' "$TMP/zc.conf"
line=$(grep -n "classes = 10;" "$TMP/zc.conf" | cut -d: -f1)
run 2 "$NAS" run "$TMP/zc.conf" --db "$TMP/zc.db"
grep_in "zc.conf:$line: space.classes = 10 is not the data's 3 classes" "$TMP/err"
[ -e "$TMP/zc.db" ] && fail "nas run left zc.db behind"
run 2 "$NAS" space "$TMP/zc.conf" --list --zero-cost naswot
grep_in "zc.conf:$line: space.classes = 10 is not the data's 3 classes" "$TMP/err"

note "1g. a cell experiment an older nas stored with space.classes = 10 over 3 classes (it"
note "    was ignored): refused as it stands, extended once the key is left out"
data_conf "$TMP/old.conf" old "$(npy k3) valid = 12;"
sed -i 's/trials = 3;/trials = 1;/' "$TMP/old.conf"
run 0 "$NAS" run "$TMP/old.conf" --db "$TMP/old.db"
sql "$TMP/old.db" "UPDATE experiment SET conf_canonical = replace(conf_canonical,
    'space.cells_per_stage = 1;', 'space.cells_per_stage = 1;' || char(10) ||
    'space.classes = 10;')"
sed 's/trials = 1;/trials = 2;/' "$TMP/old.conf" >"$TMP/old2.conf"
cp "$TMP/old2.conf" "$TMP/old10.conf"
cell_keys "$TMP/old10.conf" "classes = 10;"
run 2 "$NAS" run "$TMP/old10.conf" --db "$TMP/old.db"
grep_in "space.classes = 10 is not the data's 3 classes" "$TMP/err"
run 0 "$NAS" run "$TMP/old2.conf" --db "$TMP/old.db"
grep_in "space.classes: 10 -> (not set: the data's)" "$TMP/err"
grep_in "extending experiment 'old' (id 1)" "$TMP/err"
expect_eq "done trials" "$(sql "$TMP/old.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 2

note "2. nas train on training data that gained a class since the search"
run 0 "$NAS" export --db "$TMP/ok.db" --best --format json -o "$TMP/ok.json"
cp "$TMP/k4-x.npy" "$TMP/k3-x.npy"
cp "$TMP/k4-y.npy" "$TMP/k3-y.npy"
run 1 "$NAS" train "$TMP/ok.json" --epochs 1 --threads 1 --checkpoint none
grep_in "k3-y.npy: label 3 of image [0-9]* is out of range 0..2: the experiment's network has 3" \
    "$TMP/err"
grep -q "softmax" "$TMP/err" && fail "refused only by the training step: $(cat "$TMP/err")"

note "3. 2 classes, 4 validation images: no chance-level flag (and a cell space whose"
note "   space.input and space.classes are the data's runs)"
data_conf "$TMP/k2.conf" k2 "$(npy k2) valid = 4;"
cell_keys "$TMP/k2.conf" "input = [3, 16, 16]; classes = 2;"
run 0 "$NAS" run "$TMP/k2.conf" --db "$TMP/k2.db"
expect_eq "trials flagged diverged" \
    "$(sql "$TMP/k2.db" "SELECT count(*) FROM trial WHERE flag = 'diverged'")" 0
grep -q "chance level" "$TMP/err" && fail "a chance-level flag: $(cat "$TMP/err")"

note "4. data keys that do not fit the files: file:line"
line=$(grep -n "^data:" "$TMP/k2.conf" | cut -d: -f1)
data_conf "$TMP/v.conf" v "$(npy k2) valid = 24;"
run 2 "$NAS" run "$TMP/v.conf" --db "$TMP/v.db"
grep_in "v.conf:$line: data.valid = 24 does not fit the 24 training images" "$TMP/err"
data_conf "$TMP/s.conf" s "$(npy k2) valid = 4; train_subset = 21;"
run 2 "$NAS" run "$TMP/s.conf" --db "$TMP/s.db"
grep_in "s.conf:$line: data.train_subset = 21 is more than the 20 training images" "$TMP/err"
data_conf "$TMP/m.conf" m "$(npy k2) valid = 4; mean = [0.5]; std = [0.2];"
run 2 "$NAS" run "$TMP/m.conf" --db "$TMP/m.db"
grep_in "m.conf:$line: data.mean and data.std have 1 and 1 values, but the images" "$TMP/err"
data_conf "$TMP/d.conf" d "$(npy k2)"
run 2 "$NAS" run "$TMP/d.conf" --db "$TMP/d.db"
grep_in "data.valid is not set: its default is a count of 5000 images" "$TMP/err"
for f in v s m d; do [ -e "$TMP/$f.db" ] && fail "nas run left $f.db behind"; done
echo "PASS"
