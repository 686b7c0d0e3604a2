#!/usr/bin/env bash
# tests/e2e/test_faults.sh - worker faults are survived (issue 4).
# A 16-trial random search (table evaluator on a generated fixture, 2
# worker processes, heartbeat_s = 1, trial_timeout_s = 3, max_retries = 1)
# with the test-only NAS_FAULT hook (search/pool_msg.h) making the worker
# of chosen trials crash, abort, die by SIGKILL, freeze (SIGSTOP: missed
# heartbeats), break the protocol, train to NaN, or run forever. Checks:
# exactly those trials failed, each with its reason; the transient ones
# (worker process failures) were tried 1 + max_retries times; trials whose
# fault hits only the first attempt were retried and are done with
# attempt 2; every other trial is done on its first attempt.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
write_conf "$TMP/f.conf" "$TMP/t.csv" 16 2 "heartbeat_s = 1; trial_timeout_s = 3; max_retries = 1;"
DB=$TMP/f.db

export NAS_FAULT="crash@2,abort@3,kill@4,hang@5,garbage@6,nan@7,spin@8,crash@9/1,kill@10/1,garbage@11/1,sleep_ms=20"
note "nas run with NAS_FAULT=$NAS_FAULT"
t0=$(date +%s)
run 0 "$NAS" run "$TMP/f.conf" --db "$DB"
unset NAS_FAULT
note "took $(( $(date +%s) - t0 )) s"
grep_in "complete: 16 trials (9 done, 7 failed)" "$TMP/out"

st() { sql "$DB" "SELECT status || ' ' || attempt FROM trial WHERE id = $1"; }
er() { sql "$DB" "SELECT error FROM trial WHERE id = $1"; }
# transient: tried twice, then failed with the worker's fate
for id in 2 3 4 5 6; do expect_eq "trial $id status/attempts" "$(st $id)" "failed 2"; done
er 2 | grep -q "signal 11" || fail "trial 2: $(er 2)"
er 3 | grep -q "signal 6" || fail "trial 3: $(er 3)"
er 4 | grep -q "signal 9" || fail "trial 4: $(er 4)"
er 5 | grep -q "no heartbeat" || fail "trial 5: $(er 5)"
er 6 | grep -q "protocol error" || fail "trial 6: $(er 6)"
# not transient: failed on the first attempt, no retry
expect_eq "trial 7 (nan)" "$(st 7)" "failed 1"
er 7 | grep -q "NaN" || fail "trial 7: $(er 7)"
expect_eq "trial 8 (timeout)" "$(st 8)" "failed 1"
er 8 | grep -q "timed out" || fail "trial 8: $(er 8)"
# a fault on the first attempt only: retried, then done
for id in 9 10 11; do expect_eq "trial $id (retried)" "$(st $id)" "done 2"; done
expect_eq "retries announced" "$(grep -c 'RETRY' "$TMP/err")" 8
# everything else: done on the first attempt
expect_eq "other trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE id NOT BETWEEN 2 AND 11 AND status = 'done' AND attempt = 1")" 6
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial")" 16
expect_eq "duplicate keys" "$(sql "$DB" "SELECT count(*) - count(DISTINCT arch_key) FROM trial")" 0
expect_eq "integrity" "$(sql "$DB" "PRAGMA integrity_check")" ok
# no worker process left behind
sleep 0.2
pgrep -f "$TMP/f.conf" >/dev/null && fail "worker processes left running"

note "NAS_FAULT is read by workers only: the same search without it has no failure"
run 0 "$NAS" run "$TMP/f.conf" --db "$TMP/clean.db"
grep_in "complete: 16 trials (16 done, 0 failed)" "$TMP/out"
expect_eq "same genotypes" "$(sql "$DB" "SELECT group_concat(genotype) FROM (SELECT genotype FROM trial ORDER BY genotype)")" \
    "$(sql "$TMP/clean.db" "SELECT group_concat(genotype) FROM (SELECT genotype FROM trial ORDER BY genotype)")"
echo "PASS"
