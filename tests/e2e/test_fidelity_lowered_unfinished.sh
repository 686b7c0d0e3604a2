#!/usr/bin/env bash
# tests/e2e/test_fidelity_lowered_unfinished.sh - a multi-fidelity search
# resumed with search.trials below its stored trials keeps them all as its
# budget (the scheduler places every one), so a trial a killed run left
# running is re-run. The run said "its unfinished trials are not run" (true
# without a scheduler, whose budget is then the finished trials) and then
# trained it; it now says "1 unfinished trial(s) to re-run". Successive
# halving, 3 trials, 1 -> 3 epochs on 256 images.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf e.conf lowered 3
sed -i 's/trials = 9/trials = 3/' e.conf
run 0 "$NAS" run e.conf --db e.db
P=$(sql e.db "SELECT trial_id FROM rung WHERE fidelity = 3")
[ -n "$P" ] || fail "no trial promoted to 3 epochs"

note "trials = 2 with one trial left running (as kill -9 leaves it): re-run, and said so"
Q=$(sql e.db "SELECT max(id) FROM trial WHERE id != $P")
sql e.db "DELETE FROM rung WHERE trial_id = $Q; DELETE FROM result WHERE trial_id = $Q;
          UPDATE trial SET status = 'running' WHERE id = $Q;
          UPDATE experiment SET status = 'running'"
sed 's/trials = 3/trials = 2/' e.conf >e2.conf
run 0 "$NAS" run e2.conf --db e.db
grep_in "is below the 3 trials .* (2 done, 0 failed): they are kept, and its budget is 3 trials; 1 \
unfinished trial(s) to re-run$" "$TMP/err"
grep -q "unfinished trials are not run" "$TMP/err" &&
    fail "said the unfinished trial is not run: $(cat "$TMP/err")"
grep_in "^\[trial $Q, rung 0\] train " "$TMP/err"
expect_eq "done trials" "$(sql e.db "SELECT count(*) FROM trial WHERE status = 'done'")" 3
grep_in "complete: 3 trials (3 done, 0 failed)" "$TMP/out"
echo "PASS"
