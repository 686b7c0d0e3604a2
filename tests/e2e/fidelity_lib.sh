# tests/e2e/fidelity_lib.sh - helpers of the multi-fidelity resume tests
# (issue 29; sourced after search_lib.sh, not a test itself).
#
# fid_conf FILE EXPERIMENT SEED [WORKER_KEYS] [EXTRA]: successive halving,
# 9 trials in 3 brackets of 3 (min 1, max 3, eta 3: one promotion per
# bracket), real training on a few hundred Fashion-MNIST images, 1 worker.
fid_conf() {
    cat >"$1" <<CONF
experiment = "$2";
seed = $3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 9;
  fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 2; latency_warmup = 1; };
workers: { count = 1; ${4:-} };
${5:-}
CONF
}

# fid_trials DB: every trial with its status and stored result (the
# latency of rejected trials only: a trained one's is measured anew).
fid_trials() {
    sql "$1" "SELECT t.id, t.genotype, t.status, r.epochs, r.val_accuracy,
              CASE WHEN r.val_accuracy IS NULL THEN r.latency_ms END
              FROM trial t LEFT JOIN result r ON r.trial_id = t.id ORDER BY t.id"
}

# fid_rungs DB: every stored rung.
fid_rungs() { sql "$1" "SELECT trial_id, fidelity, val_accuracy, loss FROM rung ORDER BY trial_id, fidelity"; }

# fid_cut DB LAST: keep trials 1..LAST (a bracket's end) as an interrupted
# run would have left them.
fid_cut() {
    sql "$1" "DELETE FROM rung WHERE trial_id > $2; DELETE FROM result WHERE trial_id > $2;
              DELETE FROM trial WHERE id > $2; UPDATE experiment SET status = 'interrupted';"
}

# fid_same DB REF WHAT: DB holds REF's trials and rungs.
fid_same() {
    expect_eq "trials $3" "$(fid_trials "$1")" "$(fid_trials "$2")"
    expect_eq "rungs $3" "$(fid_rungs "$1")" "$(fid_rungs "$2")"
}

# fid_stop_at_rewrite PID FILE: wait until FILE (a promotion's checkpoint)
# exists and is then written again, after the promotion's next epoch, and
# stop the run PID as Ctrl-C does; returns the run's exit status.
fid_stop_at_rewrite() {
    for _ in $(seq 3000); do
        [ -e "$2" ] && break
        kill -0 "$1" 2>/dev/null || break
        sleep 0.02
    done
    touch "$TMP/mark"
    for _ in $(seq 3000); do
        [ "$2" -nt "$TMP/mark" ] && break
        kill -0 "$1" 2>/dev/null || break
        sleep 0.02
    done
    kill -INT "$1"
    wait "$1"
}

# fid_ckpt_epochs FILE: the epochs a training checkpoint (.npz) holds, its
# state/progress[1] (trainer/train_full.c), read with sqlite3's zipfile().
fid_ckpt_epochs() {
    local hex hl off
    hex=$(sql ":memory:" "SELECT hex(data) FROM zipfile('$1') WHERE name = 'state/progress.npy'")
    [ -n "$hex" ] || return 1
    hl=$((16#${hex:18:2}${hex:16:2}))  # the .npy header's length, little-endian
    off=$(((10 + hl + 8) * 2))          # progress[1], an int64 little-endian
    echo $((16#${hex:off+14:2}${hex:off+12:2}${hex:off+10:2}${hex:off+8:2}${hex:off+6:2}${hex:off+4:2}${hex:off+2:2}${hex:off:2}))
}
