#!/usr/bin/env bash
# tests/e2e/test_keep_weights.sh - issue 22, point 5: weights for export.
#  - by default (no proxy.keep_weights) a search keeps the trained proxy
#    weights of its best proxy.keep_top (5) trials by the primary
#    objective and deletes the rest (rows and files), so `nas export
#    --best` works out of the box; a pruned trial's export says what to do;
#  - proxy.keep_top and proxy.weights_mb (a disk budget) are honoured;
#  - temporary .npz files a killed worker left in DB.weights/ are deleted
#    when the search runs again;
#  - old configs keep their meaning: keep_weights = true keeps every
#    trial's weights (keep_top ignored), false keeps none;
#  - a table experiment never has weights: the error says --weights init,
#    and --format json needs none.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"

# search NAME TRIALS PROXY_EXTRA: a tiny trained search into NAME.db
search() {
    cat >"$TMP/$1.conf" <<CONF
experiment = "$1";
seed = 11;
data: { dir = "$FMNIST"; train_subset = 128; valid = 64; };
space: { channels = 4; };
proxy: { epochs = 1; batch_size = 64; threads = 1; $3 };
search: { strategy = "random"; trials = $2; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
    run 0 "$NAS" run "$TMP/$1.conf" --db "$TMP/$1.db" --quiet
}
kept() { sql "$TMP/$1.db" "SELECT group_concat(trial_id, ' ') FROM (SELECT trial_id FROM trial_weights ORDER BY trial_id)"; }
files() { (cd "$TMP/$1.db.weights" 2>/dev/null && ls | sed 's/trial-\([0-9]*\).npz/\1/' | sort -n | tr '\n' ' ' | sed 's/ $//'); }
top() { sql "$TMP/$1.db" "SELECT group_concat(id, ' ') FROM (SELECT id FROM (SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE r.score IS NOT NULL ORDER BY r.score DESC, t.id LIMIT $2) ORDER BY id)"; }

note "default: the best 5 of 7 trials keep their weights"
search dflt 7 ""
expect_eq "kept weights = top 5 by score" "$(kept dflt)" "$(top dflt 5)"
expect_eq "files on disk = kept rows" "$(files dflt)" "$(kept dflt)"
run 0 "$NAS" export --db "$TMP/dflt.db" --best --format pytorch -o best.py
grep_in "weights: trained from $TMP/dflt.db.weights/trial-" "$TMP/out"
gone=$(sql "$TMP/dflt.db" "SELECT min(id) FROM trial WHERE id NOT IN (SELECT trial_id FROM trial_weights)")
run 1 "$NAS" export --db "$TMP/dflt.db" --trial "$gone" --format onnx -o t.onnx
grep_in "trial $gone has no kept weights" "$TMP/err"
grep_in "proxy.keep_top" "$TMP/err"
grep_in "--weights init" "$TMP/err"
note "json export of a trial without weights needs none and claims none"
run 0 "$NAS" export --db "$TMP/dflt.db" --trial "$gone" --format json -o t.json
grep_in "weights: none in the JSON" "$TMP/out"
grep -q "trained from" "$TMP/out" && fail "JSON export claims trained weights"

note "proxy.keep_top = 2"
search top2 4 "keep_top = 2;"
expect_eq "kept weights = top 2" "$(kept top2)" "$(top top2 2)"
expect_eq "files = kept" "$(files top2)" "$(kept top2)"

note "a killed worker's temporary .npz files in DB.weights/ go at the next run; other files stay"
W=$TMP/top2.db.weights
: >"$W/trial-9.npz.tmp"        # the .npz writer's PATH.tmp
: >"$W/trial-9.npz.tmp.Xy12Ab" # libzip's PATH.tmp.XXXXXX inside zip_close
: >"$W/notes.txt"
sed -i 's/trials = 4;/trials = 5;/' "$TMP/top2.conf"
run 0 "$NAS" run "$TMP/top2.conf" --db "$TMP/top2.db" --quiet
for f in trial-9.npz.tmp trial-9.npz.tmp.Xy12Ab; do
    [ -e "$W/$f" ] && fail "$f is still in $W"
done
[ -e "$W/notes.txt" ] || fail "notes.txt (not a temporary .npz) was deleted"
rm "$W/notes.txt"
expect_eq "extended to 5: kept weights = top 2" "$(kept top2)" "$(top top2 2)"
expect_eq "extended to 5: files = kept" "$(files top2)" "$(kept top2)"

note "proxy.weights_mb smaller than one file keeps none"
search tiny 2 "weights_mb = 0.001;"
expect_eq "kept under a 1 kB budget" "$(sql "$TMP/tiny.db" "SELECT count(*) FROM trial_weights")" 0
expect_eq "files under a 1 kB budget" "$(files tiny)" ""

note "old configs: keep_weights = true keeps all, false none"
search all 3 "keep_weights = true; keep_top = 1;"
expect_eq "keep_weights = true keeps every trial" "$(kept all)" "1 2 3"
search none 2 "keep_weights = false;"
expect_eq "keep_weights = false keeps none" "$(sql "$TMP/none.db" "SELECT count(*) FROM sqlite_master WHERE name = 'trial_weights'")" 0
[ -e "$TMP/none.db.weights" ] && fail "keep_weights = false created a weights directory"

TABLE=$SHARED/data/nb201/nb201_mini_accs.csv
[ -f "$TABLE" ] || skip "NAS-Bench-201 table not found at $TABLE (the table checks did not run)"
note "a table experiment: no weights, and the message says --weights init"
cat >"$TMP/tab.conf" <<CONF
experiment = "tab";
search: { strategy = "random"; trials = 3; };
evaluator: { kind = "table"; table = "$TABLE"; };
workers: { count = 0; };
CONF
run 0 "$NAS" run "$TMP/tab.conf" --db "$TMP/tab.db" --quiet
[ -e "$TMP/tab.db.weights" ] && fail "a table search created a weights directory"
run 1 "$NAS" export --db "$TMP/tab.db" --best --format onnx -o tab.onnx
grep_in "looked up in a table" "$TMP/err"
grep_in "--weights init" "$TMP/err"
grep -q "keep_weights = true" "$TMP/err" && fail "the table message still advises keep_weights"
run 0 "$NAS" export --db "$TMP/tab.db" --best --format json -o tab.json
grep_in "weights: none in the JSON" "$TMP/out"
echo "PASS"
