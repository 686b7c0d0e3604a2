#!/usr/bin/env bash
# tests/e2e/test_chain_space.sh - `nas space` on every shipped space and on
# bad chain space definitions (issue 14).
# 1. Every examples/spaces/*.conf parses and `nas space` prints its
#    decisions, size, keys and samples; ofa-mbv3 (about 10^21.5 genotypes)
#    is too large to count exactly or enumerate and says "more than 2^63";
#    proxyless (2.2e17) is counted exactly but not enumerated; the
#    MobileNetV2 space (one genotype) has torchvision's 3,504,872 params.
# 2. `nas space --genotype` prints a layer table, MACs and params; a bad
#    genotype exits 2 naming the stage and the expected tokens.
# 3. Each bad definition exits 2 with FILE:LINE and what was expected.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"
for conf in "$SRC"/examples/spaces/*.conf; do
    note "nas space $(basename "$conf")"
    run 0 "$NAS" space "$conf" --samples 3
    grep_in "^decisions  " "$TMP/out"
    grep_in "^genotypes  " "$TMP/out"
    grep_in "^keys       " "$TMP/out"
    expect_eq "samples" "$(grep -c '^ *[0-9.]* *[0-9]*  mb' "$TMP/out")" 3
done
run 0 "$NAS" space "$SRC/examples/spaces/ofa-mbv3.conf" --samples 1
grep_in "genotypes  more than 2^63 (about 10^21.5)" "$TMP/out"
grep_in "keys       more than 2^63 (about 10^19.3) distinct" "$TMP/out"
grep_in "too many genotypes to enumerate" "$TMP/out"
run 0 "$NAS" space "$SRC/examples/spaces/proxyless.conf" --samples 1
grep_in "genotypes  221502229807900608" "$TMP/out"
run 0 "$NAS" space "$SRC/examples/spaces/mobilenetv2.conf" --samples 1
grep_in " 300.774    3504872  mb1_k3|mb6_k3:mb6_k3|" "$TMP/out"
run 2 "$NAS" space "$SRC/examples/spaces/ofa-mbv3.conf" --list
grep_in "more than 2^63 (about 10^21.5) genotypes" "$TMP/err"

note "nas space --genotype"
G='mb1_k3|c16:d2:skip:mb6_k3|c40:d3:se_on:mb6_k5:skip:mb6_k3|mb6_k3:zero'
run 0 "$NAS" space "$SRC/examples/spaces/fashion-chain.conf" --genotype "$G"
grep_in "^key      mb1_k3|c16:skip:mb6_k3|c40:se_on:mb6_k5:mb6_k3|mb6_k3$" "$TMP/out"
grep_in "s3.l0.se  *se  *96x7x7" "$TMP/out"
grep_in "^MACs     3850704 " "$TMP/out"
grep_in "^params   140642$" "$TMP/out"
run 2 "$NAS" space "$SRC/examples/spaces/fashion-chain.conf" --genotype 'mb1_k3|c16:d2:skip:mb6_k9'
grep_in "stage 2, token 4 ('mb6_k9'): expected one of: mb3_k3, mb3_k5, mb6_k3, skip" "$TMP/err"

# bad NAME LINE PATTERN: space group body (lines 3..) -> exit 2 with FILE:LINE: PATTERN
bad() {
    local name=$1 line=$2 pattern=$3
    { echo 'experiment = "bad";'
      echo 'space: { type = "chain";'
      cat
      echo '};'; } >"$TMP/$name.conf"
    run 2 "$NAS" space "$TMP/$name.conf"
    grep_in "$TMP/$name.conf:$line: $pattern" "$TMP/err"
}
STEM='stem = { kernel = 3; channels = 8; stride = 1; };'
note "bad definitions"
bad stride 6 "space.stages\[2\]: stride 2 shrinks the 1x1 feature map below 1x1, expected" <<EOF
input = [1, 4, 4]; $STEM
stages = ( { channels = 8; stride = 2; layers = 1; ops = ["mb3_k3"]; },
  { channels = 8; stride = 2; layers = 1; ops = ["mb3_k3"]; },
  { channels = 8; stride = 2; layers = 1; ops = ["mb3_k3"]; } );
EOF
bad depth 6 "space.stages\[0\].depth holds 4, larger than the stage's 3 layers, expected depths in \[1, 3\]" <<EOF
$STEM
stages = (
  { channels = 16; stride = 2; layers = 3;
    depth = [2, 4]; ops = ["mb3_k3"]; } );
EOF
bad zero 5 "space.stages\[0\]: zero at layer 0, which changes the shape (stride 2, new width), expected zero only where input and output shapes match" <<EOF
$STEM
stages = ( { channels = 16; stride = 2; layers = 2;
  ops = ["mb3_k3", "zero"]; } );
EOF
bad zero_width 5 "space.stages\[0\]: zero at layer 0, which changes the shape (stride 1, width a choice)" <<EOF
$STEM
stages = ( { channels = [8, 16]; layers = 2;
  ops = ["mb3_k3", "zero"]; } );
EOF
bad unknown_op 5 "unknown op 'mb6_k9' in space.stages\[0\].ops, expected one of: mb<e>_k<k> (e in 1..8, k in 3, 5, 7), conv_k<k>" <<EOF
$STEM
stages = ( { channels = 16; stride = 2; layers = 2;
  ops = ["mb3_k3", "mb6_k9"]; } );
EOF
bad empty_ops 5 "space.stages\[0\].ops is an empty choice list, expected at least one op" <<EOF
$STEM
stages = ( { channels = 16; stride = 2; layers = 2;
  ops = []; } );
EOF
bad empty_depth 5 "space.stages\[0\].depth is an empty choice list, expected at least one value" <<EOF
$STEM
stages = ( { channels = 16; stride = 2; layers = 2;
  depth = []; ops = ["mb3_k3"]; } );
EOF
bad empty_width 4 "space.stages\[0\].channels is an empty choice list" <<EOF
$STEM
stages = ( { channels = [];
  stride = 2; layers = 2; ops = ["mb3_k3"]; } );
EOF
bad no_stem 2 'space.type = "chain" has no stem, expected stem = {' <<EOF
stages = ( { channels = 16; stride = 2; layers = 2; ops = ["mb3_k3"]; } );
EOF
bad cell_key 5 'space.cells_per_stage belongs to the cell space, expected it only with space.type = "cell"' <<EOF
$STEM
stages = ( { channels = 16; stride = 2; layers = 2; ops = ["mb3_k3"]; } );
cells_per_stage = 2;
EOF
bad too_many 4 "more than 64 decisions" <<EOF
$STEM
stages = ( { channels = 8; layers = 16; ops = ["mb3_k3", "skip"]; }, { channels = 8; layers = 16; ops = ["mb3_k3", "skip"]; }, { channels = 8; layers = 16; ops = ["mb3_k3", "skip"]; }, { channels = 8; layers = 16; ops = ["mb3_k3", "skip"]; }, { channels = 8; layers = 16; ops = ["mb3_k3", "skip"]; } );
EOF
echo "PASS"
