#!/usr/bin/env bash
# tests/e2e/test_proxy_check.sh - `nas proxy-check` (issue 30,
# docs/proxy.md) on a tiny Fashion-MNIST subset: 4 architectures x 2 seeds
# x 3 rungs. Checks the last line's format, the stored rows and the
# experiment's kind (`nas experiments`, `nas query` on it), then that a run
# stopped by SIGINT and run again repeats no training and ends with the
# rows of the uninterrupted run (each (architecture, seed) is one run
# continued from its checkpoint), and that other options are refused.
# Issue 30: with BN recalibration on (the default), the verdict does not
# suggest it.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
cat >"$TMP/pc.conf" <<CONF
experiment = "tiny";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 540; valid = 300; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; };
workers: { count = 2; };
CONF
rows() { sql "$1" "SELECT arch, genotype, seed_index, seed, rung, budget, val_accuracy, train_loss FROM proxy_check ORDER BY arch, seed_index, rung"; }
LAST='^proxy_check reliability=-?[0-9.]+ seed_tau=-?[0-9.]+ low_rung_tau=-?[0-9.]+ cost_s=[0-9.]+$'

note "an uninterrupted check"
run 0 "$NAS" proxy-check pc.conf --db ref.db --genotypes 4
tail -n 1 "$TMP/out" | grep -Eq "$LAST" || { cat "$TMP/out"; fail "last line: $(tail -n 1 "$TMP/out")"; }
grep_in "verdict:" "$TMP/out"
LINE=$(sed -n '$p' "$TMP/out")
# BN recalibration is on by default (10 batches): the figures say so, and
# the verdict's knobs do not suggest it (a rung at chance level with fresh
# statistics has too little budget)
grep_in "300 validation images, BN recalibration over 10 batches" "$TMP/out"
if grep -E "recalibration first|recalibrate them|a recalibrated one" "$TMP/out"; then
    cat "$TMP/out"; fail "the verdict suggests recalibration, which is on"
fi
grep -E "^  knob" "$TMP/out" || fail "no knob line"
grep_in "(60, 180, 540 images) = 24 trainings" "$TMP/err"
expect_eq "rows" "$(sql ref.db "SELECT count(*) FROM proxy_check WHERE val_accuracy IS NOT NULL")" 24
expect_eq "kind and status" "$(sql ref.db "SELECT name, strategy, status FROM experiment")" \
    "tiny-proxy-check|proxy-check|done"
expect_eq "checkpoints left" "$(ls ref.db.ckpt | wc -l)" 0
run 0 "$NAS" experiments --db ref.db
grep -Eq "tiny-proxy-check +done +24 +0 +24 .*\(proxy check\)" "$TMP/out" || { cat "$TMP/out"; fail "nas experiments"; }
run 0 "$NAS" query --db ref.db

note "rerun of a finished check: nothing trained, the same figures"
run 0 "$NAS" proxy-check pc.conf --db ref.db --genotypes 4
expect_eq "trainings run" "$(grep -c '^\[arch' "$TMP/err")" 0
grep_in "; 24 stored before" "$TMP/err"
expect_eq "figures" "$(sed -n '$p' "$TMP/out" | sed 's/ cost_s=.*//')" "${LINE% cost_s=*}"

note "stopped by SIGINT after some trainings, then run again"
"$NAS" proxy-check pc.conf --db k.db --genotypes 4 >"$TMP/k1.out" 2>"$TMP/k1.err" &
RUN_PID=$!
n=0
for _ in $(seq 1 1200); do
    sleep 0.1
    n=$(sql k.db "SELECT count(*) FROM proxy_check" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 6 ] && break
done
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/k1.err"; fail "the stopped check exited $code, expected 130"; }
n=$(sql k.db "SELECT count(*) FROM proxy_check")
[ "$n" -ge 6 ] && [ "$n" -lt 24 ] || fail "$n trainings stored when stopped (expected 6..23)"
expect_eq "status" "$(sql k.db "SELECT status FROM experiment")" "interrupted"
run 0 "$NAS" proxy-check pc.conf --db k.db --genotypes 4
grep_in "; $n stored before" "$TMP/err"
expect_eq "trainings in the rerun" "$(grep -c '^\[arch' "$TMP/err")" "$((24 - n))"
expect_eq "rows equal the uninterrupted check's" "$(rows k.db)" "$(rows ref.db)"
expect_eq "last line" "$(sed -n '$p' "$TMP/out" | sed 's/ cost_s=.*//')" "${LINE% cost_s=*}"

note "other options than the stored check's are refused"
run 2 "$NAS" proxy-check pc.conf --db ref.db --genotypes 4 --seeds 3
grep_in "archs=4 seeds=2" "$TMP/err"
run 2 "$NAS" proxy-check pc.conf --db ref.db --genotypes 1
echo "PASS"
