# tests/e2e/data_lib.sh - helpers for the data-format tests (issue 16;
# sourced after search_lib.sh, not a test itself).
PY=/usr/bin/python3

need_numpy() {
    [ -x "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null ||
        skip "$PY with numpy is needed to write the test data"
}

# cifar_synth DIR NPERBATCH NTEST: a synthetic CIFAR-10 in DIR (data_batch_1..5.bin
# of NPERBATCH records each, test_batch.bin of NTEST): 1 label byte + 3x32x32
# pixels, each class a distinct colour plus noise, so a cell learns something.
cifar_synth() {
    "$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys, numpy as np
rng = np.random.default_rng(3)
def batch(path, n):
    lab = rng.integers(0, 10, n, dtype=np.uint8)
    base = np.stack([(lab * 25) % 256, (lab * 70) % 256, (255 - lab * 25) % 256], 1)
    px = np.clip(base[:, :, None, None] + rng.normal(0, 40, (n, 3, 32, 32)), 0, 255).astype(np.uint8)
    np.concatenate([lab[:, None], px.reshape(n, 3072)], 1).tofile(path)
for b in range(1, 6):
    batch(f"{sys.argv[1]}/data_batch_{b}.bin", int(sys.argv[2]))
batch(f"{sys.argv[1]}/test_batch.bin", int(sys.argv[3]))
PYEOF
}

# fmnist_subset DIR NTRAIN NTEST: the first images of Fashion-MNIST as
# idx (gzip) and npy files in DIR: train-images.idx.gz, train-labels.idx.gz,
# test-*.idx.gz, train-images.npy (uint8 N,H,W), train-labels.npy (int64).
fmnist_subset() {
    "$PY" - "$FMNIST" "$1" "$2" "$3" <<'PYEOF'
import gzip, sys, numpy as np
src, dst, ntr, nte = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def idx(path, off):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)
for split, pre, n in (("train", "train", ntr), ("test", "t10k", nte)):
    img = idx(f"{src}/{pre}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:n]
    lab = idx(f"{src}/{pre}-labels-idx1-ubyte.gz", 8)[:n]
    with gzip.open(f"{dst}/{split}-images.idx.gz", "wb") as f:
        f.write(np.array([0x803, n, 28, 28], ">u4").tobytes() + img.tobytes())
    with gzip.open(f"{dst}/{split}-labels.idx.gz", "wb") as f:
        f.write(np.array([0x801, n], ">u4").tobytes() + lab.tobytes())
    np.save(f"{dst}/{split}-images.npy", np.ascontiguousarray(img))
    np.save(f"{dst}/{split}-labels.npy", lab.astype(np.int64))
PYEOF
}

# data_conf FILE NAME DATA-GROUP-BODY: a 3-trial random search, tiny
# network, ref backend (bit-for-bit deterministic), weights kept.
data_conf() {
    cat >"$1" <<CONF
experiment = "$2";
seed = 7;
data: { $3 };
space: { channels = 4; stages = 2; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 32; backend = "ref"; threads = 1; keep_weights = true; };
search: { strategy = "random"; trials = 3; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
}

# chain_conf FILE NAME DATA-GROUP-BODY [SPACE-KEYS [TRIALS]]: a tiny chain
# search (issue 28): no space.input or space.classes unless SPACE-KEYS
# sets them, two stages (the second with SE as a choice), ref backend,
# weights kept, TRIALS (default 2) random trials.
chain_conf() {
    cat >"$1" <<CONF
experiment = "$2";
seed = 11;
data: { $3 };
space: {
  type = "chain"; ${4:-}
  stem = { kernel = 3; channels = 8; stride = 2; activation = "relu"; };
  stages = (
    { channels = 8; stride = 1; layers = 1; ops = ["mb1_k3", "mb3_k3"]; activation = "relu"; },
    { channels = [8, 16]; stride = 2; layers = 1; ops = ["mb3_k3", "mb3_k5"]; se = "choice";
      activation = "hswish"; }
  );
  head = { channels = 32; activation = "hswish"; pool = "avg"; dropout = 0.0; };
};
proxy: { epochs = 1; batch_size = 32; backend = "ref"; threads = 1; keep_weights = true; };
search: { strategy = "random"; trials = ${5:-2}; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
}
