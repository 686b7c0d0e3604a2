#!/usr/bin/env bash
# experiments/pool-throughput/run.sh NAS [TRIALS] [SUBSET] - trials per hour
# of a tiny real training search (Fashion-MNIST, SUBSET (512) training and 128
# validation images, 1 epoch, 16 channels, random strategy) with
# N = 1 and 2 local worker processes and 1 or 2 threads per trial.
# Prints a markdown table with the load average before each run (the
# figures mean little on a loaded machine: check `uptime` first).
set -u
NAS=${1:?usage: run.sh path/to/nas [trials]}
TRIALS=${2:-8}
SUBSET=${3:-512}
FMNIST=/usr/share/datasets/fashion-mnist
TMP=$(mktemp -d /tmp/nas_tput_XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# wall: the whole `nas run` (start-up and data loading included);
# search: first trial started to last trial finished (from the database).
echo "| workers | threads/trial | trials | wall (s) | trials/hour (wall) | search (s) | trials/hour (search) | load before |"
echo "|---|---|---|---|---|---|---|---|"
for cfg in "1 1" "1 2" "2 1" "2 2"; do
    set -- $cfg
    n=$1 th=$2
    cat >"$TMP/c.conf" <<CONF
experiment = "tput";
seed = 7;
data: { dir = "$FMNIST"; train_subset = $SUBSET; valid = 128; };
space: { channels = 16; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = $th; };
search: { strategy = "random"; trials = $TRIALS; };
evaluator: { latency_runs = 3; latency_warmup = 1; };
workers: { count = $n; };
CONF
    load=$(cut -d' ' -f1 /proc/loadavg)
    rm -f "$TMP/c.db"*
    t0=$(date +%s.%N)
    "$NAS" run "$TMP/c.conf" --db "$TMP/c.db" --quiet >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; exit 1; }
    t1=$(date +%s.%N)
    search=$(sqlite3 "$TMP/c.db" "SELECT (julianday(max(finished_at)) - julianday(min(started_at))) * 86400 FROM trial")
    awk -v n="$n" -v th="$th" -v t="$TRIALS" -v a="$t0" -v b="$t1" -v l="$load" -v s="$search" \
        'BEGIN { w = b - a; printf "| %d | %d | %d | %.1f | %.0f | %.1f | %.0f | %s |\n", n, th, t, w, 3600 * t / w, s, 3600 * t / s, l }'
done
