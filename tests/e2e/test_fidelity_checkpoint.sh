#!/usr/bin/env bash
# tests/e2e/test_fidelity_checkpoint.sh - issue 29, defect 2: a worker
# never trains a promotion from 0 while the log says "from 1". Here the
# checkpoint disappears after the controller dispatched the promotion
# (as for an MPI rank that cannot see DB.ckpt/): the worker fails the job,
# saying which checkpoint it could not read, and the trial stays done at
# its first rung with a "promotion to 3 failed" note. (The job carries the
# budget its checkpoint must hold; the trainer started afresh when the
# file was missing.)
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
fid_conf c.conf ckpt 3
NAS_FAULT="sleep_ms=600" "$NAS" run c.conf --db c.db >"$TMP/c.out" 2>"$TMP/c.err" &
RUN_PID=$!
for _ in $(seq 600); do
    grep -q "\] promote " "$TMP/c.err" 2>/dev/null && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.02
done
P=$(sed -n 's/^\[trial \([0-9]*\), rung 1\] promote .*/\1/p' "$TMP/c.err" | head -1)
[ -n "$P" ] || { cat "$TMP/c.err"; fail "no promotion started"; }
rm -f "c.db.ckpt/trial-$P.npz" # the worker sleeps 600 ms before it starts the job
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/c.err"; fail "the run exited $code"; }
grep_in "^\\[trial $P, rung 1\\] FAILED promotion of .*: checkpoint .*c.db.ckpt/trial-$P.npz (1 epochs) not found on this worker" "$TMP/c.err"
expect_eq "the trial's note" "$(sql c.db "SELECT status, substr(error, 1, 33) FROM trial WHERE id = $P")" \
    "done|promotion to 3 failed: checkpoint"
expect_eq "its rungs" "$(sql c.db "SELECT group_concat(fidelity) FROM rung WHERE trial_id = $P")" 1
echo "PASS"
