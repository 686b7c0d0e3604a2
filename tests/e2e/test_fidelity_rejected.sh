#!/usr/bin/env bash
# tests/e2e/test_fidelity_rejected.sh - issue 29, defects 1 (repro B) and 6:
# a latency rejection (stored 'done', no accuracy, no rung) in a
# multi-fidelity search replays as itself, and a run whose scheduler spent
# its trials on rejections says so instead of "the strategy found no new
# architecture" (status 'done', not 'exhausted'). Successive halving, 9
# trials (min 1, max 3, eta 3), 7 of them rejected (NAS_FAULT reject@ID:
# the job ends as a rejection whatever this machine's latency).
# 1. the run names the cause; 2. run again: "nothing to do", nothing
# measured or trained; 3. a copy cut after bracket 0 resumes to the trials
# and rungs of the uninterrupted run, 9 trials in all.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf b.conf rej 4 "" "constraints: { latency_ms = 100000.0; };"
export NAS_FAULT="reject@2,reject@3,reject@5,reject@6,reject@7,reject@8,reject@9"

note "the uninterrupted run"
run 0 "$NAS" run b.conf --db ref.db
expect_eq "trials" "$(sql ref.db "SELECT count(*) FROM trial")" 9
expect_eq "rejected" "$(sql ref.db "SELECT count(*) FROM result WHERE val_accuracy IS NULL")" 7
if grep -q "found no new architecture" "$TMP/out"; then cat "$TMP/out"; fail "blamed the strategy"; fi
grep_in "7 of the multi-fidelity scheduler's 9 trials were rejected by constraints.latency_ms" "$TMP/out"
expect_eq "status" "$(sql ref.db "SELECT status FROM experiment")" done
# 10b: each rejection has its own label (they all said "[trial N, 2/9]")
expect_eq "reject labels" "$(grep -o '^\[trial [0-9]*, rejection [0-9]*\] reject' "$TMP/err" | cut -d' ' -f4 | tr '\n' ' ')" \
    "1] 2] 3] 4] 5] 6] 7] "

# nas query's table shows them as rejected, as the report's trial table
run 0 "$NAS" query --db ref.db
expect_eq "query rows marked rejected" "$(awk '$3 == "rejected"' "$TMP/out" | wc -l)" 7
expect_eq "query rows trained" "$(awk '$3 == "done" || $3 == "diverged"' "$TMP/out" | wc -l)" 2
# nas experiments counts the trained trials as done (it said 9 done of a
# budget of 9 while nas query said 2), the rejections apart
run 0 "$NAS" experiments --db ref.db --format csv
expect_eq "experiments: done, budget, rejected" "$(sed -n 2p "$TMP/out" | cut -d, -f4,7,12)" "2,9,7"
run 0 "$NAS" experiments --db ref.db
grep_in "done counts trained trials: 7 trial(s) rejected by constraints.latency_ms" "$TMP/out"
run 0 "$NAS" show --db ref.db 2
grep_in "^flag  *rejected$" "$TMP/out"
# exporting a rejected trial's weights: it was never trained (the message
# blamed proxy.keep_top: "a search keeps the weights of its best ...")
run 1 "$NAS" export --db ref.db --trial 2 --format onnx -o r.onnx
grep_in "trial 2 of 'rej' was rejected before training (infeasible: latency 1000000.000 ms" "$TMP/err"
grep_in "never trained, it has no weights. Export it with --weights init" "$TMP/err"
[ ! -e r.onnx ] || fail "an export was written"
run 0 "$NAS" export --db ref.db --trial 2 --format json -o r.json

note "the finished experiment, run again"
cp ref.db again.db
run 0 "$NAS" run b.conf --db again.db
grep_in "nothing to do" "$TMP/err"
if grep -E "\] (train|promote|re-run) " "$TMP/err"; then fail "the finished experiment ran jobs again"; fi
fid_same again.db ref.db "after the rerun"

note "a copy cut after bracket 0, resumed"
cp ref.db cut.db
fid_cut cut.db 3
run 0 "$NAS" run b.conf --db cut.db
grep_in "1 done, 0 failed of 9; 0 unfinished" "$TMP/err"
fid_same cut.db ref.db "after the resume"
echo "PASS"
