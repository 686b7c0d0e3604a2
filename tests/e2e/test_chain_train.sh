#!/usr/bin/env bash
# tests/e2e/test_chain_train.sh - a chain-space search that TRAINS its
# networks, end to end (issue 15): a tiny chain space (tests/data/conf/
# chain_train.conf's layer kinds at 28x28: MBConv with SE and hswish,
# projection skip, dropout) on 1,024 Fashion-MNIST images per trial, random
# search of 6 trials with 2 workers. The run is killed with kill -9 after
# its first results, resumed, finishes, and is queried: every trial has a
# validation accuracy, the counter's MACs and params, and a latency; and
# `nas export --best` writes the best trial (its weights kept by the
# default proxy.keep_top) as json, onnx and pytorch with nas's parameter
# count (the exports' numbers: test_chain_arch.sh).
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/chain_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
chain_conf "$TMP/c.conf" chain-train 3 1024 mb6_k7 0.2 0.1 6 \
    "latency_runs = 2; latency_warmup = 1;" 'count = 2; device = "cpu";'
DB=$TMP/c.db
note "run, kill -9 after the first results"
NAS_FAULT="sleep_ms=300" "$NAS" run "$TMP/c.conf" --db "$DB" --quiet >"$TMP/run.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 600); do
    n=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 1 ] && break
    kill -0 "$RUN_PID" 2>/dev/null || break
    sleep 0.1
done
kill -9 "$RUN_PID" 2>/dev/null; wait "$RUN_PID" 2>/dev/null; RUN_PID=
done_at_kill=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")
[ "$done_at_kill" -ge 1 ] || { cat "$TMP/run.out"; fail "no trial finished before the kill"; }
[ "$done_at_kill" -lt 6 ] || fail "the search finished before the kill"
note "resume and finish ($done_at_kill done at the kill)"
run 0 "$NAS" run "$TMP/c.conf" --db "$DB" --quiet
expect_eq "trials done" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 6
check_db_consistent "$DB"
note "accuracies: $(sql "$DB" "SELECT group_concat(round(val_accuracy, 3), ' ') FROM result")"
expect_eq "trials that learned (val acc > 0.2)" \
    "$(sql "$DB" "SELECT count(*) FROM result WHERE val_accuracy > 0.2")" 6
# the stored MACs/params are the counter's (nas space --genotype)
g=$(sql "$DB" "SELECT genotype FROM trial ORDER BY id LIMIT 1")
run 0 "$NAS" space "$TMP/c.conf" --genotype "$g"
want=$(awk '/^params/ { print $2 }' "$TMP/out")
expect_eq "params of $g" "$(sql "$DB" "SELECT r.params FROM result r JOIN trial t ON t.id = r.trial_id WHERE t.genotype = '$g'")" "$want"
run 0 "$NAS" query --db "$DB" --format csv --limit 3
expect_eq "query rows" "$(tail -n +2 "$TMP/out" | wc -l)" 3
note "best: $(sql "$DB" "SELECT max(val_accuracy) FROM result")"
best=$(sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
bparams=$(sql "$DB" "SELECT params FROM result WHERE trial_id = $best")
for f in json:json onnx:onnx pytorch:py; do
    run 0 "$NAS" export --db "$DB" --best --format "${f%:*}" -o "best.${f#*:}"
    grep_in "trial $best of 'chain-train'" "$TMP/out"
    grep_in "^parameters: $bparams " "$TMP/out"
    [ "$f" = json:json ] || grep_in "weights: trained from" "$TMP/out"
done
grep -q '"type": "chain"' best.json || fail "best.json is not a chain architecture"
[ -s best.onnx ] && [ -s best.npz ] || fail "no ONNX model or PyTorch weights"
echo "PASS"
