#!/usr/bin/env bash
# tests/e2e/test_fidelity_promotion_latency.sh - constraints.latency_ms in a
# multi-fidelity search: a trial is admitted by the latency measured before
# its first rung; its promotions are not measured again. Before the fix each
# promotion measured it anew, and a busy moment (measurement noise) rejected
# the promotion of a trained trial: stored as "promotion to 3 failed: ok",
# logged as "[trial N, rejection 0] reject ... (not trained; not counted ...)",
# the trial left at its first rung. Successive halving, 9 trials in 3
# brackets (min 1, max 3, eta 3: one promotion each), a loose limit.
# 1. NAS_FAULT slow@ID>1: every promotion's latency measurements read 1e6 ms;
#    every promotion trains, and the trial keeps the latency that admitted it
#    (feasible: scored, under the limit, no note).
# 2. NAS_FAULT reject@ID>1: a promotion that comes back rejected anyway (a
#    promotion whose checkpoint is gone trains from 0 and is measured again)
#    fails with its reason, the trial keeping its first rung; no "rejection"
#    line, no rejected trial counted.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf p.conf plat 4 "" "constraints: { latency_ms = 100000.0; };"
all() { # KIND: KIND@ID>1 for the 9 trials
    local s="" i
    for i in 1 2 3 4 5 6 7 8 9; do s="$s${s:+,}$1@$i>1"; done
    echo "$s"
}

note "1. every promotion's latency measurement reads 1e6 ms"
NAS_FAULT=$(all slow) run 0 "$NAS" run p.conf --db slow.db
expect_eq "trials" "$(sql slow.db "SELECT count(*) FROM trial")" 9
expect_eq "promotions trained to 3 epochs" "$(sql slow.db "SELECT count(*) FROM rung WHERE fidelity = 3")" 3
expect_eq "trials with a note (a diverged one's aside)" "$(sql slow.db "SELECT count(*) FROM trial
    WHERE error IS NOT NULL AND error <> '' AND error NOT LIKE 'diverged:%'")" 0
expect_eq "trials unscored or over the limit" \
    "$(sql slow.db "SELECT count(*) FROM result WHERE score IS NULL OR NOT latency_ms < 100000")" 0
if grep -q "reject" "$TMP/err"; then cat "$TMP/err"; fail "a promotion was rejected"; fi
run 0 "$NAS" query --db slow.db --pareto --format csv
expect_eq "the front is at 3 epochs" "$(cut -d, -f21 "$TMP/out" | sed 1d | sort -u)" 3

note "2. promotions that come back rejected"
NAS_FAULT=$(all reject) run 0 "$NAS" run p.conf --db rej.db
expect_eq "trials" "$(sql rej.db "SELECT count(*) FROM trial")" 9
expect_eq "rungs at 3 epochs" "$(sql rej.db "SELECT count(*) FROM rung WHERE fidelity = 3")" 0
expect_eq "failed promotions with their reason" "$(sql rej.db "SELECT count(*) FROM trial WHERE error
    LIKE 'promotion to 3 failed: latency 1000000.000 ms > constraints.latency_ms = 100000, measured again before it (not trained;%'")" 3
expect_eq "trials kept at their first rung, scored, under the limit" \
    "$(sql rej.db "SELECT count(*) FROM result WHERE epochs = 1 AND score IS NOT NULL AND latency_ms < 100000")" 9
if grep -q "rejection\|rejected" "$TMP/err" "$TMP/out"; then cat "$TMP/err"; fail "a promotion was counted as a rejection"; fi
expect_eq "FAILED promotion lines" "$(grep -c '^\[trial [0-9]*, rung 1\] FAILED promotion of .*: latency 1000000.000 ms' "$TMP/err")" 3
echo "PASS"
