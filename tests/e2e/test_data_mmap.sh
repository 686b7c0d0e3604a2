#!/usr/bin/env bash
# tests/e2e/test_data_mmap.sh - issue 16: a data set larger than the
# memory limit trains through memory mapping. A 1.5 GB npy of 500,000
# 3x32x32 uint8 images (sparse: the header is written, the rest made with
# truncate, so it takes no disk) is searched with a 400 MB data limit
# (ulimit -d: heap and every private writable mapping; a read-only file
# mapping is not counted), 2 trials of 64 proxy images: the images are
# mapped, only the 96 the split takes are copied. The same limit stops a
# plain read of the file (so it is a real limit). The documented limit:
# under an address-space limit (ulimit -v) smaller than the file, nas run
# exits 2 before any trial with a message naming the file and the limit.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/data_lib.sh"
need_numpy
# ASan maps terabytes of shadow memory at start, which ulimit -d / -v refuse
if grep -aq "__asan_init" "$NAS"; then
    echo "SKIPPED: $NAS is built with AddressSanitizer, whose shadow memory cannot start under ulimit -d or -v (the gcc build runs this test)"
    exit 77
fi
cd "$TMP" || fail "cd"
N=500000
"$PY" - "$N" <<'PYEOF' || fail "writing the npy header"
import sys, numpy as np
n = int(sys.argv[1])
with open("big.npy", "wb") as f:
    np.lib.format.write_array_header_1_0(f, {"descr": "|u1", "fortran_order": False, "shape": (n, 3, 32, 32)})
    hdr = f.tell()
np.save("labels.npy", (np.arange(n) % 10).astype(np.uint8))
print(hdr)
PYEOF
hdr=$("$PY" -c 'import numpy as np; f = open("big.npy", "rb"); np.lib.format.read_magic(f); np.lib.format.read_array_header_1_0(f); print(f.tell())')
truncate -s $((hdr + N * 3072)) big.npy || fail "truncate"
size=$(stat -c %s big.npy)
note "big.npy: $size bytes ($(du -k big.npy | cut -f1) KB on disk)"
LIMIT_KB=400000
[ "$size" -gt $((LIMIT_KB * 1024 * 3)) ] || fail "the file is not larger than the limit"
data_conf l.conf large 'format = "npy"; train_images = "big.npy"; train_labels = "labels.npy"; train_subset = 64; valid = 32; mean = [0.5, 0.5, 0.5]; std = [0.25, 0.25, 0.25];'
sed -i -e 's/trials = 3/trials = 2/' -e 's/stages = 2/stages = 3/' l.conf
# the limit is real: reading the file into memory fails under it
( ulimit -d $LIMIT_KB && "$PY" -c 'open("big.npy", "rb").read()' ) 2>/dev/null &&
    fail "reading $size bytes succeeded under ulimit -d $LIMIT_KB"
( ulimit -d $LIMIT_KB && exec "$NAS" run l.conf --db "$TMP/l.db" ) >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "nas run under ulimit -d $LIMIT_KB failed"; }
expect_eq "done trials" "$(sql "$TMP/l.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 2
grep_in "input = \[3, 32, 32\]; classes = 10" <(sql "$TMP/l.db" "SELECT conf_canonical FROM experiment")
note "address-space limit below the file size: a clear refusal"
( ulimit -v 1000000 && exec "$NAS" run l.conf --db "$TMP/v.db" ) >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" = 2 ] || { cat "$TMP/err"; fail "nas run under ulimit -v exited $rc, expected 2"; }
grep_in "big.npy: cannot map $size bytes" "$TMP/err"
grep_in "ulimit -v" "$TMP/err"
echo "PASS"
