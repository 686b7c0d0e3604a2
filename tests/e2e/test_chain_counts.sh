#!/usr/bin/env bash
# tests/e2e/test_chain_counts.sh - MACs and params of chain networks equal
# PyTorch's (issue 14). For every shipped chain space (examples/spaces/)
# and the test spaces chain_small / chain_mixed, `nas space --format json`
# gives 6 random genotypes with nas's counts; tests/e2e/chain_torch.py
# builds each network in PyTorch from docs/spaces.md's layer order,
# independently of nas, and counts MACs (hooks on Conv2d/Linear) and
# params (sum of numel). Skips when /usr/bin/python3 has no torch.
. "$(dirname "$0")/search_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c "import torch" 2>/dev/null || skip "$PY with torch not found"
n=0
for conf in "$SRC"/examples/spaces/*.conf "$SRC"/tests/data/conf/chain_small.conf \
            "$SRC"/tests/data/conf/chain_mixed.conf; do
    note "$(basename "$conf")"
    run 0 "$NAS" space "$conf" --samples 6 --seed 11 --format json --enumerate 0
    cp "$TMP/out" "$TMP/space.json"
    "$PY" "$SRC/tests/e2e/chain_torch.py" "$TMP/space.json" >"$TMP/cmp" 2>&1 ||
        { cat "$TMP/cmp"; fail "counts differ from PyTorch for $conf"; }
    expect_eq "networks compared in $(basename "$conf")" "$(grep -c '^ok' "$TMP/cmp")" 6
    n=$((n + 1))
done
[ $n -ge 6 ] || fail "expected at least 6 spaces, found $n"
echo "PASS"
