#!/usr/bin/env bash
# cmake/check_function_length.sh SOURCE_DIR [MAX] - the function-length rule
# (README "Layout"): no function in the project's .c/.h/.cu/.cuh files is
# longer than MAX lines (default 150), counted from the first line of its
# signature to its closing brace. Run by the ctest test
# test_function_length (label unit).
#
# A function is recognised in the project's style: a signature starting in
# column 0 and a body whose braces sit in column 0 ("{" on its own line, or
# at the end of a one-line signature); the body ends at the first "}" in
# column 0. Build trees, .git and generated protobuf code (*.pb-c.c/h) are
# not scanned. ALLOWED lists FILE:FUNCTION pairs that may be longer, until
# they are split; keep it short.
set -u
SRC=${1:?usage: check_function_length.sh SOURCE_DIR [MAX]}
MAX=${2:-150}
ALLOWED=""

cd "$SRC" || exit 2
files=$(find . \( -name .git -o -name 'build*' -o -name _deps \) -prune -o -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
             ! -name '*.pb-c.c' ! -name '*.pb-c.h' -print | sed 's|^\./||' | sort)
[ -n "$files" ] || { echo "check_function_length: no sources under $SRC" >&2; exit 2; }

# One line per function over MAX: "FILE:LINE: NAME has N lines".
long=$(for f in $files; do
    awk -v max="$MAX" -v file="$f" '
    function name_of(s,   t) {            # the identifier before the first "("
        t = s; sub(/\(.*/, "", t); sub(/.*[^A-Za-z0-9_]/, "", t); return t
    }
    infn {
        if ($0 ~ /^}/) {
            n = NR - start + 1
            if (n > max) printf "%s:%d: %s has %d lines\n", file, start, fname, n
            infn = 0
        }
        next
    }
    /^[A-Za-z_].*\(/ && $0 !~ /^(typedef|return|else|if|for|while|switch|do)[^A-Za-z0-9_]/ {
        cand = 1; start = NR; fname = name_of($0)
        if ($0 ~ /\{[ \t]*$/ && $0 !~ /=/) { infn = 1; cand = 0 }
        else if ($0 ~ /;[ \t]*$/) cand = 0     # a prototype or declaration
        next
    }
    cand && /^\{/ { infn = 1; cand = 0; next }
    cand && /;[ \t]*$/ { cand = 0 }
    ' "$f"
done)

status=0
while IFS= read -r line; do
    [ -n "$line" ] || continue
    f=${line%%:*}
    fn=$(printf '%s\n' "$line" | sed 's/^[^ ]*: \([A-Za-z0-9_]*\) has.*/\1/')
    case " $ALLOWED " in
    *" $f:$fn "*) echo "allowed (to be split): $line" ;;
    *) echo "too long: $line"; status=1 ;;
    esac
done <<<"$long"
if [ $status -ne 0 ]; then
    echo "function-length rule broken: split each function listed above into named steps" \
         "of at most $MAX lines (cmake/check_function_length.sh)" >&2
else
    echo "function length: $(echo "$files" | wc -l) files, no function over $MAX lines" \
         "outside the allow-list"
fi
exit $status
