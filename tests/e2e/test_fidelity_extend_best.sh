#!/usr/bin/env bash
# tests/e2e/test_fidelity_extend_best.sh - the live best of an extended
# multi-fidelity search counts every stored rung. Successive halving, min 1,
# max 9, eta 3 (brackets of 9): 6 trials end in a truncated bracket whose
# best 2 reached 3 epochs. Extended to 9 trials, the bracket is regrouped,
# so the replay stops before those rung-3 results; the progress lines then
# showed the best at 1 epoch ("best 0.1562 (trial 2)") while the summary,
# nas query and nas export --best named the rung-3 result (0.2109). The
# first progress line of the extension must show the stored best at the
# highest fidelity. And the regrouped bracket promotes its best 3 to 3
# epochs: the two whose 3-epoch rung is stored were trained again from 0
# (their checkpoints were deleted when the first run ended), 3 epochs each
# for a result the store had. They must keep their stored rung (the same
# row), and the extension must store what a fresh 9-trial run stores.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
. "$(dirname "$0")/fidelity_lib.sh"
fid_conf a.conf ext 1
sed -i 's/trials = 9;/trials = 6;/; s/max = 3;/max = 9;/' a.conf
sed 's/trials = 6;/trials = 9;/' a.conf >b.conf

note "6 trials: the truncated bracket's best two reach 3 epochs"
run 0 "$NAS" run a.conf --db d.db
stored=$(sql d.db "SELECT trial_id FROM rung WHERE fidelity = 3 ORDER BY trial_id")
expect_eq "rungs at 3 epochs" "$(echo "$stored" | wc -l)" 2
before=$(sql d.db "SELECT trial_id, created_at, seconds FROM rung WHERE fidelity = 3
                   ORDER BY trial_id")
best=$(sql d.db "SELECT trial_id || ' ' || printf('%.4f', val_accuracy) FROM rung
                 ORDER BY fidelity DESC, val_accuracy DESC, trial_id LIMIT 1")
id=${best% *}
val=${best#* }

note "extended to 9: the live best is trial $id's 3-epoch $val from the first line on"
run 0 "$NAS" run b.conf --db d.db
first=$(grep -m1 '^\[trial .*\] done ' "$TMP/err")
case $first in *"| best $val (trial $id) |"*) ;; *) fail "first status line: $first" ;; esac
sbest=$(sed -n 's/^  best:    trial \([0-9]*\), val_accuracy \([0-9.]*\).*/best \2 (trial \1)/p' "$TMP/out")
last=$(grep '^\[trial .*\] done ' "$TMP/err" | tail -1)
case $last in *"| $sbest |"*) ;; *) fail "last status line: $last; summary: $sbest" ;; esac

note "trials $(echo $stored) kept their stored 3-epoch rungs"
for id in $stored; do
    if grep -q "^\[trial $id, rung 1\] promote " "$TMP/err"; then
        cat "$TMP/err"
        fail "trial $id's 3-epoch rung is stored, yet the extension trained it again"
    fi
done
grep -q "checkpoint .* is missing: its promotion to 3 epochs" "$TMP/err" &&
    fail "a promotion to a stored rung looked for its checkpoint: $(cat "$TMP/err")"
after=$(sql d.db "SELECT trial_id, created_at, seconds FROM rung WHERE fidelity = 3
                  AND trial_id IN ($(echo $stored | tr ' ' ,)) ORDER BY trial_id")
expect_eq "the stored 3-epoch rungs" "$after" "$before"

note "the extension stores what a fresh 9-trial run stores"
run 0 "$NAS" run b.conf --db f.db
fid_same d.db f.db "extended vs fresh"
note "ok"
