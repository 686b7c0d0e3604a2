#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...] - build the libFuzzer harnesses
# (tests/fuzz/, issue 18) with clang, -fsanitize=fuzzer,address,undefined,
# in build-fuzz/ (-DNAS_FUZZ=ON; the gcc build is untouched), then run each
# target (all of tests/fuzz/targets.def, or those named) for SECONDS
# seconds (default 60), one after the other on one core, and print
# libFuzzer's final statistics per target and a summary: executions,
# coverage (cov: edges, ft: features), corpus size, CPU seconds.
#
# Seeds: tests/fuzz/corpus/<target>/ (read only); what the fuzzer finds
# new is kept in build-fuzz/fuzz-corpus/<target>/, so runs build on each
# other. A crash, leak, undefined behaviour, timeout (10 s) or an input
# needing more than 2 GB fails the script (exit 1) and leaves the input in
# build-fuzz/fuzz-artifacts/<target>/; reproduce it with
#   build-fuzz/tests/fuzz/fuzz_<target> FILE
# and commit it to tests/fuzz/regressions/<target>/ with the fix
# (tests/fuzz/README.md). CI (.ci/run) runs `scripts/fuzz.sh 20`.
# FUZZ_JOBS=N runs N targets at once (default 1). FUZZ_BUILD=0 skips the
# build (runs the harnesses already in build-fuzz/, e.g. while another
# fuzz.sh is running beside this one).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-60}
shift || true
B=${NAS_FUZZ_BUILD:-$SRC/build-fuzz}
JOBS=${FUZZ_JOBS:-1}

if ! command -v clang >/dev/null; then
    echo "fuzz.sh: clang is missing; install it with scripts/deps.sh test (Debian: clang libclang-rt-14-dev)" >&2
    exit 2
fi
if [ "${FUZZ_BUILD:-1}" != 0 ]; then
    cmake -S "$SRC" -B "$B" -DCMAKE_C_COMPILER=clang -DNAS_FUZZ=ON -DNAS_CUDA=OFF -DNAS_MPI=OFF \
          -DNAS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$B" --target nas_fuzzers -j"$(nproc)"
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(sed -n 's/^NAS_FUZZ_TARGET(\([a-z0-9_]*\),.*/\1/p' "$SRC/tests/fuzz/targets.def")
fi

# scratch files of the targets (nas_fuzz_dir) in memory when possible
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# leaks inside third-party libraries only, each explained in the file
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SRC/tests/fuzz/lsan.supp:print_suppressions=0}
mkdir -p "$B/fuzz-logs" "$B/fuzz-run"
run_one() {
    local t=$1 bin="$B/tests/fuzz/fuzz_$1"
    local seeds="$SRC/tests/fuzz/corpus/$t" work="$B/fuzz-corpus/$t" art="$B/fuzz-artifacts/$t/"
    local log="$B/fuzz-logs/$t.log" tf="$B/fuzz-logs/$t.time"
    mkdir -p "$work" "$art" "$B/fuzz-run/$t"
    [ -x "$bin" ] || { echo "fuzz.sh: no target $t ($bin)" >&2; return 2; }
    local rc=0
    # an empty working directory: the config target's @include cannot reach files
    ( cd "$B/fuzz-run/$t" && TIMEFORMAT='%U %S' && { time "$bin" -max_total_time="$SECS" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$art" \
        "$work" "$seeds" >"$log" 2>&1 ; } 2>"$tf" ) || rc=$?
    echo "$rc" >"$B/fuzz-logs/$t.rc"
}

pids=()
for t in "${targets[@]}"; do
    run_one "$t" &
    pids+=($!)
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 1; done
done
wait

fail=0
SUMMARY=""
for t in "${targets[@]}"; do
    log="$B/fuzz-logs/$t.log"
    rc=$(cat "$B/fuzz-logs/$t.rc" 2>/dev/null || echo 2)
    echo "---- $t: final statistics ($log)"
    grep '^stat::' "$log" || true
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    cpu=$(awk '{printf "%.0f", $1 + $2}' "$B/fuzz-logs/$t.time" 2>/dev/null || echo "?")
    res=ok
    if [ "$rc" != 0 ]; then
        res="FAILED (exit $rc): $(ls -t "$B/fuzz-artifacts/$t/" 2>/dev/null | head -1)"
        fail=1
        grep -E 'ERROR|SUMMARY|fuzz check failed|runtime error' "$log" | head -5 || true
    fi
    SUMMARY+=$(printf '%-10s %10s %8s %8s %7s %8s %s' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$cpu" "$res")$'\n'
done
printf '\n%-10s %10s %8s %8s %7s %8s %s\n' target execs cov ft corpus cpu_s result
printf '%s' "$SUMMARY"
exit $fail
