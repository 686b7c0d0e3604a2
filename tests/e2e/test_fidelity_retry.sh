#!/usr/bin/env bash
# tests/e2e/test_fidelity_retry.sh - retry counts survive a controller
# restart in a multi-fidelity search too (issue 17 with issue 4's
# promise). An ASHA search (real training on a few hundred Fashion-MNIST
# images, 1 worker, max_retries = 2) whose trial 1 crashes its worker on
# every attempt (NAS_FAULT crash@1): the controller is killed with kill -9
# during trial 1's first retry; the resumed run re-queues trial 1's rung
# job and must give it only the one retry left: 1 + max_retries = 3
# crashes in all. (The multi-fidelity replay once re-queued it before the
# stored counts were loaded: 2 fresh retries, 4 crashes.)
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
cat >"$TMP/f.conf" <<CONF
experiment = "fid-retry";
seed = 2;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 3; batch_size = 64; backend = "cpu"; threads = 1; keep_weights = false; };
search: { strategy = "random"; trials = 4; fidelity: { scheduler = "asha"; min = 1; max = 3; eta = 3; }; };
workers: { count = 1; heartbeat_s = 1; max_retries = 2; };
CONF
DB=$TMP/f.db
crashes() { grep -c "signal 11" "$@" | awk -F: '{ s += $NF } END { print s + 0 }'; }

NAS_FAULT="crash@1,sleep_ms=700" "$NAS" run f.conf --db "$DB" >"$TMP/run1.out" 2>"$TMP/run1.err" &
RUN_PID=$!
for _ in $(seq 400); do
    grep -q "RETRY" "$TMP/run1.err" 2>/dev/null && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/run1.err"; fail "the run ended before its first retry"; }
    sleep 0.05
done
grep -q "RETRY" "$TMP/run1.err" || { cat "$TMP/run1.err"; fail "no retry within 20 s"; }
kill -9 "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
RUN_PID=
grep_in "retry 1 of workers.max_retries = 2" "$TMP/run1.err"
sleep 0.3 # the orphaned worker dies with its controller (PR_SET_PDEATHSIG)

NAS_FAULT="crash@1,sleep_ms=20" run 0 "$NAS" run f.conf --db "$DB"
cp "$TMP/err" "$TMP/run2.err"
expect_eq "retries in the resumed run" "$(grep -c 'RETRY' "$TMP/run2.err")" 1
grep_in "retry 2 of workers.max_retries = 2" "$TMP/run2.err"
expect_eq "crashes over both runs (1 + max_retries)" "$(crashes "$TMP/run1.err" "$TMP/run2.err")" 3
expect_eq "trial 1" "$(sql "$DB" "SELECT status FROM trial WHERE id = 1")" "failed"
expect_eq "the other trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE id <> 1 AND status = 'done'")" 3
echo "PASS"
