#!/usr/bin/env bash
# tests/e2e/test_did_you_mean.sh - issue 33, item 6: an unknown config key,
# choice value, op, command, option or option value (--format, --weights,
# --precision, --schedule, --backend) suggests the closest valid one
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
# a known option given last, without its value, is named as such (not "unknown option")
run 2 "$NAS" proxy-check c.conf --seeds
grep_in "nas proxy-check: --seeds needs a value: 2 to 100" "$TMP/err"
run 2 "$NAS" query --format tabel
grep_in "unknown format 'tabel' (expected table, csv or json) (did you mean 'table'?)" "$TMP/err"
note "option value (one of a fixed set)"
run 2 "$NAS" export --best --format pytroch -o x.py
grep_in "nas export: --format must be json, onnx or pytorch, not 'pytroch' (did you mean 'pytorch'?)" "$TMP/err"
run 2 "$NAS" export --best --format json --weights fianl -o x.json
grep_in "nas export: --weights must be trained, init or final, not 'fianl' (did you mean 'final'?)" "$TMP/err"
G='|nor_conv_3x3~0|+|skip_connect~0|nor_conv_3x3~1|+|skip_connect~0|skip_connect~1|nor_conv_3x3~2|'
run 2 "$NAS" train --genotype "$G" --precision fp61
grep_in "nas train: --precision: 'fp61' is not fp32, bf16 or fp16 (did you mean 'fp16'?)" "$TMP/err"
run 2 "$NAS" train --genotype "$G" --schedule cosin
grep_in "nas train: --schedule is cosine or constant, not 'cosin' (did you mean 'cosine'?)" "$TMP/err"
printf 'space = { channels = 8; };\n' >"$TMP/s.conf"
run 2 "$NAS" space "$TMP/s.conf" --format jsn
grep_in "nas space: bad value 'jsn' for --format, expected text or json (did you mean 'json'?)" "$TMP/err"
if [ -d /usr/share/datasets/fashion-mnist ]; then # the backend is made after the data is read
    "$NAS" train --genotype "$G" --epochs 1 --subset 64 --checkpoint none --backend cpy \
        >"$TMP/out" 2>"$TMP/err" && fail "--backend cpy trained"
    grep_in "unknown backend 'cpy' (compiled in: .*) (did you mean 'cpu'?)" "$TMP/err"
fi
run 2 "$NAS" export --best --format jsn --weights zqxwvk -o x.json
grep -q "did you mean" "$TMP/err" && fail "a suggestion for --weights zqxwvk: $(cat "$TMP/err")"

note "a far-off word: the list, no suggestion"
conf_says 'search = { zqxwvk = 3; };' "unknown key 'zqxwvk' in group 'search', expected one of: strategy"
grep -q "did you mean" "$TMP/err" && fail "a suggestion for zqxwvk: $(cat "$TMP/err")"
run 2 "$NAS" zqxwvk
grep -q "did you mean" "$TMP/err" && fail "a suggestion for command zqxwvk"
run 2 "$NAS" train --zqxwvk 3
grep -q "did you mean" "$TMP/err" && fail "a suggestion for option --zqxwvk"
grep_in "nas train: unknown option '--zqxwvk'" "$TMP/err"
echo "ok"
