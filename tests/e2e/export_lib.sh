# tests/e2e/export_lib.sh - helpers shared by the export e2e scripts (sourced,
# not a test itself): search_lib.sh plus a tiny search that keeps its
# trained proxy weights, and the Python checkers run with Debian's
# /usr/bin/python3 (python3-onnx, python3-opencv, python3-torch).
. "$(dirname "$0")/search_lib.sh"
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)

# need_py MODULE...: skip visibly unless /usr/bin/python3 imports them all.
need_py() {
    [ -x "$PY" ] || skip "$PY not found (Debian python3)"
    for m in "$@"; do
        "$PY" -c "import $m" >/dev/null 2>&1 ||
            skip "$PY cannot import $m (apt-get install python3-onnx python3-opencv python3-torch)"
    done
}

# Genotypes that together use every op of the cell space: none,
# skip_connect, nor_conv_1x1, nor_conv_3x3, avg_pool_3x3, a node no edge
# reaches (its conv out-edge adds BN's constant) and a dead node.
GENOS=(
    '|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
    '|none~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|skip_connect~0|avg_pool_3x3~1|nor_conv_1x1~2|'
    '|avg_pool_3x3~0|+|none~0|nor_conv_1x1~1|+|skip_connect~0|avg_pool_3x3~1|nor_conv_3x3~2|'
    '|nor_conv_1x1~0|+|avg_pool_3x3~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|'
)

# tiny_search DB BACKEND TRIALS: a real search of TRIALS trials on a few
# hundred images with proxy.keep_weights = true.
tiny_search() {
    local db=$1 backend=$2 trials=$3
    cat >"$TMP/export.conf" <<CONF
# e2e: tiny search whose trained weights are kept for export
experiment = "e2e-export";
seed = 7;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "$backend"; threads = 1; keep_weights = true; };
search: { strategy = "random"; trials = $trials; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
    run 0 "$NAS" run "$TMP/export.conf" --db "$db" --quiet
    expect_eq "kept weights" "$(sql "$db" "SELECT count(*) FROM trial_weights")" \
        "$(sql "$db" "SELECT count(*) FROM trial WHERE status = 'done'")"
}
