#!/usr/bin/env bash
# tests/e2e/test_train_rerun.sh - issue 33, item 4: rerunning a finished
# `nas train ARCH.json ... --db` says it is already done (and where),
# records nothing and exits 0; the default checkpoint name carries every
# option the checkpoint's fingerprint checks, so two recipes that differ
# only in --subset (or --lr, --batch-size, --backend) train side by side
# instead of refusing each other's checkpoint.
. "$(dirname "$0")/export_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
DB=$TMP/s.db
tiny_search "$DB" ref 2
run 0 "$NAS" export --db "$DB" --best --format json -o best.json
best=$(sed -n 's/.*"trial_id": \([0-9]*\).*/\1/p' best.json)
opts=(--epochs 1 --test-subset 64 --batch-size 64 --threads 1 --augment none --backend ref)
rows() { sql "$DB" "SELECT count(*) FROM final_training WHERE trial_id = $best $*"; }

note "a first training is recorded"
run 0 "$NAS" train best.json "${opts[@]}" --subset 128 --db "$DB"
grep_in "^recorded as final_training 1 in $DB" "$TMP/out"
ck128=best.full-e1-s7-b64-ref-n128.ckpt.npz
[ -f "$ck128" ] || { ls; fail "no checkpoint $ck128"; }
expect_eq "rows after the first run" "$(rows)" 1
acc=$(sql "$DB" "SELECT printf('%.4f', test_accuracy) FROM final_training WHERE id = 1")

note "the same command again: already done, nothing recorded, exit 0"
run 0 "$NAS" train best.json "${opts[@]}" --subset 128 --db "$DB"
grep_in "^already done: final_training 1 in $DB (.*) recorded this training: test accuracy $acc, checkpoint $TMP/$ck128; nothing recorded" "$TMP/out"
grep -q "^epoch 1/1" "$TMP/out" && fail "the rerun trained again"
expect_eq "rows after the rerun" "$(rows)" 1

note "another --subset: its own checkpoint, no collision, its own row"
run 0 "$NAS" train best.json "${opts[@]}" --subset 256 --db "$DB"
ck256=best.full-e1-s7-b64-ref-n256.ckpt.npz
[ -f "$ck256" ] || { ls; fail "no checkpoint $ck256"; }
expect_eq "rows after --subset 256" "$(rows "AND train_images = 256")" 1
expect_eq "rows in all" "$(rows)" 2

note "another --test-subset or --lr is another training too"
run 0 "$NAS" train best.json "${opts[@]}" --subset 128 --test-subset 32 --db "$DB"
grep_in "^recorded as final_training 3" "$TMP/out"
run 0 "$NAS" train best.json "${opts[@]}" --subset 128 --lr 0.05 --db "$DB"
grep_in "^recorded as final_training 4" "$TMP/out"
[ -f best.full-e1-s7-b64-lr0.05-ref-n128.ckpt.npz ] || { ls; fail "no --lr checkpoint"; }

note "without --db a rerun resumes its finished checkpoint as before"
run 0 "$NAS" train best.json "${opts[@]}" --subset 128
grep_in "resumed from $ck128 after epoch 1 of 1" "$TMP/out"
expect_eq "rows at the end" "$(rows)" 4
echo "PASS"
