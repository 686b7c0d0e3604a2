#!/usr/bin/env bash
# tests/e2e/test_fidelity_resume_below_rung.sh - a resumed promotion whose
# checkpoint holds fewer epochs than its rung names the checkpoint's epoch.
# Successive halving, min 1, max 9, eta 3: 6 trials end in a truncated
# bracket, whose best two reach 3 epochs; their checkpoints are deleted when
# that search ends. Extended to 9 trials, the bracket promotes its best to 9
# epochs: its checkpoint is gone, so it trains from 0 (a warning says so).
# Stopped (Ctrl-C) once its new checkpoint holds epoch 1 or 2, the resume
# goes on from there, and its line said "(from 3;", the rung it was
# promoted from.
# And the stop left the trial "interrupted" (as if a new trial's first rung
# were stopped), so until the resume nas query and export --best left out
# the search's best trial; it stays done at its last rung now, as any
# stopped promotion does.
# 1024 images a trial (about half a second an epoch).
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf a.conf below 1
sed -i 's/trials = 9;/trials = 6;/; s/max = 3;/max = 9;/; s/train_subset = 256/train_subset = 1024/' \
    a.conf
sed 's/trials = 6;/trials = 9;/' a.conf >b.conf

run 0 "$NAS" run a.conf --db d.db
expect_eq "checkpoints after the first search" "$(ls -A d.db.ckpt)" ""

note "extended: the promotion to 9 epochs trains from 0, and is stopped after its first epoch"
"$NAS" run b.conf --db d.db >"$TMP/b.out" 2>"$TMP/b.err" &
RUN_PID=$!
for _ in $(seq 3000); do
    grep -q "\] promote .* to 9 epochs" "$TMP/b.err" 2>/dev/null && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.02
done
P=$(sed -n 's/^\[trial \([0-9]*\), rung 2\] promote .* to 9 epochs (from 0;.*/\1/p' "$TMP/b.err")
[ -n "$P" ] || { cat "$TMP/b.err"; fail "no promotion to 9 epochs from 0 started"; }
grep_in "trial $P's checkpoint d.db.ckpt/trial-$P.npz is missing" "$TMP/b.err"
# stopped once its first checkpoint is written: it then holds 1 or 2
# epochs (a busy host may finish the next epoch before the stop lands),
# fewer than the 3 of the rung it was promoted from
for _ in $(seq 3000); do
    [ -e "d.db.ckpt/trial-$P.npz" ] && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.02
done
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/b.err"; fail "the stopped run exited $code, expected 130"; }
E=$(fid_ckpt_epochs "d.db.ckpt/trial-$P.npz") || fail "no checkpoint of trial $P after the stop"
[ "$E" -ge 1 ] && [ "$E" -lt 3 ] || fail "the stopped promotion's checkpoint holds $E epochs"
grep_in "1 promotion stopped" "$TMP/b.out"
note "trial $P stays done at its 3-epoch rung until the resume"
expect_eq "trial $P" "$(sql d.db "SELECT t.status || ' ' || r.epochs FROM trial t
                                   JOIN result r ON r.trial_id = t.id WHERE t.id = $P")" "done 3"
run 0 "$NAS" query --db d.db
grep_in "9 of 9 trials finished (9 done, 0 failed)" "$TMP/out"

note "the resume continues from epoch $E and says so"
run 0 "$NAS" run b.conf --db d.db
grep_in "^\[trial $P, rung 2\] promote .* to 9 epochs (from $E;" "$TMP/err"
expect_eq "trial $P's rungs" \
    "$(sql d.db "SELECT group_concat(fidelity) FROM rung WHERE trial_id = $P")" "1,3,9"
expect_eq "checkpoints after the search" "$(ls -A d.db.ckpt)" ""
echo "PASS"
