#!/bin/sh
# experiments/proxy-check/run.sh [PROXY-CHECK ARGS...] - issue 30: does BN
# recalibration (proxy.bn_recalibrate, docs/proxy.md) make the low rungs of
# examples/fashion-cells.conf rank? Runs `nas proxy-check` on the example
# with proxy.bn_recalibrate = N for each N in $NS (default "0 20 10"), one
# after the other, each in a fresh database, with ARGS (default --quick).
# Writes OUT (default results/ beside this script)/bn-recal-N.txt: the
# load average before and after, the whole output (progress, per-rung
# table, verdict, last line) and the wall seconds. Exits 77 ("skipped")
# when Fashion-MNIST is absent (FMNIST overrides its directory); builds nas
# in BUILD_DIR (default build-study) as experiments/multi-fidelity does.
set -eu
study=proxy-check
. "$(cd "$(dirname "$0")" && pwd)/../multi-fidelity/study_env.sh"
export OMP_WAIT_POLICY=passive
[ $# -gt 0 ] || set -- --quick
mkdir -p "$results"
tmp=$(mktemp -d /tmp/nas_proxycheck_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for n in ${NS:-0 20 10}; do
    # the example with its data directory and proxy.bn_recalibrate = N
    sed -e "s|^  dir = .*|  dir = \"$fmnist\";|" \
        -e "s|^proxy: {|proxy: {\n  bn_recalibrate = $n;|" \
        "$src/examples/fashion-cells.conf" >"$tmp/c$n.conf"
    out=$results/bn-recal-$n.txt
    {
        echo "# nas proxy-check examples/fashion-cells.conf (proxy.bn_recalibrate = $n) $*"
        echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
    } >"$out"
    t0=$(date +%s)
    "$nas" proxy-check "$tmp/c$n.conf" --db "$tmp/m$n.db" "$@" >>"$out" 2>&1
    t1=$(date +%s)
    {
        echo "# wall_s $((t1 - t0))"
        echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >>"$out"
    echo "bn_recalibrate=$n $(grep '^proxy_check ' "$out") wall_s=$((t1 - t0))"
done
