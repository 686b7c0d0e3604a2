#!/usr/bin/env bash
# tests/e2e/test_table_identity.sh - issue 29, defect 9: a table
# experiment's table is defining by its contents. The canonical text
# records "# table: crc32 ..., N bytes"; a resumed or extended run whose
# table differs (same path, new values) is refused (exit 2) and lists it
# with the other defining changes (nothing written); the same contents
# under another path continue it (the path is a running setting); an
# experiment stored without the line (before issue 29) resumes and gets it.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
mk() { # TRIALS TABLE [SEED]
    cat >"$TMP/t.conf" <<CONF
experiment = "tab";
seed = ${3:-5};
search: { strategy = "random"; trials = $1; };
evaluator: { kind = "table"; table = "$2"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
}
DB=$TMP/t.db
fp() { sql "$DB" "SELECT conf_canonical FROM experiment WHERE name = 'tab'" | grep '^# table: '; }

note "the table's fingerprint is recorded"
mk 10 "$TMP/table.csv"
run 0 "$NAS" run t.conf --db "$DB"
want="# table: crc32 $(/usr/bin/python3 -c "import zlib,sys; print('%08x' % zlib.crc32(open(sys.argv[1],'rb').read()))" "$TMP/table.csv"), $(stat -c %s "$TMP/table.csv") bytes"
expect_eq "fingerprint line" "$(fp)" "$want"

note "a changed table under the same path is refused as a defining change"
cp "$TMP/table.csv" "$TMP/orig.csv"
sed -i '2s/,0\.[0-9]*$/,0.9999/' "$TMP/table.csv"
cmp -s "$TMP/table.csv" "$TMP/orig.csv" && fail "the table did not change"
before=$(sql "$DB" "SELECT count(*) FROM trial")
mk 12 "$TMP/table.csv" 6
run 2 "$NAS" run t.conf --db "$DB"
grep_in "2 defining setting(s) of t.conf differ from experiment 'tab'" "$TMP/err"
grep_in "  seed: 5 -> 6" "$TMP/err"
grep_in "  evaluator.table (contents): crc32 [0-9a-f]\{8\}, [0-9]* bytes -> crc32 [0-9a-f]\{8\}, [0-9]* bytes" "$TMP/err"
grep_in "\-\-new" "$TMP/err"
mk 12 "$TMP/table.csv"
run 2 "$NAS" run t.conf --db "$DB"
grep_in "1 defining setting(s) of t.conf differ" "$TMP/err"
grep_in "evaluator.table (contents)" "$TMP/err"
expect_eq "nothing written" "$(sql "$DB" "SELECT count(*) FROM trial")" "$before"
expect_eq "fingerprint kept" "$(fp)" "$want"

note "the same contents under another path continue the experiment"
mk 12 "$TMP/orig.csv"
run 0 "$NAS" run t.conf --db "$DB"
grep_in "extending experiment 'tab'" "$TMP/err"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 12

note "an experiment stored without a fingerprint resumes and records it"
sql "$DB" "UPDATE experiment SET conf_canonical = replace(conf_canonical, '$want' || char(10), '')"
expect_eq "line removed" "$(fp)" ""
mk 14 "$TMP/orig.csv"
run 0 "$NAS" run t.conf --db "$DB"
expect_eq "trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 14
expect_eq "fingerprint recorded on resume" "$(fp)" "$want"
echo "PASS"
