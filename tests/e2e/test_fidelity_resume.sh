#!/usr/bin/env bash
# tests/e2e/test_fidelity_resume.sh - resuming a multi-fidelity search
# (issue 17, docs/multi-fidelity.md), found in review:
# 1. the start-up line counts the interrupted rung jobs (a promotion under
#    way) to run again (it said 0; issue 29: as a promotion, not as an
#    unfinished trial);
# 2. a checkpoint that can no longer be promoted is deleted once, not at
#    every later observation (strace counts the unlink calls; skipped
#    without strace);
# 3. the resumed search ends with the rungs of the uninterrupted one.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
cat >"$TMP/sh.conf" <<CONF
experiment = "sh";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 8; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 6;
  fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 2; latency_warmup = 1; };
workers: { count = 1; };
CONF
rungs() { sql "$1" "SELECT trial_id, fidelity, val_accuracy, loss FROM rung ORDER BY trial_id, fidelity"; }

note "an uninterrupted run"
if command -v strace >/dev/null 2>&1; then
    # LeakSanitizer cannot run under ptrace (the sanitizer suite): no leak check here
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -f -qq -e trace=unlink,unlinkat -o "$TMP/trace" "$NAS" run sh.conf --db ref.db \
        >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "nas run failed under strace"; }
    n=$(grep -c 'ckpt/trial-[0-9]*\.npz' "$TMP/trace")
    twice=$(grep -o 'ckpt/trial-[0-9]*\.npz' "$TMP/trace" | sort | uniq -d | tr '\n' ' ')
    [ -z "$twice" ] || fail "checkpoints unlinked more than once ($n unlink calls): $twice"
    [ "$n" -ge 1 ] || fail "no checkpoint was unlinked"
else
    note "SKIP part 2: strace is not installed (the unlink count is not checked)"
    run 0 "$NAS" run sh.conf --db ref.db
fi
expect_eq "rungs at 3 epochs" "$(sql ref.db "SELECT count(*) FROM rung WHERE fidelity = 3")" 2

note "a copy whose last promotion was interrupted"
cp ref.db k.db
P=$(sql k.db "SELECT max(trial_id) FROM rung WHERE fidelity = 3")
sql k.db "DELETE FROM rung WHERE trial_id = $P AND fidelity = 3;
          UPDATE trial SET status = 'interrupted' WHERE id = $P;
          UPDATE experiment SET status = 'interrupted';"
run 0 "$NAS" run sh.conf --db k.db
grep_in "0 unfinished trial(s) to re-run, 0 not yet proposed; 1 interrupted promotion(s) to run again" "$TMP/err"
expect_eq "rungs equal the uninterrupted run's" "$(rungs k.db)" "$(rungs ref.db)"
expect_eq "all done" "$(sql k.db "SELECT count(*) FROM trial WHERE status <> 'done'")" 0
echo "PASS"
