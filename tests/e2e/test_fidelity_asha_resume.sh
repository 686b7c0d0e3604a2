#!/usr/bin/env bash
# tests/e2e/test_fidelity_asha_resume.sh - resuming an ASHA search run by 2
# workers starts no promotion the stored run had not chosen. The replay
# reports the stored trials in id order; with 2 workers results come in
# out of that order, so the replay can find a trial in its rung's top
# 1/eta that the run never promoted. It re-queued that promotion as
# "interrupted" and trained it (from 0: its checkpoint was gone). Now such
# a promotion waits until every stored trial is back, and the scheduler
# then decides as the stopped run would have gone on.
#
# The state (ASHA, eta 2, rungs 1, 2, 4; 4 trials), as a 2-worker run
# leaves it: t1 and t2 start; t2 ends first (0.0; alone at rung 0, top 0:
# t3 starts); t3 ends (0.9; top 1 of 2: t3 promoted); t1 ends (0.01; top 1
# of 3 is t3: t4 starts); t3 ends rung 1; killed while t4 runs. In id
# order the replay saw {t1, t2}, whose top 1 is t1, and promoted t1.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
cat >a.conf <<CONF
experiment = "asha";
seed = 5;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 4;
  fidelity = { min = 1; max = 4; eta = 2; scheduler = "asha"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 2; };
CONF
run 0 "$NAS" run a.conf --db a.db --quiet
sql a.db "DELETE FROM rung WHERE fidelity > 1 OR trial_id = 4;
  UPDATE rung SET val_accuracy = 0.01 WHERE trial_id = 1;
  UPDATE rung SET val_accuracy = 0.0 WHERE trial_id = 2;
  UPDATE rung SET val_accuracy = 0.9 WHERE trial_id = 3;
  INSERT INTO rung(trial_id, fidelity, val_accuracy, loss, seconds, created_at)
    SELECT 3, 2, 0.6, loss, seconds, created_at FROM rung WHERE trial_id = 3;
  UPDATE result SET val_accuracy = 0.01, epochs = 1 WHERE trial_id = 1;
  UPDATE result SET val_accuracy = 0.0, epochs = 1 WHERE trial_id = 2;
  UPDATE result SET val_accuracy = 0.6, epochs = 2 WHERE trial_id = 3;
  DELETE FROM result WHERE trial_id = 4;
  UPDATE trial SET status = 'running' WHERE id = 4;
  UPDATE experiment SET status = 'interrupted';"
run 0 "$NAS" run a.conf --db a.db
grep_in "3 done, 0 failed of 4; 1 unfinished trial(s) to re-run, 0 not yet proposed$" "$TMP/err"
if grep -q "^\[trial [12], rung 1\] promote" "$TMP/err"; then
    cat "$TMP/err"
    fail "the resume promoted a trial the stored run had not chosen"
fi
expect_eq "trials 1 and 2: rung 0 only" \
    "$(sql a.db "SELECT group_concat(trial_id || '@' || fidelity) FROM rung WHERE trial_id <= 2")" \
    "1@1,2@1"
# t4 ends rung 0 above t1: rung 0's top 2 is t3 and t4
expect_eq "trial 4 promoted to 2 epochs" \
    "$(sql a.db "SELECT count(*) FROM rung WHERE trial_id = 4 AND fidelity = 2")" 1
expect_eq "one trial at 4 epochs" "$(sql a.db "SELECT count(*) FROM rung WHERE fidelity = 4")" 1
expect_eq "checkpoints left" "$(find a.db.ckpt -type f | wc -l)" 0
echo "PASS"
