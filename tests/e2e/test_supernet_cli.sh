#!/usr/bin/env bash
# tests/e2e/test_supernet_cli.sh - `nas supernet` end to end (issue 32): a
# tiny chain space (MBConv with SE, widths and depths to choose) on 1,024
# Fashion-MNIST images: the supernet trains 2 epochs with a checkpoint, 4
# random genotypes are evaluated by inherited weights and trained
# stand-alone with 2 seeds; the rows and the last line carry every figure.
# A rerun resumes the finished checkpoint (no step trained again, the same
# supernet accuracies); another recipe (--epochs 3) is refused naming the
# line of the fingerprints that differs; bad options are usage errors (exit 2),
# and so is a config with recipe choices (a list for proxy.lr); an unwritable
# --out and more --genotypes than the space holds are refused before any training.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/chain_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
chain_conf "$TMP/c.conf" supernet-cli 5 1024 mb6_k5 0.1 0.1 4
CK=$TMP/sn.npz
note "train, evaluate 4 genotypes, 2 stand-alone seeds"
run 0 "$NAS" supernet "$TMP/c.conf" --epochs 2 --genotypes 4 --seeds 2 --checkpoint "$CK"
cp "$TMP/out" "$TMP/first.out"
[ -f "$CK" ] || fail "no checkpoint written"
[ -f "$TMP/sn.weights" ] || fail "no weights file written beside the checkpoint"
grep -q "subnets read from $TMP/sn.weights, mapped read-only" "$TMP/err" || { cat "$TMP/err"; fail "the subnets were not read from the mapped weights file"; }
grep -q "supernet epoch 2/2" "$TMP/err" || { cat "$TMP/err"; fail "no per-epoch progress"; }
[ "$(grep -c $'\t' "$TMP/out")" -eq 5 ] || { cat "$TMP/out"; fail "expected a header and 4 rows"; }
last=$(tail -n 1 "$TMP/out")
echo "$last" | grep -Eq '^supernet supernet_tau=-?[0-9.]+ seed_tau=-?[0-9.]+ subnets_per_s=[0-9.]+ supernet_s=[0-9.]+ eval_s=[0-9.]+ standalone_s=[0-9.]+$' ||
    fail "last line: $last"
# every accuracy is a fraction, and the supernet's are better than chance (10 classes)
awk -F'\t' 'NR > 1 && NF == 4 { for (i = 2; i <= 4; i++) if ($i < 0 || $i > 1) exit 1;
             if ($2 < 0.15) exit 1 }' "$TMP/out" || { cat "$TMP/out"; fail "an accuracy out of range"; }

note "a rerun resumes the finished supernet"
run 0 "$NAS" supernet "$TMP/c.conf" --epochs 2 --genotypes 4 --checkpoint "$CK"
grep -q "resumed .* after 64 steps" "$TMP/err" || { cat "$TMP/err"; fail "not resumed"; }
grep -q "supernet epoch" "$TMP/err" && fail "a resumed finished supernet trained again"
diff <(cut -f1,2 "$TMP/first.out" | grep $'\t' | tail -n +2) <(cut -f1,2 "$TMP/out" | grep $'\t' | tail -n +2) ||
    fail "the resumed supernet ranks differently"

note "another recipe is refused"
run 1 "$NAS" supernet "$TMP/c.conf" --epochs 3 --genotypes 4 --checkpoint "$CK"
grep -q 'belongs to another supernet: "supernet recipe: 2 epochs.*" in the file, "supernet recipe: 3 epochs' "$TMP/err" ||
    { cat "$TMP/err"; fail "the message does not name the differing line"; }

note "usage errors"
run 2 "$NAS" supernet "$TMP/c.conf" --genotypes 1
run 2 "$NAS" supernet "$TMP/c.conf" --bogus
run 2 "$NAS" supernet
run 2 "$NAS" supernet "$TMP/c.conf" --epochs
grep -q -- "--epochs needs a value" "$TMP/err" || { cat "$TMP/err"; fail "a missing value is not named"; }

note "an unwritable --out is refused before the training"
run 1 "$NAS" supernet "$TMP/c.conf" --epochs 1 --genotypes 2 --out /nonexistent-dir/rows.tsv
grep -q "cannot write /nonexistent-dir/rows.tsv" "$TMP/err" || { cat "$TMP/err"; fail "--out not checked"; }
grep -q "supernet epoch" "$TMP/err" && fail "trained before finding --out unwritable"

note "more --genotypes than the space has is refused before the training"
run 2 "$NAS" supernet "$TMP/c.conf" --epochs 1 --genotypes 5000
grep -q -- "--genotypes 5000, but the space has 234 distinct genotypes" "$TMP/err" ||
    { cat "$TMP/err"; fail "--genotypes beyond the space not named"; }
grep -q "supernet epoch" "$TMP/err" && fail "trained before finding --genotypes too many"

note "recipe choices (issue 33) are refused: the supernet trains one recipe"
sed 's/lr = 0.1;/lr = [0.05, 0.1];/' "$TMP/c.conf" >"$TMP/r.conf"
run 2 "$NAS" supernet "$TMP/r.conf" --epochs 1 --genotypes 2
grep -q "r.conf: proxy.lr is a list of 2 recipe choices" "$TMP/err" ||
    { cat "$TMP/err"; fail "recipe choices not refused by name"; }
echo "ok"
