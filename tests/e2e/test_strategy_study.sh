#!/usr/bin/env bash
# tests/e2e/test_strategy_study.sh - a CI-sized strategy study: random,
# evolution and NAO, 5 seeds, budgets 20 and 50, on the NAS-Bench-201 table,
# protocol nas; and NAS-Bench-201's random search and REA (protocol nb201),
# 3 seeds. Checks the outputs' shape (protocol, seeds and "tuned" on every
# row), that every dumped signal is the table's value for the dumped
# genotype, that more trials never do worse, that the result does not
# depend on the number of parallel jobs, and that a missing table skips
# visibly (exit 77). Issue 31: warm-up (+w) and move-proposal (+m) rows
# from a cached score column. Skips when the table is absent.
# argv: nas binary, source dir, shared dir.
set -u
NAS=$1
SHARED=$3
STUDY=$(dirname "$NAS")/experiments/strategy_study
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$STUDY" ] || fail "strategy_study not built at $STUDY"
if [ ! -f "$TABLE" ]; then
    echo "SKIPPED: NAS-Bench-201 table not found at $TABLE"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OPENBLAS_NUM_THREADS=1

"$STUDY" --table "$TMP/missing.csv" --quiet >"$TMP/skip.txt" 2>&1
[ $? -eq 77 ] || fail "a missing table must exit 77"
grep -q '^SKIPPED' "$TMP/skip.txt" || fail "a missing table must print SKIPPED"

run() { # out-dir jobs [options]
    mkdir -p "$1"
    out=$1 jobs=$2
    shift 2
    "$STUDY" --seeds 5 --budgets 20,50 --jobs "$jobs" --table "$TABLE" --out "$out" \
        --dump "$out/runs.csv" --quiet "$@" >"$out/stdout.txt" || fail "strategy_study exited $?"
}
run "$TMP/a" 2 --tuned nao
run "$TMP/b" 1 --strategies nao --seeds 3
run "$TMP/c" 1 --protocol nb201 --strategies random,evolution:20:5 --seeds 3 --seed0 1001

# stdout ends with the CSV summary: header + 3 strategies x 2 budgets
tail -7 "$TMP/a/stdout.txt" | head -1 |
    grep -qx 'protocol,strategy,budget,seeds,mean_signal,std_signal,mean_test_12ep' ||
    fail "summary header missing"
[ "$(grep -cE '^nas,(random|evolution|nao),(20|50),5,' "$TMP/a/stdout.txt")" -eq 6 ] ||
    fail "expected 6 summary lines"
[ "$(grep -cE '^nb201,(random|evolution:20:5),(20|50),3,' "$TMP/c/stdout.txt")" -eq 4 ] ||
    fail "expected 4 nb201 summary lines"
for f in table.md summary.csv best_so_far.svg runs.csv; do
    [ -s "$TMP/a/$f" ] || fail "$f not written"
done
[ "$(grep -c '<polyline' "$TMP/a/best_so_far.svg")" -eq 3 ] || fail "svg: one curve per strategy"
[ "$(tail -n +2 "$TMP/a/runs.csv" | wc -l)" -eq 30 ] || fail "runs.csv: 3 x 5 x 2 rows"
# every row says its protocol, seeds and whether the strategy was tuned on them
[ "$(grep -c '^| nas | 1-5 | yes | nao |' "$TMP/a/table.md")" -eq 2 ] || fail "table.md: nao tuned rows"
[ "$(grep -c '^| nas | 1-5 | no | ' "$TMP/a/table.md")" -eq 4 ] || fail "table.md: untuned rows"
[ "$(grep -c '^| nb201 | 1001-1003 | no | ' "$TMP/c/table.md")" -eq 4 ] || fail "table.md: nb201 rows"
grep -q '12-epoch cifar10-test' "$TMP/a/table.md" || fail "table.md: the test column is not named 12-epoch"

# every dumped signal is the table's cifar10-val for that genotype
awk -F, 'NR == FNR { if (FNR > 1) v[$2] = $4; next }
         FNR > 1 { if (!($4 in v)) { print "not in table: " $4; bad = 1 }
                   else if ((v[$4] - $5) > 1e-3 || ($5 - v[$4]) > 1e-3) { print "wrong signal " $0; bad = 1 } }
         END { exit bad }' "$TABLE" "$TMP/a/runs.csv" "$TMP/c/runs.csv" ||
    fail "dumped signals differ from the table"

# more trials never return a worse architecture, per strategy and seed
awk -F, 'FNR > 1 { k = $1 "," $3; if ($2 == 20) a[k] = $5; else b[k] = $5 }
         END { for (k in a) if (b[k] + 1e-9 < a[k]) { print "worse at 50: " k; bad = 1 } exit bad }' \
    "$TMP/a/runs.csv" || fail "budget 50 worse than budget 20"

# neither the number of jobs nor the other runs change a run's result
grep -E '^nao,[0-9]+,[123],' "$TMP/a/runs.csv" >"$TMP/a/nao123.csv"
tail -n +2 "$TMP/b/runs.csv" >"$TMP/b/nao123.csv"
[ -s "$TMP/b/nao123.csv" ] || fail "no NAO rows"
cmp -s "$TMP/a/nao123.csv" "$TMP/b/nao123.csv" || fail "NAO runs depend on --jobs"
# issue 31: --warmup / --move-proposal from a cached score column (here
# params, fast to list): +w and +m rows appear under both protocols, the
# warm-up changes NAO's runs, and NAO's rows are the same under nas and
# nb201 (it never proposes a duplicate or an invalid cell)
printf 'space: { type = "cell"; channels = 4; cells_per_stage = 1; };\nevaluator: { kind = "table"; table = "t.csv"; column = "acc"; };\n' >"$TMP/p.conf"
"$NAS" space "$TMP/p.conf" --list --zero-cost params >"$TMP/params.csv" 2>/dev/null ||
    fail "nas space --zero-cost params"
zc=(--scores "$TMP/params.csv" --warmup params:50:5 --move-proposal params:5 --seeds 3)
run "$TMP/d" 2 "${zc[@]}" --strategies nao,nao+w,evolution+m,random+w
run "$TMP/e" 2 "${zc[@]}" --protocol nb201 --strategies nao+w,evolution+w,evolution+m
[ "$(grep -cE '^nas,(nao\+w|evolution\+m|random\+w),(20|50),3,' "$TMP/d/stdout.txt")" -eq 6 ] ||
    fail "expected 6 +w/+m summary lines"
[ "$(grep -cE '^nb201,(nao\+w|evolution\+w|evolution\+m),(20|50),3,' "$TMP/e/stdout.txt")" -eq 6 ] ||
    fail "expected 6 nb201 +w/+m summary lines"
cmp -s <(grep -E '^nao\+w,' "$TMP/d/runs.csv") <(grep -E '^nao\+w,' "$TMP/e/runs.csv") ||
    fail "NAO with warm-up differs between the protocols"
cmp -s <(grep -E '^nao,' "$TMP/d/runs.csv" | cut -d, -f2-) \
    <(grep -E '^nao\+w,' "$TMP/d/runs.csv" | cut -d, -f2-) && fail "the warm-up changed no NAO run"
"$STUDY" --strategies nao+w --quiet --table "$TABLE" >/dev/null 2>&1 && fail "+w without --scores accepted"
cat "$TMP/a/table.md"
echo "PASS"
