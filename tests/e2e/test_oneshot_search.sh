#!/usr/bin/env bash
# tests/e2e/test_oneshot_search.sh - issue 32, evaluator.kind = "supernet"
# in `nas run` (docs/one-shot.md), on a small chain space of Fashion-MNIST:
# 1. phase 1 trains the supernet (a checkpoint and its curve in
#    DB.supernet/, one supernet_epoch row per epoch), phase 2 records one
#    'supernet' trial per subnet (nothing trained or timed), phase 3
#    retrains the best supernet.retrain_top as experiment NAME-finalists,
#    each linked to its supernet trial (table finalist), and the default
#    experiment of query/export is the finalists': export --best is the
#    best retrained finalist;
# 2. the same command again adds nothing;
# 3. kill -9 during phase 1 and during phase 3, each followed by a rerun,
#    end with the same trials and accuracies as the uninterrupted run;
# 4. a larger search.trials extends phase 2 and adds only the new top-K
#    subnets to the finalists (the old ones kept as they were);
# 5. a latency objective or constraint and a recipe list are refused at
#    their file:line.
# 3b. Ctrl-C (SIGINT to the process group) in phase 1 exits 130 with the
#    experiment 'interrupted', and the rerun ends as the uninterrupted run.
# 6. the run lock is held from phase 1 to the end of phase 3: a second
#    `nas run` between phase 2 and phase 3 is refused;
# 7. a kill between an epoch's curve row and its checkpoint (test hook):
#    after the rerun the curve and supernet_epoch hold every epoch once;
#    7c. a curve row that cannot be written stops phase 1 with the file's
#    name and the reason, and no checkpoint;
# 8. export of a supernet trial (phase 2) rebuilds the weights it inherits
#    (not the initial ones), reproducing its val_accuracy; without the
#    supernet checkpoint it is refused, saying why; with a damaged weights
#    file it reads the checkpoint, says so, and reproduces the accuracy the
#    mapped weights gave to the bit.
# 9. the mapped weights file (docs/one-shot.md): phase 1 writes
#    DB.supernet/supernet-CRC.weights; the workers of phase 2 map it (seen in
#    /proc/PID/maps); a damaged file is said and rewritten by the next run;
#    a kill before its rename (test hook) leaves no file under its name, and
#    the rerun writes it; `nas export` names the batches a recalibration
#    really ran when the training split is smaller than recal_batches.
. "$(dirname "$0")/search_lib.sh"
. "$(dirname "$0")/oneshot_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"

conf() { # FILE TRIALS [EXTRA] (oneshot_lib.sh), E supernet epochs
    oneshot_conf "$1" e2e-os 512 256 "$2" "$E" "" "${3:-}"
}
E=30 # supernet epochs: long enough for the kills below to land in phase 1
EPOCHS=$(seq -s, 1 $E)
conf "$TMP/os.conf" 10

note "1. the three phases"
run 0 "$NAS" run os.conf --db "$TMP/a.db"
A=$TMP/a.db
grep_in "supernet (phase 1)" "$TMP/err"
grep_in "phase 3:" "$TMP/err"
expect_eq "one checkpoint" "$(ls "$A.supernet"/supernet-*.npz | wc -l)" 1
expect_eq "one weights file" "$(ls "$A.supernet"/supernet-*.weights | wc -l)" 1
expect_eq "no temporary file" "$(ls "$A.supernet" | grep -c tmp)" 0
grep_in "which the workers map read-only" "$TMP/err"
W=$(ls "$A.supernet"/supernet-*.weights)
expect_eq "its curve" "$(wc -l <"$(ls "$A.supernet"/supernet-*.tsv)")" $E
expect_eq "supernet_epoch rows" "$(sql "$A" "SELECT group_concat(epoch) FROM supernet_epoch WHERE experiment_id = 1")" "$EPOCHS"
expect_eq "phase 2 trials" "$(sql "$A" "SELECT count(*) FROM trial WHERE experiment_id = 1 AND status = 'done' AND device = 'supernet'")" 10
expect_eq "nothing trained or timed in phase 2" \
    "$(sql "$A" "SELECT count(*) FROM result r JOIN trial t ON t.id = r.trial_id WHERE t.experiment_id = 1 AND r.train_loss IS NULL AND r.latency_ms IS NULL AND r.val_accuracy > 0")" 10
