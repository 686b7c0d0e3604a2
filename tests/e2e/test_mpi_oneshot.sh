#!/usr/bin/env bash
# tests/e2e/test_mpi_oneshot.sh - issue 32, a one-shot search
# (evaluator.kind = "supernet", docs/one-shot.md) under Open MPI, on a
# small chain space of Fashion-MNIST (oneshot_lib.sh: the space of
# test_oneshot_search.sh, a shorter supernet):
# 1. `mpirun -n 3` runs all three phases: rank 0 trains the supernet,
#    ranks 1 and 2 evaluate the subnets, then rank 0 tells them that
#    phase 3 follows (NEXT) and they retrain the finalists as experiment
#    NAME-finalists. Both experiments store the trials and accuracies of
#    the same search on the local pool of 2 workers (both are a schedule of
#    width 2; the supernet, its subnets' evaluation and the proxy training
#    are deterministic), and both worker ranks trained finalists;
# 2. kill -9 of rank 0 in phase 3 (mpirun then ends the job), then the
#    same mpirun line continues phase 3 and ends with the same finalists;
# 3. a rank lost in phase 2 (stuck in its job past trial_timeout_s): phase 3
#    is not run, the run says why and how to go on, mpirun exits 0 (no
#    hang); the same line without the fault retrains the finalists;
# 4. no phase 3 (supernet.retrain_top = 0): the worker ranks end with the
#    job, exit 0; --new: the ranks serve phase 3 of the new experiment
#    under the name rank 0 gave it (NAME-2-finalists);
# 5. --time-limit covers both phases (wherever it stops the run, mpirun
#    exits 0 in time), and the same line without it completes them;
# 6. worker ranks that build phase 3's evaluator (load its data) for longer
#    than 3 x heartbeat_s and than trial_timeout_s after rank 0 is done
#    with its own (test hook next_load_ms) are not given up on: they beat
#    while they load, and a finalist's clock starts when its rank says
#    READY (search/pool_msg.h); the finalists are the local pool's;
# 7. the same slow ranks when phase 2 has nothing left to do: the READY
#    they send for phase 2, which no pool reads, is not taken for phase 3's
#    (READY carries its search's generation);
# 8. ranks whose phase-3 load never ends are given up on after 10 x
#    trial_timeout_s: the run ends (non-zero), it does not hang, and
#    phase 2's trials are kept.
# Skips (77) without mpirun, nas built without Open MPI, or Fashion-MNIST.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/oneshot_lib.sh"
need_mpi
need_fmnist
cd "$TMP" || fail "cd"
MPIRUN="timeout 180 $MPIRUN"

conf() { # FILE [WORKER_KEYS] (oneshot_lib.sh)
    oneshot_conf "$1" e2e-osm 256 128 8 3 "${2:-}"
}
conf "$TMP/os.conf"
# rank_pid DB: the pid of MPI rank 0 of the `nas run` on DB
rank_pid() {
    local p
    for p in $(pgrep -f "nas run os.conf --db $1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0" &&
            { echo "$p"; return; }
    done
}

note "the local pool of 2 workers"
L=$TMP/local.db
run 0 "$NAS" run os.conf --db "$L"
grep_in "phase 3:" "$TMP/err"
trials_of "$L" e2e-osm >"$TMP/l1"
trials_of "$L" e2e-osm-finalists >"$TMP/l2"
expect_eq "local finalists" "$(grep -c '|done|cpu|' "$TMP/l2")" 3

note "1. mpirun -n 3: the three phases, phase 3 on the worker ranks"
M=$TMP/mpi.db
run 0 $MPIRUN -n 3 "$NAS" run os.conf --db "$M"
grep_in "supernet (phase 1)" "$TMP/err"
grep_in "phase 3: 3 of the best of 8 subnets retrained" "$TMP/err"
grep -q "not run under mpirun" "$TMP/err" && fail "phase 3 was left to a run without mpirun"
grep_in "search 'e2e-osm-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
expect_eq "experiments" "$(sql "$M" "SELECT group_concat(name || ':' || status, ' ') FROM experiment")" \
    "e2e-osm:done e2e-osm-finalists:done"
trials_of "$M" e2e-osm >"$TMP/m1"
trials_of "$M" e2e-osm-finalists >"$TMP/m2"
diff "$TMP/l1" "$TMP/m1" >/dev/null || { diff "$TMP/l1" "$TMP/m1"; fail "phase 2 under MPI differs from the local pool"; }
diff "$TMP/l2" "$TMP/m2" >/dev/null || { diff "$TMP/l2" "$TMP/m2"; fail "the finalists under MPI differ from the local pool's"; }
expect_eq "worker ranks that retrained finalists" \
    "$(sql "$M" "SELECT group_concat(w) FROM (SELECT DISTINCT t.worker AS w FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'e2e-osm-finalists' ORDER BY 1)")" "0,1"
expect_eq "finalists linked" "$(sql "$M" "SELECT count(*) FROM finalist")" 3
check_db_consistent "$M"

note "2. kill -9 of rank 0 in phase 3; the same mpirun line continues it"
K=$TMP/kill.db
NAS_FAULT="sleep_ms=700" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run os.conf --db "$K" >"$TMP/k.out" 2>"$TMP/k.err" &
RUN_PID=$!
for _ in $(seq 1200); do
    [ "$(sql "$K" "SELECT count(*) FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'e2e-osm-finalists' AND t.status = 'running'" 2>/dev/null)" = 2 ] && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/k.err"; fail "mpirun ended before phase 3 ran"; }
    sleep 0.05
done
r0=$(rank_pid "$K")
[ -n "$r0" ] || fail "rank 0 not found"
kill -9 "$r0"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 124 ] && fail "mpirun hung after rank 0 was killed"
sleep 0.5
pgrep -f "nas run os.conf --db $K" >/dev/null && fail "ranks outlived the job"
[ "$(sql "$K" "SELECT count(*) FROM trial WHERE experiment_id = 2 AND status = 'done'")" -lt 3 ] ||
    fail "phase 3 had finished before the kill"
