#!/usr/bin/env bash
# tests/e2e/test_example_nb201_zero_cost.sh - issue 31: the shipped
# examples/nb201-zero-cost.conf runs as shipped (its table path pointed at
# this run's shared dir): 100 synflow-scored candidates at 3x32x32, the 10
# best looked up first as NAO seeds (proposed_by 'warmup'), 100 look-ups in
# all, and `nas query --zero-cost synflow` shows their scores. Skips when
# the table is absent.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
EX=$SRC/examples/nb201-zero-cost.conf
[ -f "$EX" ] || fail "no shipped example at $EX"
sed -e "s|^\( *table = \)\".*\";|\1\"$TABLE\";|" "$EX" >"$TMP/zc.conf"
grep -q "table = \"$TABLE\";" "$TMP/zc.conf" || fail "the example's table line moved"
DB=$TMP/zc.db
run 0 "$NAS" run "$TMP/zc.conf" --db "$DB"
grep_in "warm-up: 100 candidates scored with synflow" "$TMP/err"
expect_eq "look-ups" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 100
expect_eq "warm-up trials first" \
    "$(sql "$DB" "SELECT count(*) FROM trial WHERE proposed_by = 'warmup' AND id <= 10")" 10
expect_eq "NAO's uniform seeds" "$(sql "$DB" "SELECT count(*) FROM trial WHERE proposed_by = 'nao-seed'")" 10
run 0 "$NAS" query --db "$DB" --zero-cost synflow --limit 3
grep_in "zc_synflow" "$TMP/out"
echo "PASS"
