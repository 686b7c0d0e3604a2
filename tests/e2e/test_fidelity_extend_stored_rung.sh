#!/usr/bin/env bash
# tests/e2e/test_fidelity_extend_stored_rung.sh - an extension does not
# train again a rung the store already holds. Successive halving, min 1,
# max 9, eta 3 (brackets of 9): 6 trials end in a truncated bracket whose
# best 2 reach 3 epochs. Extended to 9 trials, the regrouped bracket
# promotes its best 3 to 3 epochs; the two whose 3-epoch rung is stored
# were trained again from 0 (their checkpoints were deleted when the first
# run ended: "checkpoint ... is missing: its promotion to 3 epochs trains
# from 0"), 3 epochs each for a result the store had. They must keep their
# stored rung (the same row), and the extension must store what a fresh
# 9-trial run stores.
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

note "extended to 9: trials $(echo $stored) keep their stored 3-epoch rungs"
run 0 "$NAS" run b.conf --db d.db
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
echo "PASS"
