#!/usr/bin/env bash
# experiments/multi-fidelity/run.sh - issue 17: multi-fidelity search
# against full-fidelity search at equal wall-clock, on real Fashion-MNIST
# training (docs/multi-fidelity.md, "The study").
#
#   experiments/multi-fidelity/run.sh            # 5 seeds x 5 methods x SECONDS (360 s): 2.5 h
#   experiments/multi-fidelity/run.sh --quick    # 3 seeds x 5 methods x 60 s: about 16 min
#   SEEDS=2 SECONDS_PER_RUN=20 experiments/multi-fidelity/run.sh   # a smoke run
#   VALID=5000 RECAL=10 OUT=.../results-recal10 experiments/multi-fidelity/run.sh --quick
#
# Knobs (environment; the defaults are the setting of issue 17's runs):
#   TRAIN_SUBSET (2000) data.train_subset   VALID (1000) data.valid
#   RECAL (0) proxy.bn_recalibrate          RESOURCE (epochs) fidelity.resource
#   MAX (9) the full budget R, in RESOURCE units (with images, a multiple
#   of TRAIN_SUBSET: full-fidelity trials train MAX / TRAIN_SUBSET epochs)
#   MIN (1) the lowest rung r               ETA (3) the rungs' ratio
#
# Methods (2 workers, 1 thread each, the same data, space and recipe; the
# full budget R = MAX epochs): full-evolution and full-random (every trial
# trains R epochs, scheduler none), hb-evolution and hb-nao (Hyperband,
# r = 1, eta = 3, the strategy filling its brackets) and asha-random. Each
# run is stopped after SECONDS_PER_RUN s of wall-clock (SIGINT, as Ctrl-C).
# A run's curve is the best validation accuracy AT FULL FIDELITY (trials
# trained R epochs: full runs' trials, multi-fidelity runs' top-rung rows)
# against the seconds since the run's first trial started.
# Outputs in results/ (or OUT): runs.csv (method, seed, seconds, best),
# curves.svg (median best-so-far per method), summary.md, and a last line
#   speedup_to_quality=X best_mf=A best_full=B
# X: the median wall-clock full-evolution needs to reach Q (the median of
# its seeds' final bests) over the same for the best multi-fidelity method
# (the one reaching Q soonest; X = 0 when none does); A and B: the mean
# final best of that method and of full-evolution at the end of the budget.
set -euo pipefail
study=multi-fidelity
. "$(dirname "$0")/study_env.sh"
seeds=${SEEDS:-5}
secs=${SECONDS_PER_RUN:-360}
if [ "${1:-}" = "--quick" ]; then
    seeds=${SEEDS:-3}
    secs=${SECONDS_PER_RUN:-60}
fi
max=${MAX:-9}
min=${MIN:-1}
eta=${ETA:-3}
resource=${RESOURCE:-epochs}
subset=${TRAIN_SUBSET:-2000}
valid=${VALID:-1000}
recal=${RECAL:-0}
epochs=$max
if [ "$resource" = images ]; then # full-fidelity trials train R images
    epochs=$((max / subset))
    [ $((epochs * subset)) -eq "$max" ] || {
        echo "multi-fidelity: MAX ($max images) must be a multiple of TRAIN_SUBSET ($subset)" >&2
        exit 2
    }
fi
out=$results
mkdir -p "$out/db"

conf() { # METHOD SEED
    local strategy sched
    case $1 in
    full-evolution) strategy=evolution sched=none ;;
    full-random) strategy=random sched=none ;;
    hb-evolution) strategy=evolution sched=hyperband ;;
    hb-nao) strategy=nao sched=hyperband ;;
    asha-random) strategy=random sched=asha ;;
    esac
    cat <<CONF
experiment = "$1-$2";
seed = $2;
data: { dir = "$fmnist"; train_subset = $subset; valid = $valid; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { epochs = $epochs; batch_size = 64; backend = "cpu"; threads = 1; keep_weights = false;
  bn_recalibrate = $recal; };
search: { strategy = "$strategy"; trials = 100000; population = 10; sample_size = 3;
  nao: { seed_archs = 10; };
  fidelity: { min = $min; max = $max; eta = $eta; resource = "$resource"; scheduler = "$sched"; }; };
evaluator: { latency_runs = 2; latency_warmup = 1; };
workers: { count = 2; };
CONF
}

if [ "${1:-}" = "--conf" ]; then # print METHOD SEED's config and stop
    conf "$2" "$3"
    exit 0
fi
methods="full-evolution full-random hb-evolution hb-nao asha-random"
echo "method,seed,seconds,best" >"$out/runs.csv"
for seed in $(seq 1 "$seeds"); do
    for m in $methods; do
        db=$out/db/$m-$seed.db
        rm -rf "$db" "$db-wal" "$db-shm" "$db.ckpt" "$db.lock"
        conf "$m" "$seed" >"$out/db/$m-$seed.conf"
        timeout -s INT "$secs" "$nas" run "$out/db/$m-$seed.conf" --db "$db" --quiet \
            >"$out/db/$m-$seed.log" 2>&1 || true
        # full fidelity: trials trained R epochs (every trial of a full run,
        # the top-rung rows of a multi-fidelity run), seconds since the start
        sqlite3 -batch -csv "$db" "
            WITH t0 AS (SELECT min(julianday(started_at)) AS s FROM trial),
            full AS (SELECT julianday(t.finished_at) AS at, r.val_accuracy AS v
                       FROM trial t JOIN result r ON r.trial_id = t.id
                      WHERE t.status = 'done' AND r.val_accuracy IS NOT NULL
                        AND r.epochs = $epochs AND NOT EXISTS (SELECT 1 FROM rung)
                     UNION ALL
                     SELECT julianday(created_at), val_accuracy FROM rung WHERE fidelity = $max)
            SELECT '$m', $seed, printf('%.1f', (full.at - t0.s) * 86400), full.v
              FROM full, t0 ORDER BY full.at" >>"$out/runs.csv"
        echo "multi-fidelity: $m seed $seed: $(grep -c "^$m,$seed," "$out/runs.csv" || true) full-fidelity results" >&2
    done
done
/usr/bin/python3 "$here/analyse.py" "$out/runs.csv" "$secs" "$out"
