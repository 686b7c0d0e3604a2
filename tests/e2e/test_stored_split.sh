#!/usr/bin/env bash
# tests/e2e/test_stored_split.sh - issue 30: the validation split is a
# defining setting whose default may change, so an experiment whose config
# leaves data.valid unset resumes with the split it was stored with. An
# experiment made with data.valid = 300 (by the pristine e994311 build when
# /work/old/build/nas is there, else by this one) is extended by a config
# without the key: it resumes (it was refused as "data.valid: 300 -> 5000"
# before), keeps 300, and says so. A config that sets another value is
# still refused; --new takes the default.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
OLD=${NAS_OLD_BINARY:-/work/old/build/nas}
[ -x "$OLD" ] || OLD=$NAS
conf() { # conf FILE TRIALS [VALID_LINE]
    cat >"$TMP/$1" <<CONF
experiment = "split";
seed = 5;
data: { dir = "$FMNIST"; train_subset = 256; ${3:-} };
space: { channels = 8; };
proxy: { batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = $2; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
}
conf set.conf 2 "valid = 300;"
conf unset.conf 3
conf other.conf 3 "valid = 400;"
note "created with data.valid = 300 by $OLD"
run 0 "$OLD" run set.conf --db s.db
canon() { sql s.db "SELECT conf_canonical FROM experiment WHERE name = '$1'" | grep '^data.valid ='; }
expect_eq "stored split" "$(canon split)" "data.valid = 300;"

note "extended by a config without data.valid: the stored split stays"
run 0 "$NAS" run unset.conf --db s.db
grep_in "leaves data.valid unset: experiment 'split' keeps data.valid = 300 (stored; the default now is 5000)" "$TMP/err"
expect_eq "done trials" "$(sql s.db "SELECT count(*) FROM trial WHERE status = 'done'")" 3
expect_eq "split after the run" "$(canon split)" "data.valid = 300;"

note "a config that sets another split is refused"
run 2 "$NAS" run other.conf --db s.db
grep_in "data.valid: 300 -> 400" "$TMP/err"

note "--new: a new experiment takes the default"
run 0 "$NAS" run unset.conf --db s.db --new
expect_eq "the new experiment's split" "$(canon split-2)" "data.valid = 5000;"
echo "PASS"
