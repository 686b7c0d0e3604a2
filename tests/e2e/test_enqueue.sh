#!/usr/bin/env bash
# tests/e2e/test_enqueue.sh - issue 33, known architectures first. NAO on
# the NAS-Bench-201 table with search.enqueue = [G, G]: G is trial 1
# (proposed_by 'enqueued'), the duplicate is said and not repeated, G is
# one of NAO's seed_archs seeds (3 uniform seeds, not 4) and its result is
# in the first model round (trained on 4 results). An experiment extended
# from 6 to 12 trials, and one cut by a time limit (slowed trials in a
# worker process) and resumed, replay to the same 12 trials as a run of 12. `nas
# run --enqueue` puts its genotype first, is defining (a rerun without it
# is refused, with it there is nothing to do), and a bad genotype is a
# usage error. The stored config still reads back for `nas export`. Skips
# when the table is absent.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
cd "$TMP" || fail "cd"

G='|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|'
G2='|nor_conv_1x1~0|+|skip_connect~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|avg_pool_3x3~2|'
write_conf() { # $1: file, $2: trials, $3: the search.enqueue line, $4: workers.count (0)
    cat >"$TMP/$1" <<CONF
experiment = "e2e-enqueue";
seed = 3;
search: { strategy = "nao"; trials = $2;
  nao: { seed_archs = 4; epochs = 5; batch_per_round = 2; };
  $3
};
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; table_scale = 0.01; };
workers: { count = ${4:-0}; };
CONF
}
seq_of() { sql "$1" "SELECT group_concat(genotype || ' ' || proposed_by, ';') FROM (SELECT genotype, proposed_by FROM trial ORDER BY id)"; }

note "search.enqueue = [G, G]: G is trial 1, the duplicate is not repeated, G seeds NAO"
write_conf enq.conf 12 "enqueue = [\"$G\", \"$G\"];"
run 0 "$NAS" run enq.conf --db "$TMP/a.db"
DB=$TMP/a.db
expect_eq "trial 1" "$(sql "$DB" "SELECT genotype || ' ' || proposed_by FROM trial WHERE id = 1")" "$G enqueued"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 12
expect_eq "G evaluated once" "$(sql "$DB" "SELECT count(*) FROM trial WHERE genotype = '$G'")" 1
expect_eq "enqueued trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE proposed_by = 'enqueued'")" 1
grep_in "search.enqueue\[1\] .* not repeated" "$TMP/err"
grep_in "(enqueued)" "$TMP/err"
expect_eq "NAO's uniform seeds (seed_archs 4, one of them G)" \
    "$(sql "$DB" "SELECT count(*) FROM trial WHERE proposed_by = 'nao-seed'")" 3
grep_in "\[nao round 1\] model trained on 4 results" "$TMP/err"
full=$(seq_of "$DB")
# the stored canonical config (search.enqueue, search.time_limit) reads back
run 0 "$NAS" export --db "$DB" --best --format json -o "$TMP/best.json"
grep_in "nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0" "$TMP/best.json"

note "6 trials, then extended to 12: the replay gives the same 12 trials"
write_conf ext.conf 6 "enqueue = [\"$G\", \"$G\"];"
run 0 "$NAS" run ext.conf --db "$TMP/b.db"
write_conf ext.conf 12 "enqueue = [\"$G\", \"$G\"];"
run 0 "$NAS" run ext.conf --db "$TMP/b.db"
grep_in "extending experiment 'e2e-enqueue'" "$TMP/err"
grep -q "differed" "$TMP/err" && { cat "$TMP/err"; fail "the replay differed from the stored trials"; }
grep -q "not repeated" "$TMP/err" && fail "the replay said the duplicate again"
expect_eq "extended sequence" "$(seq_of "$TMP/b.db")" "$full"

note "cut by --time-limit 2 (slow trials), then resumed: the same 12 trials"
write_conf cut.conf 12 "enqueue = [\"$G\", \"$G\"];" 1
NAS_FAULT="sleep_ms=400" "$NAS" run cut.conf --db "$TMP/e.db" --time-limit 2 >"$TMP/out" 2>"$TMP/err" ||
    { cat "$TMP/err"; fail "the run with a time limit failed"; }
grep_in "time limit reached" "$TMP/out"
[ "$(sql "$TMP/e.db" "SELECT count(*) FROM trial WHERE status = 'done'")" -lt 12 ] ||
    fail "the time limit did not cut the search"
run 0 "$NAS" run cut.conf --db "$TMP/e.db"
grep -q "differed" "$TMP/err" && { cat "$TMP/err"; fail "the replay differed from the stored trials"; }
expect_eq "resumed sequence" "$(seq_of "$TMP/e.db")" "$full"

note "nas run --enqueue: first, defining, checked"
write_conf cli.conf 5 ""
run 0 "$NAS" run cli.conf --db "$TMP/c.db" --enqueue "$G2"
expect_eq "trial 1 (--enqueue)" "$(sql "$TMP/c.db" "SELECT genotype || ' ' || proposed_by FROM trial WHERE id = 1")" "$G2 enqueued"
run 2 "$NAS" run cli.conf --db "$TMP/c.db"
grep_in "search.enqueue" "$TMP/err"
run 0 "$NAS" run cli.conf --db "$TMP/c.db" --enqueue "$G2"
grep_in "already has its 5 trials" "$TMP/err"
run 2 "$NAS" run cli.conf --db "$TMP/d.db" --enqueue '|conv9x9~0|'
grep_in "enqueue '|conv9x9~0|' is not a genotype of the space" "$TMP/err"
[ -e "$TMP/d.db" ] && fail "a refused --enqueue made a database"
echo "PASS"
