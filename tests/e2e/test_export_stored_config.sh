#!/usr/bin/env bash
# tests/e2e/test_export_stored_config.sh - `nas export` rebuilds an
# experiment's settings from the canonical config kept in the store, so it
# works from any directory, whatever the config file looked like. Found in
# review: the canonical text writes unset data keys as "" and [] (refused
# as values) and a seed beyond 32 bits without libconfig's L, so the
# rebuild always failed and export fell back to the config file's text,
# where an @include is not found from another directory: export failed.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
mkdir -p conf elsewhere
write_table "$TMP/conf/table.csv"
cat >"$TMP/conf/space.inc" <<CONF
space: { type = "cell"; nodes = 4; };
CONF
cat >"$TMP/conf/s.conf" <<CONF
experiment = "stored";
seed = 12345678901L;
@include "space.inc"
search: { strategy = "random"; trials = 3; };
evaluator: { kind = "table"; table = "table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
note "nas run with an @include and a 34-bit seed"
run 0 "$NAS" run conf/s.conf --db "$TMP/s.db" --quiet
note "nas export from another directory"
cd "$TMP/elsewhere" || fail "cd"
run 0 "$NAS" export --db ../s.db --best --format json -o best.json
grep -q '"genotype"' best.json || fail "best.json has no genotype: $(head -c 300 best.json)"
echo "PASS"
