#!/usr/bin/env bash
# tests/e2e/test_cell_stages.sh - issue 28, defect 5: a cell space with more
# stages than the input can halve (stages = 4 on 28x28: 28 -> 14 -> 7, and
# the third reduction meets an odd 7x7) is a configuration error with
# file:line and the shape arithmetic, exit 2, before any trial: for
# `nas space`, `nas space --genotype` and `nas run` on the Fashion-MNIST
# shorthand (the size is known from the config), and for `nas run` on npy
# data whose size only the files tell (checked once the data is loaded).
# It used to print -0.000 MMACs and -1 params, exit 0, and fail every trial
# with "cannot build a network".
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
cd "$TMP" || fail "cd"
sed 's/^  stages = 3;/  stages = 4;/' "$SRC/examples/fashion-cells.conf" >s4.conf
line=$(grep -n '^  stages = 4;' s4.conf | cut -d: -f1)
[ -n "$line" ] || fail "s4.conf has no stages = 4 line"
why="space.stages = 4 cannot pass a 28x28 input"
arith="(28x28 -> 14x14 -> 7x7), and stage 4 would halve 7x7, an odd size, expected space.stages of at most 3"

run 2 "$NAS" space s4.conf
grep_in "s4.conf:$line: $why" "$TMP/err"
grep_in "$arith" "$TMP/err"
if grep -q -- "-0.000\| -1 " "$TMP/out"; then cat "$TMP/out"; fail "nas space printed counts"; fi

G='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|'
run 2 "$NAS" space s4.conf --genotype "$G"
grep_in "s4.conf:$line: $why" "$TMP/err"

need_fmnist
run 2 "$NAS" run s4.conf --db "$TMP/s4.db"
grep_in "s4.conf:$line: $why" "$TMP/err"
grep_in "$arith" "$TMP/err"

# npy data of 28x28: the config cannot tell the size, the loaded data can
need_numpy
fmnist_subset "$TMP" 200 0
data_conf npy4.conf npy4 'format = "npy"; train_images = "train-images.npy";
    train_labels = "train-labels.npy"; valid = 50;'
sed -i 's/stages = 2;/\n  stages = 4;/' npy4.conf
line=$(grep -n 'stages = 4;' npy4.conf | cut -d: -f1)
run 2 "$NAS" run npy4.conf --db "$TMP/npy4.db"
grep_in "npy4.conf:$line: $why" "$TMP/err"
grep_in "$arith" "$TMP/err"
grep_in "(the data's images are 28x28)" "$TMP/err"
[ ! -e "$TMP/npy4.db" ] || fail "the refused run left npy4.db behind"
# nas space counts an npy space at its input (space.input, else 28x28) and
# says why not, with or without --genotype
run 2 "$NAS" space npy4.conf --genotype "$G"
grep_in "cannot count genotype .*: $why" "$TMP/err"
run 2 "$NAS" space npy4.conf
grep_in "$why.*(nas space counts at this input)" "$TMP/err"
# stages = 3 passes 28x28
sed -i 's/stages = 4;/stages = 3;/' s4.conf
run 0 "$NAS" space s4.conf
echo "PASS"
