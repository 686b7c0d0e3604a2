#!/usr/bin/env bash
# experiments/bench-train/run.sh - issue 8: nas proxy training vs PyTorch on
# this CPU, same network (NAS-Bench-201 TinyNetwork, C=16, N=1), genotype,
# data (Fashion-MNIST idx.gz), batch size, threads, optimiser (SGD Nesterov
# 0.9, wd 5e-4, lr 0.05 cosine per step).
#
#   run.sh [--quick] [--chain-only] [--epochs E [--train-subset N]] [--repeats R] [--threads T] [--build DIR]
#
# Chain networks (issue 15): two genotypes of examples/spaces/fashion-chain.conf
# (chain-se: MBConv e6 k5/k3 with squeeze-and-excitation and hswish in the
# last stages; chain-plain: MBConv e3 k3 without SE in stage 3) get the same
# columns, against the same network built in PyTorch by tests/e2e/
# chain_torch.py (from docs/spaces.md, independently of nas). After the
# table, a per-op profile of nas's chain-se training (NAS_CPU_PROFILE=1).
# --chain-only skips the cell rows and the worker-layout line (table in
# results/<date>-chain-<mode>.md and results/latest-chain.md).
#
# For each genotype (all-3x3, mixed, mostly pooling/skip) and batch (64,
# 128) it runs bench_torch.py and bench_nas (experiments/bench-train/
# bench_nas.c) alternately R times and keeps each side's best figure
# (highest images/s, lowest latency): a shared machine only ever makes a run
# slower. It prints training and evaluation images/s, batch-1 latency (ms,
# median of N), the ratios nas/PyTorch, nas's training GFLOP/s (6 x MACs x
# images/s) against the SGEMM peak measured in the same run, the data
# loader's share of nas's training time, and 1 worker x T threads against
# T workers x 1 thread. --epochs E also trains E epochs on the full 60k
# training set on both sides (mixed genotype, batch 128) and reports test
# accuracy. --quick: throughput only, fewer steps, one repeat.
# The table is written to results/<date>-<mode>.md and results/latest.md.
# Last line (machine-readable; ratios are the worst case over all
# configurations: minimum for throughput, maximum for latency):
#   train_ratio=X eval_ratio=Y latency_ratio=Z [acc_nas=A acc_torch=B] train_ratio_bf16=W train_cpu_ratio=C conv_share=S reorders_per_step=R
# (train_ratio: nas fp32, the default precision; train_ratio_bf16: nas with
# precision bf16 against the same fp32 PyTorch runs; train_cpu_ratio:
# PyTorch's CPU seconds per trained image over nas's, all threads counted,
# which a busy machine barely moves, unlike wall-clock images/s; conv_share:
# dense plus depthwise convolution time over all op time in the per-op
# profile of chain-se's training steps at batch 128, a share within one
# run, so less sensitive to load than a throughput)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=0 epochs=0 repeats=2 threads=2 build="$root/build" subset=0 chain_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; repeats=1 ;;
    --chain-only) chain_only=1 ;;
    --epochs) epochs=$2; shift ;;
    --train-subset) subset=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --threads) threads=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "usage: run.sh [--quick] [--chain-only] [--epochs E [--train-subset N]] [--repeats R] [--threads T] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then steps=20; eval_n=2048; lat=60; else steps=40; eval_n=5000; lat=200; fi

# PyTorch (Debian's python3-torch, for /usr/bin/python3 only)
if ! /usr/bin/python3 -c "import torch, numpy" 2>/dev/null; then
  bash "$root/scripts/deps.sh" test
fi
# bench_nas against libnas
if [ ! -f "$build/CMakeCache.txt" ]; then cmake -S "$root" -B "$build" >/dev/null; fi
cmake --build "$build" -j2 --target bench_nas >/dev/null
nas="$build/experiments/bench_nas"

# OpenMP threads that spin while waiting make 2-thread oneDNN (and PyTorch)
# several times slower on a shared machine; both sides get the same policy.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
data=/usr/share/datasets/fashion-mnist

G_ALL3='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|'
G_MIXED='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
G_POOL='|avg_pool_3x3~0|+|skip_connect~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_1x1~2|'
CHAIN_CONF="$root/examples/spaces/fashion-chain.conf"
G_CHAIN_SE='mb1_k3|c24:d2:mb3_k5:mb6_k3|c40:d3:se_on:mb6_k5:mb6_k3:mb6_k5|mb6_k5:mb6_k3'
G_CHAIN_PLAIN='mb1_k3|c16:d2:mb3_k3:mb3_k3|c32:d2:se_off:mb3_k3:mb3_k3:skip|mb3_k3:zero'
names=(all-3x3 mixed pool-skip chain-se chain-plain)
genos=("$G_ALL3" "$G_MIXED" "$G_POOL" "$G_CHAIN_SE" "$G_CHAIN_PLAIN")
batches=(64 128)
first_gi=0
[ $chain_only = 1 ] && first_gi=3
chain_json=$(mktemp) prof_txt=$(mktemp)
trap 'rm -f "$chain_json" "$prof_txt"' EXIT

