#!/usr/bin/env bash
# tests/e2e/test_zero_cost_search.sh - issue 31, evaluator.kind =
# "zero-cost": each trial's val_accuracy is its proxy score (the same
# number `nas space --list --zero-cost` prints for the genotype), its
# device "zero-cost:PROXY", nothing trained; a data-free proxy needs no
# data (the space's declared input), a data-dependent one reads a
# minibatch of the experiment's training data (Fashion-MNIST); the best
# trial exports like any other. A table search refuses a data-dependent
# warm-up or move-proposal proxy at its line (exit 2), and zero-cost needs
# evaluator.proxy.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"

cat >"$TMP/syn.conf" <<'CONF'
experiment = "e2e-zc";
seed = 3;
space: { type = "cell"; ops = ["skip_connect", "nor_conv_1x1", "avg_pool_3x3"]; channels = 4;
         cells_per_stage = 1; input = [3, 32, 32]; classes = 10; };
search: { strategy = "evolution"; trials = 8; population = 4; sample_size = 2; };
evaluator: { kind = "zero-cost"; proxy = "synflow"; };
data: { dir = "/nonexistent"; };
CONF
note "synflow: data-free, 8 trials, the score of nas space --zero-cost, device zero-cost:synflow"
run 0 "$NAS" run syn.conf --db "$TMP/a.db"
DB=$TMP/a.db
expect_eq "done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 8
expect_eq "device" "$(sql "$DB" "SELECT DISTINCT device FROM trial")" "zero-cost:synflow"
expect_eq "nothing trained" "$(sql "$DB" "SELECT count(*) FROM result WHERE train_loss IS NULL AND train_seconds IS NULL AND latency_ms IS NULL")" 8
grep_in "zero-cost evaluator" "$TMP/err"
run 0 "$NAS" space syn.conf --list --zero-cost synflow
cp "$TMP/out" "$TMP/list.csv"
# every trial's val_accuracy equals its genotype's synflow in the list (relative 1e-12)
sql "$DB" "SELECT t.genotype || ';' || printf('%.17g', r.val_accuracy) FROM trial t JOIN result r ON r.trial_id = t.id" |
    awk 'NR == FNR { split($0, a, ","); g = a[1]; gsub(/"/, "", g); s[g] = a[5]; next }
               { split($0, b, ";"); g = b[1]; v = b[2];
                 d = v - s[g]; if (d < 0) d = -d; if (!(g in s) || d > 1e-12 * s[g]) { print g, v, s[g]; bad++ } }
               END { exit bad > 0 }' "$TMP/list.csv" - || fail "a trial's score differs from nas space --zero-cost"
best=$(sql "$DB" "SELECT max(val_accuracy) FROM result")
[ "$(awk -v b="$best" 'BEGIN { print (b > 1) }')" = 1 ] || fail "synflow scores are not raw scores: $best"
note "the best trial exports like any other"
run 0 "$NAS" export --db "$DB" --best --format json -o "$TMP/best.json"
grep_in "genotype" "$TMP/best.json"
run 0 "$NAS" show 1 --db "$DB"
grep_in "device *zero-cost:synflow" "$TMP/out"

note "snip reads a minibatch of the experiment's Fashion-MNIST training data"
need_fmnist
cat >"$TMP/nw.conf" <<CONF
experiment = "e2e-zc-snip";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { type = "cell"; ops = ["skip_connect", "nor_conv_1x1", "avg_pool_3x3"]; channels = 4;
         cells_per_stage = 1; };
proxy: { batch_size = 16; };
search: { strategy = "random"; trials = 4; };
evaluator: { kind = "zero-cost"; proxy = "snip"; };
CONF
run 0 "$NAS" run nw.conf --db "$TMP/b.db"
expect_eq "snip trials" "$(sql "$TMP/b.db" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' AND t.device = 'zero-cost:snip' AND r.val_accuracy > 0")" 4

note "jacob_cov scores are negative: val_accuracy still holds them (it was stored as NULL)"
sed -e 's/e2e-zc-snip/e2e-zc-jc/' -e 's/proxy = "snip"/proxy = "jacob_cov"/' "$TMP/nw.conf" >"$TMP/jc.conf"
run 0 "$NAS" run jc.conf --db "$TMP/jc.db"
expect_eq "jacob_cov trials with their score as val_accuracy" "$(sql "$TMP/jc.db" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.status = 'done' AND t.device = 'zero-cost:jacob_cov' AND r.val_accuracy IS NOT NULL AND r.val_accuracy < 0 AND r.val_accuracy = r.score")" 4
run 0 "$NAS" export --db "$TMP/jc.db" --best --format json -o "$TMP/jc.json"
grep_in "genotype" "$TMP/jc.json"

note "errors: zero-cost without a proxy; a data-dependent warm-up in a table search"
cat >"$TMP/noproxy.conf" <<'CONF'
space: { type = "cell"; channels = 4; };
evaluator: { kind = "zero-cost"; };
CONF
run 2 "$NAS" run noproxy.conf --db "$TMP/c.db"
grep_in "noproxy.conf:2: evaluator.kind = \"zero-cost\" needs evaluator.proxy" "$TMP/err"
cat >"$TMP/tab.conf" <<'CONF'
space: { type = "cell"; channels = 4; };
search: { strategy = "nao";
  warmup: { proxy = "snip"; candidates = 20; top = 4; };
};
evaluator: { kind = "table"; table = "t.csv"; column = "acc"; };
CONF
run 2 "$NAS" run tab.conf --db "$TMP/c.db"
grep_in "tab.conf:3: search.warmup.proxy = \"snip\" reads a minibatch of training data, but a table search" "$TMP/err"
echo "PASS"