expect_eq "finalists experiment" "$(sql "$A" "SELECT name FROM experiment WHERE id = 2")" "e2e-os-finalists"
expect_eq "finalists trained" "$(sql "$A" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 2 AND t.status = 'done' AND t.device = 'cpu' AND r.train_loss > 0 AND r.latency_ms > 0")" 3
top3=$(sql "$A" "SELECT group_concat(arch_key, ' ') FROM (SELECT t.arch_key FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 1 ORDER BY r.score DESC, t.id LIMIT 3 )")
fin=$(sql "$A" "SELECT group_concat(s.arch_key, ' ') FROM (SELECT s.arch_key FROM finalist l JOIN trial f ON f.id = l.trial_id JOIN trial s ON s.id = l.supernet_trial_id WHERE f.experiment_id = 2 AND s.experiment_id = 1 AND s.arch_key = f.arch_key ORDER BY s.id) s")
expect_eq "the finalists are the top 3, linked" "$(echo "$fin" | tr ' ' '\n' | sort | tr '\n' ' ')" "$(echo "$top3" | tr ' ' '\n' | sort | tr '\n' ' ')"
best=$(sql "$A" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 2 ORDER BY r.val_accuracy DESC, t.id LIMIT 1")
run 0 "$NAS" export --db "$A" --best --format json -o "$TMP/best.json"
grep -q "\"trial_id\": *$best\b" "$TMP/best.json" || grep -q "\"trial\": *$best\b" "$TMP/best.json" ||
    { head -c 600 "$TMP/best.json"; fail "export --best is not the best finalist (trial $best)"; }
check_db_consistent "$A"
trials_of "$A" e2e-os >"$TMP/a1"
trials_of "$A" e2e-os-finalists >"$TMP/a2"

note "2. the same command again adds nothing"
run 0 "$NAS" run os.conf --db "$A"
grep_in "nothing to do" "$TMP/err"
expect_eq "no new trial" "$(sql "$A" "SELECT count(*) FROM trial")" 13
expect_eq "no new supernet epoch" "$(sql "$A" "SELECT count(*) FROM supernet_epoch")" $E

note "3. kill -9 in phase 1, then in phase 3; each rerun continues"
B=$TMP/b.db
"$NAS" run os.conf --db "$B" --quiet >"$TMP/b.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 600); do
    f=$(ls "$B.supernet"/supernet-*.tsv 2>/dev/null)
    [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 1 ] && break
    sleep 0.05
done
[ -n "$f" ] || { cat "$TMP/b.out"; fail "phase 1 wrote no epoch"; }
kill -9 "$RUN_PID"; wait "$RUN_PID" 2>/dev/null
sleep 0.3
n1=$(wc -l <"$f")
[ "$n1" -lt $E ] || fail "phase 1 had finished before the kill ($n1 epochs)"
pgrep -f "nas run os.conf --db $B" >/dev/null && fail "the phase-1 child outlived its controller"
"$NAS" run os.conf --db "$B" >"$TMP/b2.out" 2>&1 &
RUN_PID=$!
for _ in $(seq 1200); do
    [ "$(sql "$B" "SELECT count(*) FROM trial WHERE experiment_id = 2 AND status = 'running'" 2>/dev/null)" = 1 ] && break
    [ "$(sql "$B" "SELECT count(*) FROM trial WHERE experiment_id = 2 AND status = 'done'" 2>/dev/null)" = 3 ] && break
    sleep 0.05
done
kill -9 "$RUN_PID"; wait "$RUN_PID" 2>/dev/null
RUN_PID=
grep_in "continuing $E epochs" "$TMP/b2.out" # phase 1 went on from its checkpoint
run 0 "$NAS" run os.conf --db "$B"
expect_eq "supernet curve after the kill" "$(sql "$B" "SELECT group_concat(epoch) FROM supernet_epoch WHERE experiment_id = 1")" "$EPOCHS"
trials_of "$B" e2e-os >"$TMP/b1"
trials_of "$B" e2e-os-finalists >"$TMP/b2"
diff "$TMP/a1" "$TMP/b1" >/dev/null || { diff "$TMP/a1" "$TMP/b1"; fail "phase 2 after kill -9 differs from the uninterrupted run"; }
cut -d'|' -f2,3,5 "$TMP/a2" >"$TMP/a2g"
cut -d'|' -f2,3,5 "$TMP/b2" >"$TMP/b2g"
diff "$TMP/a2g" "$TMP/b2g" >/dev/null || { diff "$TMP/a2g" "$TMP/b2g"; fail "the finalists after kill -9 differ from the uninterrupted run"; }
check_db_consistent "$B"

note "3b. Ctrl-C to the process group in phase 1: exit 130, said; the rerun continues"
C=$TMP/c.db
setsid "$NAS" run os.conf --db "$C" >"$TMP/c.out" 2>"$TMP/c.err" &
RUN_PID=$!
for _ in $(seq 600); do
    f=$(ls "$C.supernet"/supernet-*.tsv 2>/dev/null)
    [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 1 ] && break
    sleep 0.05
done
kill -INT -- -"$RUN_PID"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 130 ] || { cat "$TMP/c.err"; fail "Ctrl-C in phase 1 exited $code, expected 130"; }
grep_in "supernet: stopped in phase 1; its last finished epoch is kept" "$TMP/c.err"
expect_eq "experiment status" "$(sql "$C" "SELECT status FROM experiment WHERE id = 1")" interrupted
run 0 "$NAS" run os.conf --db "$C"
trials_of "$C" e2e-os >"$TMP/c1"
diff "$TMP/a1" "$TMP/c1" >/dev/null || { diff "$TMP/a1" "$TMP/c1"; fail "phase 2 after Ctrl-C differs from the uninterrupted run"; }

