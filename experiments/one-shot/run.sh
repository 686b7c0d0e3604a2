#!/bin/sh
# experiments/one-shot/run.sh [--quick] - issue 32: does a weight-sharing
# supernet rank examples/fashion-mobile.conf's space as its proxy does?
# Runs `nas supernet` (docs/one-shot.md) on the example: the supernet
# trains E epochs with the example's proxy recipe (1 thread), K random
# genotypes (distinct keys) are evaluated by inherited weights (BN
# recalibrated on 4 batches, the first 1,000 validation images) and
# trained stand-alone with the proxy on seeds 42 and 43 (all 5,000
# validation images). Full: E 20, K 30; --quick: E 6, K 10.
# Writes OUT (default results/ beside this script)/MODE.tsv (one row per
# genotype: supernet accuracy, each seed's) and MODE.txt (load average,
# progress, nas's last line, wall seconds). The last line printed is
#   supernet_tau=X seed_tau=Y subnets_per_s=Z supernet_s=A eval_s=B standalone_s=C
# best_oneshot and best_multitrial (the issue's) are not measured: the
# supernet + strategy search and the equal-wall-clock comparison are not
# built yet. Exits 77 when Fashion-MNIST is absent; builds nas in BUILD_DIR
# (default build-study) as experiments/multi-fidelity does.
set -eu
study=one-shot
. "$(cd "$(dirname "$0")" && pwd)/../multi-fidelity/study_env.sh"
export OMP_WAIT_POLICY=passive
mode=full epochs=20 k=30
if [ "${1:-}" = --quick ]; then
    mode=quick epochs=6 k=10
fi
mkdir -p "$results"
tmp=$(mktemp -d /tmp/nas_oneshot_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sed -e "s|^  dir = .*|  dir = \"$fmnist\";|" "$src/examples/fashion-mobile.conf" >"$tmp/c.conf"
out=$results/$mode.txt
{
    echo "# nas supernet examples/fashion-mobile.conf --epochs $epochs --genotypes $k --seeds 2"
    echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
} >"$out"
t0=$(date +%s)
"$nas" supernet "$tmp/c.conf" --epochs "$epochs" --genotypes "$k" --seeds 2 --recal-batches 4 \
    --valid-images 1000 --checkpoint "$tmp/supernet.npz" --out "$results/$mode.tsv" >>"$out" 2>&1
t1=$(date +%s)
{
    echo "# wall_s $((t1 - t0))"
    echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$out"
grep '^supernet supernet_tau=' "$out" | sed 's/^supernet //'
