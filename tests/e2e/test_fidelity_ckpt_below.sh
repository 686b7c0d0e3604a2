#!/usr/bin/env bash
# tests/e2e/test_fidelity_ckpt_below.sh - a resumed promotion whose
# checkpoint holds fewer epochs than the rung it starts from (a promotion
# whose checkpoint was gone trains from 0, and is stopped after epoch 1)
# goes on from that checkpoint, and its line names that epoch: "to 6
# epochs (from 1;" (it said "from 2", the rung, while the worker went on
# from epoch 1). Successive halving, rungs 2 and 6 epochs, 3 trials: the
# best is promoted 2 -> 6. The epoch-1 checkpoint of the promoted trial is
# the copy of its first rung's checkpoint taken after epoch 1; the resume
# ends with the rungs of the uninterrupted run, bit for bit.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
PY=/usr/bin/python3
"$PY" -c "import numpy" 2>/dev/null || skip "$PY with numpy is needed to read a checkpoint's epochs"
cd "$TMP" || fail "cd"
cat >b.conf <<CONF
experiment = "below";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 2048; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 3;
  fidelity = { min = 2; max = 6; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
epochs() { "$PY" -c "import numpy, sys; print(int(numpy.load(sys.argv[1])['state/progress'][1]))" "$1"; }

note "the uninterrupted run, keeping each trial's first checkpoint (after epoch 1)"
mkdir saved
"$NAS" run b.conf --db ref.db --quiet >"$TMP/out" 2>"$TMP/err" &
RUN_PID=$!
while kill -0 "$RUN_PID" 2>/dev/null; do
    for t in 1 2 3; do
        [ -f "saved/trial-$t.npz" ] || cp "ref.db.ckpt/trial-$t.npz" "saved/trial-$t.npz" 2>/dev/null
    done
    sleep 0.005
done
wait "$RUN_PID" || { cat "$TMP/err"; fail "the uninterrupted run failed"; }
RUN_PID=
P=$(sql ref.db "SELECT trial_id FROM rung WHERE fidelity = 6")
[ -n "$P" ] || fail "no trial was promoted to 6 epochs"
[ -f "saved/trial-$P.npz" ] || fail "trial $P's first checkpoint was not caught"
expect_eq "the kept checkpoint's epochs" "$(epochs "saved/trial-$P.npz")" 1

note "its promotion stopped after epoch 1, with a checkpoint below its rung"
cp ref.db k.db
sql k.db "DELETE FROM rung WHERE trial_id = $P AND fidelity = 6;
          UPDATE trial SET status = 'running' WHERE id = $P;
          UPDATE experiment SET status = 'interrupted';"
mkdir -p k.db.ckpt
cp "saved/trial-$P.npz" "k.db.ckpt/trial-$P.npz"
run 0 "$NAS" run b.conf --db k.db
grep_in "^\[trial $P, rung 1\] promote .* to 6 epochs (from 1;" "$TMP/err"
expect_eq "rungs equal the uninterrupted run's" \
    "$(sql k.db "SELECT trial_id, fidelity, val_accuracy, loss FROM rung ORDER BY 1, 2")" \
    "$(sql ref.db "SELECT trial_id, fidelity, val_accuracy, loss FROM rung ORDER BY 1, 2")"
expect_eq "checkpoints left" "$(find k.db.ckpt -type f | wc -l)" 0
echo "PASS"
