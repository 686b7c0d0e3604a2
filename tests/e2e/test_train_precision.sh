#!/usr/bin/env bash
# tests/e2e/test_train_precision.sh - `nas train --precision` (issue 7):
#  - an unknown precision is a usage error (exit 2) naming the choices;
#  - fp16 on the cpu backend (CUDA-only) exits 1 with a message naming the
#    precision and the backend, in both forms of nas train (--genotype and
#    ARCH.json);
#  - bf16 on a tiny ARCH.json run trains, says "bf16" in its header and
#    ends with a test loss that differs from the same run in fp32 (so the
#    precision reached the backend); skipped visibly (77) when the CPU
#    backend refuses bf16 on this CPU.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
G='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

note "unknown precision: usage error"
run 2 "$NAS" train --genotype "$G" --precision fp8
grep_in "'fp8' is not fp32, bf16 or fp16" "$TMP/err"

note "fp16 on the cpu backend: refused with the reason"
run 1 "$NAS" train --genotype "$G" --precision fp16 --epochs 1 --channels 4
grep_in "--precision fp16 is not available on the cpu backend" "$TMP/err"
grep_in "CUDA-only" "$TMP/err"
grep -q "^epoch" "$TMP/out" && fail "fp16 on the cpu trained anyway"

run 0 "$NAS" export --genotype "$G" --channels 4 --format json -o "$TMP/a.json"
tiny=(--subset 128 --test-subset 128 --batch-size 64 --epochs 1 --threads 1 --checkpoint none)
run 1 "$NAS" train "$TMP/a.json" "${tiny[@]}" --precision fp16
grep_in "--precision fp16 is not available on the cpu backend" "$TMP/err"
run 2 "$NAS" train "$TMP/a.json" "${tiny[@]}" --precision half
grep_in "'half' is not fp32, bf16 or fp16" "$TMP/err"

note "bf16 vs fp32 on a tiny run"
"$NAS" train "$TMP/a.json" "${tiny[@]}" --precision bf16 >"$TMP/bf16.out" 2>"$TMP/bf16.err"
rc=$?
if [ $rc -ne 0 ] && grep -q "bf16 is not available on the cpu backend" "$TMP/bf16.err"; then
    cat "$TMP/bf16.err"
    skip "the cpu backend has no bf16 on this CPU"
fi
[ $rc -eq 0 ] || { cat "$TMP/bf16.out" "$TMP/bf16.err"; fail "bf16 run exited $rc"; }
grep_in "cpu backend, bf16," "$TMP/bf16.out"
run 0 "$NAS" train "$TMP/a.json" "${tiny[@]}" --precision fp32
cp "$TMP/out" "$TMP/fp32.out"
grep_in "cpu backend, fp32," "$TMP/fp32.out"
loss() { sed -n 's/^test accuracy [0-9.]*  test loss \([0-9.]*\) .*/\1/p' "$1"; }
lb=$(loss "$TMP/bf16.out")
lf=$(loss "$TMP/fp32.out")
note "test loss: bf16 $lb, fp32 $lf"
[ -n "$lb" ] && [ -n "$lf" ] || fail "no test loss printed"
awk -v a="$lb" -v b="$lf" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > 0 && d < 0.05) }' ||
    fail "bf16 test loss $lb vs fp32 $lf: expected close but not identical"
echo "PASS"
