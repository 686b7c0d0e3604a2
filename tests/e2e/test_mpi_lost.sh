#!/usr/bin/env bash
# tests/e2e/test_mpi_lost.sh - how an MPI run ends when ranks are lost or
# rank 0 is stopped (issue 20, defects 3 and 4). On this one machine, with
# a 12-trial random search (table evaluator on a generated fixture,
# heartbeat_s = 1):
#  1. `mpirun -n 2` (one worker rank) with NAS_FAULT=hang@2: the only worker
#     rank freezes on trial 2 and is given up on. The run must not claim
#     success: non-zero exit, the experiment not 'done', no trial left
#     'running' or 'pending' (trial 2 'interrupted'), a message that no
#     workers remain and that rerunning resumes. A rerun completes the 12.
#  2. `mpirun -n 3`, every job 3 s long, SIGINT to rank 0 while both
#     worker ranks train: the summary and the resume hint are printed,
#     mpirun exits 130, both trials 'interrupted'.
# Skips (77) without mpirun or when nas was built without Open MPI.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
need_mpi
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/m.conf" "$TMP/t.csv" 12 2 "heartbeat_s = 1;"

note "1. the only worker rank is lost"
DB=$TMP/lost.db
NAS_FAULT="hang@2" timeout 60 $MPIRUN -x NAS_FAULT -n 2 "$NAS" run "$TMP/m.conf" --db "$DB" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" = 124 ] && fail "mpirun hung"
note "mpirun exited $code"
[ "$code" != 0 ] || { cat "$TMP/out" "$TMP/err"; fail "a run that lost every worker rank exited 0"; }
status=$(sql "$DB" "SELECT status FROM experiment")
[ "$status" != done ] || fail "the experiment is 'done' with $(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('done','failed')") of 12 trials finished"
expect_eq "trials left running or pending" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('running','pending')")" 0
expect_eq "trial 2" "$(sql "$DB" "SELECT status FROM trial WHERE id = 2")" interrupted
grep_in "no workers remain" "$TMP/err"
grep_in "run the same command again to resume" "$TMP/err"
note "a rerun resumes and completes the search"
run 0 timeout 60 $MPIRUN -n 2 "$NAS" run "$TMP/m.conf" --db "$DB"
grep_in "complete: 12 trials (12 done, 0 failed)" "$TMP/out"
expect_eq "experiment" "$(sql "$DB" "SELECT status FROM experiment")" done

note "2. SIGINT to rank 0 while both worker ranks train"
DB=$TMP/int.db
NAS_FAULT="sleep_ms=3000" timeout 60 $MPIRUN -x NAS_FAULT -n 3 "$NAS" run "$TMP/m.conf" --db "$DB" >"$TMP/out" 2>"$TMP/err" &
MPI_PID=$!
for _ in $(seq 300); do
    [ "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'running'" 2>/dev/null)" = 2 ] && break
    kill -0 "$MPI_PID" 2>/dev/null || { cat "$TMP/err"; fail "mpirun ended early"; }
    sleep 0.05
done
sleep 0.3
rank0=$(cut -d' ' -f1 "$(readlink -f "$DB").lock")
[ -n "$rank0" ] && kill -0 "$rank0" 2>/dev/null || fail "rank 0 not found (lock note: $(cat "$DB.lock"))"
kill -INT "$rank0"
wait "$MPI_PID"
code=$?
[ "$code" = 130 ] || { cat "$TMP/out" "$TMP/err"; fail "mpirun exited $code after SIGINT to rank 0, expected 130"; }
grep_in "stopped after" "$TMP/out"
grep -q "2 interrupted" "$TMP/out" || { cat "$TMP/out" "$TMP/err"; fail "the summary does not say 2 interrupted"; }
grep_in "resume:  nas run" "$TMP/out"
expect_eq "interrupted trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'interrupted'")" 2
expect_eq "failed trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'failed'")" 0
echo "PASS"