note "4. a larger budget extends phase 2 and adds only new finalists"
note "   (9. with a damaged weights file, rewritten; its workers map it)"
conf "$TMP/os14.conf" 16
sum0=$(cksum <"$W")
printf '\x7f' | dd of="$W" bs=1 seek=$(($(stat -c %s "$W") - 100)) conv=notrunc status=none
[ "$(cksum <"$W")" != "$sum0" ] || fail "the weights file was not damaged"
NAS_FAULT=sleep_ms=250 "$NAS" run os14.conf --db "$A" >"$TMP/out" 2>"$TMP/err" &
RUN_PID=$!
mapping=0 seen=
for _ in $(seq 600); do # once phase 2 runs: every worker (child of the run) maps the file
    kill -0 "$RUN_PID" 2>/dev/null || break
    if grep -q "^\[trial" "$TMP/out" "$TMP/err" 2>/dev/null; then
        kids=$(pgrep -P "$RUN_PID" | tr '\n' ' ')
        n=0 m=0
        for k in $kids; do
            n=$((n + 1))
            grep -q -F "$W" "/proc/$k/maps" 2>/dev/null && m=$((m + 1))
        done
        seen="$seen $n/$m"
        [ "$n" = 2 ] && [ "$m" = 2 ] && { mapping=2; break; }
    fi
    sleep 0.05
done
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/err"; fail "the extension exited $code"; }
grep_in "CRC-32 of its values mismatch (damaged file); rewriting it from the checkpoint" "$TMP/err"
grep -q "warning: supernet weights" "$TMP/err" && { cat "$TMP/err"; fail "a worker did not map the rewritten file"; }
[ "$(cksum <"$W")" = "$sum0" ] || fail "the rewritten weights file differs from the first one"
expect_eq "phase-2 workers that all map the weights file (workers/mapping seen:$seen)" "$mapping" 2
grep_in "extending experiment 'e2e-os'" "$TMP/err"
expect_eq "phase 2 extended" "$(sql "$A" "SELECT count(*) FROM trial WHERE experiment_id = 1 AND status = 'done'")" 16
expect_eq "no supernet retrained" "$(sql "$A" "SELECT count(*) FROM supernet_epoch")" $E
trials_of "$A" e2e-os-finalists | head -3 >"$TMP/a2x"
diff "$TMP/a2" "$TMP/a2x" >/dev/null || { diff "$TMP/a2" "$TMP/a2x"; fail "the first finalists changed"; }
newtop=$(sql "$A" "SELECT count(*) FROM (SELECT t.arch_key FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 1 ORDER BY r.score DESC, t.id LIMIT 3) x WHERE x.arch_key NOT IN (SELECT arch_key FROM trial WHERE experiment_id = 2 AND id <= 13)")
expect_eq "finalists: the old 3 and the new top-3 ones" "$(sql "$A" "SELECT count(*) FROM trial WHERE experiment_id = 2 AND status = 'done'")" $((3 + newtop))
expect_eq "every finalist linked" "$(sql "$A" "SELECT count(*) FROM finalist")" $((3 + newtop))

