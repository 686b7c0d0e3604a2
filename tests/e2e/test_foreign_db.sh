#!/usr/bin/env bash
# tests/e2e/test_foreign_db.sh - issue 18: a database that is not ours, or
# is damaged, given as --db to nas run / query / experiments / show /
# export / report:
#   * a foreign SQLite file (other tables), in rollback-journal mode;
#   * a foreign SQLite file in WAL mode with a WAL left by a killed writer
#     (closing a read-write connection would checkpoint that WAL into the
#     file: it must not);
#   * a nas database truncated mid-page;
#   * a nas database from the future (PRAGMA user_version above ours);
#   * a file that is not SQLite at all;
# each gets exit 1 with the path and what is wrong, and neither the file
# nor a WAL beside it changes by a byte; the non-WAL ones get no side file
# (-wal, -shm, -journal, .lock) either. Then a nas database with a WAL
# left by a killed writer is recovered: the rows committed in the WAL are
# read, and `nas run` continues it.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/faults_lib.sh"
command -v /usr/bin/python3 >/dev/null 2>&1 || skip "/usr/bin/python3 is missing (it writes the killed-writer WALs)"
cd "$TMP" || fail "cd"
write_table "$TMP/table.csv"
cat >"$TMP/s.conf" <<CONF
experiment = "foreign-test";
seed = 3;
search: { strategy = "random"; trials = 6; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 1.0; };
workers: { count = 0; };
CONF
run 0 "$NAS" run s.conf --db "$TMP/good.db"
run 0 "$NAS" experiments --db "$TMP/good.db" # leaves good.db checkpointed, no WAL
PAGE=$(sql "$TMP/good.db" "PRAGMA page_size")

mkdir "$TMP/bad"
B=$TMP/bad
sqlite3 -batch "$B/foreign.db" "CREATE TABLE people(name TEXT); INSERT INTO people VALUES ('ada');"
# a foreign WAL database whose writer was killed: its last commit is only in the WAL
/usr/bin/python3 - "$B/foreignwal.db" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("CREATE TABLE people(name TEXT)"); c.commit()
c.execute("INSERT INTO people VALUES ('ada')"); c.commit()
os._exit(0)  # killed: no checkpoint, the WAL stays
PY
[ -s "$B/foreignwal.db-wal" ] || fail "the fixture left no WAL"
rm -f "$B/foreignwal.db-shm"
head -c $((PAGE * 3 + PAGE / 2)) "$TMP/good.db" >"$B/truncated.db"
cp "$TMP/good.db" "$B/future.db"
sqlite3 -batch "$B/future.db" "PRAGMA journal_mode=DELETE; PRAGMA user_version = 99;" >/dev/null
for i in $(seq 200); do echo "name,value"; done >"$B/notsqlite.db"

# expect_refused FILE MESSAGE [wal]: every command exits 1 naming FILE and
# saying MESSAGE; FILE (and a WAL beside it) unchanged. Without "wal" (a
# file whose header is not in WAL mode) no side file may appear either.
expect_refused() {
    local f=$B/$1 msg=$2 mode=${3:-} files sums ls_before
    files=("$f")
    [ -e "$f-wal" ] && files+=("$f-wal")
    ls_before=$(ls "$B")
    sums=$(md5sum "${files[@]}")
    for cmd in "run s.conf" "query" "experiments" "show 1" "export --best --format json -o $TMP/x.json" \
               "report -o $TMP/x.html"; do
        # shellcheck disable=SC2086
        run 1 "$NAS" $cmd --db "$f"
        grep_in "$f" "$TMP/err"
        grep_in "$msg" "$TMP/err"
        [ "$(md5sum "${files[@]}")" = "$sums" ] ||
            fail "nas $cmd changed $1 (or its WAL): before: $sums, after: $(md5sum "${files[@]}")"
        [ ! -e "$TMP/x.json" ] && [ ! -e "$TMP/x.html" ] || fail "nas $cmd wrote output from $1"
        if [ "$mode" != wal ]; then
            [ "$(ls "$B")" = "$ls_before" ] || fail "nas $cmd left side files beside $1: $(ls "$B")"
        fi
    done
    note "$1: refused ($(head -c 200 "$TMP/err"))"
}
expect_refused foreign.db "is a SQLite database but not a nas database"
expect_refused foreignwal.db "is a SQLite database but not a nas database" wal
expect_refused truncated.db "is damaged or truncated" wal
expect_refused future.db "schema version 99 is newer than this nas knows"
expect_refused notsqlite.db "not a SQLite file"
expect_eq "foreign rows" "$(sql "$B/foreign.db" "SELECT name FROM people")" ada

note "a nas database with a WAL left by a killed writer is recovered"
cp "$TMP/good.db" "$TMP/killed.db"
/usr/bin/python3 - "$TMP/killed.db" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("UPDATE trial SET error = 'committed only in the WAL' WHERE id = (SELECT min(id) FROM trial)")
c.commit()
os._exit(0)
PY
[ -s "$TMP/killed.db-wal" ] || fail "the killed writer left no WAL"
rm -f "$TMP/killed.db-shm"
run 0 "$NAS" experiments --db "$TMP/killed.db"
grep_in "foreign-test" "$TMP/out"
run 0 "$NAS" show 1 --db "$TMP/killed.db"
sed -i 's/trials = 6/trials = 9/' "$TMP/s.conf"
run 0 "$NAS" run s.conf --db "$TMP/killed.db"
expect_eq "the WAL's commit" "$(sql "$TMP/killed.db" "SELECT error FROM trial WHERE id = (SELECT min(id) FROM trial)")" \
    "committed only in the WAL"
expect_eq "extended to 9" "$(sql "$TMP/killed.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 9
expect_eq "duplicate arch keys" \
    "$(sql "$TMP/killed.db" "SELECT count(*) FROM (SELECT arch_key FROM trial GROUP BY 1 HAVING count(*) > 1)")" 0
expect_eq "integrity" "$(sql "$TMP/killed.db" "PRAGMA integrity_check")" ok
echo "PASS"
