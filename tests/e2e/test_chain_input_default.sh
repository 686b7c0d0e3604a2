#!/usr/bin/env bash
# tests/e2e/test_chain_input_default.sh - issue 28 defect 4: a chain
# space's input and classes default to the data's (README, docs/spaces.md).
# On 3-channel 32x32 npy data with 5 classes and no space.input or
# space.classes, `nas space` counts for 3x32x32 images and 5 classes, for
# a chain space and for a cell space (both counted for 1x28x28 and 10),
# and every trial of a search trains (every one failed). A space.input or
# space.classes that is not the data's is refused before any trial, at its
# line (exit 2, no database; it used to fail every trial). A search whose
# every trial failed (here: NAS_FAULT nan) says on its rerun how to search
# again (--new, --experiment) instead of only "nothing to do"; and a rerun
# with another space.input (or another stem) is refused as a change of the
# experiment's defining settings, naming them and --new (the chain space's
# input, classes, stem, head and se_gate were not compared: the rerun said
# "nothing to do").
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
cd "$TMP" || fail "cd"
"$PY" - <<'PYEOF'
import numpy as np
rng = np.random.default_rng(5)
lab = rng.integers(0, 5, 120)
np.save("x.npy", rng.integers(0, 256, (120, 32, 32, 3), dtype=np.uint8))
np.save("y.npy", lab.astype(np.int64))
PYEOF
conf() { # conf FILE SPACE-KEYS: 2 trials on the npy data
    chain_conf "$1" defaults 'format = "npy"; train_images = "x.npy"; train_labels = "y.npy"; valid = 20;' "$2"
}

note "nas space: the data's shape and classes"
conf unset.conf ""
conf set.conf "input = [3, 32, 32]; classes = 5;"
run 0 "$NAS" space unset.conf
grep_in "input 3x32x32, 5 classes" "$TMP/out"
cp "$TMP/out" unset.out
run 0 "$NAS" space set.conf
# the same counts as with the shape spelled out (the header names the file)
expect_eq "nas space without input = with input" "$(tail -n +2 unset.out)" "$(tail -n +2 "$TMP/out")"

note "nas space on a cell space: the data's shape and classes too (it said 1x28x28, 10 classes)"
data_conf cell.conf cells 'format = "npy"; train_images = "x.npy"; train_labels = "y.npy"; valid = 20;'
sed 's/^space: { /space: { input = [3, 32, 32]; classes = 5; /' cell.conf >cellset.conf
run 0 "$NAS" space cell.conf
grep_in "cell, input 3x32x32, 5 classes" "$TMP/out"
cp "$TMP/out" cell.out
run 0 "$NAS" space cellset.conf
expect_eq "cell: nas space without input = with input" "$(tail -n +2 cell.out)" "$(tail -n +2 "$TMP/out")"

note "nas run: every trial trains"
run 0 "$NAS" run unset.conf --db unset.db
expect_eq "done trials" "$(sql unset.db "SELECT count(*) FROM trial WHERE status = 'done'")" 2

note "space.input and space.classes not the data's: refused at their line, before any trial"
conf wrong.conf "input = [1, 28, 28]; classes = 10;"
run 2 "$NAS" run wrong.conf --db wrong.db
grep_in "wrong.conf:[0-9]*: space.input = \[1, 28, 28\] is not the data's shape \[3, 32, 32\]" \
    "$TMP/err"
[ -e wrong.db ] && fail "nas run left wrong.db behind"
conf wrong.conf "classes = 10;"
run 2 "$NAS" run wrong.conf --db wrong.db
grep_in "wrong.conf:[0-9]*: space.classes = 10 is not the data's 5 classes" "$TMP/err"

note "a search whose every trial failed: the rerun says how to search again"
# NAS_FAULT hits the jobs of worker processes
sed "s/workers: { count = 0; };/workers: { count = 1; };/" set.conf >failed.conf
NAS_FAULT="nan@1,nan@2" run 1 "$NAS" run failed.conf --db failed.db
expect_eq "failed trials" "$(sql failed.db "SELECT count(*) FROM trial WHERE status = 'failed'")" 2
run 1 "$NAS" run failed.conf --db failed.db
grep_in "nothing to do" "$TMP/err"
grep_in "every trial of 'defaults' failed" "$TMP/err"
grep_in "nas run failed.conf --new" "$TMP/err"

note "another space.input or stem is a change of the experiment, not nothing"
run 2 "$NAS" run unset.conf --db failed.db
grep_in "space.input: \[3, 32, 32\] -> (not set: the data's)" "$TMP/err"
grep_in "with --new" "$TMP/err"
sed 's/stem = { kernel = 3; channels = 8;/stem = { kernel = 3; channels = 12;/' failed.conf >stem.conf
run 2 "$NAS" run stem.conf --db failed.db
grep_in "space.stem: { kernel = 3; channels = 8;" "$TMP/err"
run 0 "$NAS" run set.conf --db failed.db --new
grep_in "defaults-2" "$TMP/out"
expect_eq "done trials of defaults-2" "$(sql failed.db "SELECT count(*) FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'defaults-2' AND t.status = 'done'")" 2
note "ok"
