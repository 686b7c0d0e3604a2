#!/usr/bin/env bash
# tests/e2e/test_stored_recal.sh - issue 30: proxy.bn_recalibrate's default
# went from 0 to 10, and it is a defining setting, so an experiment made
# before keeps 0 when its config leaves the key unset
# (nas_config_stored_defaults). The experiment is a database written by the
# 3305fab build (tests/data/db-recal-3305fab.sql, "proxy.bn_recalibrate =
# 0;" in its canonical text). Checked:
#   - extended by a config without the key, it resumes (it was refused as
#     "proxy.bn_recalibrate: 0 -> 10" before), says so, keeps 0, and its new
#     trial scores exactly as with an explicit bn_recalibrate = 0;
#   - its ARCH.json has no recipe.bn_recalibrate (0 for `nas train --proxy`);
#   - a text from before the key existed (the line deleted) counts as 0:
#     resumed the same way, and an explicit 10 is refused as "0 -> 10";
#   - --new takes the new default, 10.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
conf() { # conf FILE TRIALS [PROXY_KEYS]
    cat >"$TMP/$1" <<CONF
experiment = "recal";
seed = 7;
data: { dir = "$FMNIST"; train_subset = 256; valid = 300; };
space: { channels = 8; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; ${3:-} };
search: { strategy = "random"; trials = $2; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
}
conf set.conf 2 # the fixture's own config
conf unset.conf 3
conf zero.conf 3 "bn_recalibrate = 0;"
conf ten.conf 3 "bn_recalibrate = 10;"
old_db() { # old_db DB: the 3305fab database
    sqlite3 -batch "$1" <"$SRC/tests/data/db-recal-3305fab.sql" || fail "cannot load the fixture"
}
recal() { sql "$1" "SELECT conf_canonical FROM experiment WHERE name = '$2'" | grep '^proxy.bn_recalibrate'; }
acc3() { sql "$1" "SELECT printf('%.17g', val_accuracy) FROM result WHERE trial_id = 3"; }

old_db r.db
expect_eq "the fixture's value" "$(recal r.db recal)" "proxy.bn_recalibrate = 0;"

note "extended by a config without proxy.bn_recalibrate: it keeps 0"
run 0 "$NAS" run unset.conf --db r.db
grep_in "unset.conf leaves proxy.bn_recalibrate unset: experiment 'recal' keeps proxy.bn_recalibrate = 0 (stored; the default now is 10)" "$TMP/err"
expect_eq "done trials" "$(sql r.db "SELECT count(*) FROM trial WHERE status = 'done'")" 3
expect_eq "value after the run" "$(recal r.db recal)" "proxy.bn_recalibrate = 0;"
expect_eq "experiments" "$(sql r.db "SELECT count(*) FROM experiment")" 1

note "its new trial scores as with an explicit bn_recalibrate = 0"
old_db z.db
run 0 "$NAS" run zero.conf --db z.db
[ -n "$(acc3 r.db)" ] || fail "no trial 3"
expect_eq "trial 3's val_accuracy" "$(acc3 r.db)" "$(acc3 z.db)"

note "its ARCH.json has no recipe.bn_recalibrate (0 for nas train --proxy)"
run 0 "$NAS" export --db r.db --trial 3 --format json -o a.json
[ -s a.json ] || fail "no ARCH.json"
! grep -q bn_recalibrate a.json || fail "ARCH.json names bn_recalibrate: $(grep bn_recalibrate a.json)"

note "a text from before the key: 0 too"
old_db p.db
sql p.db "UPDATE experiment SET conf_canonical = replace(conf_canonical, 'proxy.bn_recalibrate = 0;' || char(10), '')"
expect_eq "no line" "$(recal p.db recal)" ""
run 2 "$NAS" run ten.conf --db p.db
grep_in "proxy.bn_recalibrate: 0 -> 10" "$TMP/err"
run 0 "$NAS" run unset.conf --db p.db
grep_in "keeps proxy.bn_recalibrate = 0 (made before the key existed; the default now is 10)" "$TMP/err"
expect_eq "done trials" "$(sql p.db "SELECT count(*) FROM trial WHERE status = 'done'")" 3
run 0 "$NAS" export --db p.db --trial 3 --format json -o p.json
! grep -q bn_recalibrate p.json || fail "ARCH.json names bn_recalibrate: $(grep bn_recalibrate p.json)"

note "--new takes the new default"
run 0 "$NAS" run unset.conf --db r.db --new
expect_eq "the new experiment's value" "$(recal r.db recal-2)" "proxy.bn_recalibrate = 10;"
echo "PASS"
