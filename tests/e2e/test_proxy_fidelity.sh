#!/usr/bin/env bash
# tests/e2e/test_proxy_fidelity.sh - `nas train ARCH.json --proxy` of a
# multi-fidelity trial redoes what the trial trained: its highest rung's
# budget with the learning-rate schedule spanning search.fidelity.max
# (ARCH.json's recipe.fidelity), not proxy.epochs. Two successive-halving
# searches on a few hundred Fashion-MNIST images (min 1, max 3, eta 3 in
# epochs; 64, 192, 576 training images with proxy.bn_recalibrate = 20):
# the exported best trial's val_accuracy is reproduced to 1e-6 (the epochs
# search with data.augment: its rungs train on augmented images as --proxy
# does; they trained without it before), and so is a
# trial stopped at the 64-image rung (one step into the first epoch). A
# single-fidelity export has no recipe.fidelity.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"

conf() { # $1: file, $2: fidelity group, $3: proxy extras, $4: data extras
    cat >"$1" <<CONF
experiment = "proxy-fid";
seed = 7;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; ${4:-} };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; $3 };
search: { strategy = "random"; trials = 9; $2 };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
}

# check DB [TRIAL]: export the best trial (or TRIAL), --proxy reproduces its val_accuracy
check() {
    if [ -n "${2:-}" ]; then pick="--trial $2"; else pick=--best; fi
    run 0 "$NAS" export --db "$1" $pick --format json -o "$1.json"
    run 0 "$NAS" train "$1.json" --proxy --checkpoint none
    expect_reproduced "$1"
}

note "successive halving on epochs (min 1, max 3) with data.augment: the best trial trained 3 epochs"
conf e.conf 'fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; };' '' 'augment = "crop4,flip";'
run 0 "$NAS" run e.conf --db e.db
grep -q '"fidelity"' e.db.json 2>/dev/null && fail "stale file"
check e.db
grep -q '"resource": "epochs"' e.db.json || fail "ARCH.json has no recipe.fidelity"

note "successive halving on images (64, 192, 576), bn_recalibrate = 20"
conf i.conf 'fidelity = { resource = "images"; min = 64; max = 576; eta = 3; scheduler = "sh"; };' \
    'bn_recalibrate = 20;'
run 0 "$NAS" run i.conf --db i.db
check i.db
grep -q '"resource": "images"' i.db.json || fail "ARCH.json has no recipe.fidelity for images"
low=$(sql i.db "SELECT trial_id FROM rung GROUP BY trial_id HAVING max(fidelity) = 64 LIMIT 1")
[ -n "$low" ] || fail "no trial stopped at the 64-image rung"
check i.db "$low" # 64 images: one step of the first epoch
grep -q '"budget": 64' i.db.json || fail "trial $low's ARCH.json: not budget 64"

note "a single-fidelity export has no recipe.fidelity"
conf s.conf '' ''
sed -i 's/trials = 9/trials = 2/' s.conf
run 0 "$NAS" run s.conf --db s.db
check s.db
grep -q '"fidelity"' s.db.json && fail "a single-fidelity ARCH.json has recipe.fidelity"
echo "PASS"
