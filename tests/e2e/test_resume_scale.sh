#!/usr/bin/env bash
# tests/e2e/test_resume_scale.sh - issue 29: resuming a finished search costs
# a small fraction of running it (a replay's dedupe check scanned the whole
# history, O(n^2), and a finished experiment replayed its strategy; NAO
# retrained its model every round of the replay).
#
# A random table search of N trials (default 30,000; RESUME_SCALE_N to
# change it; docs/cluster.md has the 100,000-trial figures) on a synthetic
# table: 3 ops on 10 chain layers, 59,049 genotypes, every one a distinct
# key and a row of the table (NAS-Bench-201 has only 5,226 distinct cells,
# too few for the budget). Then a 150-trial NAO search on the same table.
# Each is run, then run again: the second run must say "nothing to do",
# leave the trials as they were and use under 10% of the first run's CPU
# time (user + system, from bash's `times`; the least of 3 resumes). A
# finished experiment is counted one stored row at a time (no history of
# 2.3 KB a trial: 70 MB at 30,000, whose page faults alone cost 12% of the
# first run on a virtualised host). Then the NAO search is
# extended by one trial: its replay (NAO's rounds rebuilt from the stored
# round log, not trained) must cost under 10% too and give the trials of
# an uninterrupted search.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"
N=${RESUME_SCALE_N:-30000}

# genotype,acc for every genotype of 3 ops on 4 + 6 layers (a function of the ops)
awk 'BEGIN { split("mb3_k3 conv_k3 mb3_k5", op, " "); n = 10; N = 3 ^ n; print "genotype,acc";
    for (i = 0; i < N; i++) { x = i; s = ""; a = 50;
        for (j = 0; j < n; j++) { d = x % 3; x = (x - d) / 3;
            s = s (j == 0 ? "" : (j == 4 ? "|" : ":")) op[d + 1]; a += (3 - d) * ((j * 7 + 3) % 5) / 4 }
        printf "\"%s\",%.3f\n", s, a } }' >"$TMP/table.csv"
expect_eq "table rows" "$(($(wc -l <"$TMP/table.csv") - 1))" 59049

# conf NAME STRATEGY TRIALS
conf() {
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 3;
space: {
  type = "chain";
  stem = { kernel = 3; channels = 8; stride = 1; activation = "relu"; };
  stages = (
    { channels = 8; stride = 1; layers = 4; ops = ["mb3_k3", "conv_k3", "mb3_k5"]; activation = "relu"; },
    { channels = 16; stride = 2; layers = 6; ops = ["mb3_k3", "conv_k3", "mb3_k5"]; activation = "relu"; }
  );
  head = { activation = "relu"; pool = "avg"; };
};
search: { strategy = "$2"; trials = $3; nao = { seed_archs = 20; epochs = 10; }; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 0.01; };
workers: { count = 0; };
CONF
}

# cpu_of CMD...: run CMD (stdout in $TMP/out, stderr in $TMP/err, exit 0
# expected) and print its CPU time (user + system) in milliseconds.
cpu_of() {
    local t0 t1
    times >"$TMP/times0" # not in a pipe: a forked `times` reports no children
    "$@" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "'$*' failed"; }
    times >"$TMP/times1"
    t0=$(tail -1 "$TMP/times0")
    t1=$(tail -1 "$TMP/times1")
    # `times` line 2: children's user and system time, "XmY.YYYs XmY.YYYs"
    awk -v a="$t0" -v b="$t1" 'function ms(s,  m) { m = s; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", s);
        sub(/s$/, "", s); return (m * 60 + s) * 1000 }
        BEGIN { split(a, x, " "); split(b, y, " "); printf "%d\n", ms(y[1]) + ms(y[2]) - ms(x[1]) - ms(x[2]) }'
}

# check NAME STRATEGY TRIALS
check() {
    local name=$1 db=$TMP/$1.db first second
    conf "$name" "$2" "$3"
    note "$name: $3 $2 trials, then the same command again"
    first=$(cpu_of "$NAS" run "$TMP/$name.conf" --db "$db")
    expect_eq "$name trials done" "$(sql "$db" "SELECT count(*) FROM trial WHERE status = 'done'")" "$3"
    sql "$db" "SELECT id, genotype, status FROM trial ORDER BY id" >"$TMP/$name.before"
    # the least of 3 resumes: a resume is short (under a second), so a busy
    # or virtualised host's page faults and stalls move it most
    second=
    for _ in 1 2 3; do
        t=$(cpu_of "$NAS" run "$TMP/$name.conf" --db "$db")
        grep_in "nothing to do" "$TMP/err"
        [ -z "$second" ] || [ "$t" -lt "$second" ] && second=$t
    done
    sql "$db" "SELECT id, genotype, status FROM trial ORDER BY id" >"$TMP/$name.after"
    cmp -s "$TMP/$name.before" "$TMP/$name.after" || fail "$name: the resume changed the trials"
    echo "$name: first run $first ms CPU, resume to 'nothing to do' $second ms CPU"
    nao_first=$first
    [ $((second * 10)) -lt "$first" ] ||
        fail "$name: the resume took $second ms CPU, not under 10% of the first run's $first ms"
}

check scale-random random "$N"
check scale-nao nao 150

# NAO's replay does not train its rounds again (strategy_state
# "strategy.rounds"): extending the 150-trial search by one trial replays
# 150 trials in under 10% of the first run's CPU, and the 151 trials are
# those of an uninterrupted 151-trial search.
note "scale-nao: extended to 151 trials, and an uninterrupted 151-trial search"
sed 's/trials = 150;/trials = 151;/' "$TMP/scale-nao.conf" >"$TMP/ext.conf"
ext=$(cpu_of "$NAS" run "$TMP/ext.conf" --db "$TMP/scale-nao.db")
grep_in "extending experiment" "$TMP/err"
if grep -q "replayed proposals differed" "$TMP/err"; then cat "$TMP/err"; fail "the replay differed"; fi
conf scale-nao nao 151
"$NAS" run "$TMP/scale-nao.conf" --db "$TMP/whole.db" --quiet >"$TMP/out" 2>&1 || fail "nas run"
expect_eq "extended = uninterrupted" \
    "$(sql "$TMP/scale-nao.db" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial ORDER BY id)")" \
    "$(sql "$TMP/whole.db" "SELECT group_concat(genotype, ' ') FROM (SELECT genotype FROM trial ORDER BY id)")"
echo "scale-nao: extension by one trial $ext ms CPU (the first run: $nao_first ms)"
[ $((ext * 10)) -lt "$nao_first" ] ||
    fail "scale-nao: the extension took $ext ms CPU, not under 10% of the first run's $nao_first ms"
echo "PASS"
