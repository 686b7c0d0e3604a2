#!/usr/bin/env bash
# tests/e2e/test_ordered.sh - a search with several workers is reproducible
# (search/controller.c, "the ordered schedule"): proposal k is made after
# the strategy observed exactly trials 1..k-N (N = 3 workers here), in
# trial order, whatever order the results come back in.
#
# A 20-trial regularized-evolution search (population 4, so most proposals
# are mutations of observed results; table evaluator on a generated
# fixture) runs with per-job random delays (NAS_FAULT jitter_ms=MS/SEED,
# search/pool_msg.h), a failed trial (nan@5: observed as a failure) and a
# transient crash (crash@7/1: retried once, observed only after the retry).
#  1. Two runs with different delay seeds finish their trials in different
#     orders (checked from finished_at) and must store exactly the same
#     sequence of genotypes, statuses and accuracies.
#  2. kill -9 of the controller half way (trials in flight), then a resume
#     with yet another delay seed: the resumed search must end with the
#     same sequence as the uninterrupted runs, and its replay must match
#     every stored proposal.
# 3. workers.ordered = false observes in completion order instead: the two
#     delay seeds then give two different searches.
# Without the ordered schedule the strategy sees results in completion
# order and the sequences differ after a few mutations.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/t.csv"
cat >"$TMP/o.conf" <<CONF
experiment = "ordered";
seed = 5;
search: { strategy = "evolution"; trials = 20; population = 4; sample_size = 2; };
evaluator: { kind = "table"; table = "$TMP/t.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 3; heartbeat_s = 1; max_retries = 1; };
CONF
FAULTS="nan@5,crash@7/1"

# One trial per architecture, nothing left unfinished (the table evaluator
# measures no latency, so check_db_consistent does not apply).
check_db() {
    expect_eq "duplicate arch keys" "$(sql "$1" "SELECT count(*) FROM (SELECT arch_key FROM trial GROUP BY 1 HAVING count(*) > 1)")" 0
    expect_eq "unfinished trials" "$(sql "$1" "SELECT count(*) FROM trial WHERE status NOT IN ('done', 'failed')")" 0
    expect_eq "integrity" "$(sql "$1" "PRAGMA integrity_check")" ok
}
# The stored search, in trial order, and the order the trials finished in.
seq_of() { sql "$1" "SELECT group_concat(g, ';') FROM (SELECT t.genotype || ' ' || t.status || ' ' || ifnull(printf('%.4f', r.val_accuracy), '-') AS g FROM trial t LEFT JOIN result r ON r.trial_id = t.id ORDER BY t.id)"; }
# same_search WHAT GOT WANT: equal sequences, else name the first trial that differs.
same_search() {
    [ "$2" = "$3" ] && return 0
    paste -d'\n' <(tr ';' '\n' <<<"$2" | nl -ba) <(tr ';' '\n' <<<"$3" | nl -ba) |
        paste - - | awk -F'\t' '$2 != $4 { print "first difference at trial " $1 ": got " $2 ", expected " $4; exit }' >&2
    fail "$1: the stored sequences differ"
}
finish_order() { sql "$1" "SELECT group_concat(id) FROM (SELECT id FROM trial ORDER BY finished_at, id)"; }

# ---- 1. two runs, different delays ---------------------------------------------
for s in 1 2; do
    note "run $s: jitter seed $s"
    NAS_FAULT="$FAULTS,jitter_ms=200/$s" run 0 "$NAS" run "$TMP/o.conf" --db "$TMP/r$s.db"
    grep_in "complete: 20 trials (19 done, 1 failed)" "$TMP/out"
    expect_eq "run $s: retries" "$(grep -c RETRY "$TMP/err")" 1
    check_db "$TMP/r$s.db"
done
o1=$(finish_order "$TMP/r1.db")
o2=$(finish_order "$TMP/r2.db")
note "completion orders: $o1 / $o2"
[ "$o1" != "$o2" ] || fail "the two runs finished their trials in the same order: the delays did not reorder them"
ids=$(sql "$TMP/r1.db" "SELECT group_concat(id) FROM (SELECT id FROM trial ORDER BY id)")
[ "$o1" != "$ids" ] || [ "$o2" != "$ids" ] || fail "both runs finished in trial order: nothing tested"
want=$(seq_of "$TMP/r1.db")
same_search "run 2 stored the same search as run 1" "$(seq_of "$TMP/r2.db")" "$want"
expect_eq "trial 5" "$(sql "$TMP/r1.db" "SELECT status FROM trial WHERE id = 5")" failed
expect_eq "trial 7" "$(sql "$TMP/r1.db" "SELECT status || ' ' || attempt FROM trial WHERE id = 7")" "done 2"

# workers.ordered = false (the opt-out) observes in completion order: the
# same two delay seeds then give two different searches (a check that the
# key switches the schedule off; evolution diverges within a few trials).
sed -e 's/max_retries = 1;/max_retries = 1; ordered = false;/' "$TMP/o.conf" >"$TMP/u.conf"
for s in 1 2; do
    NAS_FAULT="$FAULTS,jitter_ms=200/$s" run 0 "$NAS" run "$TMP/u.conf" --db "$TMP/u$s.db"
    grep_in "complete: 20 trials" "$TMP/out"
done
[ "$(seq_of "$TMP/u1.db")" != "$(seq_of "$TMP/u2.db")" ] ||
    fail "workers.ordered = false: both delay seeds gave the same search"

# ---- 2. kill -9 half way, resume -----------------------------------------------
DB=$TMP/k.db
note "kill -9 after 11 finished trials"
NAS_FAULT="$FAULTS,sleep_ms=100,jitter_ms=300/3" "$NAS" run "$TMP/o.conf" --db "$DB" >"$TMP/k.out" 2>"$TMP/k.err" &
RUN_PID=$!
for _ in $(seq 600); do
    [ "$(grep -c '] done\|] FAILED' "$TMP/k.err" 2>/dev/null)" -ge 11 ] && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/k.err"; fail "the run ended before the kill"; }
    sleep 0.02
done
kill -9 "$RUN_PID"
wait "$RUN_PID" 2>/dev/null
RUN_PID=
sleep 0.3 # the orphaned workers die with their controller (PR_SET_PDEATHSIG)
left=$(sql "$DB" "SELECT count(*) FROM trial WHERE status IN ('pending', 'running')")
note "killed with $(sql "$DB" "SELECT count(*) FROM trial") trial(s) stored, $left unfinished"
[ "$left" -gt 0 ] || fail "no trial was in flight at the kill: nothing tested"
note "resume with another delay seed"
NAS_FAULT="$FAULTS,jitter_ms=200/4" run 0 "$NAS" run "$TMP/o.conf" --db "$DB"
grep_in "resuming experiment" "$TMP/err"
grep -q "replayed proposals differed" "$TMP/err" && { cat "$TMP/err"; fail "the replay did not rebuild the proposals"; }
grep -q "worker(s), the last one had" "$TMP/err" && fail "same workers, yet a width note"
grep_in "complete: 20 trials (19 done, 1 failed)" "$TMP/out"
check_db "$DB"
same_search "resumed search = uninterrupted search" "$(seq_of "$DB")" "$want"
sleep 0.2
pgrep -f "$TMP/o.conf" >/dev/null && fail "worker processes left running"
echo "PASS"