run 0 $MPIRUN -n 3 "$NAS" run os.conf --db "$K"
grep_in "nothing to do" "$TMP/err"
grep_in "as experiment 'e2e-osm-finalists' (continued)" "$TMP/err"
grep_in "search 'e2e-osm-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
trials_of "$K" e2e-osm-finalists >"$TMP/k2"
diff "$TMP/l2" "$TMP/k2" >/dev/null || { diff "$TMP/l2" "$TMP/k2"; fail "the finalists after kill -9 differ from the local pool's"; }
check_db_consistent "$K"

note "3. a rank lost in phase 2: no phase 3, said; the rerun retrains the finalists"
conf "$TMP/lost.conf" "trial_timeout_s = 5;"
G=$TMP/lost.db
NAS_FAULT="spin@3" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run lost.conf --db "$G" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" = 124 ] && { cat "$TMP/err"; fail "mpirun hung after a rank was lost in phase 2"; }
expect_eq "mpirun exit code after a lost rank" "$code" 0
grep_in "complete: 8 trials (7 done, 1 failed)" "$TMP/out"
grep_in "phase 3 (retraining the finalists) is not run: 1 MPI worker rank(s) were given up on in phase 2; run the same command again" "$TMP/err"
expect_eq "no finalists experiment" "$(sql "$G" "SELECT count(*) FROM experiment")" 1
run 0 $MPIRUN -n 3 "$NAS" run lost.conf --db "$G"
grep_in "search 'e2e-osm-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
check_db_consistent "$G"

note "4. no phase 3 (retrain_top = 0): the ranks end with the job; --new: phase 3 under its name"
sed 's/retrain_top = 3;/retrain_top = 0;/' "$TMP/os.conf" >"$TMP/zero.conf"
run 0 $MPIRUN -n 3 "$NAS" run zero.conf --db "$M" --experiment zero
grep_in "search 'zero' complete: 8 trials (8 done, 0 failed)" "$TMP/out"
expect_eq "no finalists for 'zero'" "$(sql "$M" "SELECT count(*) FROM experiment WHERE name LIKE 'zero-%'")" 0
run 0 $MPIRUN -n 3 "$NAS" run os.conf --db "$M" --new
grep_in "search 'e2e-osm-2-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
grep_in "resume or extend it with --experiment e2e-osm-2" "$TMP/err"
check_db_consistent "$M"

note "5. --time-limit covers both phases under MPI; the rerun completes them"
t0=$(date +%s)
# every trial sleeps 3 s: 8 subnets and 3 finalists on 2 ranks sleep 18 s or more,
# so the 11 s limit stops the run wherever the host's speed puts it
NAS_FAULT="sleep_ms=3000" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run os.conf --db "$M" --experiment tl --time-limit 11 >"$TMP/out" 2>"$TMP/err"
code=$?
dt=$(( $(date +%s) - t0 ))
note "mpirun exited $code after $dt s"
[ "$code" = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "a run stopped by its time limit exited $code"; }
grep -q "time limit" "$TMP/out" "$TMP/err" || { cat "$TMP/out" "$TMP/err"; fail "the time limit was not reached or not said"; }
[ "$dt" -lt 60 ] || fail "the time limit of 11 s let the run go on for $dt s"
run 0 $MPIRUN -n 3 "$NAS" run os.conf --db "$M" --experiment tl
grep_in "search 'tl-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
check_db_consistent "$M"

