#!/usr/bin/env bash
# experiments/multi-fidelity/low_rungs.sh - how well a low rung ranks
# architectures that promotion has not filtered yet (issue 17).
#
#   experiments/multi-fidelity/low_rungs.sh        # 30 genotypes: about 4 min
#   TRIALS=20 TRAIN_SUBSET=2000 EPOCHS=9 experiments/multi-fidelity/low_rungs.sh
#   BN_RECALIBRATE=0 experiments/multi-fidelity/low_rungs.sh  # as before issue 30
#
# rank_corr.py can only compare rungs over the trials promotion chose (the
# best third of each rung). Here the same TRIALS random genotypes (one
# seed, so one sequence of architectures) are trained three times with the
# study's proxy recipe and resource = "images", R = TRAIN_SUBSET x EPOCHS:
#   full: every trial trains R images (scheduler none);
#   low1: successive halving with min = R / 27, eta = 27: every trial stops
#         at R / 27 images (one is promoted);
#   low3: min = R / 9, eta = 9: every trial stops at R / 9 images.
# Both low runs follow the learning-rate schedule of R, as a rung does.
# VALID validation images (default 5000) and proxy.bn_recalibrate =
# BN_RECALIBRATE batches (issue 30; default 10, nas's default: every rung
# is evaluated with recalibrated BN statistics; 0 as before issue 30).
# Prints, for each low budget, Spearman's rank correlation of the trials'
# validation accuracy there with their accuracy after R images, over every
# trial (matched by genotype), also into results/low-rungs-recalN.txt
# (results/low-rungs.txt for N = 0: the run of issue 17; the runs'
# databases: results/db/low-rungs[-recalN]/):
#   budget B images: N trials, spearman S
set -euo pipefail
study=low_rungs
. "$(dirname "$0")/study_env.sh"
trials=${TRIALS:-30}
subset=${TRAIN_SUBSET:-9000}
epochs=${EPOCHS:-3}
valid=${VALID:-5000}
seed=${SEED:-1}
recal=${BN_RECALIBRATE:-10}
tag=$([ "$recal" = 0 ] || echo "-recal$recal")
res=$results
out=$res/db/low-rungs$tag
mkdir -p "$out"
R=$((subset * epochs))

run() { # NAME SCHEDULER MIN ETA
    cat >"$out/$1.conf" <<CONF
experiment = "low-rungs-$1";
seed = $seed;
data: { dir = "$fmnist"; train_subset = $subset; valid = $valid; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { epochs = $epochs; batch_size = 64; backend = "cpu"; threads = 1; keep_weights = false;
  bn_recalibrate = $recal; };
search: { strategy = "random"; trials = $trials;
  fidelity: { resource = "images"; min = $3; max = $R; eta = $4; scheduler = "$2"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 2; ordered = true; };
CONF
    rm -rf "$out/$1.db" "$out/$1.db-wal" "$out/$1.db-shm" "$out/$1.db.ckpt" "$out/$1.db.lock"
    "$nas" run "$out/$1.conf" --db "$out/$1.db" --quiet >"$out/$1.log" 2>&1 ||
        { echo "low_rungs: the $1 run failed (see $out/$1.log)" >&2; exit 1; }
}
run full none $((R / 27)) 3
run low1 sh $((R / 27)) 27
run low3 sh $((R / 9)) 9
/usr/bin/python3 - "$out" "$here" <<'PY' | tee "$res/low-rungs$tag.txt"
import sqlite3, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from rank_corr import spearman  # noqa: E402
con = sqlite3.connect(f"file:{out}/full.db?mode=ro", uri=True)
full = dict(con.execute("SELECT t.genotype, r.val_accuracy FROM trial t JOIN result r ON "
                        "r.trial_id = t.id WHERE t.status = 'done'").fetchall())
for low in ("low1", "low3"):
    con = sqlite3.connect(f"file:{out}/{low}.db?mode=ro", uri=True)
    budget = con.execute("SELECT min(fidelity) FROM rung").fetchone()[0]
    lo = dict(con.execute("SELECT t.genotype, g.val_accuracy FROM rung g JOIN trial t ON "
                          "t.id = g.trial_id WHERE g.fidelity = ?", (budget,)).fetchall())
    keys = sorted(k for k in lo if k in full)
    print(f"budget {budget} images: {len(keys)} trials, spearman "
          f"{spearman([lo[k] for k in keys], [full[k] for k in keys]):.2f}")
PY
