# tests/e2e/oneshot_lib.sh - helpers of the one-shot search tests (issue 32;
# sourced after search_lib.sh, not a test itself): test_oneshot_search.sh
# and test_mpi_oneshot.sh search the same space with the same recipe, so
# that each one's runs are comparable and the two cannot drift apart.
#
# oneshot_conf FILE EXPERIMENT TRAIN_SUBSET VALID TRIALS EPOCHS [WORKER_KEYS] [EXTRA]:
# evaluator.kind = "supernet" on a small chain space of Fashion-MNIST
# (TRAIN_SUBSET training and VALID validation images), TRIALS subnets by
# evolution, a supernet of EPOCHS epochs, the best 3 retrained with a
# 1-epoch proxy recipe, 2 workers (WORKER_KEYS: more keys of workers),
# EXTRA a last line. The proxy recipe stands on line 15 and EXTRA on line
# 22: tests name them in expected errors.
oneshot_conf() {
    cat >"$1" <<CONF
experiment = "$2";
seed = 5;
data: { dir = "$FMNIST"; train_subset = $3; valid = $4; };
space: {
  type = "chain"; input = [1, 28, 28]; classes = 10;
  stem = { kernel = 3; channels = 8; stride = 2; activation = "relu"; };
  stages = (
    { channels = [8, 16]; stride = 2; layers = 2; depth = [1, 2];
      ops = ["mb3_k3", "mb3_k5", "skip"]; activation = "relu"; },
    { channels = 16; stride = 2; layers = 1; ops = ["mb3_k3", "mb6_k3"]; se = "choice";
      activation = "hswish"; }
  );
  head = { channels = 32; activation = "hswish"; pool = "avg"; };
};
proxy: { epochs = 1; batch_size = 64; lr = 0.1; threads = 1; backend = "cpu"; };
search: { strategy = "evolution"; trials = $5; population = 4; sample_size = 2; };
evaluator: { kind = "supernet"; latency_runs = 2; latency_warmup = 1; };
supernet: { epochs = $6; recal_batches = 2; valid = 128; retrain_top = 3; };
workers: { count = 2; ${7:-} };
${8:-}
CONF
}

# trials_of DB EXPERIMENT: id|genotype|status|device|val_accuracy of its trials
trials_of() {
    sql "$1" "SELECT t.id || '|' || t.genotype || '|' || t.status || '|' || t.device || '|' ||
              printf('%.6f', r.val_accuracy) FROM trial t JOIN experiment e ON e.id = t.experiment_id
              LEFT JOIN result r ON r.trial_id = t.id WHERE e.name = '$2' ORDER BY t.id"
}
