#!/usr/bin/env bash
# tests/e2e/test_hint_quoting.sh - issue 29, defect 10c: the commands nas
# prints as hints (the resume line after Ctrl-C, "resume or extend it with
# --experiment NAME", the results line's `nas query --db DB`, the failed
# trials' `nas query --db DB --experiment NAME`) quote paths and names for
# a POSIX shell when needed, so they can be pasted: here a database under
# a directory with a quote and spaces, a config name with a space and
# experiment names with a quote. Each hint is run as printed (eval) and
# must work. A table search: seconds, no data.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
mkdir "$TMP/it's a dir" || fail "mkdir"
DB="$TMP/it's a dir/d b.db"
cat >"$TMP/my conf.conf" <<CONF
experiment = "plain";
seed = 4;
search: { strategy = "random"; trials = 30; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 1; };
CONF
# paste: run a printed "nas ..." command line through the shell
paste_run() { local cmd=$1; shift; eval "\"\$NAS\"${cmd#nas}"; }

note "Ctrl-C: the resume hint quotes the config, the database and the name"
NAS_FAULT=sleep_ms=100 "$NAS" run "my conf.conf" --db "$DB" --experiment "it's mine" \
    >"$TMP/run1.out" 2>"$TMP/run1.err" &
RUN_PID=$!
for _ in $(seq 1 300); do
    sleep 0.1
    n=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 3 ] && break
done
kill -INT "$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/run1.err"; fail "interrupted run exited $code, expected 130"; }
grep_in "nas: resume or extend it with --experiment 'it'\\\\''s mine'" "$TMP/run1.err"
resume=$(sed -n 's/^  resume:  //p' "$TMP/run1.out")
expect_eq "resume hint" "$resume" \
    "nas run 'my conf.conf' --db '$TMP/it'\\''s a dir/d b.db' --experiment 'it'\\''s mine'"
paste_run "$resume" >"$TMP/run2.out" 2>"$TMP/run2.err" ||
    { cat "$TMP/run2.err"; fail "the pasted resume hint failed"; }
expect_eq "trials of 'it''s mine'" \
    "$(sql "$DB" "SELECT count(*) FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'it''s mine' AND t.status = 'done'")" 30

note "the results hint runs as printed"
query=$(sed -n 's/^  results: .*(\(nas query --db .*\); nas show --db .*/\1/p' "$TMP/run2.out")
[ -n "$query" ] || { cat "$TMP/run2.out"; fail "no results hint"; }
paste_run "$query" --experiment "it's mine" >"$TMP/q.out" 2>&1 || { cat "$TMP/q.out"; fail "pasted query failed"; }
grep_in "experiment 'it's mine'" "$TMP/q.out"

note "failed trials: the warning's query hint runs as printed"
head -n 3000 "$TMP/table.csv" >"$TMP/part.csv" # most cells missing: their trials fail
sed "s#$TMP/table.csv#$TMP/part.csv#; s/trials = 30/trials = 6/; s/count = 1/count = 0/" \
    "$TMP/my conf.conf" >"$TMP/part.conf"
"$NAS" run part.conf --db "$DB" --experiment "part 'x'" >"$TMP/run3.out" 2>"$TMP/run3.err"
hint=$(sed -n 's/.*`\(nas query --db .* --experiment .*\)` lists the reasons.*/\1/p' "$TMP/run3.err")
[ -n "$hint" ] || { cat "$TMP/run3.err"; fail "no failed-trials hint"; }
paste_run "$hint" >"$TMP/q2.out" 2>&1 || { cat "$TMP/q2.out"; fail "pasted failed-trials hint failed"; }
grep_in "experiment 'part 'x''" "$TMP/q2.out"
echo "PASS"
