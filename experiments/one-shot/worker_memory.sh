#!/usr/bin/env bash
# experiments/one-shot/worker_memory.sh NAS CONF CHECKPOINT_DIR OUT_PREFIX - the
# memory of a one-shot search's phase-2 workers (docs/one-shot.md, "The mapped
# weights file"): a fresh database OUT_PREFIX.db whose OUT_PREFIX.db.supernet/
# starts with the finished checkpoint (*.npz and *.tsv of CHECKPOINT_DIR, made
# by an earlier `nas run CONF`), so phase 1 is skipped; `NAS run CONF` then
# runs phase 2 while every 0.25 s the Rss, Pss and private memory (kB) of each
# child of the controller is read from /proc/PID/smaps_rollup. Prints, per
# child sampled more than twice (the workers; the phase-1 child too when it
# writes the weights file), the maximum of each, and the wall time.
# Environment: ENVX="VAR=value ..." is passed to nas (e.g.
# MALLOC_MMAP_THRESHOLD_=65536).
set -u
nas=$1 conf=$2 ck=$3 out=$4
rm -rf "$out".db*
mkdir -p "$out.db.supernet"
cp "$ck"/*.npz "$ck"/*.tsv "$out.db.supernet/"
t0=$(date +%s.%N)
# shellcheck disable=SC2086
env OMP_WAIT_POLICY=passive ${ENVX:-} "$nas" run "$conf" --db "$out.db" >"$out.out" 2>"$out.err" &
pid=$!
: >"$out.samples"
while kill -0 "$pid" 2>/dev/null; do
    for c in $(pgrep -P "$pid"); do
        awk -v c="$c" '/^Rss:/{r=$2} /^Pss:/{p=$2} /^Private_(Clean|Dirty):/{v+=$2}
                       END{print c, r, p, v}' "/proc/$c/smaps_rollup" >>"$out.samples" 2>/dev/null
    done
    sleep 0.25
done
wait "$pid"
code=$?
awk '{n[$1]++; if ($2 > r[$1]) r[$1] = $2; if ($3 > p[$1]) p[$1] = $3; if ($4 > v[$1]) v[$1] = $4}
     END {for (k in n) if (n[k] > 2) printf "pid %s: max RSS %d kB, PSS %d kB, private %d kB\n", k, r[k], p[k], v[k]}' "$out.samples"
echo "exit $code, wall $(echo "$(date +%s.%N) - $t0" | bc) s"
