#!/usr/bin/env bash
# tests/e2e/test_mpi_fidelity.sh - multi-fidelity search (issue 17) under the
# Open MPI transport (issue 4), on this one machine: `mpirun -n 3 nas run`
# (rank 0 the controller, ranks 1 and 2 workers) runs Hyperband + evolution
# with real training (a tiny Fashion-MNIST proxy) and workers.ordered =
# true, and stores the same rungs (genotype, fidelity, accuracy, loss) as
# the local pool of 2 workers. Each promotion continues from its trial's
# checkpoint: a worker rank reads DB.ckpt/trial-ID.npz once per promotion
# (strace counts the reads; that part is skipped visibly without strace).
# DB.ckpt/ is empty at the end. Skips (77) without Fashion-MNIST, mpirun,
# or an Open MPI build of nas.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
need_mpi
cd "$TMP" || fail "cd"
# LeakSanitizer cannot run under ptrace (strace) either: need_mpi has
# turned leak checking off.
cat >"$TMP/hb.conf" <<CONF
experiment = "mpi-hb";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "evolution"; trials = 9; population = 4; sample_size = 2;
  fidelity = { min = 1; max = 9; eta = 3; scheduler = "hyperband"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 2; ordered = true; };
CONF
rungs() { sql "$1" "SELECT group_concat(x, ';') FROM (SELECT t.genotype || '@' || g.fidelity || '=' || printf('%.6f %.6f', g.val_accuracy, g.loss) AS x FROM rung g JOIN trial t ON t.id = g.trial_id ORDER BY t.id, g.fidelity)"; }
promotions() { sql "$1" "SELECT count(*) - count(DISTINCT trial_id) FROM rung"; }

note "local pool, 2 workers"
run 0 "$NAS" run "$TMP/hb.conf" --db "$TMP/local.db" --quiet
note "mpirun -n 3"
run 0 timeout 300 $MPIRUN -n 3 "$NAS" run "$TMP/hb.conf" --db "$TMP/mpi.db" --quiet
grep_in "complete: 9 trials (9 done, 0 failed)" "$TMP/out"
expect_eq "worker ranks used" "$(sql "$TMP/mpi.db" "SELECT group_concat(w) FROM (SELECT DISTINCT worker AS w FROM trial ORDER BY 1)")" "0,1"
[ "$(promotions "$TMP/mpi.db")" -gt 0 ] || fail "no trial was promoted"
expect_eq "same rungs as the local pool" "$(rungs "$TMP/mpi.db")" "$(rungs "$TMP/local.db")"
expect_eq "checkpoints left" "$(ls -A "$TMP/mpi.db.ckpt" | wc -l)" 0

if command -v strace >/dev/null 2>&1; then
    note "every promotion reads its checkpoint on a worker rank (strace)"
    run 0 timeout 300 $MPIRUN -n 3 strace -ff -qq -e trace=openat -o "$TMP/st" \
        "$NAS" run "$TMP/hb.conf" --db "$TMP/mpi2.db" --quiet
    # the controller is the process that opens the database (workers never
    # do); it reads only a checkpoint's progress entry, for its log line
    ckpt_reads() { cat "$@" /dev/null | grep "mpi2.db.ckpt/trial-[0-9]*\.npz\"" | grep -c "O_RDONLY"; }
    ctl=$(grep -l "mpi2.db\"" "$TMP"/st.*)
    [ -n "$ctl" ] || fail "no traced process opened the database"
    workers=$(grep -L "mpi2.db\"" "$TMP"/st.*)
    expect_eq "checkpoint reads on worker ranks = promotions" "$(ckpt_reads $workers)" \
        "$(promotions "$TMP/mpi2.db")"
    [ "$(ckpt_reads $ctl)" -le "$(promotions "$TMP/mpi2.db")" ] ||
        fail "the controller read checkpoints more often than once per promotion"
    expect_eq "the same rungs again" "$(rungs "$TMP/mpi2.db")" "$(rungs "$TMP/local.db")"
else
    note "SKIP the checkpoint reads: strace is not installed (Debian: strace; scripts/deps.sh test)"
fi
echo "PASS"
