#!/usr/bin/env bash
# tests/e2e/test_recipe_choices.sh - issue 33, item 7: recipe choices in
# the same search. A random search of 6 trials on Fashion-MNIST (1,000
# training, 500 validation images) over proxy.lr = [0.01, 0.1] records
# both values across its trials, in the genotype and the canonical key;
# `nas show` shows them; the ARCH.json of a trial holds the value it
# picked (not the list) and a genotype without the recipe words, and
# `nas train ARCH.json --proxy` reproduces its val_accuracy to 1e-6.
# `nas space` multiplies the count. An enqueued genotype must carry the
# recipe words (exit 2 naming the missing one otherwise); a table search
# refuses a list (FILE:LINE). A successive-halving search over lr,
# weight_decay and batch_size (with BN recalibration, drawn per batch
# size) keeps a promoted trial's recipe: its ARCH.json trains with it and
# --proxy reproduces the trial.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"

conf() { # $1: file, $2: search extras, $3: data extras, $4: evaluator extras
    cat >"$1" <<CONF
experiment = "recipe";
seed = 4;
data: { dir = "$FMNIST"; train_subset = 1000; valid = 500; ${3:-} };
space: { channels = 8; };
proxy: { epochs = 1; batch_size = 64; lr = [0.01, 0.1]; backend = "cpu"; threads = 1; };
search: { strategy = "random"; trials = 6; ${2:-} };
evaluator: { latency_runs = 1; latency_warmup = 0; ${4:-} };
workers: { count = 1; };
CONF
}
CELL='|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|'

note "nas space counts and lists the choices"
conf r.conf
run 0 "$NAS" space r.conf
grep_in "proxy.lr  *lr=0.01 lr=0.1" "$TMP/out"
grep_in "^genotypes  31250" "$TMP/out"
run 0 "$NAS" space r.conf --samples 2
grep_in "| lr=0.1*$" "$TMP/out"

note "search.enqueue: the recipe words are part of the genotype"
conf q.conf "enqueue = [\"$CELL\"];"
run 2 "$NAS" space q.conf
grep_in "q.conf:6: search.enqueue\[0\].*has no recipe choice lr: this space searches it, append one of: lr=0.01, lr=0.1" "$TMP/err"
conf q.conf "enqueue = [\"$CELL lr=0.1\"];"
run 0 "$NAS" space q.conf

note "a table search refuses a recipe choice"
conf t.conf "" "" 'kind = "table"; table = "t.csv";'
run 2 "$NAS" space t.conf
grep_in "t.conf:5: proxy.lr is a list of choices, but evaluator.kind = \"table\"" "$TMP/err"

note "a random search over proxy.lr = [0.01, 0.1]"
run 0 "$NAS" run r.conf --db r.db
n01=$(sql r.db "SELECT count(*) FROM trial WHERE status = 'done' AND genotype LIKE '% lr=0.01'")
n1=$(sql r.db "SELECT count(*) FROM trial WHERE status = 'done' AND genotype LIKE '% lr=0.1'")
[ "$n01" -ge 1 ] && [ "$n1" -ge 1 ] && [ $((n01 + n1)) = 6 ] ||
    fail "lr=0.01 in $n01 trials, lr=0.1 in $n1: expected both among the 6"
expect_eq "keys with the recipe" "$(sql r.db "SELECT count(*) FROM trial WHERE arch_key LIKE '% lr=0.%'")" 6
check_db_consistent r.db
for lr in 0.01 0.1; do
    id=$(sql r.db "SELECT id FROM trial WHERE genotype LIKE '% lr=$lr' ORDER BY id LIMIT 1")
    run 0 "$NAS" show --db r.db "$id"
    grep_in "^genotype .*| lr=$lr$" "$TMP/out"
    grep_in "^recipe  *lr=$lr (recipe choices of the search)$" "$TMP/out"
    run 0 "$NAS" export --db r.db --trial "$id" --format json -o "t$id.json"
    grep_in "\"lr\": $lr,$" "t$id.json"
    grep -q '"genotype": ".* lr=' "t$id.json" && fail "ARCH.json's genotype keeps the recipe words"
    run 0 "$NAS" train "t$id.json" --proxy --checkpoint none
    expect_reproduced "trial $id (lr=$lr)"
done
note "exports and nas train accept a genotype with recipe words (the network alone)"
geno=$(sql r.db "SELECT genotype FROM trial ORDER BY id LIMIT 1")
run 0 "$NAS" export --genotype "$geno" --format onnx -o g.onnx
grep_in "nas export: note: --genotype's recipe words (lr=0.0\?1) are ignored" "$TMP/err"
run 0 "$NAS" export --db r.db --trial 1 --weights init --format pytorch -o g.py

note "successive halving: a promoted trial keeps its recipe"
cat >s.conf <<CONF
experiment = "recipe-sh";
seed = 4;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; };
proxy: { batch_size = [32, 64]; lr = [0.02, 0.1]; weight_decay = [0.0, 0.001]; backend = "cpu";
         threads = 1; bn_recalibrate = 3; };
search: { strategy = "evolution"; trials = 9; population = 3; sample_size = 2;
          fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 1; };
CONF
run 0 "$NAS" run s.conf --db s.db
# a batch size other than the first choice: recalibrated over its own sample
top=$(sql s.db "SELECT r.trial_id FROM rung r JOIN trial t ON t.id = r.trial_id
                WHERE t.genotype LIKE '% batch_size=64' GROUP BY r.trial_id
                HAVING max(r.fidelity) = 3 ORDER BY r.trial_id LIMIT 1")
[ -n "$top" ] || fail "no trial promoted to 3 epochs"
g=$(sql s.db "SELECT genotype FROM trial WHERE id = $top")
case "$g" in *" lr="*" weight_decay="*" batch_size="*) ;; *) fail "promoted trial $top: genotype '$g'" ;; esac
run 0 "$NAS" export --db s.db --trial "$top" --format json -o s.json
lr=${g##* lr=}; lr=${lr%% *}
bs=${g##* batch_size=}; bs=${bs%% *}
grep_in "\"lr\": $lr,$" s.json
grep_in "\"batch_size\": $bs,$" s.json
run 0 "$NAS" train s.json --proxy --checkpoint none
expect_reproduced "promoted trial $top"
echo "PASS"
