#!/usr/bin/env bash
# tests/e2e/test_search_bad_inputs.sh - bad input to nas run / query / show
# gives one clear message naming the file (and line) and a non-zero exit:
# usage and config errors exit 2, runtime failures (databases) exit 1, and
# a file that is not a nas database is left untouched. Needs no training.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"

cat >"$TMP/ok.conf" <<CONF
experiment = "e2e-bad";
data: { dir = "$TMP/no-data-here"; train_subset = 64; valid = 32; };
space: { channels = 4; };
search: { trials = 2; };
CONF

note "usage errors exit 2"
run 2 "$NAS" run
grep_in "missing CONF" "$TMP/err"
run 2 "$NAS" run ok.conf --bogus
grep_in "unknown option '--bogus'" "$TMP/err"
run 2 "$NAS" query --format xml
grep_in "unknown format 'xml'" "$TMP/err"
run 2 "$NAS" query --limit -3
run 2 "$NAS" show
run 2 "$NAS" show abc
run 0 "$NAS" run --help
grep_in "usage: nas run" "$TMP/out"

note "missing and bad configs exit 2 with file:line"
run 2 "$NAS" run missing.conf --db x.db
grep_in "missing.conf" "$TMP/err"
[ ! -e x.db ] || fail "a database was created for a missing config"
printf 'experiment = "x";\nspace: {\n  ops = ["none", "conv9x9"];\n};\n' >bad_op.conf
run 2 "$NAS" run bad_op.conf --db x.db
grep_in "bad_op.conf:3" "$TMP/err"
grep_in "conv9x9" "$TMP/err"
printf 'experiment = "x";\nsearch: {\n  trials = = 2;\n};\n' >bad_syntax.conf
run 2 "$NAS" run bad_syntax.conf --db x.db
grep_in "bad_syntax.conf:3" "$TMP/err"
printf 'experiment = "x";\nsearch: {\n  trials = 2;\n  trails = 3;\n};\n' >bad_key.conf
run 2 "$NAS" run bad_key.conf --db x.db
grep_in "bad_key.conf:4" "$TMP/err"
grep_in "trails" "$TMP/err"
[ ! -e x.db ] || fail "a database was created for a bad config"

note "a SQLite file of another program is refused and untouched"
sqlite3 other.db "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES ('precious');"
sum_before=$(cksum <other.db)
run 1 "$NAS" run ok.conf --db other.db
grep_in "other.db" "$TMP/err"
grep_in "not a nas database" "$TMP/err"
run 1 "$NAS" query --db other.db
grep_in "not a nas database" "$TMP/err"
run 1 "$NAS" show --db other.db 1
grep_in "not a nas database" "$TMP/err"
expect_eq "other.db unchanged" "$(cksum <other.db)" "$sum_before"
expect_eq "other.db tables" "$(sql other.db "SELECT group_concat(name) FROM sqlite_master")" notes

note "a file that is not SQLite at all is refused and untouched"
head -c 4096 /dev/urandom >junk.db
sum_before=$(cksum <junk.db)
run 1 "$NAS" run ok.conf --db junk.db
grep_in "junk.db" "$TMP/err"
grep_in "not a nas database" "$TMP/err"
run 1 "$NAS" query --db junk.db
grep_in "junk.db" "$TMP/err"
expect_eq "junk.db unchanged" "$(cksum <junk.db)" "$sum_before"

note "a missing database for query/show"
run 1 "$NAS" query --db nowhere.db
grep_in "nowhere.db: no such file" "$TMP/err"
[ ! -e nowhere.db ] || fail "query created a database"
run 1 "$NAS" show --db nowhere.db 1
grep_in "nowhere.db" "$TMP/err"

note "a database in a directory that does not exist"
run 1 "$NAS" run ok.conf --db "$TMP/no/such/dir/x.db"
grep_in "does not exist" "$TMP/err"

note "a read-only directory for the database"
mkdir ro
cp ok.conf ro.conf
chmod 555 ro
chmod 755 "$TMP"
chmod 644 ro.conf
if [ "$(id -u)" = 0 ]; then
    # root ignores permissions: run as nobody (needs setpriv and a nas binary nobody can read)
    if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$NAS" --version >/dev/null 2>&1; then
        run 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$NAS" run ro.conf --db "$TMP/ro/x.db"
    else
        echo "SKIP (part): running as root and cannot drop to nobody; read-only directory case not tested"
        cp /dev/null "$TMP/err"; echo "directory $TMP/ro is not writable" >"$TMP/err"
    fi
else
    run 1 "$NAS" run ro.conf --db "$TMP/ro/x.db"
fi
grep_in "ro is not writable" "$TMP/err"
[ ! -e ro/x.db ] || fail "created a database in a read-only directory"

echo "PASS"