kv() { sed -n "s/^$1=\([^ ]*\).*/\1/p" <<<"$2" | tail -1; }
best_max() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b + 0 > a + 0) print b; else print a }'; }
best_min() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b + 0 < a + 0) print b; else print a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "nan" }'; }

mkdir -p "$here/results"
stamp=$(date +%Y%m%d-%H%M)
mode=$([ $quick = 1 ] && echo quick || echo full)
[ $chain_only = 1 ] && mode="chain-$mode"   # written to latest-chain.md, not latest.md
out="$here/results/$stamp-$mode.md"
load_start=$(uptime)
cmake --build "$build" -j2 --target nas_cli >/dev/null
"$build/nas" space "$CHAIN_CONF" --format json >"$chain_json"
peak=$("$nas" sgemm --threads "$threads" | sed -n 's/sgemm_gflops=//p')

{
  echo "# bench-train $stamp ($mode): nas vs PyTorch, $threads threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
  echo
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load at start: ${load_start##*load average: }"
  echo "SGEMM peak (OpenBLAS, $threads threads, 2048^3, best of 5): $peak GFLOP/s"
  echo "steps per throughput run: $steps, eval images: $eval_n, latency runs: $lat, repeats (best kept): $repeats"
  echo
  echo "images/s (train, eval) and ms (batch-1 latency); nas fp32 unless marked bf16 (nas_backend_set_precision(be, \"bf16\"))"
  echo
  echo "| genotype | batch | train nas | train torch | ratio | train nas bf16 | ratio | eval nas | eval torch | ratio | lat nas ms | lat torch ms | ratio | nas GFLOP/s | % peak | loader share | cpu ms/img nas | cpu ms/img torch | cpu ratio |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} | tee "$out"

min_train="" min_eval="" max_lat="" min_bf16="" min_cpu=""
for gi in $(seq "$first_gi" 4); do
  # chain rows: the genotype is one of fashion-chain.conf's, on both sides
  tx=() nx=()
  if [ "$gi" -ge 3 ]; then tx=(--space-json "$chain_json"); nx=(--space "$CHAIN_CONF"); fi
  for b in "${batches[@]}"; do
    tn="" tt="" en="" et="" ln="" lt="" gf="" ls="" tb="" cn="" ct=""
    for r in $(seq "$repeats"); do
      o=$(/usr/bin/python3 "$here/bench_torch.py" "${tx[@]}" --genotype "${genos[$gi]}" --batch "$b" \
            --threads "$threads" --steps "$steps" --eval-images "$eval_n" \
            --latency-runs "$lat" --data "$data")
      tt=$(best_max "$tt" "$(kv torch_train_ips "$o")")
      et=$(best_max "$et" "$(kv torch_eval_ips "$o")")
      lt=$(best_min "$lt" "$(kv torch_latency_ms "$o")")
      ct=$(best_min "$ct" "$(kv torch_train_cpu_ms_per_img "$o")")
      o=$("$nas" train "${nx[@]}" --genotype "${genos[$gi]}" --batch "$b" --threads "$threads" \
            --steps "$steps" --eval-images "$eval_n" --latency-runs "$lat" --data "$data")
      if [ "$(best_max "$tn" "$(kv train_ips "$o")")" != "$tn" ]; then
        gf=$(kv train_gflops "$o"); ls=$(kv loader_share "$o")
      fi
      tn=$(best_max "$tn" "$(kv train_ips "$o")")
      en=$(best_max "$en" "$(kv eval_ips "$o")")
      ln=$(best_min "$ln" "$(kv latency_ms "$o")")
      cn=$(best_min "$cn" "$(kv train_cpu_ms_per_img "$o")")
      # a host without AVX512-BF16 or AMX refuses bf16: its columns say n/a
      if o=$("$nas" train "${nx[@]}" --genotype "${genos[$gi]}" --batch "$b" --threads "$threads" \
              --steps "$steps" --eval-images 256 --latency-runs 5 --data "$data" --precision bf16 \
              2>/dev/null); then
        tb=$(best_max "$tb" "$(kv train_ips "$o")")
      fi
    done
    rt=$(ratio "$tn" "$tt"); re=$(ratio "$en" "$et"); rl=$(ratio "$ln" "$lt")
    if [ -n "$tb" ]; then
      rb=$(ratio "$tb" "$tt"); min_bf16=$(best_min "$min_bf16" "$rb")
    else
      tb=n/a rb=n/a
    fi
    min_train=$(best_min "$min_train" "$rt"); min_eval=$(best_min "$min_eval" "$re")
    max_lat=$(best_max "$max_lat" "$rl")
    pk=$(awk -v g="$gf" -v p="$peak" 'BEGIN { printf "%.0f", 100 * g / p }')
    rc_=$(ratio "$ct" "$cn"); min_cpu=$(best_min "$min_cpu" "$rc_")
    echo "| ${names[$gi]} | $b | $tn | $tt | $rt | $tb | $rb | $en | $et | $re | $ln | $lt | $rl | $gf | $pk | $ls | $cn | $ct | $rc_ |" | tee -a "$out"
  done
done

# Where nas's time goes in chain-se's training step (batch 128): the cpu
# backend's per-op profile (wall seconds summed per op kind) over training
# steps only (--eval-images 0: no evaluation or latency runs in it; before
# 2026-11-28 afternoon the profile also held 2 x 256 eval images and 5
# latency runs; the issue asks for the training step's share, and the two
# differ by less than the run-to-run spread of about 0.01).
{
  echo
  echo "per-op profile, nas cpu, chain-se, batch 128, $threads threads ($steps + 3 resident steps, $steps loader steps; training only):"
  echo '```'
  NAS_CPU_PROFILE=1 "$nas" train --space "$CHAIN_CONF" --genotype "$G_CHAIN_SE" --batch 128 \
    --threads "$threads" --steps "$steps" --eval-images 0 --data "$data" 2>&1 >/dev/null |
    sed -n '/profile/,$p' >"$prof_txt"
  cat "$prof_txt"
  echo '```'
} | tee -a "$out"
# conv_share: dense + depthwise convolution seconds over all op seconds of
# that profile (issue 34: the step should cost at most 1.5x its convolutions)
conv_share=$(awk '$1 ~ /^(dw)?conv_(fwd|bwd_data|bwd_filter)$/ { c += $4 }
  $2 == "backend" && $3 == "profile" { t = substr($4, 2) + 0 }
  END { if (t > 0) printf "%.3f", c / t; else print "nan" }' "$prof_txt")
# reorders_per_step: activation layout reorders per training step in that
# profile ($steps + 3 + $steps steps; issue 34 item 2 wants them only at
# the network's input and output)
reorders=$(awk -v s="$((2 * steps + 3))" '$1 == "reorder" { printf "%.1f", $2 / s; f = 1 }
  END { if (!f) print "0" }' "$prof_txt")

if [ $chain_only = 0 ]; then
# Worker layout: 1 worker x T threads vs T workers x 1 thread (nas, mixed, batch 128).
o=$("$nas" train --genotype "$G_MIXED" --batch 128 --threads "$threads" --steps "$steps" \
      --eval-images 256 --latency-runs 5 --data "$data")
one=$(kv train_ips "$o")
tmpd=$(mktemp -d)
for w in $(seq "$threads"); do
  "$nas" train --genotype "$G_MIXED" --batch 128 --threads 1 --steps "$steps" \
    --eval-images 256 --latency-runs 5 --data "$data" >"$tmpd/w$w" &
done
wait
many=$(cat "$tmpd"/w* | sed -n 's/^train_ips=//p' | awk '{ s += $1 } END { printf "%.1f", s }')
rm -rf "$tmpd"
{
  echo
  echo "workers (mixed, batch 128, nas): 1 x $threads threads: $one img/s; $threads x 1 thread: $many img/s in total"
} | tee -a "$out"
fi

acc_line=""
if [ "$epochs" -gt 0 ]; then
  o=$(/usr/bin/python3 "$here/bench_torch.py" --genotype "$G_MIXED" --batch 128 --threads "$threads" \
        --steps 3 --eval-images 256 --latency-runs 5 --epochs "$epochs" --train-subset "$subset" --data "$data")
  acc_t=$(kv torch_acc "$o")
  o=$("$nas" train --genotype "$G_MIXED" --batch 128 --threads "$threads" --steps 3 \
        --eval-images 256 --latency-runs 5 --epochs "$epochs" --train-subset "$subset" --data "$data")
  acc_n=$(kv acc "$o"); secs_n=$(kv epochs_s "$o")
  o=$("$nas" train --genotype "$G_MIXED" --batch 128 --threads "$threads" --steps 3 \
        --eval-images 256 --latency-runs 5 --epochs "$epochs" --train-subset "$subset" --data "$data" \
        --precision bf16)
  acc_b=$(kv acc "$o"); secs_b=$(kv epochs_s "$o")
  {
    echo
    echo "accuracy after $epochs epochs (mixed, batch 128, train images: ${subset/#0/all 60k}, 10k test): nas fp32 $acc_n ($secs_n s), nas bf16 $acc_b ($secs_b s), torch $acc_t"
  } | tee -a "$out"
  acc_line=" acc_nas=$acc_n acc_torch=$acc_t"
fi
{
  echo
  echo "load at end: $(uptime | sed 's/.*load average: //')"
  echo
  echo "train_ratio=$min_train eval_ratio=$min_eval latency_ratio=$max_lat$acc_line train_ratio_bf16=${min_bf16:-n/a} train_cpu_ratio=$min_cpu conv_share=$conv_share reorders_per_step=$reorders"
} | tee -a "$out"
if [ $chain_only = 1 ]; then cp "$out" "$here/results/latest-chain.md"; else cp "$out" "$here/results/latest.md"; fi
