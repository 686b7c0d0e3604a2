#!/bin/sh
# experiments/one-shot/budget.sh [--quick] - issue 32: how far can a
# supernet's ranking agree with the proxy's, and with which proxy?
# On examples/fashion-mobile.conf's space and data (1 thread, seed 42):
#   1. the K genotypes run.sh draws (the same seed, so the same K) are
#      trained stand-alone on seeds 42 and 43 by the example's proxy
#      (1 epoch) and by the same recipe with 3 epochs;
#   2. supernets of E1, E2, E3 epochs each evaluate them by inherited
#      weights on the first 1,000 and on all 5,000 validation images
#      (BN recalibrated on 4 batches; 16 too for the middle supernet);
#   3. budget_tau.py prints Kendall's tau of every supernet column against
#      both proxies' 2-seed means, each proxy's seed_tau and the tau a
#      perfect ranker would reach against it.
# Full: K 30, E 6 / 20 / 60 (about 45 minutes on an idle 2-core host);
# --quick: K 6, E 1 / 2 / 3 (a check that the script runs, not a result).
# Writes OUT (default results/ beside this script)/budget-MODE-*.tsv and
# budget-MODE.txt (the table). Nothing was tuned on these runs: they
# measure the defaults of examples/fashion-oneshot.conf against others.
set -eu
study=one-shot-budget
. "$(cd "$(dirname "$0")" && pwd)/../multi-fidelity/study_env.sh"
export OMP_WAIT_POLICY=passive
mode=full k=30 e1=6 e2=20 e3=60
if [ "${1:-}" = --quick ]; then
    mode=quick k=6 e1=1 e2=2 e3=3
fi
mkdir -p "$results"
tmp=$(mktemp -d /tmp/nas_budget_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
sed -e "s|^  dir = .*|  dir = \"$fmnist\";|" "$src/examples/fashion-mobile.conf" >"$tmp/p1.conf"
sed -e 's|^  epochs = 1;|  epochs = 3;|' "$tmp/p1.conf" >"$tmp/p3.conf"
grep -q '^  epochs = 3;' "$tmp/p3.conf" || { echo "$study: cannot set proxy.epochs" >&2; exit 1; }
pre=$results/budget-$mode
log=$pre.txt
: >"$log"
sn() { # CONF EPOCHS SEEDS RECAL VALID OUT: one `nas supernet` run on a shared checkpoint
    echo "# nas supernet $1 --epochs $2 --seeds $3 --recal-batches $4 --valid-images $5" >>"$log"
    if ! "$nas" supernet "$1" --epochs "$2" --genotypes "$k" --seeds "$3" --recal-batches "$4" \
        --valid-images "$5" --threads 1 --checkpoint "$tmp/sn$2.npz" --out "$6" >"$tmp/sn.out" 2>&1; then
        cat "$tmp/sn.out" >>"$log"
        echo "$study: nas supernet failed:" >&2
        tail -3 "$tmp/sn.out" >&2
        exit 1
    fi
    grep '^supernet ' "$tmp/sn.out" >>"$log" || true
}
# stand-alone references (the supernet of E2 epochs is trained on the way)
sn "$tmp/p1.conf" "$e2" 2 4 1000 "$pre-e$e2-v1000.tsv"
cp "$pre-e$e2-v1000.tsv" "$pre-proxy1.tsv"
sn "$tmp/p3.conf" "$e2" 2 4 0 "$pre-proxy3.tsv"
cols="$pre-e$e2-v1000.tsv"
for e in "$e1" "$e2" "$e3"; do
    sn "$tmp/p1.conf" "$e" 0 4 0 "$pre-e$e-v5000.tsv"
    [ "$e" = "$e2" ] || { sn "$tmp/p1.conf" "$e" 0 4 1000 "$pre-e$e-v1000.tsv"; cols="$cols $pre-e$e-v1000.tsv"; }
    cols="$cols $pre-e$e-v5000.tsv"
done
sn "$tmp/p1.conf" "$e2" 0 16 0 "$pre-e$e2-v5000-r16.tsv"
cols="$cols $pre-e$e2-v5000-r16.tsv"
# shellcheck disable=SC2086 # cols: a list of paths without spaces
/usr/bin/python3 "$here/budget_tau.py" "$pre-proxy1.tsv" "$pre-proxy3.tsv" $cols | tee -a "$log"
