# tests/e2e/chain_lib.sh - the tiny chain space of the chain-network e2e
# tests (sourced after search_lib.sh, not a test itself):
# test_chain_train.sh, test_chain_arch.sh and test_supernet_cli.sh train
# networks of the same space (issue 15: MBConv with SE and hswish, a
# projection skip, widths and depths to choose, dropout) on Fashion-MNIST.
#
# chain_conf FILE EXPERIMENT SEED TRAIN_SUBSET OP DROPOUT LR TRIALS [EVALUATOR_KEYS] [WORKERS_KEYS] [PROXY_KEYS]:
# that space (OP the second op of stage 2, DROPOUT the head's) on
# TRAIN_SUBSET training and 256 validation images, a 1-epoch proxy recipe
# at learning rate LR (PROXY_KEYS: more keys of proxy, on a line of their
# own), a random search of TRIALS trials by val_accuracy, and, when given,
# an evaluator (kind "train") and workers with those keys.
chain_conf() {
    local proxy_keys="" evaluator="" workers=""
    [ -n "${9:-}" ] && evaluator="
evaluator = { kind = \"train\"; $9 };"
    [ -n "${10:-}" ] && workers="
workers = { ${10} };"
    [ -n "${11:-}" ] && proxy_keys="
          ${11}"
    cat >"$1" <<CONF
experiment = "$2";
seed = $3;
data = { dataset = "fashion-mnist"; dir = "$FMNIST"; train_subset = $4; valid = 256; };
space: {
  type = "chain";
  input = [1, 28, 28];
  classes = 10;
  stem = { kernel = 3; channels = 8; stride = 2; activation = "relu6"; };
  stages = (
    { channels = 8; stride = 1; layers = 2; ops = ["mb3_k3", "mb3_k5", "skip"]; se = "choice"; activation = "hswish"; },
    { channels = [16, 24]; stride = 2; layers = 2; depth = [1, 2]; ops = ["mb3_k3", "$5", "skip"]; activation = "relu6"; }
  );
  head = { channels = 32; activation = "hswish"; pool = "avg"; dropout = $6; };
};
proxy = { epochs = 1; batch_size = 32; lr = $7; momentum = 0.9; nesterov = true;
          weight_decay = 4e-5; schedule = "cosine"; threads = 1; backend = "cpu";$proxy_keys };
search = { strategy = "random"; trials = $8; };$evaluator
objectives = ( { metric = "val_accuracy"; goal = "max"; } );$workers
CONF
}
