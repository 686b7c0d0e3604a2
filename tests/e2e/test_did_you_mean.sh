#!/usr/bin/env bash
# tests/e2e/test_did_you_mean.sh - issue 33, item 6: an unknown config key,
# choice value, op, command or option suggests the closest valid one
# (nas/suggest.h) after the full list of valid ones; a far-off word gets
# the list and no suggestion.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"

# conf TEXT, then `nas run` must exit 2 with MESSAGE on stderr
conf_says() {
    printf '%s\n' "$1" >"$TMP/c.conf"
    run 2 "$NAS" run "$TMP/c.conf" --db "$TMP/x.db"
    grep_in "$2" "$TMP/err"
}
note "key"
conf_says 'search = { trails = 3; };' \
    "unknown key 'trails' in group 'search', expected one of: strategy, trials, .* (did you mean 'trials'?)"
conf_says 'prxy = { lr = 0.1; };' "unknown group 'prxy', expected one of: .* (did you mean 'proxy'?)"
conf_says 'space = { type = "chain"; stem = { kernal = 3; }; };' "(did you mean 'kernel'?)"
note "choice value"
conf_says 'proxy = { schedule = "cosin"; };' \
    "proxy.schedule = \"cosin\" is not a known choice, expected one of: \"cosine\", \"constant\" (did you mean 'cosine'?)"
conf_says 'objectives = ( { metric = "val_acuracy"; goal = "max"; } );' "(did you mean 'val_accuracy'?)"
note "op"
conf_says 'space = { ops = ["nor_conv_3x", "skip_connect"]; };' \
    "unknown op 'nor_conv_3x' in space.ops, expected one of: none, .*avg_pool_3x3 (did you mean 'nor_conv_3x3'?)"
run 2 "$NAS" train --genotype '|skip_conect~0|+|none~0|none~1|+|none~0|none~1|none~2|'
grep_in "unknown op 'skip_conect' (expected one of: .*) (did you mean 'skip_connect'?)" "$TMP/err"
note "command"
run 2 "$NAS" qeury
grep_in "nas: unknown command 'qeury' (did you mean 'query'?)" "$TMP/err"
grep_in "commands:" "$TMP/err"
note "option"
run 2 "$NAS" train --epoch 3
grep_in "nas train: unknown option '--epoch' (did you mean '--epochs'?)" "$TMP/err"
run 2 "$NAS" run c.conf --experimnt x
grep_in "nas run: unknown option '--experimnt' (did you mean '--experiment'?)" "$TMP/err"
run 2 "$NAS" query --limt 3
grep_in "nas query: unknown option '--limt' (did you mean '--limit'?)" "$TMP/err"
run 2 "$NAS" export --fromat json
grep_in "nas export: unknown option '--fromat' (did you mean '--format'?)" "$TMP/err"
run 2 "$NAS" query --format tabel
grep_in "unknown format 'tabel' (expected table, csv or json) (did you mean 'table'?)" "$TMP/err"

note "a far-off word: the list, no suggestion"
conf_says 'search = { zqxwvk = 3; };' "unknown key 'zqxwvk' in group 'search', expected one of: strategy"
grep -q "did you mean" "$TMP/err" && fail "a suggestion for zqxwvk: $(cat "$TMP/err")"
run 2 "$NAS" zqxwvk
grep -q "did you mean" "$TMP/err" && fail "a suggestion for command zqxwvk"
run 2 "$NAS" train --zqxwvk 3
grep -q "did you mean" "$TMP/err" && fail "a suggestion for option --zqxwvk"
grep_in "nas train: unknown option '--zqxwvk'" "$TMP/err"
echo "ok"
