#!/usr/bin/env bash
# tests/e2e/test_warmup.sh - issue 31, search.warmup = { proxy = "synflow";
# candidates = 40; top = 4; }: NAO on the NAS-Bench-201 table at 3x32x32.
# Trials 1-4 are proposed_by 'warmup' and are the 4 best synflow scores of
# the 40 cached candidates (zc_score, schema 9), which are not trials (12
# trials in all); two runs with the same seed give the same sequence, and
# another seed other warm-up genotypes. A run killed with SIGKILL (trials
# slowed in a worker), with half of its cached scores removed as if the
# warm-up itself had been cut, resumes to the same K and the same 12 trials
# as the uninterrupted run, scoring only the missing candidates. `nas
# query --zero-cost synflow` and `nas show` print the cached scores.
# Skips when the table is absent.
. "$(dirname "$0")/search_lib.sh"
TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE"
cd "$TMP" || fail "cd"
write_conf() { # $1: file, $2: seed
    cat >"$TMP/$1" <<CONF
experiment = "e2e-warmup";
seed = $2;
space: { type = "cell"; channels = 16; cells_per_stage = 5; input = [3, 32, 32]; classes = 10; };
search: { strategy = "nao"; trials = 12;
  nao: { seed_archs = 6; epochs = 5; batch_per_round = 2; };
  warmup: { proxy = "synflow"; candidates = 40; top = 4; };
};
evaluator: { kind = "table"; table = "$TABLE"; column = "cifar10-val"; table_scale = 0.01; };
workers: { count = 1; };
CONF
}
seq_of() { sql "$1" "SELECT group_concat(genotype || ' ' || proposed_by, ';') FROM (SELECT genotype, proposed_by FROM trial ORDER BY id)"; }
warm_of() { sql "$1" "SELECT group_concat(arch_key, ';') FROM (SELECT arch_key FROM trial WHERE proposed_by = 'warmup' ORDER BY id)"; }
top_of() { sql "$1" "SELECT group_concat(arch_key, ';') FROM (SELECT arch_key FROM zc_score WHERE proxy = 'synflow' ORDER BY score DESC LIMIT 4)"; }

note "warm-up: trials 1-4 are the 4 best of 40 scored candidates, not charged as trials"
write_conf w.conf 5
run 0 "$NAS" run w.conf --db "$TMP/a.db"
A=$TMP/a.db
grep_in "warm-up: 40 candidates scored with synflow (0 from the cache, 40 now" "$TMP/err"
expect_eq "trials" "$(sql "$A" "SELECT count(*) FROM trial WHERE status = 'done'")" 12
expect_eq "cached scores" "$(sql "$A" "SELECT count(*) FROM zc_score WHERE experiment_id = 1 AND proxy = 'synflow'")" 40
expect_eq "warm-up trials first" "$(sql "$A" "SELECT group_concat(proposed_by) FROM (SELECT proposed_by FROM trial WHERE id <= 4 ORDER BY id)")" "warmup,warmup,warmup,warmup"
expect_eq "the 4 best scores, best first" "$(warm_of "$A")" "$(top_of "$A")"
expect_eq "NAO's uniform seeds (seed_archs 6, 4 of them warm-up)" \
    "$(sql "$A" "SELECT count(*) FROM trial WHERE proposed_by = 'nao-seed'")" 2
expect_eq "schema" "$(sql "$A" "PRAGMA user_version")" 10
full=$(seq_of "$A")

note "the same seed: the same sequence; another seed: another warm-up"
run 0 "$NAS" run w.conf --db "$TMP/b.db"
expect_eq "sequence" "$(seq_of "$TMP/b.db")" "$full"
write_conf w7.conf 7
run 0 "$NAS" run w7.conf --db "$TMP/c.db"
[ "$(warm_of "$TMP/c.db")" != "$(warm_of "$A")" ] || fail "seed 7 warmed up with seed 5's genotypes"

note "nas query --zero-cost synflow and nas show print the cached scores"
run 0 "$NAS" query --db "$A" --zero-cost synflow --format csv
expect_eq "scored rows" "$(tail -n +2 "$TMP/out" | awk -F, '$NF != ""' | wc -l)" \
    "$(sql "$A" "SELECT count(*) FROM trial t JOIN zc_score z ON z.arch_key = t.arch_key")"
head -1 "$TMP/out" | grep -q ",zc_synflow$" || fail "no zc_synflow column: $(head -1 "$TMP/out")"
run 0 "$NAS" show 1 --db "$A"
grep_in "zc_synflow" "$TMP/out"

note "kill -9 during the search, half the cache gone: resume gives the same K and trials"
D=$TMP/k.db
NAS_FAULT="sleep_ms=400" "$NAS" run w.conf --db "$D" --quiet >"$TMP/k.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 200); do
    n=$(sql "$D" "SELECT count(*) FROM trial WHERE status = 'done'" 2>/dev/null)
    [ "${n:-0}" -ge 3 ] && break
    sleep 0.05
done
kill -9 "$RUN_PID"; wait "$RUN_PID" 2>/dev/null; RUN_PID=
n=$(sql "$D" "SELECT count(*) FROM trial WHERE status = 'done'")
[ "$n" -lt 12 ] || fail "the search finished before the kill"
sql "$D" "DELETE FROM zc_score WHERE rowid % 2 = 0"
left=$(sql "$D" "SELECT count(*) FROM zc_score")
run 0 "$NAS" run w.conf --db "$D"
grep_in "warm-up: 40 candidates scored with synflow ($left from the cache, $((40 - left)) now" "$TMP/err"
grep -q "differed" "$TMP/err" && { cat "$TMP/err"; fail "the replay differed from the stored trials"; }
expect_eq "resumed warm-up" "$(warm_of "$D")" "$(warm_of "$A")"
expect_eq "resumed sequence" "$(seq_of "$D")" "$full"
echo "PASS"
