#!/usr/bin/env bash
# tests/e2e/test_fidelity_interrupt.sh - issue 29, defect 5: after Ctrl-C
# during a promotion of a multi-fidelity search, the stop summary, `nas
# query`, `nas export --best` and the resume agree. The promoted trial has
# a result at its last rung: it stays done there (it was marked
# interrupted, so nas query counted it unfinished and ranked it last, and
# nas export --best ignored the best trial); the stopped promotion is
# counted apart from the interrupted trials and from the trials not yet
# proposed, and runs again on resume, which ends with the trials and rungs
# of the uninterrupted run. Defect 2: resumed from a copy without DB.ckpt/,
# the promotion says that it trains from 0 (it said "from 1" and trained
# from scratch silently).
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf i.conf stop 3

note "the uninterrupted run"
run 0 "$NAS" run i.conf --db ref.db

note "Ctrl-C during the first promotion"
NAS_FAULT="sleep_ms=700" "$NAS" run i.conf --db s.db >"$TMP/s.out" 2>"$TMP/s.err" &
RUN_PID=$!
for _ in $(seq 600); do
    grep -q "\] promote " "$TMP/s.err" 2>/dev/null && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.05
done
grep -q "\] promote " "$TMP/s.err" || { cat "$TMP/s.err"; fail "no promotion started"; }
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/s.err"; fail "the stopped run exited $code, expected 130"; }
P=$(sed -n 's/^\[trial \([0-9]*\), rung 1\] promote .*/\1/p' "$TMP/s.err")
expect_eq "the promoted trial's status" "$(sql s.db "SELECT status FROM trial WHERE id = $P")" done
grep_in "stopped after .*: 3 of 9 trials finished (3 done, 0 failed), 0 interrupted, 6 not yet proposed; 1 promotion stopped" "$TMP/s.out"
BEST=$(sed -n 's/^  best:    trial \([0-9]*\),.*/\1/p' "$TMP/s.out")
run 0 "$NAS" query --db s.db
grep_in "3 of 9 trials finished (3 done, 0 failed), 0 unfinished" "$TMP/out"
expect_eq "nas query's first rank" "$(awk '$1 == "1" { print $2; exit }' "$TMP/out")" "$BEST"
run 0 "$NAS" export --db s.db --best --format json -o best.json
grep_in "best trial of 'stop' by val_accuracy (max): $BEST$" "$TMP/err"

note "a copy without DB.ckpt/ resumed: the promotion says it trains from 0 (defect 2)"
cp s.db m.db
run 0 "$NAS" run i.conf --db m.db
grep_in "checkpoint .*m.db.ckpt/trial-$P.npz is missing: its promotion to 3 epochs trains from 0" "$TMP/err"
grep_in "^\[trial $P, rung 1\] promote .* to 3 epochs (from 0;" "$TMP/err"
fid_same m.db ref.db "after the resume without checkpoints"

note "the resume"
run 0 "$NAS" run i.conf --db s.db
grep_in "3 done, 0 failed of 9; 0 unfinished trial(s) to re-run, 6 not yet proposed; 1 interrupted promotion(s) to run again" "$TMP/err"
fid_same s.db ref.db "after the resume"
echo "PASS"
