#!/usr/bin/env bash
# tests/e2e/test_mpi.sh - the Open MPI transport (issue 4), on this one
# machine: `mpirun --oversubscribe -n 3 nas run` (rank 0 the controller,
# ranks 1 and 2 workers) runs a 12-trial random search (table evaluator on
# a generated fixture). The random strategy's proposals do not depend on
# results, so the set of genotypes and their accuracies must equal those of
# the local 2-worker pool with the same seed; both workers must have run
# trials. Then a rank stuck in its job (NAS_FAULT=spin@3, passed with
# mpirun -x) is given up on after trial_timeout_s: trial 3 fails, every
# other trial is done on the surviving rank, and the job ends with the
# summary printed (issue 20: before MPI_Abort) and exit code 0. And an
# evolution search with random per-job delays (NAS_FAULT jitter_ms) stores
# the same sequence of genotypes under MPI as on the local 2-worker pool
# (the ordered schedule: search/controller.c).
# Skips (77) without mpirun or when nas was built without Open MPI.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
need_mpi
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/m.conf" "$TMP/t.csv" 12 2 "heartbeat_s = 1; trial_timeout_s = 3;"

note "local pool, 2 workers"
run 0 "$NAS" run "$TMP/m.conf" --db "$TMP/local.db"
note "mpirun -n 3"
run 0 timeout 60 $MPIRUN -n 3 "$NAS" run "$TMP/m.conf" --db "$TMP/mpi.db"
grep_in "complete: 12 trials (12 done, 0 failed)" "$TMP/out"
expect_eq "worker ranks used" "$(sql "$TMP/mpi.db" "SELECT group_concat(w) FROM (SELECT DISTINCT worker AS w FROM trial ORDER BY 1)")" "0,1"
q="SELECT group_concat(g, ';') FROM (SELECT t.genotype || '=' || printf('%.6f', r.val_accuracy) AS g FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY 1)"
expect_eq "same genotypes and accuracies as the local pool" "$(sql "$TMP/mpi.db" "$q")" "$(sql "$TMP/local.db" "$q")"
expect_eq "integrity" "$(sql "$TMP/mpi.db" "PRAGMA integrity_check")" ok

note "evolution with random delays: MPI stores the search the local pool stores"
# The ordered schedule (search/controller.c) runs under MPI too: the 2 worker
# ranks are a schedule of width 2, like the local pool of 2 workers, so
# regularized evolution (whose proposals depend on the results it observed)
# makes the same proposals whatever order the delays give the results.
sed -e 's/strategy = "random";/strategy = "evolution"; population = 4; sample_size = 2;/' \
    "$TMP/m.conf" >"$TMP/e.conf"
seq_q="SELECT group_concat(genotype, ';') FROM (SELECT genotype FROM trial ORDER BY id)"
NAS_FAULT="jitter_ms=150/1" run 0 "$NAS" run "$TMP/e.conf" --db "$TMP/elocal.db"
NAS_FAULT="jitter_ms=150/2" run 0 timeout 60 $MPIRUN -x NAS_FAULT -n 3 "$NAS" run "$TMP/e.conf" --db "$TMP/empi.db"
grep_in "complete: 12 trials (12 done, 0 failed)" "$TMP/out"
expect_eq "evolution under MPI = evolution on the local pool" "$(sql "$TMP/empi.db" "$seq_q")" "$(sql "$TMP/elocal.db" "$seq_q")"
note "a resume with another number of workers says so"
run 0 timeout 60 $MPIRUN -n 2 "$NAS" run "$TMP/e.conf" --db "$TMP/elocal.db"
grep_in "this run has 1 worker(s), the last one had 2" "$TMP/err"
grep_in "nothing changes" "$TMP/err"
# issue 22: the stored schedule is the last one that proposed trials (2)
run 0 "$NAS" run "$TMP/e.conf" --db "$TMP/elocal.db"
grep -q "worker(s), the last one had" "$TMP/err" && { cat "$TMP/err"; fail "a width note for the stored width"; }

note "a rank stuck in its job is given up on; the search goes on"
t0=$(date +%s)
NAS_FAULT="spin@3" timeout 60 $MPIRUN -x NAS_FAULT -n 3 "$NAS" run "$TMP/m.conf" --db "$TMP/lost.db" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" = 124 ] && fail "mpirun hung"
note "mpirun exited $code after $(( $(date +%s) - t0 )) s"
# issue 20: rank 0 prints its summary before it ends the job with
# MPI_Abort, and the job exits as a local run with that outcome would (0)
grep -q "complete: 12 trials (11 done, 1 failed)" "$TMP/out" || { cat "$TMP/out" "$TMP/err"; fail "no summary after a lost rank"; }
expect_eq "mpirun exit code after a lost rank" "$code" 0
expect_eq "trial 3" "$(sql "$TMP/lost.db" "SELECT status FROM trial WHERE id = 3")" failed
sql "$TMP/lost.db" "SELECT error FROM trial WHERE id = 3" | grep -q "MPI rank" || fail "trial 3: $(sql "$TMP/lost.db" "SELECT error FROM trial WHERE id = 3")"
expect_eq "other trials done" "$(sql "$TMP/lost.db" "SELECT count(*) FROM trial WHERE id <> 3 AND status = 'done'")" 11
expect_eq "integrity" "$(sql "$TMP/lost.db" "PRAGMA integrity_check")" ok
echo "PASS"
