#!/usr/bin/env bash
# tests/e2e/test_fidelity_resume_epoch.sh - a resumed promotion's line names
# the epoch it really continues from. A promotion 1 -> 3 epochs is stopped
# (Ctrl-C) once its checkpoint holds epoch 2; the resume continues from that
# checkpoint, and its line said "(from 1)", the rung it was promoted from.
# It says "(from 2)" now. And the checkpoints of the two trials that rung's
# decision left out are deleted when the promotion starts (docs/multi-
# fidelity.md: "as soon as the trial can no longer be promoted"); they were
# kept until the promotion's result. Then search.trials lowered to 2: the
# run counts the 3 trials it has (it said "2 trials (2 done"). 3 trials of 1024 images (about 1 s an
# epoch, so the stop lands between epochs 2 and 3).
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf e.conf epoch 3
sed -i 's/train_subset = 256/train_subset = 1024/; s/trials = 9/trials = 3/' e.conf

"$NAS" run e.conf --db e.db >"$TMP/e.out" 2>"$TMP/e.err" &
RUN_PID=$!
for _ in $(seq 1500); do
    grep -q "\] promote " "$TMP/e.err" 2>/dev/null && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.02
done
P=$(sed -n 's/^\[trial \([0-9]*\), rung 1\] promote .*(from 1;.*/\1/p' "$TMP/e.err" | head -1)
[ -n "$P" ] || { cat "$TMP/e.err"; fail "no promotion from 1 started"; }
fid_stop_at_rewrite "$RUN_PID" "e.db.ckpt/trial-$P.npz" # after epoch 2
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/e.err"; fail "the stopped run exited $code, expected 130"; }
grep_in "1 promotion stopped" "$TMP/e.out"
expect_eq "checkpoints while the promotion ran" "$(cd e.db.ckpt && echo *)" "trial-$P.npz"

note "the resume continues from epoch 2 and says so"
run 0 "$NAS" run e.conf --db e.db
grep_in "^\[trial $P, rung 1\] promote .* to 3 epochs (from 2;" "$TMP/err"
expect_eq "checkpoints after the search" "$(ls -A e.db.ckpt)" ""
expect_eq "its rungs" \
    "$(sql e.db "SELECT group_concat(fidelity) FROM rung WHERE trial_id = $P")" "1,3"

note "search.trials lowered below the stored trials: nothing to do, all of them counted"
sed 's/trials = 3/trials = 2/' e.conf >e2.conf
run 0 "$NAS" run e2.conf --db e.db
grep_in "search.trials = 2 is below the 3 trials experiment 'epoch' (id 1)" "$TMP/err"
grep_in "complete: 3 trials (3 done, 0 failed); this run: 0 trials" "$TMP/out"
run 0 "$NAS" query --db e.db
grep_in "3 of 3 trials finished (3 done, 0 failed)" "$TMP/out"
echo "PASS"
