#!/usr/bin/env bash
# tests/e2e/test_space_zero_cost.sh - `nas space --zero-cost` (issue 31,
# item 5): one CSV column per proxy after genotype,key,macs,params, for
# every genotype (--list) or sampled ones (--samples); a progress line on
# stderr; a table search (no data) refuses the data-dependent proxies with
# exit 2; an unknown proxy is a usage error. The proxies' values are checked
# against PyTorch by test_zero_cost.
. "$(dirname "$0")/search_lib.sh"
cat >"$TMP/small.conf" <<'CONF'
seed = 3;
space: { type = "cell"; ops = ["skip_connect", "nor_conv_1x1"]; channels = 4;
         cells_per_stage = 1; input = [3, 32, 32]; classes = 10; };
evaluator: { kind = "table"; table = "t.csv"; column = "acc"; };
CONF
note "--list: every genotype (2^6 = 64), one column per proxy"
run 0 "$NAS" space "$TMP/small.conf" --list --zero-cost synflow,params,macs
expect_eq "header" "$(head -1 "$TMP/out")" "genotype,key,macs,params,synflow,params,macs"
expect_eq "rows" "$(tail -n +2 "$TMP/out" | wc -l)" 64
# params and macs columns repeat the counts; synflow is a positive number
awk -F'","' 'NR > 1 { split($2, a, ","); if (a[2] != a[6] || a[3] != a[5] || !(a[4] > 0)) bad++ }
             END { exit bad > 0 }' "$TMP/out" || { cat "$TMP/out"; fail "columns disagree"; }
grep -q "64 architectures scored" "$TMP/err" || { cat "$TMP/err"; fail "no progress line"; }
note "--samples 5"
run 0 "$NAS" space "$TMP/small.conf" --samples 5 --seed 9 --zero-cost synflow
expect_eq "sampled rows" "$(tail -n +2 "$TMP/out" | wc -l)" 5
note "same seed, same scores"
cp "$TMP/out" "$TMP/first"
run 0 "$NAS" space "$TMP/small.conf" --samples 5 --seed 9 --zero-cost synflow
cmp -s "$TMP/out" "$TMP/first" || fail "scores differ between two identical runs"
note "a table search has no data"
run 2 "$NAS" space "$TMP/small.conf" --list --zero-cost synflow,snip
grep -q "a table search has no data" "$TMP/err" || { cat "$TMP/err"; fail "no clear message"; }
note "unknown proxy"
run 2 "$NAS" space "$TMP/small.conf" --list --zero-cost synflw
grep -q "unknown zero-cost proxy 'synflw'" "$TMP/err" || { cat "$TMP/err"; fail "no clear message"; }
note "--zero-cost with --genotype or --format json: a usage error, not ignored"
run 2 "$NAS" space "$TMP/small.conf" --genotype '|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|' --zero-cost synflow
grep -q "not with --genotype" "$TMP/err" || { cat "$TMP/err"; fail "no clear message"; }
run 2 "$NAS" space "$TMP/small.conf" --format json --zero-cost synflow
echo "PASS"