note "5. refusals at file:line"
conf "$TMP/lat.conf" 10 'objectives = ( { metric = "latency_ms"; goal = "min"; } );'
run 2 "$NAS" run lat.conf --db "$TMP/lat.db"
grep_in "lat.conf:2[0-9]: .*evaluator.kind = \"supernet\" measures none" "$TMP/err"
conf "$TMP/latc.conf" 10 'constraints = { latency_ms = 1.0; };'
run 2 "$NAS" run latc.conf --db "$TMP/latc.db"
grep_in "latc.conf:2[0-9]: constraints.latency_ms = 1 needs a measured latency" "$TMP/err"
sed 's/lr = 0.1;/lr = [0.05, 0.1];/' "$TMP/os.conf" >"$TMP/rec.conf"
run 2 "$NAS" run rec.conf --db "$TMP/rec.db"
grep_in "rec.conf:15: proxy.lr is a list of choices, but evaluator.kind = \"supernet\"" "$TMP/err"
note "6. one run lock from phase 1 to the end of phase 3: no other nas run between phase 2 and 3"
E_SAVED=$E; E=3
conf "$TMP/lk.conf" 6
E=$E_SAVED
L=$TMP/lk.db
# phase_gap_ms (search/pool_msg.h): the first run sleeps between phase 2 and 3
NAS_FAULT=phase_gap_ms=4000 "$NAS" run lk.conf --db "$L" >"$TMP/lk.out" 2>"$TMP/lk.err" &
RUN_PID=$!
for _ in $(seq 1200); do
    grep -q "phase 3:" "$TMP/lk.err" && break
    kill -0 "$RUN_PID" 2>/dev/null || { cat "$TMP/lk.err"; fail "the first run ended before phase 3"; }
    sleep 0.05
done
grep_in "phase 3:" "$TMP/lk.err"
"$NAS" run lk.conf --db "$L" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" != 0 ] || { cat "$TMP/err"; fail "a second nas run got the database between phase 2 and phase 3"; }
grep_in "is in use by another \`nas run\`" "$TMP/err"
wait "$RUN_PID"
code=$?
RUN_PID=
[ "$code" = 0 ] || { cat "$TMP/lk.err"; fail "the first run exited $code"; }
expect_eq "the first run's finalists" "$(sql "$L" "SELECT count(*) FROM trial t JOIN experiment e ON e.id = t.experiment_id WHERE e.name = 'e2e-os-finalists' AND t.status = 'done'")" 3
expect_eq "one finalists experiment" "$(sql "$L" "SELECT count(*) FROM experiment")" 2

note "7. killed between an epoch's curve row and its checkpoint: the rerun records every epoch once"
E_SAVED=$E; E=4
conf "$TMP/kw.conf" 6
E=$E_SAVED
K=$TMP/kw.db
# supernet_kill@2 (search/pool_msg.h): the phase-1 child dies by SIGKILL at
# the end of epoch 2, between writing its curve row and its checkpoint
NAS_FAULT=supernet_kill@2 "$NAS" run kw.conf --db "$K" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" != 0 ] || { cat "$TMP/err"; fail "the run with supernet_kill@2 succeeded"; }
grep_in "killed by signal 9" "$TMP/err"
expect_eq "supernet_epoch after the kill (epoch 2 is not in the checkpoint)" \
    "$(sql "$K" "SELECT group_concat(epoch) FROM supernet_epoch")" "1"
