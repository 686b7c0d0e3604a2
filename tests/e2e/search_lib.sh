# tests/e2e/search_lib.sh - helpers shared by the search e2e scripts (sourced,
# not a test itself). Scripts get argv: nas binary, source dir, shared dir.
set -u
NAS=${1:?nas binary}
SRC=${2:?source dir}
SHARED=${3:-}
FMNIST=/usr/share/datasets/fashion-mnist

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
note() { echo "-- $*"; }

command -v sqlite3 >/dev/null 2>&1 || skip "the sqlite3 shell is not installed (scripts/deps.sh core)"
[ -x "$NAS" ] || fail "no nas binary at $NAS"

TMP=$(mktemp -d /tmp/nas_e2e_XXXXXX)
cleanup() {
    [ -n "${RUN_PID:-}" ] && kill -9 "$RUN_PID" 2>/dev/null
    chmod -R u+w "$TMP" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

need_fmnist() {
    [ -f "$FMNIST/train-images-idx3-ubyte.gz" ] ||
        skip "Fashion-MNIST not found in $FMNIST (Debian package dataset-fashion-mnist)"
}

# need_mpi: skip visibly without mpirun or when nas was built without Open
# MPI; else MPIRUN is the mpirun command line of the MPI tests, and leak
# checking is off: under -DNAS_SANITIZE=ON, Open MPI's plugins allocate
# memory they never free and are unloaded before exit (LeakSanitizer cannot
# even name them); address and UB checks stay on (the local pool tests
# check our leaks).
need_mpi() {
    command -v mpirun >/dev/null 2>&1 || skip "mpirun not found (Debian: openmpi-bin)"
    ldd "$NAS" 2>/dev/null | grep -q libmpi || skip "nas was built without Open MPI (cmake/mpi.cmake: libopenmpi-dev)"
    MPIRUN="mpirun --oversubscribe --allow-run-as-root"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

# run EXPECTED_EXIT cmd...: run with stdout in $TMP/out, stderr in $TMP/err.
run() {
    local want=$1
    shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "--- stdout"; cat "$TMP/out"; echo "--- stderr"; cat "$TMP/err"
        fail "'$*' exited $got, expected $want"
    fi
}

# sql DB QUERY: one value / rows from sqlite3.
sql() { sqlite3 -batch "$1" "$2"; }

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }

# grep_err PATTERN [FILE]: the message must be there.
grep_in() { grep -q -- "$1" "$2" || { cat "$2"; fail "expected '$1' in $(basename "$2")"; }; }

# The database is consistent: one trial per arch key, statuses valid,
# every done trial has a finite result, every failed one an error.
check_db_consistent() {
    local db=$1
    expect_eq "duplicate arch keys" \
        "$(sql "$db" "SELECT count(*) FROM (SELECT experiment_id, arch_key FROM trial GROUP BY 1, 2 HAVING count(*) > 1)")" 0
    expect_eq "invalid statuses" \
        "$(sql "$db" "SELECT count(*) FROM trial WHERE status NOT IN ('pending','running','done','failed','interrupted')")" 0
    expect_eq "done trials without a result" \
        "$(sql "$db" "SELECT count(*) FROM trial t LEFT JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' AND (r.val_accuracy IS NULL OR r.val_accuracy < 0 OR r.val_accuracy > 1 OR r.macs <= 0 OR r.params <= 0 OR r.latency_ms <= 0)")" 0
    expect_eq "failed trials without a reason" \
        "$(sql "$db" "SELECT count(*) FROM trial WHERE status = 'failed' AND (error IS NULL OR error = '')")" 0
    expect_eq "application_id" "$(sql "$db" "PRAGMA application_id")" 1851880241
    expect_eq "journal_mode" "$(sql "$db" "PRAGMA journal_mode")" wal
}

# expect_reproduced WHAT: the "val_accuracy V  (trial N recorded R, ...)"
# line of `nas train ARCH.json --proxy` (in $TMP/out) has |V - R| <= 1e-6.
expect_reproduced() {
    local line
    line=$(grep "^val_accuracy" "$TMP/out") || { cat "$TMP/out"; fail "$1: no val_accuracy line"; }
    echo "$line" | awk '{ v = $2; r = $6; sub(/,$/, "", r); d = v - r; if (d < 0) d = -d;
                          exit !(r != "" && d <= 1e-6) }' ||
        fail "$1: --proxy gave '$line' (the trial's val_accuracy not reproduced)"
}
