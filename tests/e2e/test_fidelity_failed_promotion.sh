#!/usr/bin/env bash
# tests/e2e/test_fidelity_failed_promotion.sh - issue 29, defect 1, repro A:
# a failed promotion (stored 'done' with its earlier rung: here a NaN at
# the higher rung and a timeout) replays as itself. Successive halving,
# 9 trials in 3 brackets of 3 (min 1, max 3, eta 3), one promotion each:
# bracket 0's promotion "trains" to NaN, bracket 1's runs past
# trial_timeout_s, bracket 2's succeeds (NAS_FAULT KIND@TRIAL>1: every
# attempt after a trial's first rung). The replay once re-queued the failed
# promotions, so the stage never completed, the later stored trials were
# orphaned and new ones proposed past search.trials.
# 1. the finished experiment run again: "nothing to do", nothing trained;
# 2. a copy cut after bracket 1 (trials 7-9 deleted, interrupted) resumes to
#    the trials and rungs of the uninterrupted run, 9 trials in all.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf a.conf promo 5 "trial_timeout_s = 4;"
export NAS_FAULT="nan@1>1,nan@2>1,nan@3>1,spin@4>1,spin@5>1,spin@6>1"

note "the uninterrupted run"
run 0 "$NAS" run a.conf --db ref.db
cp "$TMP/err" "$TMP/ref.err"
BEST=$(grep "best:" "$TMP/out")
BEST_ID=$(sql ref.db "SELECT trial_id FROM rung WHERE fidelity = 3")
expect_eq "the best is the trial trained to 3 epochs" "$BEST" "$(printf '  best:    trial %s, val_accuracy %.4f' "$BEST_ID" "$(sql ref.db "SELECT val_accuracy FROM rung WHERE fidelity = 3")")"
expect_eq "trials" "$(sql ref.db "SELECT count(*) FROM trial")" 9
expect_eq "failed promotions" \
    "$(sql ref.db "SELECT count(*) FROM trial WHERE status = 'done' AND error LIKE 'promotion to 3 failed%'")" 2
expect_eq "promotions that succeeded" "$(sql ref.db "SELECT count(*) FROM rung WHERE fidelity = 3")" 1
# 10a: a failed promotion is labelled by its rung (it was "[trial 3, 0/9]")
if grep -q ", 0/9\]" "$TMP/ref.err"; then grep ", 0/9\]" "$TMP/ref.err"; fail "a job labelled 0/9"; fi
expect_eq "failed promotions labelled by rung" \
    "$(grep -c '^\[trial [0-9]*, rung 1\] FAILED promotion of ' "$TMP/ref.err")" 2
# issue 29, defect 5: rung lines show the trials finished of the budget and the ETA
grep_in "^\[trial 9, rung 0\] done .* | 9/9 trials, elapsed [0-9ms]*, ETA " "$TMP/ref.err"

note "the finished experiment, run again"
cp ref.db again.db
run 0 "$NAS" run a.conf --db again.db
grep_in "nothing to do" "$TMP/err"
# defect 5: the replayed best is the best at the highest fidelity, not at rung 0
expect_eq "best after the rerun" "$(grep "best:" "$TMP/out")" "$BEST"
if grep -E "\] (train|promote) " "$TMP/err"; then fail "the finished experiment trained again"; fi
fid_same again.db ref.db "after the rerun"

note "a copy cut after bracket 1, resumed"
cp ref.db cut.db
fid_cut cut.db 6
run 0 "$NAS" run a.conf --db cut.db
grep_in "6 done, 0 failed of 9; 0 unfinished" "$TMP/err"
fid_same cut.db ref.db "after the resume"
expect_eq "best after the resume" "$(grep "best:" "$TMP/out")" "$BEST"

note "extended to 12 trials: the live best includes the earlier runs' trials"
sed -i 's/trials = 9;/trials = 12;/' a.conf
run 0 "$NAS" run a.conf --db cut.db
grep_in "^\[trial 10, rung 0\] done .* | best [0-9.]* (trial $BEST_ID) |" "$TMP/err"
echo "PASS"