run 0 "$NAS" run kw.conf --db "$K"
f=$(ls "$K.supernet"/supernet-*.tsv)
expect_eq "the curve file after the rerun" "$(cut -f1 "$f" | paste -sd,)" "1,2,3,4"
expect_eq "supernet_epoch after the rerun" \
    "$(sql "$K" "SELECT group_concat(epoch) FROM (SELECT epoch FROM supernet_epoch ORDER BY epoch)")" "1,2,3,4"
expect_eq "supernet_epoch rows" "$(sql "$K" "SELECT count(*) FROM supernet_epoch")" 4

note "7c. a curve row that cannot be written stops phase 1 naming the file and why, with no checkpoint"
# the same config as 7 (so the same checkpoint name); its curve file is a
# symbolic link into a directory that does not exist, so appending fails
cp "$TMP/kw.conf" "$TMP/cw.conf"
CW=$TMP/cw.db
mkdir -p "$CW.supernet"
ln -s "$TMP/no-such-dir/curve.tsv" "$CW.supernet/$(basename "$f")"
run 1 "$NAS" run cw.conf --db "$CW"
grep_in "supernet curve $CW.supernet/$(basename "$f"): cannot open it to append epoch 1: No such file or directory" "$TMP/err"
grep_in "no checkpoint of that epoch written" "$TMP/err"
expect_eq "no checkpoint" "$(ls "$CW.supernet" | grep -c '\.npz$')" 0

note "7b. killed before the weights file's rename: no file under its name; the rerun writes it"
E_SAVED=$E; E=2
conf "$TMP/wk.conf" 4
E=$E_SAVED
sed -i 's/recal_batches = 2;/recal_batches = 20;/' "$TMP/wk.conf" # 20 x 64 > 512 images: 8 batches
WK=$TMP/wk.db
NAS_FAULT=supernet_weights_kill "$NAS" run wk.conf --db "$WK" >"$TMP/out" 2>"$TMP/err"
code=$?
[ "$code" != 0 ] || { cat "$TMP/err"; fail "the run with supernet_weights_kill succeeded"; }
grep_in "killed by signal 9" "$TMP/err"
expect_eq "no weights file after the kill" "$(ls "$WK.supernet" | grep -c '\.weights$')" 0
expect_eq "its complete temporary copy" "$(ls "$WK.supernet" | grep -c '\.weights\.tmp$')" 1
run 0 "$NAS" run wk.conf --db "$WK"
grep_in "which the workers map read-only" "$TMP/err"
expect_eq "the weights file after the rerun" "$(ls "$WK.supernet" | grep -c '\.weights$')" 1
expect_eq "no temporary file after the rerun" "$(ls "$WK.supernet" | grep -c tmp)" 0
expect_eq "phase 2 after the rerun" "$(sql "$WK" "SELECT count(*) FROM trial WHERE experiment_id = 1 AND status = 'done'")" 4
run 0 "$NAS" export --db "$WK" --experiment e2e-os --best --format onnx -o "$TMP/wk.onnx"
grep_in "BN recalibrated on 8 batches" "$TMP/out"

