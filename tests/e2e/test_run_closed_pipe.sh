#!/usr/bin/env bash
# tests/e2e/test_run_closed_pipe.sh - `nas run ... | head -1`: the reader
# closes the pipe after one line. nas run used to die of SIGPIPE, leaving the
# experiment "running" in the database for query, experiments and report;
# now it stops as after Ctrl-C: exit 130, experiment interrupted, and the
# same command resumes it to the end. A reader gone before a long quiet
# stretch (a warm-up): the writes after it stop nas as cleanly.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh" # write_table
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
cat >"$TMP/p.conf" <<CONF
experiment = "pipe";
seed = 4;
search: { strategy = "random"; trials = 20; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
note "stdout closed after one line: exit 130, experiment interrupted"
( "$NAS" run p.conf --db "$TMP/p.db" 2>&1; echo "$?" >"$TMP/rc" ) | head -1 >/dev/null
expect_eq "exit code" "$(cat "$TMP/rc")" 130
expect_eq "experiment status" "$(sql "$TMP/p.db" "SELECT status FROM experiment")" interrupted
note "the same command resumes it to the end"
run 0 "$NAS" run p.conf --db "$TMP/p.db"
expect_eq "experiment status" "$(sql "$TMP/p.db" "SELECT status FROM experiment")" done
expect_eq "done trials" "$(sql "$TMP/p.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 20

note "a reader gone from the start, and work of 2 s after the first write (a warm-up of"
note "100 synflow scores): still exit 130, not killed by the next write's SIGPIPE"
# nas took every SIGPIPE after the first for a second Ctrl-C (exit 141,
# the experiment left 'running')
cat >"$TMP/w.conf" <<CONF
experiment = "warm";
seed = 4;
space: { channels = 16; stages = 3; cells_per_stage = 5; input = [3, 32, 32]; };
search: { strategy = "random"; trials = 6;
  warmup: { proxy = "synflow"; candidates = 100; top = 2; }; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
# stdout and stderr: a pipe whose read end is closed
perl -e 'pipe(my $r, my $w) or die; close $r; open(STDOUT, ">&", $w) or die;
         open(STDERR, ">&", $w) or die; exec @ARGV or die' \
    "$NAS" run "$TMP/w.conf" --db "$TMP/w.db"
expect_eq "exit code" "$?" 130
expect_eq "experiment status" "$(sql "$TMP/w.db" "SELECT status FROM experiment")" interrupted
echo PASS
