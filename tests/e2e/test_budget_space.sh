#!/usr/bin/env bash
# tests/e2e/test_budget_space.sh - issue 29 (defect 7): `nas run` warns at
# the start when search.trials is more than the space's distinct keys
# (`nas space` counts them), as a 20,000-trial search of NAS-Bench-201's
# 5,227 cells ran to exhaustion under an ETA for 20,000. The space is
# tests/data/conf/chain_small.conf (315 distinct keys), searched through a
# table made from `nas space --list`: 400 trials warn and end exhausted at
# 315; 300 trials do not warn; nor does a finished experiment run again.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"
SPACE=$SRC/tests/data/conf/chain_small.conf
run 0 "$NAS" space "$SPACE" --list
awk -F'"' 'NR == 1 { print "genotype,acc"; next } { printf "\"%s\",%d\n", $2, 50 + NR % 40 }' \
    "$TMP/out" >"$TMP/table.csv"

# conf TRIALS
conf() {
    sed 's/^experiment = .*/experiment = "budget-'$1'";/' "$SPACE" >"$TMP/b$1.conf"
    cat >>"$TMP/b$1.conf" <<CONF
evaluator = { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 0.01; };
search = { strategy = "random"; trials = $1; };
workers = { count = 0; };
CONF
}

note "400 trials of a space with 315 distinct keys: a warning at the start"
conf 400
run 0 "$NAS" run "$TMP/b400.conf" --db "$TMP/b.db"
grep_in "warning: search.trials = 400 is more than the 315 distinct architectures" "$TMP/err"
grep_in "at most 315 trials" "$TMP/err"
[ "$(grep -n "warning: search.trials" "$TMP/err" | cut -d: -f1)" -lt \
  "$(grep -n "trial 1," "$TMP/err" | head -1 | cut -d: -f1)" ] || { cat "$TMP/err"; fail "the warning comes after the first trial"; }
expect_eq "trials" "$(sql "$TMP/b.db" "SELECT count(*) FROM trial")" 315
expect_eq "status" "$(sql "$TMP/b.db" "SELECT status FROM experiment")" exhausted

note "300 trials: no warning"
conf 300
run 0 "$NAS" run "$TMP/b300.conf" --db "$TMP/c.db"
if grep -q "warning: search.trials" "$TMP/err"; then cat "$TMP/err"; fail "a warning for 300 trials"; fi

note "the finished experiment again: nothing to do, no warning"
run 0 "$NAS" run "$TMP/b300.conf" --db "$TMP/c.db"
grep_in "nothing to do" "$TMP/err"
if grep -q "warning: search.trials" "$TMP/err"; then cat "$TMP/err"; fail "a warning with nothing to do"; fi
echo "PASS"
