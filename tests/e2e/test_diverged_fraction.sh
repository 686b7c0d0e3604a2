#!/usr/bin/env bash
# tests/e2e/test_diverged_fraction.sh - the chance-level check of a
# diverged trial (nas_search_diverged, issue 22) with data.valid given as a
# fraction (found in review: the check used data.valid's count, 0 for a
# fraction, and was skipped). NAS_FAULT chance@1 makes trial 1 report
# val_accuracy 0.1 (Fashion-MNIST's chance level) with its real loss; with
# data.valid = 0.1 (6,000 images) it is flagged diverged, as with the
# count data.valid = 6000.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
mk() { # NAME VALID
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = $2; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { batch_size = 64; epochs = 1; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 1; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
}
for v in 6000 0.1; do
    note "data.valid = $v"
    mk "v${v/./_}" "$v"
    NAS_FAULT="chance@1" run 0 "$NAS" run "v${v/./_}.conf" --db "$TMP/v${v/./_}.db"
    expect_eq "trial 1 flagged (data.valid = $v)" \
        "$(sql "$TMP/v${v/./_}.db" "SELECT coalesce(flag, '') FROM trial WHERE id = 1")" diverged
    grep_in "val_accuracy 0.1000 is chance level" "$TMP/err"
    grep_in "over 6000 validation images" "$TMP/err"
done
echo "PASS"
