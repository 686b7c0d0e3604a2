#!/usr/bin/env bash
# experiments/bench-gpu/run.sh - nas (cuda backend) vs PyTorch (CUDA) on the
# GPUs of this machine: training images/s of one trial, and trials per hour
# with N trials sharing each GPU. Ready to run the day a GPU is present;
# without one it says so and exits 0. See README.md in this directory.
#
# usage: experiments/bench-gpu/run.sh [--nas PATH] [--genotype G] [--epochs E]
#            [--batch-size B] [--trials-per-gpu "1 2 4"] [--gpus "0 1"]
#            [--precision fp32|bf16|fp16] [--out DIR] [--no-torch]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

nas="$root/build/nas"
genotype='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
epochs=1
batch=128
tpg_list="1 2 4"
gpus=""
out="$here/results"
torch=1
precision=fp32 # nas train --precision, and bench_torch.py's autocast dtype
py=/usr/bin/python3 # the interpreter with torch (not necessarily the python3 on PATH)

while [ $# -gt 0 ]; do
    case "$1" in
    --nas) nas="$2"; shift 2 ;;
    --genotype) genotype="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --trials-per-gpu) tpg_list="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --precision) precision="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-torch) torch=0; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "bench-gpu: unknown option '$1'" >&2; exit 2 ;;
    esac
done

case "$precision" in
fp32 | bf16 | fp16) ;;
*) echo "bench-gpu: --precision takes fp32, bf16 or fp16, not '$precision'" >&2; exit 2 ;;
esac
if [ ! -x "$nas" ]; then
    echo "bench-gpu: no nas binary at $nas (build first: scripts/build.sh, or pass --nas)" >&2
    exit 2
fi

# ---- is there anything to measure? ------------------------------------------------
devices=$("$nas" devices)
if ! grep -q '^backends compiled in:.* cuda' <<<"$devices"; then
    echo "bench-gpu: this nas was built without the CUDA backend; nothing to measure."
    echo "           (configure with the CUDA toolkit + cuDNN present; see docs/cuda.md)"
    exit 0
fi
if ! grep -q '^cuda  [0-9]\+: ' <<<"$devices"; then
    echo "bench-gpu: no GPU on this machine; nothing to measure."
    grep '^cuda' <<<"$devices" | sed 's/^/           /'
    exit 0
fi
if [ -z "$gpus" ]; then
    gpus=$(sed -n 's/^cuda  \([0-9]\+\): .*/\1/p' <<<"$devices" | tr '\n' ' ')
fi
ngpu=$(wc -w <<<"$gpus")

have_torch=0
if [ "$torch" = 1 ] && "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    have_torch=1
elif [ "$torch" = 1 ]; then
    echo "bench-gpu: PyTorch with CUDA not available to $py; measuring nas only."
fi

mkdir -p "$out"
stamp=$(date +%Y%m%d-%H%M%S)
csv="$out/bench-gpu-$stamp.csv"
md="$out/bench-gpu-$stamp.md"
logs="$out/logs-$stamp"
mkdir -p "$logs"
echo "impl,gpus,trials_per_gpu,trials,wall_s,mean_img_per_s_per_trial,trials_per_hour" >"$csv"

# One trial of implementation $1 on GPU $2, log to $3.
trial() {
    local impl=$1 gpu=$2 log=$3
    if [ "$impl" = nas ]; then
        CUDA_VISIBLE_DEVICES=$gpu "$nas" train --backend cuda --genotype "$genotype" \
            --epochs "$epochs" --batch-size "$batch" --precision "$precision" >"$log" 2>&1
    else
        CUDA_VISIBLE_DEVICES=$gpu "$py" "$here/bench_torch.py" --genotype "$genotype" \
            --epochs "$epochs" --batch-size "$batch" --precision "$precision" \
            --device cuda >"$log" 2>&1
    fi
}

# N trials on every GPU at once; append a CSV row.
round() {
    local impl=$1 n=$2 pids=() logsof=() t0 t1 k=0
    t0=$(date +%s.%N)
    for g in $gpus; do
        for ((i = 0; i < n; i++)); do
            local log="$logs/$impl-tpg$n-gpu$g-$i.log"
            trial "$impl" "$g" "$log" &
            pids+=($!)
            logsof+=("$log")
        done
    done
    local failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
    t1=$(date +%s.%N)
    if [ "$failed" -gt 0 ]; then
        echo "bench-gpu: $impl: $failed of ${#pids[@]} trials failed (logs in $logs)" >&2
        return 1
    fi
    local rates
    rates=$(for l in "${logsof[@]}"; do sed -n 's/^training: .*, \([0-9.]\+\) img\/s$/\1/p' "$l"; done)
    k=$(wc -l <<<"$rates")
    local trials=$((n * ngpu))
    awk -v impl="$impl" -v g="$ngpu" -v n="$n" -v t="$trials" -v t0="$t0" -v t1="$t1" -v k="$k" \
        'BEGIN { s = 0 } { s += $1 } END {
            wall = t1 - t0; printf "%s,%d,%d,%d,%.1f,%.0f,%.1f\n", impl, g, n, t, wall,
            (k ? s / k : 0), t * 3600 / wall }' <<<"$rates" >>"$csv"
    tail -1 "$csv"
}

echo "bench-gpu: GPUs: $gpus; trials per GPU: $tpg_list; $epochs epoch(s) of Fashion-MNIST, batch $batch, $precision"
grep '^cuda' <<<"$devices"
for n in $tpg_list; do
    round nas "$n" || true
    if [ "$have_torch" = 1 ]; then round torch "$n" || true; fi
done

{
    echo "# bench-gpu $stamp"
    echo
    echo "genotype \`$genotype\`, $epochs epoch(s), batch $batch, $precision"
    echo
    echo '```'
    grep -v '^backends' <<<"$devices" | sed '/^$/d'
    echo '```'
    echo
    echo "| impl | GPUs | trials/GPU | trials | wall s | img/s per trial | trials/hour |"
    echo "|---|---|---|---|---|---|---|"
    tail -n +2 "$csv" | awk -F, '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }'
} >"$md"
echo "bench-gpu: wrote $md and $csv"
