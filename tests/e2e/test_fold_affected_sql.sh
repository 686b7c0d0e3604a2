#!/usr/bin/env bash
# tests/e2e/test_fold_affected_sql.sh - the query docs/sql/fold-affected-trials.sql
# (how a user finds the trials of an old database that issue 19's eval
# defect got wrong) lists exactly the affected class: on a database holding
# all 15,625 cells for one experiment per case it returns 784 of them
# (stages >= 2; the count found by instrumenting trainer/net.c's
# plan_folding before the fix, and the same set), 799 with space.stages =
# 1, none for proxy.precision = "bf16" or for table look-ups; the issue's
# reproduction cell is in, and a cell whose node 1 has a second reader
# (counted by the issue's first estimate of 822, but never folded twice)
# is out.
. "$(dirname "$0")/search_lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 (the command-line shell) not installed"
Q="$2/docs/sql/fold-affected-trials.sql"
[ -f "$Q" ] || fail "no $Q"
DB="$TMP/all.db"
sqlite3 -batch "$DB" <<'SQL' || fail "building the table of all cells"
CREATE TABLE experiment(id INTEGER PRIMARY KEY, conf_canonical TEXT);
CREATE TABLE trial(id INTEGER PRIMARY KEY, experiment_id INTEGER, genotype TEXT, status TEXT,
                   device TEXT);
INSERT INTO experiment VALUES
  (1, 'space.stages = 3;' || char(10) || 'proxy.precision = "fp32";'),
  (2, 'space.stages = 1;' || char(10) || 'proxy.precision = "fp32";'),
  (3, 'space.stages = 3;' || char(10) || 'proxy.precision = "bf16";'),
  (4, 'space.stages = 3;');
WITH ops(o) AS (VALUES ('none'), ('skip_connect'), ('nor_conv_1x1'), ('nor_conv_3x3'),
                       ('avg_pool_3x3')),
     g AS (SELECT '|' || a.o || '~0|+|' || b.o || '~0|' || c.o || '~1|+|' || d.o || '~0|' ||
                  e.o || '~1|' || f.o || '~2|' AS s
           FROM ops a, ops b, ops c, ops d, ops e, ops f)
INSERT INTO trial(experiment_id, genotype, status, device)
  SELECT x.id, g.s, 'done', CASE x.id WHEN 4 THEN 'table' ELSE 'cpu' END
  FROM g, experiment x;
SQL
expect_eq "cells per experiment" "$(sql "$DB" "SELECT count(DISTINCT genotype) FROM trial WHERE experiment_id = 1")" 15625
sqlite3 -batch -separator ' ' "$DB" <"$Q" >"$TMP/hits" || fail "the query failed"
count() { awk -v e="$1" '$2 == e' "$TMP/hits" | wc -l | tr -d ' '; }
expect_eq "affected cells, 3 stages (cpu fp32)" "$(count 1)" 784
expect_eq "affected cells, 1 stage" "$(count 2)" 799
expect_eq "affected cells, cpu bf16 (no folding)" "$(count 3)" 0
expect_eq "affected cells, table look-ups" "$(count 4)" 0
has() { awk -v e="$1" -v g="$2" '$2 == e && $5 == g' "$TMP/hits" | wc -l | tr -d ' '; }
expect_eq "the issue's reproduction" \
    "$(has 1 '|nor_conv_3x3~0|+|none~0|none~1|+|nor_conv_3x3~0|none~1|none~2|')" 1
expect_eq "skip to node 2 = skip to a conv node 1" \
    "$(has 1 '|nor_conv_1x1~0|+|none~0|skip_connect~1|+|none~0|none~1|skip_connect~2|')" 1
expect_eq "node 1 read twice: never folded twice" \
    "$(has 1 '|nor_conv_3x3~0|+|none~0|nor_conv_1x1~1|+|none~0|skip_connect~1|none~2|')" 0
expect_eq "identity cell with 3 stages" \
    "$(has 1 '|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|')" 0
expect_eq "identity cell with 1 stage" \
    "$(has 2 '|none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|')" 1
echo "PASS"