note "8. export of a supernet trial: the weights it inherits, BN recalibrated as its evaluation"
sbest=$(sql "$A" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id WHERE t.experiment_id = 1 ORDER BY r.score DESC, t.id LIMIT 1")
run 0 "$NAS" export --db "$A" --experiment e2e-os --best --format onnx -o "$TMP/sn.onnx"
grep_in "best trial of 'e2e-os' by val_accuracy (max): $sbest\$" "$TMP/err"
grep_in "weights: inherited from the supernet $A.supernet/supernet-[0-9a-f]*.npz, BN recalibrated on 2 batches" "$TMP/out"
grep_in "not retrained" "$TMP/out"
# the rebuilt weights measure exactly what the trial recorded (else a warning)
grep -q "warning" "$TMP/err" && { cat "$TMP/err"; fail "the inherited weights do not reproduce the trial's val_accuracy"; }
echo "$(grep "weights: inherited" "$TMP/out")" | sed 's/.*(val_accuracy \([0-9.]*\), the trial.s \([0-9.]*\)).*/\1 \2/' |
    awk '{ exit !(NF == 2 && $1 == $2) }' || { cat "$TMP/out"; fail "no reproduced val_accuracy"; }
run 0 "$NAS" export --db "$A" --trial "$sbest" --weights init --format onnx -o "$TMP/sn-init.onnx"
cmp -s "$TMP/sn.onnx" "$TMP/sn-init.onnx" && fail "the supernet trial was exported with its initial weights"
mkdir "$TMP/tmpd"
run 0 env TMPDIR="$TMP/tmpd" "$NAS" export --db "$A" --trial "$sbest" --format pytorch -o "$TMP/sn.py" --logits "$TMP/sn-logits.npz"
grep_in "weights: inherited from the supernet" "$TMP/out"
[ -s "$TMP/sn.npz" ] && [ -s "$TMP/sn-logits.npz" ] || fail "the PyTorch export wrote no weights or logits"
expect_eq "temporary weights left behind" "$(ls -A "$TMP/tmpd")" ""
# a damaged weights file: the checkpoint instead, said, the same accuracy to the bit
run 0 "$NAS" export --db "$A" --trial "$sbest" --format onnx -o "$TMP/sn-map.onnx"
grep -q "warning" "$TMP/err" && { cat "$TMP/err"; fail "export from the mapped weights warned"; }
cp "$W" "$TMP/w.keep"
head -c 1000 "$TMP/w.keep" >"$W"
run 0 "$NAS" export --db "$A" --trial "$sbest" --format onnx -o "$TMP/sn-npz.onnx"
grep_in "warning: supernet weights: .*1000 bytes, its header says [0-9]* (truncated or extended)" "$TMP/err"
grep_in "reads the checkpoint" "$TMP/err"
echo "$(grep "weights: inherited" "$TMP/out")" | sed 's/.*(val_accuracy \([0-9.]*\), the trial.s \([0-9.]*\)).*/\1 \2/' |
    awk '{ exit !(NF == 2 && $1 == $2) }' || { cat "$TMP/out"; fail "the checkpoint's weights do not reproduce the mapped ones' val_accuracy"; }
cmp -s "$TMP/sn-map.onnx" "$TMP/sn-npz.onnx" || fail "the export from the checkpoint differs from the one from the mapped weights"
rm "$W" # a database from before the weights file: the checkpoint, without a word
run 0 "$NAS" export --db "$A" --trial "$sbest" --format onnx -o "$TMP/sn-old.onnx"
grep -q "warning" "$TMP/err" && { cat "$TMP/err"; fail "export warned about a missing weights file"; }
cmp -s "$TMP/sn-map.onnx" "$TMP/sn-old.onnx" || fail "the export without the weights file differs"
cp "$TMP/w.keep" "$W"
mv "$A.supernet" "$A.supernet.away"
run 1 "$NAS" export --db "$A" --trial "$sbest" --format onnx -o "$TMP/gone.onnx"
grep_in "trial $sbest of 'e2e-os' is a supernet trial" "$TMP/err"
grep_in "supernet checkpoint .* not found" "$TMP/err"
[ -e "$TMP/gone.onnx" ] && fail "a refused export wrote its output"
mv "$A.supernet.away" "$A.supernet"
# its JSON says how the accuracy was measured, and `nas train --proxy` does
# not call a stand-alone training's accuracy a difference from it
run 0 "$NAS" export --db "$A" --trial "$sbest" --format json -o "$TMP/sn.json"
grep -q '"measured_by": *"supernet"' "$TMP/sn.json" || fail "the JSON does not say measured_by supernet"
grep -q '"measured_by"' "$TMP/best.json" && fail "a trained finalist's JSON says measured_by"
run 0 "$NAS" train "$TMP/sn.json" --proxy --checkpoint none
grep_in "recorded [0-9.]* by weights inherited from the supernet, not by a proxy training: not comparable" "$TMP/out"
grep -q "difference" "$TMP/out" && fail "nas train --proxy compares a supernet trial's accuracy"

echo "ok"