note "6. worker ranks slow to start phase 3 (a long data load) are not given up on"
conf "$TMP/slow.conf" "heartbeat_s = 1; trial_timeout_s = 5;"
S=$TMP/slow.db
# next_load_ms (search/pool_msg.h): each worker rank sleeps 7 s after NEXT,
# before it builds phase 3's evaluator, while rank 0 sends it finalists at
# once; a finalist trains in well under a second here
NAS_FAULT="next_load_ms=7000" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run slow.conf --db "$S" >"$TMP/out" 2>"$TMP/err"
code=$?
if grep -q "does not provide MPI_THREAD_SERIALIZED" "$TMP/err"; then
    note "skipped: this MPI library gives the ranks no heartbeat thread, so trial_timeout_s counts a rank's load"
else
    [ "$code" = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "the run with slow worker ranks exited $code"; }
    grep -q "given up on\|timed out" "$TMP/out" "$TMP/err" && { cat "$TMP/err"; fail "a worker rank loading phase 3's data was given up on"; }
    grep_in "search 'e2e-osm-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
    took=$(sed -n "s/.*search 'e2e-osm-finalists' complete: .* in \([0-9.]*\)s.*/\1/p" "$TMP/out")
    awk -v t="$took" 'BEGIN { exit !(t >= 7) }' || fail "phase 3 took ${took:-?} s: the next_load_ms hook did not delay the ranks"
    trials_of "$S" e2e-osm-finalists >"$TMP/s2"
    diff "$TMP/l2" "$TMP/s2" >/dev/null || { diff "$TMP/l2" "$TMP/s2"; fail "the finalists of the slow ranks differ from the local pool's"; }
    check_db_consistent "$S"

    note "7. phase 2 already done: phase 2's unread READY is not taken for phase 3's"
    # the same config without phase 3, on the local pool; then the slow
    # ranks under mpirun with phase 3: phase 2 has nothing to do, so no pool
    # reads the READY the ranks send for it, and phase 3's pool meets it first
    sed 's/retrain_top = 3;/retrain_top = 0;/' "$TMP/slow.conf" >"$TMP/slow0.conf"
    R=$TMP/ready.db
    run 0 "$NAS" run slow0.conf --db "$R"
    sed 's/retrain_top = 0;/retrain_top = 3;/' "$TMP/slow0.conf" >"$TMP/slow3.conf"
    NAS_FAULT="next_load_ms=7000" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run slow3.conf --db "$R" >"$TMP/out" 2>"$TMP/err"
    code=$?
    [ "$code" = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "the rerun with phase 2 done exited $code"; }
    grep -q "given up on\|timed out" "$TMP/out" "$TMP/err" && { cat "$TMP/err"; fail "a stale READY started a loading rank's clock"; }
    grep_in "search 'e2e-osm-finalists' complete: 3 trials (3 done, 0 failed)" "$TMP/out"
    check_db_consistent "$R"

    note "8. a rank whose load never ends is given up on (10 x trial_timeout_s), not waited for"
    conf "$TMP/hang.conf" "heartbeat_s = 1; trial_timeout_s = 1;"
    t0=$(date +%s)
    NAS_FAULT="next_load_ms=120000" $MPIRUN -x NAS_FAULT -n 3 "$NAS" run hang.conf --db "$TMP/hang.db" >"$TMP/out" 2>"$TMP/err"
    code=$?
    dt=$(( $(date +%s) - t0 ))
    note "mpirun exited $code after $dt s"
    [ "$code" != 0 ] || { cat "$TMP/out" "$TMP/err"; fail "a run whose ranks never loaded phase 3 exited 0"; }
    [ "$code" != 124 ] || { cat "$TMP/err"; fail "the run hung until timeout killed it"; }
    grep_in "still loading its data (no READY) after 10 s (10 x trial_timeout_s)" "$TMP/err"
    [ "$dt" -lt 100 ] || fail "giving up on the loading ranks took $dt s"
    expect_eq "phase 2 kept" "$(sql "$TMP/hang.db" "SELECT count(*) FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'e2e-osm' AND t.status = 'done'")" 8
fi
echo "PASS"
