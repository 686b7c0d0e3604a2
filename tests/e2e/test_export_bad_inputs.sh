#!/usr/bin/env bash
# tests/e2e/test_export_bad_inputs.sh - export and train refuse bad input
# with a clear message and a non-zero exit: unknown trial id, an empty
# experiment, a failed trial, a trial that is not finished, --weights
# trained without kept weights, an unwritable output path, a missing
# database, usage errors, and a damaged or invalid ARCH.json.
. "$(dirname "$0")/export_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"
DB=$TMP/s.db
tiny_search "$DB" ref 2

# fails CODE PATTERN cmd...: exits CODE with PATTERN on stderr.
fails() {
    local code=$1 pat=$2
    shift 2
    run "$code" "$@"
    grep_in "$pat" "$TMP/err"
}

note "unknown trial"
fails 1 "no trial 999" "$NAS" export --db "$DB" --trial 999 --format json -o x.json
note "missing database"
fails 1 "missing.db" "$NAS" export --db "$TMP/missing.db" --best --format json -o x.json
note "empty experiment"
cp "$DB" empty.db
sql empty.db "DELETE FROM trial_weights; DELETE FROM result; DELETE FROM trial;"
fails 1 "has no trials yet" "$NAS" export --db empty.db --best --format onnx -o x.onnx
note "failed trial"
cp "$DB" failed.db
sql failed.db "UPDATE trial SET status = 'failed', error = 'loss diverged at step 3' WHERE id = 1; DELETE FROM result WHERE trial_id = 1;"
fails 1 "trial 1 failed (loss diverged at step 3)" "$NAS" export --db failed.db --trial 1 --format json -o x.json
sql failed.db "UPDATE trial SET status = 'failed', error = 'boom'; DELETE FROM result;"
fails 1 "no trial to export: 2 trials, 0 done" "$NAS" export --db failed.db --best --format json -o x.json
note "unfinished trial"
sql failed.db "UPDATE trial SET status = 'interrupted' WHERE id = 2"
fails 1 "trial 2 is interrupted, not done" "$NAS" export --db failed.db --trial 2 --format json -o x.json
note "--weights trained without kept weights"
cp "$DB" nokeep.db
sql nokeep.db "DELETE FROM trial_weights"
fails 1 "has no kept weights" "$NAS" export --db nokeep.db --trial 1 --format onnx -o x.onnx
run 0 "$NAS" export --db nokeep.db --trial 1 --format onnx -o x.onnx --weights init
note "unwritable output path"
for fmt in json onnx pytorch; do
    fails 1 "cannot write /nonexistent-dir/out" "$NAS" export --db "$DB" --best --format $fmt \
        -o /nonexistent-dir/out.$fmt
done
note "usage errors"
fails 2 "give exactly one of --best" "$NAS" export --db "$DB" --format json -o x.json
fails 2 "--format must be json, onnx or pytorch" "$NAS" export --db "$DB" --best --format tf -o x
fails 2 "-o FILE is required" "$NAS" export --db "$DB" --best --format json
fails 2 "unknown op 'bogus'" "$NAS" export --genotype '|bogus~0|+|none~0|none~1|+|none~0|none~1|none~2|' \
    --format json -o x.json
fails 1 "unknown column" "$NAS" export --db "$DB" --best --by colour --format json -o x.json

note "damaged and invalid ARCH.json"
run 0 "$NAS" export --db "$DB" --best --format json -o good.json
head -c 200 good.json >damaged.json
fails 1 "damaged.json:.*not valid JSON" "$NAS" train damaged.json --epochs 1
sed 's/"batch_size": 64/"batch_size": -5/' good.json >badval.json
fails 1 "badval.json: key 'recipe.batch_size' is -5" "$NAS" train badval.json
sed '/"genotype"/s/nor_conv_3x3\|nor_conv_1x1\|avg_pool_3x3\|skip_connect/conv9x9/' good.json >badgeno.json
fails 1 "key 'genotype'" "$NAS" train badgeno.json
echo '{"format": "something-else", "version": 1}' >other.json
fails 1 "not an architecture exported by nas" "$NAS" train other.json
fails 1 "cannot read $TMP/none.json" "$NAS" train "$TMP/none.json"
fails 2 "unknown option" "$NAS" train good.json --frobnicate 1
echo "PASS"
